package workestimate

import (
	"sync"
	"testing"

	"github.com/apfproject/apf/request"
)

func watchInfo(group, resource, ns, name, fieldSelector string) *request.Info {
	in := info("watch", group, resource, ns, name)
	in.FieldSelector = fieldSelector
	return in
}

// TestWatchTrackerInterested checks the three-term formula of
// docs/spec/work-estimation.md#watch-tracker:
// count(g,r,"","") + [ns≠""] count(g,r,ns,"") + [name≠""] count(g,r,ns,name).
func TestWatchTrackerInterested(t *testing.T) {
	wt := NewWatchTracker()
	reg := func(n int, in *request.Info) {
		for range n {
			wt.Register(in)
		}
	}
	reg(2, watchInfo("", "pods", "", "", ""))
	reg(3, watchInfo("", "pods", "a", "", ""))
	reg(5, watchInfo("", "pods", "a", "p", ""))
	reg(7, watchInfo("", "pods", "b", "", ""))
	reg(11, watchInfo("", "nodes", "", "", ""))
	reg(13, watchInfo("", "nodes", "", "n1", ""))
	reg(17, watchInfo("apps", "deployments", "a", "", ""))
	cases := []struct {
		name string
		info *request.Info
		want int
	}{
		{"create in namespace", info("create", "", "pods", "a", ""), 2 + 3},
		{"update named object", info("update", "", "pods", "a", "p"), 2 + 3 + 5},
		{"patch other object", info("patch", "", "pods", "a", "q"), 2 + 3},
		{"delete in other namespace", info("delete", "", "pods", "b", "p"), 2 + 7},
		{"cluster-wide deletecollection", info("deletecollection", "", "pods", "", ""), 2},
		{"cluster-scoped named", info("update", "", "nodes", "", "n1"), 11 + 13},
		{"cluster-scoped other", info("update", "", "nodes", "", "n2"), 11},
		{"group matters", info("create", "apps", "deployments", "a", ""), 17},
		{"core deployments", info("create", "", "deployments", "a", ""), 0},
		{"other namespace of group", info("create", "apps", "deployments", "b", ""), 0},
		{"get", info("get", "", "pods", "a", "p"), 0},
		{"list", info("list", "", "pods", "a", ""), 0},
		{"watch", info("watch", "", "pods", "a", ""), 0},
		{"proxy", info("proxy", "", "pods", "a", "p"), 0},
		{"nil", nil, 0},
	}
	for _, c := range cases {
		if got := wt.interested(c.info); got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
}

// TestWatchTrackerNodeName checks the pods spec.nodeName exception: a pod
// watch selecting one node is served from an index and not counted.
func TestWatchTrackerNodeName(t *testing.T) {
	cases := []struct {
		name    string
		watch   *request.Info
		counted bool
	}{
		{"node selector", watchInfo("", "pods", "", "", "spec.nodeName=n1"), false},
		{"node selector ==", watchInfo("", "pods", "", "", "spec.nodeName==n1"), false},
		{"node and phase", watchInfo("", "pods", "a", "", "spec.nodeName=n1,status.phase=Running"), false},
		{"pods of any group", watchInfo("example.com", "pods", "", "", "spec.nodeName=n1"), false},
		{"empty node name", watchInfo("", "pods", "", "", "spec.nodeName="), true},
		{"not equal", watchInfo("", "pods", "", "", "spec.nodeName!=n1"), true},
		{"other field", watchInfo("", "pods", "", "", "status.phase=Running"), true},
		{"bad selector", watchInfo("", "pods", "", "", "spec.nodeName"), true},
		{"not pods", watchInfo("", "events", "", "", "spec.nodeName=n1"), true},
		{"no selector", watchInfo("", "pods", "", "", ""), true},
	}
	for _, c := range cases {
		wt := NewWatchTracker()
		forget := wt.Register(c.watch)
		write := info("update", c.watch.APIGroup, c.watch.Resource, "a", "p")
		want := 0
		if c.counted {
			want = 1
		}
		if got := wt.interested(write); got != want {
			t.Errorf("%s: got %d, want %d", c.name, got, want)
		}
		forget()
		if got := wt.interested(write); got != 0 || wt.len() != 0 {
			t.Errorf("%s: after forget %d interested, %d keys", c.name, got, wt.len())
		}
	}
}

// TestWatchTrackerForget checks that forget undoes exactly one
// registration, however often it is called, and that non-watches are
// ignored.
func TestWatchTrackerForget(t *testing.T) {
	wt := NewWatchTracker()
	w := watchInfo("", "pods", "a", "", "")
	f1 := wt.Register(w)
	f2 := wt.Register(w)
	write := info("create", "", "pods", "a", "")
	if got := wt.interested(write); got != 2 {
		t.Fatalf("got %d, want 2", got)
	}
	f1()
	f1()
	if got := wt.interested(write); got != 1 {
		t.Fatalf("after double forget: %d, want 1", got)
	}
	f2()
	if wt.len() != 0 {
		t.Fatalf("%d keys left", wt.len())
	}
	wt.Register(info("list", "", "pods", "a", ""))()
	wt.Register(nil)()
	if wt.len() != 0 {
		t.Fatalf("non-watch registered")
	}
}

// TestWatchTrackerInterestedAllocs checks the hot path allocates nothing.
func TestWatchTrackerInterestedAllocs(t *testing.T) {
	wt := NewWatchTracker()
	wt.Register(watchInfo("", "pods", "a", "p", ""))
	write := info("update", "", "pods", "a", "p")
	if n := testing.AllocsPerRun(100, func() { wt.interested(write) }); n != 0 {
		t.Errorf("Interested allocates %v times", n)
	}
}

// TestConcurrent feeds the trackers and the estimator from many goroutines;
// run with -race. Every registration is forgotten, so nothing is left.
func TestConcurrent(t *testing.T) {
	wt := NewWatchTracker()
	tr := NewTracker()
	e := New(DefaultConfig(), tr, wt)
	list := withQuery(t, info("list", "", "pods", "", ""), "limit=10")
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			ns := []string{"a", "b", ""}[g%3]
			for i := range 500 {
				forget := wt.Register(watchInfo("", "pods", ns, "", ""))
				tr.observe(t0, "pods", int64(i), int64(i)*1000)
				if est := e.estimateAt(t0, info("create", "", "pods", "a", "p"), 0); est.InitialSeats != 1 {
					t.Errorf("create: %+v", est)
				}
				if est := e.estimateAt(t0, list, 0); est.InitialSeats < 1 {
					t.Errorf("list: %+v", est)
				}
				forget()
				if i%100 == 0 {
					tr.prune(t0)
				}
			}
		})
	}
	wg.Wait()
	if wt.len() != 0 {
		t.Errorf("%d watch keys left", wt.len())
	}
}

// interested returns the number of registered watches that a request may
// have to notify: those on the whole resource, plus those on its namespace
// when it has one, plus those on its object when it names one. Read-only
// verbs (get, list, watch, proxy) notify nobody and get 0.
func (t *WatchTracker) interested(info *request.Info) int {
	if info == nil {
		return 0
	}
	switch info.Verb {
	case "get", "list", "watch", "proxy":
		return 0
	}
	return t.InterestedIn(WatchScope{Group: info.APIGroup, Resource: info.Resource, Namespace: info.Namespace, Name: info.Name})
}

// len returns the number of distinct watch scopes tracked.
func (t *WatchTracker) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.counts)
}
