package workestimate

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apfproject/apf/request"
)

var learnedT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// obs is a complete observation with sizes.
func obs(resource, ns string, count, bytes int64) ListObservation {
	return ListObservation{Resource: resource, Namespace: ns, Count: count, Items: count, Bytes: bytes, Complete: true}
}

func mustGet(t *testing.T, l *Learned, key string) Stats {
	t.Helper()
	s, err := l.Get(learnedT0, key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return s
}

func TestLearnedNotFound(t *testing.T) {
	var l Learned // the zero value works
	if _, err := l.Get(learnedT0, "pods"); !errors.Is(err, ErrCountNotFound) {
		t.Fatalf("never observed: %v", err)
	}
	l.Observe(learnedT0, obs("pods", "", 3, 300))
	if _, err := l.Get(learnedT0, "deployments.apps"); !errors.Is(err, ErrCountNotFound) {
		t.Fatalf("other resource: %v", err)
	}
	// Incomplete observations teach nothing.
	o := obs("services", "", 3, 300)
	o.Complete = false
	l.Observe(learnedT0, o)
	if _, err := l.Get(learnedT0, "services"); !errors.Is(err, ErrCountNotFound) {
		t.Fatalf("incomplete: %v", err)
	}
	l.Observe(learnedT0, obs("services", "", -1, 0))
	if _, err := l.Get(learnedT0, "services"); !errors.Is(err, ErrCountNotFound) {
		t.Fatalf("negative: %v", err)
	}
}

func TestLearnedNeverStale(t *testing.T) {
	l := NewLearned(0, 0)
	l.Observe(learnedT0, obs("pods", "", 250, 250*4000))
	s, err := l.Get(learnedT0.Add(50*time.Minute), "pods")
	if err != nil || s != (Stats{Count: 250, AvgSizeBytes: 4000}) {
		t.Fatalf("long after: %+v %v", s, err)
	}
}

func TestLearnedClusterAndNamespaces(t *testing.T) {
	l := NewLearned(0, 0)
	// Namespaces only: the sum, and the average over all their items.
	l.Observe(learnedT0, obs("pods", "a", 10, 10*1000))
	l.Observe(learnedT0, obs("pods", "b", 30, 30*3000))
	if s := mustGet(t, l, "pods"); s != (Stats{Count: 40, AvgSizeBytes: (10*1000 + 30*3000) / 40}) {
		t.Fatalf("sum: %+v", s)
	}
	// A namespace listed again replaces its own count only.
	l.Observe(learnedT0, obs("pods", "a", 20, 20*1000))
	if s := mustGet(t, l, "pods"); s != (Stats{Count: 50, AvgSizeBytes: (20*1000 + 30*3000) / 50}) {
		t.Fatalf("replace a: %+v", s)
	}
	// A whole-resource list replaces what the namespaces said.
	l.Observe(learnedT0, obs("pods", "", 45, 45*2000))
	if s := mustGet(t, l, "pods"); s != (Stats{Count: 45, AvgSizeBytes: 2000}) {
		t.Fatalf("cluster: %+v", s)
	}
	if n := l.namespaces("pods"); n != 0 {
		t.Fatalf("namespaces kept after a cluster list: %d", n)
	}
	// Namespaced lists after it: the larger figure wins, with its own
	// average.
	l.Observe(learnedT0, obs("pods", "a", 30, 30*500))
	if s := mustGet(t, l, "pods"); s != (Stats{Count: 45, AvgSizeBytes: 2000}) {
		t.Fatalf("cluster larger: %+v", s)
	}
	l.Observe(learnedT0, obs("pods", "c", 20, 20*500))
	if s := mustGet(t, l, "pods"); s != (Stats{Count: 50, AvgSizeBytes: 500}) {
		t.Fatalf("namespaces larger: %+v", s)
	}
	// Equal: the whole-resource figure.
	l.Observe(learnedT0, obs("pods", "c", 15, 15*500))
	if s := mustGet(t, l, "pods"); s != (Stats{Count: 45, AvgSizeBytes: 2000}) {
		t.Fatalf("equal: %+v", s)
	}
}

func TestLearnedSizes(t *testing.T) {
	l := NewLearned(0, 0)
	// A list with no sizes (a table) keeps the last sizes of its scope.
	l.Observe(learnedT0, obs("pods", "", 10, 10*700))
	l.Observe(learnedT0, ListObservation{Resource: "pods", Count: 12, Complete: true})
	if s := mustGet(t, l, "pods"); s != (Stats{Count: 12, AvgSizeBytes: 700}) {
		t.Fatalf("table after list: %+v", s)
	}
	// Without any sizes, the size is unknown.
	l.Observe(learnedT0, ListObservation{Resource: "nodes", Count: 7, Complete: true})
	if s := mustGet(t, l, "nodes"); s != (Stats{Count: 7}) {
		t.Fatalf("no sizes: %+v", s)
	}
	// An empty list: count 0, size unknown.
	l.Observe(learnedT0, obs("secrets", "", 0, 0))
	if s := mustGet(t, l, "secrets"); s != (Stats{}) {
		t.Fatalf("empty: %+v", s)
	}
	// The chosen scope has no sizes: the other's are used.
	l.Observe(learnedT0, ListObservation{Resource: "configmaps", Count: 100, Complete: true})
	l.Observe(learnedT0, obs("configmaps", "a", 5, 5*900))
	if s := mustGet(t, l, "configmaps"); s != (Stats{Count: 100, AvgSizeBytes: 900}) {
		t.Fatalf("fallback size: %+v", s)
	}
	// A paged first page: the count covers the rest, the sizes only
	// what was seen.
	l.Observe(learnedT0, ListObservation{Resource: "events", Count: 1000, Items: 100, Bytes: 100 * 1200, Complete: true})
	if s := mustGet(t, l, "events"); s != (Stats{Count: 1000, AvgSizeBytes: 1200}) {
		t.Fatalf("page: %+v", s)
	}
	// Count below Items is taken as Items.
	l.Observe(learnedT0, ListObservation{Resource: "leases", Items: 4, Bytes: 400, Complete: true})
	if s := mustGet(t, l, "leases"); s != (Stats{Count: 4, AvgSizeBytes: 100}) {
		t.Fatalf("items only: %+v", s)
	}
}

func TestLearnedBounds(t *testing.T) {
	l := NewLearned(2, 3)
	l.Observe(learnedT0, obs("a", "", 1, 1))
	l.Observe(learnedT0, obs("b", "", 2, 2))
	l.Observe(learnedT0, obs("c", "", 3, 3)) // full: ignored
	if _, err := l.Get(learnedT0, "c"); !errors.Is(err, ErrCountNotFound) {
		t.Fatalf("third resource kept: %v", err)
	}
	l.Observe(learnedT0, obs("b", "", 5, 5)) // known: updated
	if s := mustGet(t, l, "b"); s.Count != 5 {
		t.Fatalf("known resource not updated: %+v", s)
	}
	for i := range 5 {
		l.Observe(learnedT0, obs("a", fmt.Sprintf("ns%d", i), 10, 10))
	}
	if n := l.namespaces("a"); n != 3 {
		t.Fatalf("namespaces: %d", n)
	}
	if s := mustGet(t, l, "a"); s.Count != 30 {
		t.Fatalf("sum of the kept namespaces: %+v", s)
	}
	l.Observe(learnedT0, obs("a", "ns1", 20, 20)) // known namespace: updated
	if s := mustGet(t, l, "a"); s.Count != 40 {
		t.Fatalf("known namespace: %+v", s)
	}
	if l.len() != 2 {
		t.Fatalf("Len %d", l.len())
	}

	// The defaults.
	d := NewLearned(0, 0)
	if d.resourceLimit() != defaultLearnedResources || d.namespaceLimit() != defaultLearnedNamespaces {
		t.Fatal("defaults")
	}
	for i := range defaultLearnedResources + 10 {
		d.Observe(learnedT0, obs(fmt.Sprint("r", i), "", 1, 1))
	}
	if d.len() != defaultLearnedResources {
		t.Fatalf("default resource bound: %d", d.len())
	}
}

func TestLearnedPrune(t *testing.T) {
	l := NewLearned(0, 0)
	l.Observe(learnedT0, obs("old", "", 5, 5))
	l.Observe(learnedT0, obs("mixed", "", 100, 100))
	l.Observe(learnedT0.Add(30*time.Minute), obs("mixed", "x", 7, 7))
	l.Observe(learnedT0.Add(30*time.Minute), obs("fresh", "", 9, 9))

	if n := l.Prune(learnedT0.Add(pruneAfter - time.Second)); n != 0 {
		t.Fatalf("pruned early: %d", n)
	}
	if n := l.Prune(learnedT0.Add(pruneAfter)); n != 1 {
		t.Fatalf("pruned %d, want 1", n)
	}
	if _, err := l.Get(learnedT0, "old"); !errors.Is(err, ErrCountNotFound) {
		t.Fatalf("old after prune: %v", err)
	}
	// The old whole-resource count went; the fresher namespace stays.
	if s := mustGet(t, l, "mixed"); s != (Stats{Count: 7, AvgSizeBytes: 1}) {
		t.Fatalf("mixed after prune: %+v", s)
	}
	if n := l.Prune(learnedT0.Add(30*time.Minute + pruneAfter)); n != 2 {
		t.Fatalf("second prune: %d", n)
	}
	if l.len() != 0 {
		t.Fatalf("left: %d", l.len())
	}
	// Pruning makes room again.
	b := NewLearned(1, 1)
	b.Observe(learnedT0, obs("a", "", 1, 1))
	b.Prune(learnedT0.Add(pruneAfter))
	b.Observe(learnedT0.Add(pruneAfter), obs("b", "", 1, 1))
	if _, err := b.Get(learnedT0, "b"); err != nil {
		t.Fatalf("no room after prune: %v", err)
	}
}

func TestLearnedGetDoesNotAllocate(t *testing.T) {
	l := NewLearned(0, 0)
	l.Observe(learnedT0, obs("pods", "a", 10, 100))
	l.Observe(learnedT0, obs("deployments.apps", "", 10, 100))
	key := string([]byte("deployments.apps")) // not the stored string
	if n := testing.AllocsPerRun(100, func() {
		_, _ = l.Get(learnedT0, key)
		_, _ = l.Get(learnedT0, "pods")
		_, _ = l.Get(learnedT0, "nothing")
	}); n != 0 {
		t.Fatalf("Get allocates %v", n)
	}
	// Observing known scopes does not allocate either.
	o := obs("pods", "a", 11, 110)
	if n := testing.AllocsPerRun(100, func() { l.Observe(learnedT0, o) }); n != 0 {
		t.Fatalf("Observe of a known namespace allocates %v", n)
	}
}

func TestLearnedConcurrent(t *testing.T) {
	l := NewLearned(0, 0)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				l.Observe(learnedT0, obs("pods", fmt.Sprint("ns", g), int64(i), int64(i)*10))
				l.Observe(learnedT0, obs("pods", "", int64(i), int64(i)*10))
				_, _ = l.Get(learnedT0, "pods")
				if i%100 == 0 {
					l.Prune(learnedT0)
				}
			}
		})
	}
	wg.Wait()
	if _, err := l.Get(learnedT0, "pods"); err != nil {
		t.Fatal(err)
	}
}

// The estimator prices a list by learned counts (size-based): 250 objects of
// 8,000 bytes are 2 MB, 20 seats from storage and the 10-seat cap from the
// cache; and they stay so long after StaleAfter.
func TestLearnedFeedsEstimator(t *testing.T) {
	l := NewLearned(0, 0)
	l.Observe(learnedT0, obs("pods", "", 250, 250*8000))
	e := New(DefaultConfig(), l, nil)
	info := &request.Info{IsResourceRequest: true, Verb: "list", APIVersion: "v1", Resource: "pods"}
	for _, now := range []time.Time{learnedT0, learnedT0.Add(staleAfter + 30*time.Minute)} {
		if w := e.estimateAt(now, withQuery(t, info, "resourceVersion=5&resourceVersionMatch=Exact"), 100); w.InitialSeats != 20 {
			t.Fatalf("storage: %+v", w)
		}
		if w := e.estimateAt(now, withQuery(t, info, "resourceVersion=0"), 100); w.InitialSeats != 10 {
			t.Fatalf("cache: %+v", w)
		}
	}
	info.Resource = "secrets" // never observed: the minimum
	if w := e.estimateAt(learnedT0, withQuery(t, info, "resourceVersion=5&resourceVersionMatch=Exact"), 100); w.InitialSeats != 1 {
		t.Fatalf("not found: %+v", w)
	}
}

// len returns the number of resources known.
func (l *Learned) len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.resources)
}

// namespaces returns the number of namespaces known for a resource.
func (l *Learned) namespaces(resourceKey string) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if r := l.resources[resourceKey]; r != nil {
		return len(r.namespaces)
	}
	return 0
}
