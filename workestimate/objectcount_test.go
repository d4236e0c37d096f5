package workestimate

import (
	"errors"
	"testing"
	"time"
)

// TestTrackerStaleness checks docs/spec/work-estimation.md#object-count-tracker:
// a count is stale once more than 3 minutes have passed since its last
// update, and Get then returns the old stats with ErrCountStale.
func TestTrackerStaleness(t *testing.T) {
	tr := NewTracker()
	s := Stats{Count: 42, AvgSizeBytes: 900}
	tr.Set(t0, "pods", s)
	cases := []struct {
		at      time.Duration
		wantErr error
	}{
		{0, nil},
		{time.Minute, nil},
		{3 * time.Minute, nil},
		{3*time.Minute + time.Nanosecond, errCountStale},
		{time.Hour, errCountStale},
	}
	for _, c := range cases {
		got, err := tr.Get(t0.Add(c.at), "pods")
		if !errors.Is(err, c.wantErr) || err != nil && c.wantErr == nil {
			t.Errorf("at +%v: err %v, want %v", c.at, err, c.wantErr)
		}
		if got != s {
			t.Errorf("at +%v: stats %+v, want %+v", c.at, got, s)
		}
	}
	if _, err := tr.Get(t0, "deployments.apps"); !errors.Is(err, ErrCountNotFound) {
		t.Errorf("untracked: err %v", err)
	}
	// An update makes the count fresh again.
	tr.Set(t0.Add(10*time.Minute), "pods", Stats{Count: 7})
	if got, err := tr.Get(t0.Add(12*time.Minute), "pods"); err != nil || got.Count != 7 {
		t.Errorf("after refresh: %+v, %v", got, err)
	}
}

// TestTrackerPrune checks that Prune drops entries not updated for an hour
// or more and keeps the rest.
func TestTrackerPrune(t *testing.T) {
	tr := NewTracker()
	tr.Set(t0, "old", Stats{Count: 1})
	tr.Set(t0.Add(time.Minute), "newer", Stats{Count: 2})
	if n := tr.prune(t0.Add(59 * time.Minute)); n != 0 || tr.len() != 2 {
		t.Fatalf("prune at 59m dropped %d, left %d", n, tr.len())
	}
	if n := tr.prune(t0.Add(time.Hour)); n != 1 || tr.len() != 1 {
		t.Fatalf("prune at 60m dropped %d, left %d", n, tr.len())
	}
	if _, err := tr.Get(t0.Add(time.Hour), "old"); !errors.Is(err, ErrCountNotFound) {
		t.Errorf("pruned entry: err %v", err)
	}
	if _, err := tr.Get(t0.Add(time.Hour), "newer"); !errors.Is(err, errCountStale) {
		t.Errorf("kept entry: err %v", err)
	}
	if n := tr.prune(t0.Add(2 * time.Hour)); n != 1 || tr.len() != 0 {
		t.Fatalf("prune at 2h dropped %d, left %d", n, tr.len())
	}
}

// TestTrackerObserve checks the average computed from a list response.
func TestTrackerObserve(t *testing.T) {
	cases := []struct {
		items, bytes int64
		want         Stats
	}{
		{10, 1000, Stats{Count: 10, AvgSizeBytes: 100}},
		{3, 10, Stats{Count: 3, AvgSizeBytes: 3}},
		{0, 0, Stats{}},
		{0, 50, Stats{}},
		{4, 0, Stats{Count: 4}},
	}
	for _, c := range cases {
		tr := NewTracker()
		tr.observe(t0, "k", c.items, c.bytes)
		if got, err := tr.Get(t0, "k"); err != nil || got != c.want {
			t.Errorf("Observe(%d, %d): %+v, %v; want %+v", c.items, c.bytes, got, err, c.want)
		}
	}
}

// TestKey checks the resource[.group] key.
func TestKey(t *testing.T) {
	if got := Key("", "pods"); got != "pods" {
		t.Errorf("core: %q", got)
	}
	if got := Key("apps", "deployments"); got != "deployments.apps" {
		t.Errorf("apps: %q", got)
	}
}

// TestEstimateLearnsFromObservedLists drives the estimator from its clock
// as a proxy would: unknown, learned, stale, relearned, pruned.
func TestEstimateLearnsFromObservedLists(t *testing.T) {
	now := t0
	tr := NewTracker()
	e := New(DefaultConfig(), tr, nil)
	pods := info("list", "", "pods", "", "")
	step := func(what string, want int) {
		t.Helper()
		if got := e.estimateAt(now, pods, 0); got.InitialSeats != want {
			t.Errorf("%s: got %+v, want %d seats", what, got, want)
		}
	}
	step("unknown", 1)
	tr.observe(now, "pods", 300, 300*20_000) // 6 MB
	step("learned", 60)
	now = now.Add(3*time.Minute + time.Second)
	step("stale", 100)
	tr.observe(now, "pods", 10, 10*20_000)
	step("relearned", 2)
	now = now.Add(time.Hour)
	tr.prune(now)
	step("pruned", 1)
}

// observe records a complete list response of a resource: itemCount
// objects taking totalBytes together. The average size is unknown (zero)
// for an empty list.
func (t *Tracker) observe(now time.Time, resourceKey string, itemCount, totalBytes int64) {
	s := Stats{Count: itemCount}
	if itemCount > 0 && totalBytes > 0 {
		s.AvgSizeBytes = totalBytes / itemCount
	}
	t.Set(now, resourceKey, s)
}

// prune drops every entry not updated for PruneAfter or longer, and
// returns how many it dropped.
func (t *Tracker) prune(now time.Time) int {
	oldest := now.Add(-pruneAfter)
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for k, e := range t.counts {
		if !e.updated.After(oldest) {
			delete(t.counts, k)
			n++
		}
	}
	return n
}

// len returns the number of resources tracked.
func (t *Tracker) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.counts)
}

// countsFunc adapts a function to ObjectCounts.
type countsFunc func(now time.Time, resourceKey string) (Stats, error)

// Get implements ObjectCounts.
func (f countsFunc) Get(now time.Time, resourceKey string) (Stats, error) {
	return f(now, resourceKey)
}
