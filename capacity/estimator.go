package capacity

import (
	"math"
	"math/rand/v2"
	"time"
)

// Reason says why the limit changed.
type Reason uint8

const (
	// Unchanged: the limit in force stays.
	Unchanged Reason = iota
	// Grow: the sampled latency was within the tolerance of the
	// baseline, and the limit was in use.
	Grow
	// Shrink: the sampled latency was beyond the tolerance.
	Shrink
	// Overload: the upstream's overload answers reached OverloadShare of
	// a window's answers.
	Overload
	// Probe: a measurement of the baseline pinned the limit low.
	Probe
	// Probed: the measurement is over, and the limit is back to what it
	// was.
	Probed
	// Bounds: the floor or the ceiling moved (SetBounds), and the limit
	// with them.
	Bounds

	numReasons
)

// Reasons lists every reason a limit changes for, in order, for a
// driver that counts them.
var Reasons = [...]Reason{Grow, Shrink, Overload, Probe, Probed, Bounds}

func (r Reason) String() string {
	switch r {
	case Unchanged:
		return "unchanged"
	case Grow:
		return "grow"
	case Shrink:
		return "shrink"
	case Overload:
		return "overload"
	case Probe:
		return "probe"
	case Probed:
		return "probed"
	case Bounds:
		return "bounds"
	}
	return "unknown"
}

// Decision is what an input did to the limit.
type Decision struct {
	// Limit is the limit in force after the input.
	Limit int
	// Reason is why it changed; Unchanged when it did not.
	Reason Reason
}

// Changed reports whether the limit changed.
func (d Decision) Changed() bool { return d.Reason != Unchanged }

// Status is the Estimator's state, for metrics and dumps.
type Status struct {
	// Limit is the limit in force, and Floor and Ceiling its bounds.
	Limit, Floor, Ceiling int
	// Baseline is the latency per seat of the upstream unloaded, as the
	// latest measurement found it (or a window found lower since); 0
	// before the first measurement.
	Baseline time.Duration
	// Sampled is the latency per seat of the latest window that decided;
	// 0 before the first.
	Sampled time.Duration
	// Gradient is Tolerance × Baseline / Sampled of that window, bounded
	// by MinGradient and Tolerance (the tolerance in force); 0 before
	// the first.
	Gradient float64
	// Tolerance is the tolerance in force: Config.Tolerance, or more on
	// an upstream whose latencies the latest measurement found noisy.
	Tolerance float64
	// Probing reports a measurement of the baseline in progress.
	Probing bool
	// NextProbe is when the next measurement starts, at the first answer
	// from then on (the zero time during one).
	NextProbe time.Time
}

// Estimator learns the upstream's concurrency limit. Create it with New.
// It is not safe for concurrent use: its driver serializes the inputs.
type Estimator struct {
	cfg Config
	rng *rand.Rand

	// limit is the learned limit, in [Floor, Ceiling], kept as a real so
	// that small steps add up; cur is the limit in force, rounded (or
	// pinned during a measurement).
	limit float64
	cur   int

	// baseline and sampled are latencies per seat, in nanoseconds.
	baseline, sampled, gradient float64
	// tol is the tolerance in force: Tolerance until a measurement sets
	// it from the noise it saw (Config.MaxTolerance).
	tol float64

	// The measurement of the baseline in progress, if probing.
	probing    bool
	probeStart time.Time
	nextProbe  time.Time

	// The window in progress: its start, its answers, its overload
	// answers, the peak of Sample.Busy (0: unknown) and its latencies
	// (or the measurement's).
	winStart           time.Time
	answers, overloads int
	peakBusy           int
	lat                reservoir
	// atFloor counts the windows in a row that asked for less at the
	// floor.
	atFloor int

	changes [numReasons]uint64
}

// New returns an Estimator at now, measuring its first baseline at
// cfg.Initial.
func New(now time.Time, cfg Config) (*Estimator, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &Estimator{
		cfg:   c,
		rng:   rand.New(rand.NewPCG(c.Seed, 0x61706661646170)),
		limit: float64(c.Initial),
		cur:   c.Initial,
		tol:   c.Tolerance,
		lat:   newReservoir(),
	}
	// The first measurement runs at the initial limit, which the
	// operator chose as safe: there is nothing to pin it lower than.
	e.probing, e.probeStart = true, now
	e.winStart = now
	return e, nil
}

// Config returns the configuration in force, defaults filled in.
func (e *Estimator) Config() Config { return e.cfg }

// Limit returns the limit in force.
func (e *Estimator) Limit() int { return e.cur }

// Changes returns how many times the limit changed for reason r.
func (e *Estimator) Changes(r Reason) uint64 {
	if r >= numReasons {
		return 0
	}
	return e.changes[r]
}

// Status returns the Estimator's state.
func (e *Estimator) Status() Status {
	s := Status{
		Limit:     e.cur,
		Floor:     e.cfg.Floor,
		Ceiling:   e.cfg.Ceiling,
		Baseline:  time.Duration(e.baseline),
		Sampled:   time.Duration(e.sampled),
		Gradient:  e.gradient,
		Tolerance: e.tol,
		Probing:   e.probing,
	}
	if !e.probing {
		s.NextProbe = e.nextProbe
	}
	return s
}

// SetBounds moves the floor and the ceiling (a shared budget gives each
// replica its part of them) and brings the learned limit within them at
// once, the limit in force with it. A measurement in progress goes on,
// its pinned limit moved within the new bounds too. What was learned
// stays: the baseline, and the limit where the bounds leave it.
func (e *Estimator) SetBounds(floor, ceiling int) (Decision, error) {
	if err := checkBounds(floor, ceiling); err != nil {
		return e.same(), err
	}
	e.cfg.Floor, e.cfg.Ceiling = floor, ceiling
	e.limit = min(max(e.limit, float64(floor)), float64(ceiling))
	n := int(math.Round(e.limit))
	if e.probing {
		n = min(max(e.cur, floor), ceiling)
	}
	return e.apply(n, Bounds), nil
}

// Observe feeds one answer, observed at now, and returns the limit in
// force after it, with why it changed. The limit changes at most once per
// Window outside a measurement, and only on an answer: without traffic
// there is nothing to learn, and nothing to protect.
func (e *Estimator) Observe(now time.Time, s Sample) Decision {
	if e.probing {
		return e.probe(now, &s)
	}
	if !now.Before(e.nextProbe) {
		return e.startProbe(now)
	}
	e.answers++
	if s.Outcome != Answered {
		e.overloads++
	} else if now.Add(-s.Latency).After(e.winStart) {
		// Only a request dispatched after the window began tells of the
		// limit in force: one dispatched before, or at the same instant
		// (its driver may not have applied the new limit yet), saw the
		// upstream as an older limit loaded it.
		e.lat.add(s.perSeat(), e.rng)
	}
	e.peakBusy = max(e.peakBusy, s.Busy)
	if now.Sub(e.winStart) < e.cfg.Window {
		return e.same()
	}
	if e.answers >= e.cfg.MinSamples && float64(e.overloads) >= e.cfg.OverloadShare*float64(e.answers) {
		e.atFloor = 0
		return e.set(now, e.limit*e.cfg.Backoff, Overload)
	}
	if e.lat.seen < e.cfg.MinSamples {
		// Too few samples to decide on: the window stays open.
		return e.same()
	}
	return e.update(now)
}

// update closes a window that has its samples: the gradient of the
// baseline to the sampled latency moves the limit.
func (e *Estimator) update(now time.Time) Decision {
	sampled := e.lat.trimmedMean(e.cfg.Trim)
	e.sampled = sampled
	if sampled < e.baseline {
		// Faster than the baseline: the upstream got faster (or the
		// measurement was unlucky). The baseline follows down at once;
		// up, only a measurement moves it.
		e.baseline = max(sampled, 1)
	}
	tol := e.tol
	g := tol
	if sampled > 0 {
		g = min(max(tol*e.baseline/sampled, e.cfg.MinGradient), tol)
	}
	e.gradient = g
	switch {
	case math.Abs(g-1) < deadBand:
		// Close enough to the tolerance: the limit holds, rather than
		// move a seat up and down on noise.
		e.atFloor = 0
		return e.set(now, e.limit, Unchanged)
	case g < 1:
		if e.limit <= float64(e.cfg.Floor) {
			if e.atFloor++; e.atFloor >= e.cfg.FloorWindows {
				// The floor still asks for less: the baseline may be
				// from a faster past. Measure it again now.
				e.atFloor = 0
				return e.startProbe(now)
			}
		}
		return e.set(now, e.limit*g, Shrink)
	case g > 1 && (e.peakBusy == 0 || 2*e.peakBusy >= e.cur):
		e.atFloor = 0
		return e.set(now, e.limit+e.cfg.Smoothing*(e.limit*g-e.limit), Grow)
	default:
		e.atFloor = 0
		return e.set(now, e.limit, Unchanged)
	}
}

// deadBand is how close to 1 a gradient holds the limit.
const deadBand = 0.05

// set makes v, bounded, the learned limit, starts a new window and
// returns the decision. The limit in force follows the learned one when
// they are a seat apart or more, or when the learned one reaches a
// bound: a latency that hovers at the tolerance would otherwise move the
// limit a seat up and down every window, and each change costs the
// levels a borrowing adjustment.
func (e *Estimator) set(now time.Time, v float64, why Reason) Decision {
	e.limit = min(max(v, float64(e.cfg.Floor)), float64(e.cfg.Ceiling))
	e.newWindow(now)
	n := int(math.Round(e.limit))
	if math.Abs(e.limit-float64(e.cur)) < 1 && n != e.cfg.Floor && n != e.cfg.Ceiling {
		return e.same()
	}
	return e.apply(n, why)
}

// apply puts n in force.
func (e *Estimator) apply(n int, why Reason) Decision {
	if n == e.cur || why == Unchanged {
		return e.same()
	}
	e.cur = n
	e.changes[why]++
	return Decision{Limit: n, Reason: why}
}

func (e *Estimator) same() Decision { return Decision{Limit: e.cur} }

func (e *Estimator) newWindow(now time.Time) {
	e.winStart = now
	e.answers, e.overloads, e.peakBusy = 0, 0, 0
	e.lat.reset()
}

// startProbe starts a measurement of the baseline: the limit is pinned to
// ProbeShare of itself (at least the floor), low enough for the upstream's
// own queue to drain, but not so low that the levels' queues fill in the
// time the measurement takes.
func (e *Estimator) startProbe(now time.Time) Decision {
	e.probing, e.probeStart = true, now
	e.newWindow(now)
	pin := max(e.cfg.Floor, int(math.Ceil(e.limit*e.cfg.ProbeShare)))
	return e.apply(min(pin, e.cur), Probe)
}

// probe feeds an answer to the measurement in progress, and ends it once
// it has its samples, or has run out of time.
func (e *Estimator) probe(now time.Time, s *Sample) Decision {
	if s.Outcome == Answered && now.Add(-s.Latency).After(e.probeStart) {
		// Dispatched after the limit was pinned: once the requests from
		// before had drained, so that it found the upstream unloaded.
		e.lat.add(s.perSeat(), e.rng)
	}
	n, least := e.lat.seen, max(1, e.cfg.ProbeSamples/5)
	over := n >= e.cfg.ProbeSamples
	if !over && now.Sub(e.probeStart) >= e.cfg.ProbeTimeout && (n >= least || e.baseline > 0) {
		over = true
	}
	if !over {
		return e.same()
	}
	if n >= least {
		e.baseline = max(e.lat.trimmedMean(e.cfg.Trim), 1)
		e.tol = min(max(1+e.lat.trimmedCV(e.cfg.Trim), e.cfg.Tolerance), e.cfg.MaxTolerance)
	}
	e.probing = false
	e.nextProbe = now.Add(time.Duration(float64(e.cfg.ProbeInterval) * (1 + e.cfg.ProbeJitter*e.rng.Float64())))
	e.atFloor = 0
	e.newWindow(now)
	return e.apply(int(math.Round(e.limit)), Probed)
}
