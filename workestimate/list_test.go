package workestimate

import (
	"testing"
	"time"

	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/request"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// listTracker holds the counts the list tests price against.
func listTracker() *Tracker {
	tr := NewTracker()
	tr.Set(t0, "pods", Stats{Count: 1000, AvgSizeBytes: 10_000})
	tr.Set(t0.Add(-4*time.Minute), "deployments.apps", Stats{Count: 3, AvgSizeBytes: 10})
	tr.Set(t0.Add(-3*time.Minute), "configmaps", Stats{Count: 40, AvgSizeBytes: 50_000})
	tr.Set(t0, "secrets", Stats{Count: 5, AvgSizeBytes: 0})
	tr.Set(t0, "events", Stats{Count: 0, AvgSizeBytes: 0})
	tr.Set(t0, "nodes", Stats{Count: 300, AvgSizeBytes: 1})
	return tr
}

func info(verb, group, resource, ns, name string) *request.Info {
	return &request.Info{IsResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Namespace: ns, Name: name}
}

// TestListSizeBased checks docs/spec/work-estimation.md#lists-and-watches
// with the default configuration: seats = ceil(objs*avg/100,000), cache reads
// capped at 1 MB (10 seats), clamped to [1, min(level max, 100)].
func TestListSizeBased(t *testing.T) {
	cases := []struct {
		name     string
		info     *request.Info
		query    string
		levelMax int
		cfg      func(*Config)
		want     int
	}{
		// pods: 1000 objects of 10,000 B.
		{"consistent list from storage: 1000*10kB", info("list", "", "pods", "", ""), "", 0, nil, 100},
		{"limit below count from storage: 50*10kB", info("list", "", "pods", "", ""), "limit=50", 0, nil, 5},
		{"limit above count", info("list", "", "pods", "", ""), "limit=5000", 0, nil, 100},
		{"limit 0 means none", info("list", "", "pods", "", ""), "limit=0", 0, nil, 100},
		{"rv=0 from cache, capped at 1MB", info("list", "", "pods", "", ""), "resourceVersion=0", 0, nil, 10},
		{"rv=0 limit=5 from cache: 5*10kB", info("list", "", "pods", "", ""), "resourceVersion=0&limit=5", 0, nil, 1},
		{"rv=0 limit=30 from cache: 30*10kB", info("list", "", "pods", "", ""), "resourceVersion=0&limit=30", 0, nil, 3},
		{"rv set without limit: cache", info("list", "", "pods", "", ""), "resourceVersion=123", 0, nil, 10},
		{"rv set with limit: storage", info("list", "", "pods", "", ""), "resourceVersion=123&limit=50", 0, nil, 5},
		{"continue: storage", info("list", "", "pods", "", ""), "resourceVersion=0&limit=50&continue=abc", 0, nil, 5},
		{"rvm Exact: storage", info("list", "", "pods", "", ""), "resourceVersion=5&resourceVersionMatch=Exact", 0, nil, 100},
		{"rvm NotOlderThan: cache", info("list", "", "pods", "", ""), "resourceVersion=5&resourceVersionMatch=NotOlderThan&limit=500", 0, nil, 10},
		{"unknown rvm: storage", info("list", "", "pods", "", ""), "resourceVersionMatch=Bogus&limit=20", 0, nil, 2},
		{"consistent reads from cache", info("list", "", "pods", "", ""), "", 0, func(c *Config) { c.ConsistentReadsFromCache = true }, 10},
		{"consistent reads from cache, paged", info("list", "", "pods", "", ""), "limit=20", 0, func(c *Config) { c.ConsistentReadsFromCache = true }, 2},
		{"label selector from storage: max(50, 1000/2)", info("list", "", "pods", "", ""), "labelSelector=a%3Db&limit=50", 0, nil, 50},
		{"field selector from storage: max(700, 500)", info("list", "", "pods", "", ""), "fieldSelector=status.phase%3DRunning&limit=700", 0, nil, 70},
		{"selector from cache ignores half rule", info("list", "", "pods", "", ""), "labelSelector=a%3Db&resourceVersion=0&limit=5", 0, nil, 1},
		{"single object by name", info("list", "", "pods", "ns", "p1"), "", 0, nil, 1},
		{"single object beats selector", info("list", "", "pods", "ns", "p1"), "fieldSelector=metadata.name%3Dp1", 0, nil, 1},
		{"level max below estimate", info("list", "", "pods", "", ""), "", 20, nil, 20},
		{"level max above cap", info("list", "", "pods", "", ""), "", 500, nil, 100},
		{"configured cap", info("list", "", "pods", "", ""), "", 0, func(c *Config) { c.MaximumListSeats = 30 }, 30},
		{"min seats", info("list", "", "pods", "", ""), "resourceVersion=0&limit=1", 0, func(c *Config) { c.MinimumSeats = 2 }, 2},
		// Option decoding errors cost the level's maximum.
		{"bad limit: cap", info("list", "", "pods", "", ""), "limit=abc", 0, nil, 100},
		{"bad timeout: level max", info("list", "", "pods", "", ""), "timeoutSeconds=x", 7, nil, 7},
		{"bad limit on unknown resource", info("list", "", "widgets", "", ""), "limit=abc", 0, nil, 100},
		// Counts.
		{"not tracked: 1 seat", info("list", "", "widgets", "", ""), "", 0, nil, 1},
		{"group is part of key", info("list", "extensions", "pods", "", ""), "", 0, nil, 1},
		{"stale from storage: 1e9*1.5MB", info("list", "apps", "deployments", "", ""), "", 0, nil, 100},
		{"stale from cache", info("list", "apps", "deployments", "", ""), "resourceVersion=0", 0, nil, 10},
		{"stale with limit: 10*1.5MB", info("list", "apps", "deployments", "", ""), "limit=10", 0, nil, 100},
		{"stale with limit: 1*1.5MB", info("list", "apps", "deployments", "", ""), "limit=1", 0, nil, 15},
		{"exactly 3 min old is fresh: 40*50kB", info("list", "", "configmaps", "", ""), "", 0, nil, 20},
		{"unknown size: 5*1.5MB", info("list", "", "secrets", "", ""), "", 0, nil, 75},
		{"empty resource", info("list", "", "events", "", ""), "", 0, nil, 1},
		// Watches.
		{"watch from rv without initial events", info("watch", "", "pods", "", ""), "watch=1&resourceVersion=100", 0, nil, 1},
		{"watch from rv with initial events", info("watch", "", "pods", "", ""), "watch=1&resourceVersion=100&sendInitialEvents=true", 0, nil, 10},
		{"watch from rv, initial events false", info("watch", "", "pods", "", ""), "resourceVersion=100&sendInitialEvents=false", 0, nil, 1},
		{"watch from rv 0 lists from cache", info("watch", "", "pods", "", ""), "watch=1&resourceVersion=0", 0, nil, 10},
		{"watch without rv lists from cache", info("watch", "", "pods", "", ""), "watch=1", 0, nil, 10},
		{"watch is from cache even with rvm Exact", info("watch", "", "pods", "", ""), "resourceVersion=0&resourceVersionMatch=Exact&limit=3", 0, nil, 1},
		{"watch of untracked", info("watch", "", "widgets", "", ""), "watch=1", 0, nil, 1},
		{"watch, estimate off", info("watch", "", "pods", "", ""), "watch=1", 0, func(c *Config) { c.WatchListEstimated = false }, 1},
	}
	tr := listTracker()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			e := New(cfg, tr, nil)
			got := e.estimateAt(t0, withQuery(t, c.info, c.query), c.levelMax)
			want := fairqueue.WorkEstimate{InitialSeats: c.want}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

// TestListCountBased checks the count-based variant of
// docs/spec/work-estimation.md#lists-and-watches:
// seats = ceil(objs/100), objs = 1 | count (cache) | count+limited
// (selector) | 2*limited, capped at 10 unless configured.
func TestListCountBased(t *testing.T) {
	cases := []struct {
		name     string
		info     *request.Info
		query    string
		levelMax int
		listCap  int
		want     int
	}{
		// nodes: 300 objects.
		{"storage: 2*300", info("list", "", "nodes", "", ""), "", 0, 0, 6},
		{"storage with limit: 2*120", info("list", "", "nodes", "", ""), "limit=120", 0, 0, 3},
		{"storage with small limit: 2*10", info("list", "", "nodes", "", ""), "limit=10", 0, 0, 1},
		{"selector: 300+120", info("list", "", "nodes", "", ""), "labelSelector=x&limit=120", 0, 0, 5},
		{"selector, no limit: 300+300", info("list", "", "nodes", "", ""), "labelSelector=x", 0, 0, 6},
		{"cache: count, limit ignored", info("list", "", "nodes", "", ""), "resourceVersion=0&limit=10", 0, 0, 3},
		{"single", info("list", "", "nodes", "", "n1"), "", 0, 0, 1},
		{"cap 10: 2*1000", info("list", "", "pods", "", ""), "", 0, 0, 10},
		{"configured cap: 2*1000", info("list", "", "pods", "", ""), "", 0, 100, 20},
		{"level max", info("list", "", "nodes", "", ""), "", 4, 0, 4},
		{"stale: cap", info("list", "apps", "deployments", "", ""), "resourceVersion=0", 0, 0, 10},
		{"not tracked", info("list", "", "widgets", "", ""), "", 0, 0, 1},
		{"decode error", info("list", "", "nodes", "", ""), "limit=1.5", 0, 0, 10},
		{"watch lists from cache", info("watch", "", "nodes", "", ""), "watch=true", 0, 0, 3},
	}
	tr := listTracker()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.SizeBasedListCost = false
			cfg.MaximumListSeats = c.listCap
			e := New(cfg, tr, nil)
			got := e.estimateAt(t0, withQuery(t, c.info, c.query), c.levelMax)
			if want := (fairqueue.WorkEstimate{InitialSeats: c.want}); got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

// TestListFromParsedRequest runs whole URLs through request.Parse, so that
// a name given by field selector makes a single-object list.
func TestListFromParsedRequest(t *testing.T) {
	cases := []struct {
		path, query string
		want        int
	}{
		{"/api/v1/pods", "", 100},
		{"/api/v1/namespaces/ns/pods", "fieldSelector=metadata.name%3Dp1", 1},
		{"/api/v1/namespaces/ns/pods", "watch=1&fieldSelector=metadata.name%3Dp1", 1},
		{"/api/v1/pods", "watch=1&resourceVersion=7", 1},
		{"/apis/apps/v1/deployments", "resourceVersion=0", 10},
		{"/api/v1/namespaces/ns/pods/p1", "", 1}, // get
		{"/api/v1/namespaces", "", 1},            // untracked list
	}
	e := New(DefaultConfig(), listTracker(), nil)
	for _, c := range cases {
		in, err := request.Parse("GET", c.path, c.query)
		if err != nil {
			t.Fatalf("%s?%s: %v", c.path, c.query, err)
		}
		if got := e.estimateAt(t0, &in, 0); got != (fairqueue.WorkEstimate{InitialSeats: c.want}) {
			t.Errorf("%s %s?%s: got %+v, want %d seats", in.Verb, c.path, c.query, got, c.want)
		}
	}
}

// TestListHugeCounts checks that absurd counts saturate instead of
// wrapping to a small seat count.
func TestListHugeCounts(t *testing.T) {
	counts := countsFunc(func(time.Time, string) (Stats, error) {
		return Stats{Count: 1 << 62, AvgSizeBytes: 1 << 40}, nil
	})
	for _, size := range []bool{true, false} {
		cfg := DefaultConfig()
		cfg.SizeBasedListCost = size
		e := New(cfg, counts, nil)
		got := e.estimateAt(t0, withQuery(t, info("list", "", "pods", "", ""), "labelSelector=a"), 0)
		if want := e.config().MaximumListSeats; got.InitialSeats != want {
			t.Errorf("size=%v: got %+v, want %d seats", size, got, want)
		}
	}
}

// TestListOtherErrorsAreStale checks that an unexpected error from the
// counts is priced like a stale count, and a wrapped not-found like
// not-found.
func TestListOtherErrorsAreStale(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{errTest, 100},
		{errCountStale, 100},
		{wrap(ErrCountNotFound), 1},
	}
	for _, c := range cases {
		counts := countsFunc(func(time.Time, string) (Stats, error) { return Stats{Count: 1}, c.err })
		e := New(DefaultConfig(), counts, nil)
		if got := e.estimateAt(t0, info("list", "", "pods", "", ""), 0); got.InitialSeats != c.want {
			t.Errorf("%v: got %+v, want %d", c.err, got, c.want)
		}
	}
	// No counts at all: nothing is tracked.
	e := New(DefaultConfig(), nil, nil)
	if got := e.estimateAt(t0, info("list", "", "pods", "", ""), 0); got.InitialSeats != 1 {
		t.Errorf("nil counts: got %+v", got)
	}
}
