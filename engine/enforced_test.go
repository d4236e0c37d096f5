package engine

import (
	"testing"
	"time"

	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/request"
)

// At a small server limit (10 seats, as kube-apiserver's
// --max-requests-inflight 10 --max-mutating-requests-inflight 0) the
// levels start as upstream starts them: a new level's current limit is
// first nominal - floor(lendable/2), and the adjustment that follows the
// install, which sees no demand, gives the lending levels global-default
// and workload-low a current limit of 0 (kube-apiserver v1.37.2 reports
// the same nominal, lower and current limits for both when /readyz first
// answers 200). Their queue sets still enforce one seat: an ordinary
// user's request runs at once, before any periodic adjustment, and a
// second one waits for it.
func TestSmallLimitAdmitsAtOnce(t *testing.T) {
	d := newSerialDriver(t, Config{ServerConcurrencyLimit: 10})
	ch, err := d.install(base, CompileObjects(bootstrap.FlowSchemas(), bootstrap.PriorityLevels()))
	if err != nil || len(ch.Problems) != 0 {
		t.Fatal(err, ch.Problems)
	}
	adjs := map[string]Adjustment{}
	for _, a := range ch.Adjustments {
		adjs[a.Name] = a
	}
	for name, want := range map[string]struct{ initial, nominal, lower, current int }{
		"global-default": {1, 1, 0, 0},
		"workload-low":   {3, 5, 0, 0},
	} {
		a := adjs[name]
		if got := (struct{ initial, nominal, lower, current int }{a.Previous, a.Nominal, a.Lower, a.Current}); got != want {
			t.Errorf("%s starts with initial, nominal, lower and current limits %v, want %v as upstream", name, got, want)
		}
	}
	for _, l := range d.e.Levels() {
		a := l.Limits()
		if l.Exempt() {
			continue
		}
		got := l.Stats().ConcurrencyLimit
		if want := max(a.Current, 1); got != want || got != enforcedLimit(*a) {
			t.Errorf("level %s (nominal %d, current %d) enforces %d seats, want %d", l.Name(), a.Nominal, a.Current, got, want)
		}
	}

	place := func(user string) (*Level, *fairqueue.Request) {
		info, err := request.Parse("GET", "/api/v1/namespaces/ns/pods", "")
		if err != nil {
			t.Fatal(err)
		}
		a := &request.Attributes{Info: info, User: request.User{Name: user, Groups: []string{"system:authenticated"}}}
		p := d.snap.Place(base, a, base.Add(time.Minute))
		if p.Level.Name() != "global-default" {
			t.Fatalf("%s's request went to %s", user, p.Level.Name())
		}
		return p.Level, &fairqueue.Request{Hash: p.FlowHash, Work: p.Work}
	}
	l, first := place("alice")
	now := base.Add(time.Millisecond)
	if o := l.Arrive(now, first); o.Decision != fairqueue.Dispatched {
		t.Fatalf("an ordinary user's first request: %v, want it dispatched at once", o.Decision)
	}
	_, second := place("bob")
	if o := l.Arrive(now, second); o.Decision != fairqueue.Queued {
		t.Fatalf("a second request while the first runs: %v, want it queued", o.Decision)
	}
	if o := l.Finish(now.Add(time.Millisecond), first); len(o.Dispatched) != 1 || o.Dispatched[0] != second {
		t.Fatalf("the first request's end started %v, want the second", o.Dispatched)
	}
}
