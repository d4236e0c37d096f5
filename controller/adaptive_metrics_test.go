package controller

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apfproject/apf/capacity"
)

// The apf_adaptive_* metrics say what the law does: the limit and its
// bounds, the baseline and sampled latencies, whether it is measuring,
// the answers observed by outcome and the changes by reason.
func TestAdaptiveMetrics(t *testing.T) {
	c, clk := newTest(t, StaticSource(decode(t, manifests(true))), 200)
	a, err := c.NewAdaptive(capacity.Config{Floor: 10, Ceiling: 100, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := a.Register(reg); err != nil {
		t.Fatal(err)
	}
	get := func(name string, labels map[string]string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
		next:
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					if labels[lp.GetName()] != lp.GetValue() {
						continue next
					}
				}
				if g := m.GetGauge(); g != nil {
					return g.GetValue()
				}
				return m.GetCounter().GetValue()
			}
		}
		t.Fatalf("no series %s%v", name, labels)
		return 0
	}
	if get("apf_adaptive_limit_seats", nil) != 10 || get("apf_adaptive_floor_seats", nil) != 10 ||
		get("apf_adaptive_ceiling_seats", nil) != 100 || get("apf_adaptive_measuring", nil) != 1 {
		t.Fatal("a new adaptive limit: want 10 seats, between 10 and 100, measuring")
	}
	for range 2000 {
		clk.Advance(time.Millisecond)
		a.Observe(8*time.Millisecond, 2, capacity.Answered)
	}
	for range 3 {
		clk.Advance(time.Millisecond)
		a.Observe(time.Second, 1, capacity.TimedOut)
	}
	if got := get("apf_adaptive_limit_seats", nil); got != float64(c.ServerConcurrencyLimit()) || got <= 10 {
		t.Errorf("apf_adaptive_limit_seats %v, server limit %d", got, c.ServerConcurrencyLimit())
	}
	if got := get("apf_adaptive_baseline_latency_seconds", nil); got != 0.004 {
		t.Errorf("baseline %v s, want 0.004 (8 ms over 2 seats)", got)
	}
	if got := get("apf_adaptive_sampled_latency_seconds", nil); got != 0.004 {
		t.Errorf("sampled %v s, want 0.004", got)
	}
	// A latency that never varies: the tolerance stays the configured
	// one, and the gradient is it.
	if tol := get("apf_adaptive_tolerance", nil); tol != capacity.DefaultTolerance || get("apf_adaptive_gradient", nil) != tol || get("apf_adaptive_measuring", nil) != 0 {
		t.Errorf("tolerance %v, gradient %v: want both %v, and no measurement", tol, get("apf_adaptive_gradient", nil), capacity.DefaultTolerance)
	}
	if get("apf_adaptive_observed_total", map[string]string{"outcome": "answered"}) != 2000 ||
		get("apf_adaptive_observed_total", map[string]string{"outcome": "timed-out"}) != 3 ||
		get("apf_adaptive_observed_total", map[string]string{"outcome": "overloaded"}) != 0 {
		t.Error("the answers observed are miscounted")
	}
	if got := get("apf_adaptive_limit_changes_total", map[string]string{"reason": "grow"}); got == 0 || got != float64(a.Changes(capacity.Grow)) {
		t.Errorf("changes for grow: %v, want %d", got, a.Changes(capacity.Grow))
	}
	if err := a.Register(reg); err == nil {
		t.Error("registered twice in one registry")
	}
}
