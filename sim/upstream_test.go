package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/capacity"
	"github.com/apfproject/apf/config"
)

// runUpstreamExample runs examples/sim/upstream.yaml under the
// configuration beside it, with a static limit, or the adaptive one when
// static is 0.
func runUpstreamExample(t *testing.T, static int) *Result {
	t.Helper()
	w, err := LoadWorkload("../examples/sim/upstream.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../examples/sim/upstream-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := config.Decode(data, "upstream-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := w.NewSource()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Objects: objs, ServerConcurrencyLimit: static}
	if static == 0 {
		cfg.AdaptiveLimit = &capacity.Config{Floor: 4, Ceiling: 400}
	}
	r, err := Run(context.Background(), cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	if r.Upstream == nil || len(r.Upstream.Phases) != 3 {
		t.Fatalf("upstream result %+v, want three phases", r.Upstream)
	}
	return r
}

// serviceTime is the example's.
const serviceTime = 20 * time.Millisecond

// verdicts checks a phase against what the adaptive limit must achieve
// (docs/spec/adaptive-limit.md#what-must-hold), and returns what fails.
// Quantiles come from a sketch within 1% of the truth.
func verdicts(p PhaseResult) []string {
	var fails []string
	if p.CapacityUsed < 0.9 {
		fails = append(fails, "goodput")
	}
	if p.Queueing.P99 > serviceTime*101/100 {
		fails = append(fails, "upstream queueing")
	}
	for _, c := range p.Clients {
		if c.Client == "user-{i}" && c.Latency.P99 > 3*serviceTime*101/100 {
			fails = append(fails, "light users")
		}
	}
	return fails
}

// The three phases (an upstream of 20 ms requests serving 40 at
// once, then 10, then 40; a flood; four light users at 5 requests a
// second): from 10 s into each phase, the adaptive limit keeps goodput
// at 0.9 of the capacity or more, the upstream's own queueing p99 within
// a service time and the light users' p99 within three. A static limit
// of 10 loses three quarters of the goodput when the capacity is 40; one
// of 40 queues inside the upstream, and the light users with it, when the
// capacity is 10.
func TestUpstreamVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("three runs of 540,000 requests")
	}
	want := map[int][3]string{
		0:  {"", "", ""},
		10: {"goodput", "", "goodput"},
		40: {"", "upstream queueing,light users", ""},
	}
	limits := []int{0, 10, 40}
	if raceEnabled {
		// Single-threaded: the race detector has nothing to find in the
		// static runs.
		limits = limits[:1]
	}
	for _, static := range limits {
		r := runUpstreamExample(t, static)
		for i, p := range r.Upstream.Phases {
			got := strings.Join(verdicts(p), ",")
			if got != want[static][i] {
				t.Errorf("limit %d (0: adaptive), phase %d (capacity %d): fails %q, want %q; %+v", static, i, p.Capacity, got, want[static][i], p)
			}
			if static != 0 && (p.ServerLimit.Min != static || p.ServerLimit.Max != static) {
				t.Errorf("static limit %d, phase %d: server limit %+v", static, i, p.ServerLimit)
			}
		}
		if static == 0 {
			a := r.Adaptive
			if a == nil || a.Floor != 4 || a.Ceiling != 400 || len(a.Series.Limit) == 0 {
				t.Fatalf("adaptive result %+v", a)
			}
			// Each measurement finds the upstream's own service time:
			// only requests dispatched after the pin count, not those the
			// stepper dispatched at the same instant, under the old limit.
			if a.Baseline < serviceTime*99/100 || a.Baseline > serviceTime*101/100 {
				t.Errorf("baseline %v at the end, want the service time, %v", a.Baseline, serviceTime)
			}
			// It settles rather than move a seat up and down every
			// window: each change costs the levels a borrowing
			// adjustment.
			if n := a.Changes["grow"] + a.Changes["shrink"]; n > 60 {
				t.Errorf("%d changes for the latency in 3 minutes (%v), want a few dozen at most", n, a.Changes)
			}
			// The limit follows the knee: about 1.5 × the capacity
			// (docs/spec/adaptive-limit.md#the-law).
			for i, p := range r.Upstream.Phases {
				if lo, hi := float64(p.Capacity), 2*float64(p.Capacity); p.ServerLimit.Mean < lo || p.ServerLimit.Mean > hi {
					t.Errorf("phase %d (capacity %d): mean limit %.1f, want within [%v, %v]", i, p.Capacity, p.ServerLimit.Mean, lo, hi)
				}
			}
		}
	}
}

// The same workload and configuration give the same result, to the byte.
func TestUpstreamDeterministic(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("two single-threaded runs of 540,000 requests")
	}
	a, err := json.Marshal(runUpstreamExample(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(runUpstreamExample(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two runs of the same workload gave different results")
	}
}

// The upstream model itself: first come, first served on capacity
// servers, the capacity changing by phase, each request's time its own
// service plus its wait.
func TestUpstreamModel(t *testing.T) {
	u := newUpstreamSim(&Upstream{Phases: []UpstreamPhase{
		{Capacity: 2, For: Duration(100 * time.Millisecond)},
		{Capacity: 1, For: Duration(100 * time.Millisecond)},
		{Capacity: 3},
	}}, 10)
	ms := func(v int64) int64 { return v * int64(time.Millisecond) }
	type step struct {
		at, service   int64
		wait, latency time.Duration
	}
	for i, s := range []step{
		{0, 30, 0, 30 * time.Millisecond},                       // a server until 30
		{0, 50, 0, 50 * time.Millisecond},                       // the other until 50
		{10, 10, 20 * time.Millisecond, 30 * time.Millisecond},  // waits for 30, until 40
		{10, 10, 30 * time.Millisecond, 40 * time.Millisecond},  // behind it: waits for 40
		{95, 20, 0, 20 * time.Millisecond},                      // until 115
		{96, 10, 0, 10 * time.Millisecond},                      // capacity 2 still: until 106
		{190, 100, 0, 100 * time.Millisecond},                   // capacity 1: until 290
		{191, 10, 9 * time.Millisecond, 19 * time.Millisecond},  // full until capacity 3 at 200
		{192, 10, 8 * time.Millisecond, 18 * time.Millisecond},  // the third server at 200
		{193, 10, 17 * time.Millisecond, 27 * time.Millisecond}, // full again: waits for 210
		{300, 1, 0, time.Millisecond},
		{300, 1, 0, time.Millisecond},
		{300, 1, 0, time.Millisecond},
		{300, 1, time.Millisecond, 2 * time.Millisecond},       // the fourth waits
		{300, 1000, time.Millisecond, 1001 * time.Millisecond}, // after it: first come, first served
		{301, 1, 0, time.Millisecond},                          // a server is free
		{400, 1, 0, time.Millisecond},                          // one server busy until 1301
		{400, 1, 0, time.Millisecond},
		{400, 1, time.Millisecond, 2 * time.Millisecond},
	} {
		wait, lat := u.admit(ms(s.at), time.Duration(ms(s.service)))
		if wait != s.wait || lat != s.latency {
			t.Fatalf("request %d at %dms taking %dms: waits %v, answered after %v; want %v and %v", i, s.at, s.service, wait, lat, s.wait, s.latency)
		}
	}
}

func TestUpstreamWorkloadErrors(t *testing.T) {
	const ok = `
duration: 10s
clients:
- name: a
  user: alice
  arrival: {process: poisson, rate: 5}
  requests:
  - {verb: get, resource: pods, namespace: default, name: x, share: 1}
`
	w, err := ParseWorkload([]byte(ok + "upstream: {settle: 1s, phases: [{capacity: 4, for: 5s}, {capacity: 2}]}\n"))
	if err != nil {
		t.Fatalf("valid upstream refused: %v", err)
	}
	if u := w.Upstream; u == nil || len(u.Phases) != 2 || u.Phases[0].Capacity != 4 || time.Duration(u.Settle) != time.Second {
		t.Fatalf("upstream read as %+v", w.Upstream)
	}
	for _, c := range []struct{ upstream, want string }{
		{"{}", "upstream.phases: at least one phase is required"},
		{"{phases: [{capacity: 0}]}", "upstream.phases[0].capacity: must be between 1 and"},
		{"{phases: [{capacity: 3}, {capacity: 2}]}", "upstream.phases[0].for: must be positive"},
		{"{settle: -1s, phases: [{capacity: 3}]}", "upstream.settle: must not be negative"},
		{"{phases: [{capacity: 3, for: -1s}]}", "upstream.phases[0].for: must not be negative"},
		{"{phases: [{capacity: 3, size: 2}]}", `unknown field "size"`},
		{"{phases: [{capacity: 3, for: 20}]}", "must be a string"},
	} {
		_, err := ParseWorkload([]byte(ok + "upstream: " + c.upstream + "\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("upstream %s: error %v, want one containing %q", c.upstream, err, c.want)
		}
	}
}
