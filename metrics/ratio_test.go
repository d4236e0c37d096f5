package metrics

import (
	"maps"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// histogramOf gathers the one series of name whose label label has value.
func histogramOf(t *testing.T, got map[string]*dto.MetricFamily, name, label, value string) *dto.Histogram {
	t.Helper()
	for _, m := range got[name].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label && lp.GetValue() == value {
				return m.GetHistogram()
			}
		}
	}
	t.Fatalf("%s{%s=%q} not gathered", name, label, value)
	return nil
}

func cumulative(h *dto.Histogram) map[float64]uint64 {
	out := map[float64]uint64{}
	for _, b := range h.GetBucket() {
		out[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	return out
}

const sec = uint64(time.Second)

func TestRatioTimeWeighted(t *testing.T) {
	s, reg, clk := newTestSet(t)
	g := s.Level("L").DemandSeats // buckets .2 .4 .6 .8 1 1.2 ...
	g.SetDenominator(clk.now(), 4)
	g.Set(clk.now(), 2) // ratio 0.5
	clk.step(2 * time.Second)
	g.Set(clk.now(), 4) // ratio 1.0
	clk.step(time.Second)

	h := histogramOf(t, gather(t, reg), "apiserver_flowcontrol_demand_seats", pl, "L")
	want := map[float64]uint64{.2: 0, .4: 0, .6: 2 * sec, .8: 2 * sec, 1: 3 * sec, 1.2: 3 * sec,
		1.4: 3 * sec, 1.7: 3 * sec, 2: 3 * sec, 2.8: 3 * sec, 4: 3 * sec, 6: 3 * sec}
	got := cumulative(h)
	for ub, w := range want {
		if got[ub] != w {
			t.Errorf("bucket le=%v: %d, want %d", ub, got[ub], w)
		}
	}
	if h.GetSampleCount() != 3*sec {
		t.Errorf("count %d, want %d", h.GetSampleCount(), 3*sec)
	}
	if wantSum := 0.5*2e9 + 1.0*1e9; h.GetSampleSum() != wantSum {
		t.Errorf("sum %v, want %v", h.GetSampleSum(), wantSum)
	}
}

func TestRatioDenominatorChange(t *testing.T) {
	s, reg, clk := newTestSet(t)
	g := s.Level("L").SeatUtilization // buckets 0 .1 ... .9 .95 .99 1
	g.SetDenominator(clk.now(), 10)
	g.Set(clk.now(), 3) // 0.3
	clk.step(time.Second)
	g.SetDenominator(clk.now(), 5) // 0.6
	clk.step(time.Second)
	g.add(clk.now(), 2) // 1.0
	clk.step(time.Second)
	g.SetDenominator(clk.now(), 2) // 2.5: past every finite bound
	clk.step(time.Second)

	h := histogramOf(t, gather(t, reg), "apiserver_flowcontrol_priority_level_seat_utilization", pl, "L")
	got := cumulative(h)
	for ub, w := range map[float64]uint64{0: 0, .2: 0, .3: sec, .5: sec, .6: 2 * sec, .99: 2 * sec, 1: 3 * sec} {
		if got[ub] != w {
			t.Errorf("bucket le=%v: %d, want %d", ub, got[ub], w)
		}
	}
	if h.GetSampleCount() != 4*sec {
		t.Errorf("count %d, want %d (one second above the last bound)", h.GetSampleCount(), 4*sec)
	}
	if want := (0.3 + 0.6 + 1.0 + 2.5) * 1e9; math.Abs(h.GetSampleSum()-want) > 1e-3 {
		t.Errorf("sum %v, want %v", h.GetSampleSum(), want)
	}
	if r := g.currentRatio(); r != 2.5 {
		t.Errorf("Ratio %v, want 2.5", r)
	}
}

func TestRatioCollectIsIncremental(t *testing.T) {
	s, reg, clk := newTestSet(t)
	g := s.Level("L").WaitingRequests
	g.SetDenominator(clk.now(), 100)
	g.Set(clk.now(), 50) // 0.5
	clk.step(time.Second)
	h := histogramOf(t, gather(t, reg), "apiserver_flowcontrol_priority_level_request_utilization", "phase", "waiting")
	if h.GetSampleCount() != sec {
		t.Fatalf("first collect count %d, want %d", h.GetSampleCount(), sec)
	}
	// A second collect at the same time adds nothing; a later one adds the gap.
	h = histogramOf(t, gather(t, reg), "apiserver_flowcontrol_priority_level_request_utilization", "phase", "waiting")
	if h.GetSampleCount() != sec {
		t.Errorf("repeat collect count %d, want %d", h.GetSampleCount(), sec)
	}
	clk.step(time.Second)
	h = histogramOf(t, gather(t, reg), "apiserver_flowcontrol_priority_level_request_utilization", "phase", "waiting")
	if got := cumulative(h)[.5]; got != 2*sec {
		t.Errorf("le=.5 after 2s: %d, want %d", got, 2*sec)
	}
}

func TestRatioIgnoresTimeGoingBackwards(t *testing.T) {
	g := newRatioGauge(nil, []float64{1}, nil, time.Unix(100, 0), 0, 1)
	g.Set(time.Unix(99, 0), 0.5) // earlier than creation: credits nothing
	count, sum, _ := g.snapshot(time.Unix(100, 0))
	if count != 0 || sum != 0 {
		t.Fatalf("count %d sum %v, want 0 0", count, sum)
	}
	count, _, b := g.snapshot(time.Unix(101, 0))
	if count != sec || b[1] != sec {
		t.Errorf("count %d le=1 %d, want %d", count, b[1], sec)
	}
}

func TestRatioZeroDenominatorGoesToInf(t *testing.T) {
	g := newRatioGauge(nil, []float64{0, 1}, nil, time.Unix(0, 0), 0, 1)
	g.SetDenominator(time.Unix(0, 0), 0) // 0/0 = NaN
	count, _, b := g.snapshot(time.Unix(1, 0))
	if count != sec || b[0] != 0 || b[1] != 0 {
		t.Errorf("count %d buckets %v: want all time in +Inf", count, b)
	}
}

func TestRatioBoundaryIsInclusive(t *testing.T) {
	// Prometheus buckets are "less than or equal": a ratio exactly on a
	// bound belongs to that bound's bucket.
	g := newRatioGauge(nil, []float64{0, .5, 1}, nil, time.Unix(0, 0), 1, 2)
	_, _, b := g.snapshot(time.Unix(1, 0))
	if b[0] != 0 || b[.5] != sec {
		t.Errorf("buckets %v, want le=.5 to hold the second", b)
	}
}

func TestRatioConcurrentSetAndCollect(t *testing.T) {
	s, reg, _ := newTestSet(t)
	g := s.Level("L").DemandSeats
	done := make(chan struct{})
	go func() {
		defer close(done)
		base := time.Unix(2_000_000, 0)
		for i := range 1000 {
			g.Set(base.Add(time.Duration(i)*time.Millisecond), float64(i%7))
		}
	}()
	for range 20 {
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	}
	<-done
}

// TestRatioBucketWalk checks the bucket the ratio is credited to against a
// binary search, over random jumps and small steps, NaN and infinities.
func TestRatioBucketWalk(t *testing.T) {
	upper := []float64{0, .25, .5, .75, 1, 2}
	g := newRatioGauge(nil, upper, nil, time.Unix(0, 0), 0, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 0, .25, 2, 2.0001}
	for i := range 20000 {
		var r float64
		switch i % 4 {
		case 0:
			r = special[rng.IntN(len(special))]
		case 1:
			r = rng.Float64()*3 - .5
		default:
			r = g.ratio + (rng.Float64()-.5)*.3
			if math.IsNaN(r) || math.IsInf(r, 0) {
				r = 0
			}
		}
		g.setRatio(r)
		if want := sort.SearchFloat64s(upper, r); g.idx != want {
			t.Fatalf("ratio %v: bucket %d, want %d", r, g.idx, want)
		}
	}
}

// TestSetOccupancy checks that the four occupancy gauges of a level share
// one lock and that SetOccupancy gives the same histograms as separate
// Sets, unchanged numerators included.
func TestSetOccupancy(t *testing.T) {
	s, reg, clk := newTestSet(t)
	a, b := s.Level("A"), s.Level("B")
	if a.DemandSeats.mu != a.SeatUtilization.mu || a.DemandSeats.mu != a.WaitingRequests.mu || a.DemandSeats.mu != a.ExecutingRequests.mu {
		t.Fatal("the occupancy gauges of one level do not share a lock")
	}
	if a.DemandSeats.mu == b.DemandSeats.mu {
		t.Fatal("two levels share a lock")
	}
	for _, m := range []*LevelMetrics{a, b} {
		for _, g := range []*RatioGauge{m.DemandSeats, m.WaitingRequests, m.ExecutingRequests, m.SeatUtilization} {
			g.SetDenominator(clk.now(), 4)
		}
	}
	steps := [][4]float64{{1, 0, 1, 1}, {1, 0, 1, 1}, {3, 2, 1, 1}, {3, 0, 3, 3}, {0, 0, 0, 0}}
	for _, st := range steps {
		a.setOccupancy(clk.now(), st[0], st[1], st[2], st[3])
		b.DemandSeats.Set(clk.now(), st[0])
		b.WaitingRequests.Set(clk.now(), st[1])
		b.ExecutingRequests.Set(clk.now(), st[2])
		b.SeatUtilization.Set(clk.now(), st[3])
		clk.step(time.Second)
	}
	got := gather(t, reg)
	for _, name := range []string{"apiserver_flowcontrol_demand_seats", "apiserver_flowcontrol_priority_level_seat_utilization"} {
		ha, hb := histogramOf(t, got, name, pl, "A"), histogramOf(t, got, name, pl, "B")
		if ha.GetSampleCount() != hb.GetSampleCount() || ha.GetSampleSum() != hb.GetSampleSum() || !maps.Equal(cumulative(ha), cumulative(hb)) {
			t.Errorf("%s: SetOccupancy gave %v, separate Sets %v", name, ha, hb)
		}
	}
	// Gauges made with locks of their own are still set, one by one.
	own := &LevelMetrics{
		DemandSeats:       newRatioGauge(nil, []float64{1}, nil, clk.now(), 0, 1),
		WaitingRequests:   newRatioGauge(nil, []float64{1}, nil, clk.now(), 0, 1),
		ExecutingRequests: newRatioGauge(nil, []float64{1}, nil, clk.now(), 0, 1),
		SeatUtilization:   newRatioGauge(nil, []float64{1}, nil, clk.now(), 0, 1),
	}
	own.setOccupancy(clk.now(), 4, 3, 2, 1)
	if own.DemandSeats.currentRatio() != 4 || own.WaitingRequests.currentRatio() != 3 || own.ExecutingRequests.currentRatio() != 2 || own.SeatUtilization.currentRatio() != 1 {
		t.Error("SetOccupancy on gauges with separate locks did not set them")
	}
}

// TestRatioCreditMonotonicAndWall: a gauge credits the time between two
// changes as time.Time.Sub measures it, by the monotonic clock when both
// times carry a reading of it and by the wall clock otherwise, also when
// it keeps its times as offsets from an origin.
func TestRatioCreditMonotonicAndWall(t *testing.T) {
	start := time.Now() // with a monotonic reading
	g := newRatioGauge(nil, []float64{1}, nil, start, 0, 1)
	g.Set(start.Add(time.Second), 1)            // monotonic: 1 s at ratio 0
	g.Set(start.Add(3*time.Second).Round(0), 0) // wall only: 2 s at ratio 1
	count, sum, _ := g.snapshot(start.Add(4 * time.Second))
	if count != 4*sec || sum != 2e9 {
		t.Errorf("count %d, sum %v; want %d and 2e9", count, sum, 4*sec)
	}
}

// TestNoteOccupancy: a level that logs its occupancy changes exports the
// same histograms as one that sets them at once: each change is credited
// at its own time, whether the log is applied because it filled, because
// the gauges are read, or because a denominator changes; and every log
// application runs under the owner's lock.
func TestNoteOccupancy(t *testing.T) {
	s, reg, clk := newTestSet(t)
	direct, logged := s.Level("A"), s.Level("B")
	var (
		mu     sync.Mutex
		held   bool
		drains int
	)
	logged.LogUnder(func(f func()) {
		mu.Lock()
		defer mu.Unlock()
		held = true
		drains++
		f()
		held = false
	})
	if logged.log == nil {
		t.Fatal("LogUnder did not start a log")
	}
	denominators := func(d float64) {
		for _, m := range []*LevelMetrics{direct, logged} {
			for _, g := range []*RatioGauge{m.DemandSeats, m.WaitingRequests, m.ExecutingRequests, m.SeatUtilization} {
				g.SetDenominator(clk.now(), d)
			}
		}
	}
	denominators(4)
	compare := func(when string) {
		t.Helper()
		got := gather(t, reg)
		for _, name := range []string{"apiserver_flowcontrol_demand_seats", "apiserver_flowcontrol_priority_level_seat_utilization"} {
			ha, hb := histogramOf(t, got, name, pl, "A"), histogramOf(t, got, name, pl, "B")
			if ha.GetSampleCount() != hb.GetSampleCount() || ha.GetSampleSum() != hb.GetSampleSum() || !maps.Equal(cumulative(ha), cumulative(hb)) {
				t.Errorf("%s, %s: logged %v, set at once %v", when, name, hb, ha)
			}
		}
		for _, phase := range []string{phaseWaiting, phaseExecuting} {
			var ha, hb *dto.Histogram
			for _, m := range got["apiserver_flowcontrol_priority_level_request_utilization"].GetMetric() {
				var lv, ph string
				for _, lp := range m.GetLabel() {
					switch lp.GetName() {
					case pl:
						lv = lp.GetValue()
					case labelPhase:
						ph = lp.GetValue()
					}
				}
				if ph != phase {
					continue
				}
				if lv == "A" {
					ha = m.GetHistogram()
				} else if lv == "B" {
					hb = m.GetHistogram()
				}
			}
			if ha.GetSampleCount() != hb.GetSampleCount() || ha.GetSampleSum() != hb.GetSampleSum() || !maps.Equal(cumulative(ha), cumulative(hb)) {
				t.Errorf("%s, request utilization %s: logged %v, set at once %v", when, phase, hb, ha)
			}
		}
	}
	step := func(i int) {
		st := [4]float64{float64(i%7 + i%3), float64(i % 3), float64(i % 7), float64(i % 7)}
		direct.setOccupancy(clk.now(), st[0], st[1], st[2], st[3])
		mu.Lock()
		logged.NoteOccupancy(clk.now(), st[0], st[1], st[2], st[3])
		if held {
			t.Error("a log application ran outside the owner's lock")
		}
		mu.Unlock()
		clk.step(time.Duration(i%5+1) * time.Millisecond)
	}
	for i := range occupancyLogLen + 5 { // fills the log once
		step(i)
	}
	compare("after the log filled")
	for i := range 10 {
		step(i)
	}
	denominators(3) // applies the log first
	for i := range 10 {
		step(i)
	}
	clk.step(time.Second)
	compare("after a denominator change")
	if drains == 0 {
		t.Error("neither reading nor a new denominator applied the log")
	}
	if logged.log.n != 0 {
		t.Errorf("%d changes left in the log after a reading", logged.log.n)
	}
}

// add adds delta to the numerator at time now.
func (g *RatioGauge) add(now time.Time, delta float64) {
	g.mu.Lock()
	g.creditLocked(g.mu.ns(now))
	g.numerator += delta
	g.setRatio(g.numerator / g.denominator)
	g.mu.Unlock()
}

// currentRatio returns the current numerator/denominator.
func (g *RatioGauge) currentRatio() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ratio
}
