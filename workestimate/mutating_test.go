package workestimate

import (
	"testing"
	"time"

	"github.com/apfproject/apf/fairqueue"
)

// fixedWatches reports the same interested count for every request.
type fixedWatches int

func (n fixedWatches) InterestedIn(WatchScope) int { return int(n) }

// TestMutating checks docs/spec/work-estimation.md#writes: w ≥ 10 gives
// final = ceil(w/10), work = final*5ms, final = min(final, maxSeats ≤ 10),
// latency = work/final; fewer watches give {1,0,0}.
func TestMutating(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name     string
		verb     string
		watches  int
		levelMax int
		want     fairqueue.WorkEstimate
	}{
		{"no watches", "create", 0, 0, fairqueue.WorkEstimate{InitialSeats: 1}},
		{"9 watches", "update", 9, 0, fairqueue.WorkEstimate{InitialSeats: 1}},
		{"10 watches", "patch", 10, 0, fairqueue.WorkEstimate{InitialSeats: 1, FinalSeats: 1, AdditionalLatency: 5 * ms}},
		{"11 watches", "delete", 11, 0, fairqueue.WorkEstimate{InitialSeats: 1, FinalSeats: 2, AdditionalLatency: 5 * ms}},
		{"95 watches", "create", 95, 0, fairqueue.WorkEstimate{InitialSeats: 1, FinalSeats: 10, AdditionalLatency: 5 * ms}},
		{"100 watches", "create", 100, 0, fairqueue.WorkEstimate{InitialSeats: 1, FinalSeats: 10, AdditionalLatency: 5 * ms}},
		{"200 watches: 20 seats folded into 10", "create", 200, 0, fairqueue.WorkEstimate{InitialSeats: 1, FinalSeats: 10, AdditionalLatency: 10 * ms}},
		{"1000 watches", "update", 1000, 0, fairqueue.WorkEstimate{InitialSeats: 1, FinalSeats: 10, AdditionalLatency: 50 * ms}},
		{"level max 4", "create", 200, 4, fairqueue.WorkEstimate{InitialSeats: 1, FinalSeats: 4, AdditionalLatency: 25 * ms}},
		{"level max 3: 55ms over 3 seats", "create", 110, 3, fairqueue.WorkEstimate{InitialSeats: 1, FinalSeats: 3, AdditionalLatency: 18333333 * time.Nanosecond}},
		{"level max above cap", "create", 500, 50, fairqueue.WorkEstimate{InitialSeats: 1, FinalSeats: 10, AdditionalLatency: 25 * ms}},
		{"level max 1", "create", 30, 1, fairqueue.WorkEstimate{InitialSeats: 1, FinalSeats: 1, AdditionalLatency: 15 * ms}},
		{"other verbs cost 1: get", "get", 500, 0, fairqueue.WorkEstimate{InitialSeats: 1}},
		{"deletecollection", "deletecollection", 500, 0, fairqueue.WorkEstimate{InitialSeats: 1}},
		{"proxy", "proxy", 500, 0, fairqueue.WorkEstimate{InitialSeats: 1}},
		{"empty verb", "", 500, 0, fairqueue.WorkEstimate{InitialSeats: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := New(DefaultConfig(), nil, fixedWatches(c.watches))
			in := info(c.verb, "", "configmaps", "ns", "cm")
			got, w, observed := e.EstimateWithWatches(t0, in, c.levelMax)
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
			mutating := c.verb == "create" || c.verb == "update" || c.verb == "patch" || c.verb == "delete"
			if observed != mutating || (mutating && w != c.watches) {
				t.Errorf("watch count %d observed=%v, want %d observed=%v", w, observed, c.watches, mutating)
			}
		})
	}
}

// TestMutatingTokenExempt checks that serviceaccounts/token costs {1,0,0}
// and is not observed, while other serviceaccount writes are.
func TestMutatingTokenExempt(t *testing.T) {
	e := New(DefaultConfig(), nil, fixedWatches(1000))
	tok := info("create", "", "serviceaccounts", "ns", "sa")
	tok.Subresource = "token"
	got, _, observed := e.EstimateWithWatches(t0, tok, 0)
	if got != (fairqueue.WorkEstimate{InitialSeats: 1}) || observed {
		t.Errorf("token: got %+v observed=%v", got, observed)
	}
	sa := info("update", "", "serviceaccounts", "ns", "sa")
	got, w, observed := e.EstimateWithWatches(t0, sa, 0)
	if got.FinalSeats != 10 || w != 1000 || !observed {
		t.Errorf("serviceaccount: got %+v, %d observed=%v", got, w, observed)
	}
	other := info("create", "", "pods", "ns", "p")
	other.Subresource = "token"
	if got := e.estimateAt(t0, other, 0); got.FinalSeats != 10 {
		t.Errorf("pods/token: got %+v", got)
	}
}

// TestMutatingConfig checks the configurable knobs and the nil cases.
func TestMutatingConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.WatchesPerSeat = 5
	cfg.EventAdditionalDuration = 2 * time.Millisecond
	cfg.MaximumMutatingSeats = 3
	e := New(cfg, nil, fixedWatches(21))
	// ceil(21/5) = 5 seats of 2ms = 10ms, folded into 3 seats.
	want := fairqueue.WorkEstimate{InitialSeats: 1, FinalSeats: 3, AdditionalLatency: 3333333 * time.Nanosecond}
	if got := e.estimateAt(t0, info("create", "", "pods", "", ""), 0); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	// Work is rounded to the 10ns resolution of seat-seconds first.
	cfg.EventAdditionalDuration = 7
	e = New(cfg, nil, fixedWatches(5))
	want = fairqueue.WorkEstimate{InitialSeats: 1, FinalSeats: 1, AdditionalLatency: 10}
	if got := e.estimateAt(t0, info("create", "", "pods", "", ""), 0); got != want {
		t.Errorf("rounded: got %+v, want %+v", got, want)
	}
	// No watch counter: no final phase, still observed.
	e = New(DefaultConfig(), nil, nil)
	if got, w, obs := e.EstimateWithWatches(t0, info("delete", "", "pods", "", "p"), 0); got != (fairqueue.WorkEstimate{InitialSeats: 1}) || w != 0 || !obs {
		t.Errorf("nil watches: got %+v %d %v", got, w, obs)
	}
	// No request info: the level's maximum, or the larger estimator cap.
	if got := e.estimateAt(t0, nil, 0); got != (fairqueue.WorkEstimate{InitialSeats: 100}) {
		t.Errorf("nil info: got %+v", got)
	}
	if got := e.estimateAt(t0, nil, 6); got != (fairqueue.WorkEstimate{InitialSeats: 6}) {
		t.Errorf("nil info, level 6: got %+v", got)
	}
}

// TestDefaultConfig pins the upstream defaults
// (docs/spec/work-estimation.md#estimator-constants).
func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	if c.ObjectsPerSeat != 100 || c.BytesPerSeat != 100_000 || c.WatchesPerSeat != 10 ||
		c.EventAdditionalDuration != 5*time.Millisecond || c.MinimumSeats != 1 || c.MaximumMutatingSeats != 10 ||
		!c.SizeBasedListCost || !c.WatchListEstimated || c.ConsistentReadsFromCache {
		t.Errorf("DefaultConfig() = %+v", c)
	}
	if got := New(c, nil, nil).config().MaximumListSeats; got != 100 {
		t.Errorf("list cap = %d, want 100", got)
	}
	c.SizeBasedListCost = false
	if got := New(c, nil, nil).config().MaximumListSeats; got != 10 {
		t.Errorf("count-based list cap = %d, want 10", got)
	}
	if got := New(Config{}, nil, nil).config(); got.ObjectsPerSeat != 100 || got.MinimumSeats != 1 || got.MaximumListSeats != 10 {
		t.Errorf("zero Config normalized to %+v", got)
	}
}
