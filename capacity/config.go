package capacity

import (
	"fmt"
	"math"
	"time"
)

// Config configures an Estimator. Floor and Ceiling are the operator's
// and have no default; every other field has a default, taken when it is
// zero (docs/spec/adaptive-limit.md#parameters says why each is what it
// is).
type Config struct {
	// Floor and Ceiling bound the limit: it never leaves [Floor,
	// Ceiling]. Floor is a limit the upstream sustains on its worst day;
	// Ceiling one it never needs more than. 1 ≤ Floor ≤ Ceiling.
	Floor, Ceiling int
	// Initial is the limit the Estimator starts at, before it has
	// measured anything; 0 means Floor. The first baseline is measured at
	// it, so it must not load the upstream past its knee.
	Initial int

	// Tolerance is how much slower than the baseline the sampled latency
	// may be before the limit falls: the queue allowance, as a multiple
	// of the baseline (1.3: requests may wait in the upstream 0.3 times
	// as long as they take), on an upstream whose latency varies little.
	// Default 1.3; more than 1.
	Tolerance float64
	// MaxTolerance bounds the allowance on a noisy upstream: each
	// measurement of the baseline sets the tolerance in force to 1 plus
	// the coefficient of variation of the latencies it measured, within
	// [Tolerance, MaxTolerance], so that a window's noise does not read
	// as a queue. Default the larger of 2 and Tolerance; Tolerance keeps
	// the tolerance fixed.
	MaxTolerance float64
	// MinGradient bounds a fall in one window: the limit falls at most to
	// this share of itself. Default 0.5; in (0, 1).
	MinGradient float64
	// Smoothing is the part of the way to its target the limit goes up in
	// one window (it goes down at once). Default 0.5; in (0, 1].
	Smoothing float64

	// Window is the shortest time between two updates of the limit.
	// Default 100 ms.
	Window time.Duration
	// MinSamples is the fewest latency samples a window decides on: with
	// fewer, the window stays open. Default 20.
	MinSamples int
	// Trim is the share of a window's slowest latencies left out of its
	// mean (a trimmed mean stands for the window, and for a measurement
	// of the baseline), so that a few stragglers do not halve the limit.
	// Default 0.05; in [0, 1).
	Trim float64

	// ProbeInterval is the time between two measurements of the
	// baseline, each delayed by up to ProbeJitter of it at random.
	// Defaults 30 s and 0.2 (jitter in [0, 1]).
	ProbeInterval time.Duration
	ProbeJitter   float64
	// ProbeShare is the share of the limit a measurement pins it to (at
	// least Floor). Default 0.25; in (0, 1].
	ProbeShare float64
	// ProbeSamples is the latency samples a measurement takes. Default
	// 25.
	ProbeSamples int
	// ProbeTimeout ends a measurement that has not got its samples, with
	// the ones it has when they are at least a fifth of ProbeSamples,
	// else keeping the old baseline. Default 2 s. The first measurement,
	// with no baseline to keep, waits for its fifth however long.
	ProbeTimeout time.Duration
	// FloorWindows is how many windows in a row at the floor that still
	// ask for less start a measurement at once: a baseline from a faster
	// past would otherwise keep the limit at the floor until the next
	// one. Default 5.
	FloorWindows int

	// OverloadShare is the share of a window's answers that are overload
	// answers (5xx, 429, timeouts) from which the limit backs off, by
	// Backoff. Defaults 0.05 and 0.8 (backoff in (0, 1)).
	OverloadShare float64
	Backoff       float64

	// Seed seeds the jitter of the measurements. Replicas of one server
	// should differ, so that they do not measure at the same moments.
	Seed uint64
}

// Defaults of the Config fields.
const (
	DefaultTolerance     = 1.3
	DefaultMaxTolerance  = 2.0
	DefaultMinGradient   = 0.5
	DefaultSmoothing     = 0.5
	DefaultWindow        = 100 * time.Millisecond
	DefaultMinSamples    = 20
	DefaultTrim          = 0.05
	DefaultProbeInterval = 30 * time.Second
	DefaultProbeJitter   = 0.2
	DefaultProbeShare    = 0.25
	DefaultProbeSamples  = 25
	DefaultProbeTimeout  = 2 * time.Second
	DefaultFloorWindows  = 5
	DefaultOverloadShare = 0.05
	DefaultBackoff       = 0.8
)

// MaxLimit bounds Ceiling: more seats than that is not a limit.
const MaxLimit = 1 << 24

// Validate reports what is wrong with c, nil when New would take it.
func (c Config) Validate() error {
	_, err := c.withDefaults()
	return err
}

// checkBounds says what is wrong with a floor and a ceiling.
func checkBounds(floor, ceiling int) error {
	if floor < 1 || ceiling < floor || ceiling > MaxLimit {
		return fmt.Errorf("capacity: floor %d and ceiling %d: want 1 ≤ floor ≤ ceiling ≤ %d", floor, ceiling, MaxLimit)
	}
	return nil
}

// withDefaults returns c with every zero field set to its default, and
// what is wrong with it, if anything.
func (c Config) withDefaults() (Config, error) {
	if err := checkBounds(c.Floor, c.Ceiling); err != nil {
		return c, err
	}
	if c.Initial == 0 {
		c.Initial = c.Floor
	}
	if c.Initial < c.Floor || c.Initial > c.Ceiling {
		return c, fmt.Errorf("capacity: initial limit %d outside [%d, %d]", c.Initial, c.Floor, c.Ceiling)
	}
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Tolerance, DefaultTolerance)
	def(&c.MaxTolerance, max(DefaultMaxTolerance, c.Tolerance))
	def(&c.MinGradient, DefaultMinGradient)
	def(&c.Smoothing, DefaultSmoothing)
	def(&c.Trim, DefaultTrim)
	def(&c.ProbeJitter, DefaultProbeJitter)
	def(&c.ProbeShare, DefaultProbeShare)
	def(&c.OverloadShare, DefaultOverloadShare)
	def(&c.Backoff, DefaultBackoff)
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	defDur(&c.Window, DefaultWindow)
	defDur(&c.ProbeInterval, DefaultProbeInterval)
	defDur(&c.ProbeTimeout, DefaultProbeTimeout)
	defInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defInt(&c.MinSamples, DefaultMinSamples)
	defInt(&c.ProbeSamples, DefaultProbeSamples)
	defInt(&c.FloorWindows, DefaultFloorWindows)

	in := func(v, lo, hi float64, loOpen, hiOpen bool) bool {
		if math.IsNaN(v) {
			return false
		}
		if v < lo || (loOpen && v == lo) || v > hi || (hiOpen && v == hi) {
			return false
		}
		return true
	}
	switch {
	case !in(c.Tolerance, 1, 100, true, false):
		return c, fmt.Errorf("capacity: tolerance %v: want more than 1, at most 100", c.Tolerance)
	case !in(c.MaxTolerance, c.Tolerance, 100, false, false):
		return c, fmt.Errorf("capacity: max tolerance %v: want at least the tolerance %v, at most 100", c.MaxTolerance, c.Tolerance)
	case !in(c.MinGradient, 0, 1, true, true):
		return c, fmt.Errorf("capacity: min gradient %v: want between 0 and 1", c.MinGradient)
	case !in(c.Smoothing, 0, 1, true, false):
		return c, fmt.Errorf("capacity: smoothing %v: want in (0, 1]", c.Smoothing)
	case !in(c.Trim, 0, 1, false, true):
		return c, fmt.Errorf("capacity: trim %v: want in [0, 1)", c.Trim)
	case !in(c.ProbeJitter, 0, 1, false, false):
		return c, fmt.Errorf("capacity: probe jitter %v: want in [0, 1]", c.ProbeJitter)
	case !in(c.ProbeShare, 0, 1, true, false):
		return c, fmt.Errorf("capacity: probe share %v: want in (0, 1]", c.ProbeShare)
	case !in(c.OverloadShare, 0, 1, true, false):
		return c, fmt.Errorf("capacity: overload share %v: want in (0, 1]", c.OverloadShare)
	case !in(c.Backoff, 0, 1, true, true):
		return c, fmt.Errorf("capacity: backoff %v: want between 0 and 1", c.Backoff)
	case c.Window < 0 || c.ProbeInterval < 0 || c.ProbeTimeout < 0:
		return c, fmt.Errorf("capacity: window %v, probe interval %v, probe timeout %v: want positive durations", c.Window, c.ProbeInterval, c.ProbeTimeout)
	case c.MinSamples < 1 || c.MinSamples > maxSamples:
		return c, fmt.Errorf("capacity: min samples %d: want 1 to %d", c.MinSamples, maxSamples)
	case c.ProbeSamples < 1 || c.ProbeSamples > maxSamples:
		return c, fmt.Errorf("capacity: probe samples %d: want 1 to %d", c.ProbeSamples, maxSamples)
	case c.FloorWindows < 1:
		return c, fmt.Errorf("capacity: floor windows %d: want at least 1", c.FloorWindows)
	}
	return c, nil
}
