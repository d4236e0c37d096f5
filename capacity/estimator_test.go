package capacity

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func mustNew(t *testing.T, cfg Config) *Estimator {
	t.Helper()
	e, err := New(t0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "want 1 ≤ floor ≤ ceiling"},
		{Config{Floor: 5, Ceiling: 4}, "want 1 ≤ floor ≤ ceiling"},
		{Config{Floor: 1, Ceiling: MaxLimit + 1}, "want 1 ≤ floor ≤ ceiling"},
		{Config{Floor: 5, Ceiling: 10, Initial: 11}, "initial limit 11 outside [5, 10]"},
		{Config{Floor: 5, Ceiling: 10, Tolerance: 1}, "tolerance 1"},
		{Config{Floor: 5, Ceiling: 10, Tolerance: -2}, "tolerance -2"},
		{Config{Floor: 5, Ceiling: 10, MinGradient: 1}, "min gradient"},
		{Config{Floor: 5, Ceiling: 10, Smoothing: 1.5}, "smoothing"},
		{Config{Floor: 5, Ceiling: 10, Trim: 1}, "trim"},
		{Config{Floor: 5, Ceiling: 10, ProbeJitter: -0.1}, "probe jitter"},
		{Config{Floor: 5, Ceiling: 10, ProbeShare: 2}, "probe share"},
		{Config{Floor: 5, Ceiling: 10, OverloadShare: -1}, "overload share"},
		{Config{Floor: 5, Ceiling: 10, Backoff: 1}, "backoff"},
		{Config{Floor: 5, Ceiling: 10, Window: -time.Second}, "want positive durations"},
		{Config{Floor: 5, Ceiling: 10, MinSamples: -1}, "min samples"},
		{Config{Floor: 5, Ceiling: 10, ProbeSamples: maxSamples + 1}, "probe samples"},
		{Config{Floor: 5, Ceiling: 10, FloorWindows: -1}, "floor windows"},
	} {
		_, err := New(t0, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.cfg, err, c.want)
		}
	}
	e := mustNew(t, Config{Floor: 3, Ceiling: 30})
	if e.Limit() != 3 || e.Config().Tolerance != DefaultTolerance || e.Config().Window != DefaultWindow {
		t.Errorf("defaults: limit %d, config %+v", e.Limit(), e.Config())
	}
	if !e.Status().Probing {
		t.Error("a new Estimator is not measuring its baseline")
	}
}

// Whatever it is fed — latencies, outcomes, seats, busy counts and times
// in any mix, times going backwards included — the limit never leaves
// [Floor, Ceiling], and every Decision says the limit in force; nor
// when the bounds move (SetBounds) now and then.
func TestLimitStaysWithinBounds(t *testing.T) {
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 7))
		floor := 1 + rng.IntN(20)
		ceiling := floor + rng.IntN(200)
		cfg := Config{Floor: floor, Ceiling: ceiling, Initial: floor + rng.IntN(ceiling-floor+1), Seed: seed}
		if rng.IntN(2) == 0 {
			cfg.MinSamples, cfg.ProbeSamples, cfg.FloorWindows = 1+rng.IntN(5), 1+rng.IntN(5), 1+rng.IntN(3)
			cfg.Window, cfg.ProbeInterval = time.Duration(rng.IntN(50))*time.Millisecond+1, time.Duration(1+rng.IntN(5))*time.Second
			cfg.Tolerance, cfg.MinGradient, cfg.Smoothing = 1+rng.Float64()*3, 0.01+rng.Float64()*0.98, 0.01+rng.Float64()*0.99
		}
		e := mustNew(t, cfg)
		now := t0
		for i := range 10_000 {
			now = now.Add(time.Duration(rng.IntN(int(20 * time.Millisecond))))
			if rng.IntN(500) == 0 {
				now = now.Add(-time.Second)
			}
			s := Sample{
				Latency: time.Duration(rng.ExpFloat64() * float64(time.Duration(1+rng.IntN(3))*20*time.Millisecond)),
				Seats:   rng.IntN(4) - 1,
				Outcome: Outcome(rng.IntN(12) / 10),
				Busy:    rng.IntN(2 * ceiling),
			}
			if rng.IntN(1000) == 0 {
				s.Latency = -time.Second
			}
			d := e.Observe(now, s)
			if rng.IntN(300) == 0 {
				floor = 1 + rng.IntN(20)
				ceiling = floor + rng.IntN(200)
				var err error
				if d, err = e.SetBounds(floor, ceiling); err != nil {
					t.Fatal(err)
				}
			}
			if d.Limit < floor || d.Limit > ceiling || d.Limit != e.Limit() {
				t.Fatalf("seed %d, answer %d: decision %+v, limit %d, want one limit in [%d, %d]", seed, i, d, e.Limit(), floor, ceiling)
			}
		}
	}
}

// An upstream whose latency never grows (its knee beyond the ceiling)
// takes the limit to the ceiling, whatever the bounds.
func TestFlatLatencyGrowsToCeiling(t *testing.T) {
	for _, c := range []struct {
		floor, ceiling int
		service        func() time.Duration
	}{
		{1, 50, constService(20 * time.Millisecond)},
		{4, 200, constService(50 * time.Millisecond)},
		{10, 300, lognormalService(100*time.Millisecond, 0.5, 1)},
		{2, 3, constService(time.Second)},
	} {
		e := mustNew(t, Config{Floor: c.floor, Ceiling: c.ceiling})
		m := newModel(e, t0, func(time.Duration) int { return 1 << 30 }, c.service)
		reached := time.Duration(-1)
		m.run(time.Minute, func(d Decision) {
			if reached < 0 && d.Limit == c.ceiling {
				reached = m.now
			}
		})
		if reached < 0 {
			t.Errorf("floor %d, ceiling %d: the limit never reached the ceiling (at %d after a minute)", c.floor, c.ceiling, e.Limit())
			continue
		}
		// Once there, it stays but for the measurements of the baseline
		// (which take longest, in share of the time, at one request a
		// second and two seats).
		m.reset()
		m.run(2*time.Minute, nil)
		if f := share(m.limits, func(l int) bool { return l == c.ceiling }); f < 0.9 {
			t.Errorf("floor %d, ceiling %d: at the ceiling for %.3f of the answers after reaching it at %v, want at least 0.9", c.floor, c.ceiling, f, reached)
		}
	}
}

// TestSetBounds: a ceiling lowered brings the limit down at once; raised
// again, the limit grows back to it by the law; bad bounds are refused
// and change nothing.
func TestSetBounds(t *testing.T) {
	e := mustNew(t, Config{Floor: 2, Ceiling: 50})
	m := newModel(e, t0, func(time.Duration) int { return 1 << 30 }, constService(20*time.Millisecond))
	m.run(time.Minute, nil)
	if e.Limit() != 50 {
		t.Fatalf("flat latency: limit %d after a minute, want the ceiling 50", e.Limit())
	}
	d, err := e.SetBounds(1, 20)
	if err != nil || d != (Decision{Limit: 20, Reason: Bounds}) || e.Changes(Bounds) != 1 {
		t.Fatalf("ceiling 20: %+v, %v, %d changes for bounds", d, err, e.Changes(Bounds))
	}
	if st := e.Status(); st.Floor != 1 || st.Ceiling != 20 {
		t.Errorf("status bounds %d:%d, want 1:20", st.Floor, st.Ceiling)
	}
	m.reset()
	m.run(2*time.Minute, nil)
	if f := share(m.limits, func(l int) bool { return l <= 20 }); f != 1 || len(m.limits) == 0 {
		t.Errorf("%.3f of the answers under the lowered ceiling, want all", f)
	}
	if d, err := e.SetBounds(0, 20); err == nil || d.Changed() {
		t.Errorf("floor 0: %+v, %v; want an error and no change", d, err)
	}
	if d, _ := e.SetBounds(1, 20); d.Changed() {
		t.Errorf("the same bounds again changed the limit: %+v", d)
	}
	if _, err := e.SetBounds(30, 60); err != nil || e.Limit() != 30 {
		t.Fatalf("floor raised to 30: limit %d, %v", e.Limit(), err)
	}
	m.run(3*time.Minute, nil)
	if e.Limit() != 60 {
		t.Errorf("ceiling raised to 60: limit %d after a minute, want 60", e.Limit())
	}
}

func share(v []int, f func(int) bool) float64 {
	n := 0
	for _, x := range v {
		if f(x) {
			n++
		}
	}
	return float64(n) / float64(max(len(v), 1))
}

// Past a knee, the limit settles near it: at least the knee (the upstream
// never idles while requests wait), at most Tolerance times it and a
// little (the upstream's own queue stays under a service time).
func TestSettlesNearKnee(t *testing.T) {
	const measure = time.Minute
	for _, c := range []struct {
		knee    int
		service func() time.Duration
	}{
		{40, constService(20 * time.Millisecond)},
		{10, constService(20 * time.Millisecond)},
		{3, constService(20 * time.Millisecond)},
		{100, constService(20 * time.Millisecond)},
		{40, lognormalService(20*time.Millisecond, 0.3, 2)},
		{25, lognormalService(100*time.Millisecond, 0.5, 3)},
	} {
		e := mustNew(t, Config{Floor: 1, Ceiling: 1000})
		m := newModel(e, t0, func(time.Duration) int { return c.knee }, c.service)
		m.run(20*time.Second, nil)
		m.reset()
		m.run(20*time.Second+measure, nil)
		avg := meanInt(m.limits)
		lo, hi := 0.9*float64(c.knee), 2*float64(c.knee)+1
		if avg < lo || avg > hi {
			t.Errorf("knee %d: mean limit %.1f, want within [%.1f, %.1f]", c.knee, avg, lo, hi)
		}
		// Near the knee: throughput at least 0.9 of the upstream's, the
		// upstream's own queue within a service time (p99).
		mean := meanDuration(serviceSample(c.service))
		thr := float64(m.completed) / measure.Seconds()
		full := float64(c.knee) / mean.Seconds()
		if thr < 0.9*full {
			t.Errorf("knee %d: %.0f answers/s, want at least 0.9 of %.0f", c.knee, thr, full)
		}
		if q := quantile(m.queueing, 0.99); q > mean {
			t.Errorf("knee %d: the upstream's queueing p99 %v, want at most a service time (%v)", c.knee, q, mean)
		}
	}
}

func meanDuration(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(max(len(ds), 1))
}

func serviceSample(f func() time.Duration) []time.Duration {
	out := make([]time.Duration, 20001)
	for i := range out {
		out[i] = f()
	}
	return out
}

// When the knee moves (autoscaling, a bad day), the limit follows it
// down within a second and back up within a few: 40 → 10 → 40.
func TestFollowsKnee(t *testing.T) {
	phase := func(t time.Duration) int {
		if t >= time.Minute && t < 2*time.Minute {
			return 10
		}
		return 40
	}
	e := mustNew(t, Config{Floor: 2, Ceiling: 400})
	m := newModel(e, t0, phase, constService(20*time.Millisecond))
	for i, want := range []int{40, 10, 40} {
		start := time.Duration(i) * time.Minute
		m.run(start+2*time.Second, nil)
		m.reset()
		m.run(start+time.Minute, nil)
		mean := meanInt(m.limits)
		if mean < 0.9*float64(want) || mean > 2*float64(want) {
			t.Errorf("phase %d (knee %d): mean limit %.1f after 2 s", i, want, mean)
		}
		if q := quantile(m.queueing, 0.99); q > 20*time.Millisecond {
			t.Errorf("phase %d (knee %d): the upstream's queueing p99 %v after 2 s, want at most 20ms", i, want, q)
		}
	}
}

// Overload answers back the limit off, however fast the latency: to the
// floor when they go on, and it grows again when they stop.
func TestOverloadBacksOff(t *testing.T) {
	e := mustNew(t, Config{Floor: 2, Ceiling: 100, Initial: 100})
	m := newModel(e, t0, func(time.Duration) int { return 1 << 30 }, constService(10*time.Millisecond))
	m.run(10*time.Second, nil)
	if e.Limit() != 100 {
		t.Fatalf("limit %d before the overload, want the ceiling", e.Limit())
	}
	m.answer = func(time.Duration) Outcome { return Overloaded }
	var reasons []Reason
	m.run(12*time.Second, func(d Decision) {
		if d.Changed() {
			reasons = append(reasons, d.Reason)
		}
	})
	if e.Limit() != 2 {
		t.Errorf("limit %d after 2 s of overload answers, want the floor", e.Limit())
	}
	for _, r := range reasons {
		if r != Overload && r != Probe && r != Probed {
			t.Errorf("a change for %v during the overload", r)
		}
	}
	if e.Changes(Overload) < 10 {
		t.Errorf("%d changes for overload, want many", e.Changes(Overload))
	}
	// A share under OverloadShare is ignored: a trickle of 5xx from a
	// broken handler is not overload.
	n := 0
	m.answer = func(time.Duration) Outcome {
		n++
		if n%50 == 0 {
			return Overloaded
		}
		return Answered
	}
	m.run(20*time.Second, nil)
	if e.Limit() != 100 {
		t.Errorf("limit %d after 8 s of 2%% 5xx, want back at the ceiling", e.Limit())
	}
	m.answer = func(time.Duration) Outcome { return TimedOut }
	m.run(25*time.Second, nil)
	if e.Limit() != 2 {
		t.Errorf("limit %d after time-outs, want the floor", e.Limit())
	}
}

// The baseline is measured again: an upstream that becomes slower for
// good (a deploy) first drives the limit to the floor, as its latency
// looks like queueing; the floor asking for less starts a measurement,
// which finds the new baseline, and the limit climbs back near the knee.
func TestRemeasuresSlowerUpstream(t *testing.T) {
	e := mustNew(t, Config{Floor: 2, Ceiling: 400})
	service := 20 * time.Millisecond
	m := newModel(e, t0, func(time.Duration) int { return 40 }, func() time.Duration { return service })
	m.run(20*time.Second, nil)
	if b := e.Status().Baseline; b != 20*time.Millisecond {
		t.Fatalf("baseline %v, want 20ms", b)
	}
	service = 60 * time.Millisecond
	m.run(40*time.Second, nil)
	if b := e.Status().Baseline; b != 60*time.Millisecond {
		t.Errorf("baseline %v 20 s after the upstream became slower, want 60ms", b)
	}
	m.reset()
	m.run(60*time.Second, nil)
	if mean := meanInt(m.limits); mean < 36 || mean > 80 {
		t.Errorf("mean limit %.1f after the new baseline, want near the knee (40)", mean)
	}
}

// A measurement of the baseline pins the limit to a quarter of itself,
// for a short time: the next one comes ProbeInterval later, give or take
// its jitter.
func TestProbePinsBriefly(t *testing.T) {
	e := mustNew(t, Config{Floor: 2, Ceiling: 400, Seed: 9})
	m := newModel(e, t0, func(time.Duration) int { return 20 }, constService(20*time.Millisecond))
	m.run(10*time.Second, nil)
	var starts []time.Duration
	var pinned []int
	var start time.Duration
	var longest time.Duration
	m.run(5*time.Minute, func(d Decision) {
		switch d.Reason {
		case Probe:
			starts = append(starts, m.now)
			pinned = append(pinned, d.Limit)
			start = m.now
		case Probed:
			longest = max(longest, m.now-start)
		}
	})
	if len(starts) < 8 || len(starts) > 10 {
		t.Errorf("%d measurements in 5 minutes, want about one per 30-36 s", len(starts))
	}
	for i := 1; i < len(starts); i++ {
		if gap := starts[i] - starts[i-1]; gap < DefaultProbeInterval || gap > DefaultProbeInterval*6/5+time.Second {
			t.Errorf("measurements %v apart, want 30 to 36 s", gap)
		}
	}
	for _, p := range pinned {
		if p > 10 {
			t.Errorf("a measurement pinned the limit at %d, want about a quarter of 30", p)
		}
	}
	if longest > 500*time.Millisecond {
		t.Errorf("a measurement lasted %v, want under half a second at 20 ms a request", longest)
	}
}

// With few answers, nothing is decided: a window waits for MinSamples
// latencies, however long it lasts, and the first measurement waits for
// its fifth.
func TestFewSamples(t *testing.T) {
	e := mustNew(t, Config{Floor: 2, Ceiling: 100, Initial: 10, MinSamples: 20, ProbeSamples: 25})
	now := t0
	obs := func(lat time.Duration) Decision {
		now = now.Add(time.Second)
		return e.Observe(now, Sample{Latency: lat, Seats: 1})
	}
	for range 4 {
		if d := obs(10 * time.Millisecond); d.Changed() || !e.Status().Probing {
			t.Fatalf("the first measurement ended on %+v with 4 samples", d)
		}
	}
	if d := obs(10 * time.Millisecond); d.Reason != Unchanged || e.Status().Probing || e.Status().Baseline != 10*time.Millisecond {
		t.Fatalf("after 5 samples past its timeout: %+v, status %+v; want the measurement over", d, e.Status())
	}
	for range 19 {
		if d := obs(10 * time.Millisecond); d.Changed() {
			t.Fatalf("a window decided %+v on fewer than 20 samples", d)
		}
	}
	if d := obs(10 * time.Millisecond); d.Reason != Grow {
		t.Fatalf("the 20th sample: %+v, want growth", d)
	}
}

// A limit nobody uses does not grow: the peak of a window's busy seats
// under half the limit holds it.
func TestAppLimitedHolds(t *testing.T) {
	e := mustNew(t, Config{Floor: 10, Ceiling: 100})
	m := newModel(e, t0, func(time.Duration) int { return 1 << 30 }, constService(10*time.Millisecond))
	m.busy = func(int) int { return 4 }
	m.run(time.Minute, nil)
	if e.Limit() != 10 {
		t.Errorf("limit %d with 4 of 10 seats busy, want 10", e.Limit())
	}
	m.busy = nil
	m.run(2*time.Minute, nil)
	if e.Limit() != 100 {
		t.Errorf("limit %d once the seats are in use, want the ceiling", e.Limit())
	}
}

// The same inputs give the same limits.
func TestDeterministic(t *testing.T) {
	run := func() []int {
		e := mustNew(t, Config{Floor: 1, Ceiling: 500, Seed: 42})
		m := newModel(e, t0, func(t time.Duration) int { return 10 + int(t/(20*time.Second))*7 }, lognormalService(20*time.Millisecond, 0.5, 5))
		m.run(2*time.Minute, nil)
		return m.limits
	}
	a, b := run(), run()
	if len(a) != len(b) {
		t.Fatalf("%d and %d answers", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("answer %d: limits %d and %d", i, a[i], b[i])
		}
	}
}

func TestObserveAllocatesNothing(t *testing.T) {
	e := mustNew(t, Config{Floor: 1, Ceiling: 500})
	now := t0
	rng := rand.New(rand.NewPCG(1, 2))
	allocs := testing.AllocsPerRun(10_000, func() {
		now = now.Add(time.Millisecond)
		e.Observe(now, Sample{Latency: time.Duration(rng.IntN(int(40 * time.Millisecond))), Seats: 1, Busy: 500})
	})
	if allocs != 0 {
		t.Errorf("Observe allocates %v times", allocs)
	}
}
