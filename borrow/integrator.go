package borrow

import (
	"math"
	"time"
)

// Integrator accumulates a piecewise-constant signal over time: the
// integrals of 1, x and x² since the start of the current window, plus the
// window's minimum and maximum. It is how a level's seat demand (seats in
// use plus seats waiting) becomes the statistics the adjustment works from.
//
// Time is always passed in; nothing reads a clock. The signal holds its
// value from one call to the next, so Set(t, x) closes the segment that
// started at the previous call with the previous value. An Integrator
// starts with value 0 and min = max = 0.
//
// An Integrator is plain data and is not safe for concurrent use: whoever
// feeds it must serialize Set with Reset.
type Integrator struct {
	last     time.Time
	x        float64
	elapsed  float64 // ∫ dt, seconds
	sumX     float64 // ∫ x dt
	sumXX    float64 // ∫ x² dt
	min, max float64
}

// Stats summarizes one window of an Integrator's signal.
type Stats struct {
	// Duration is the window's length in seconds.
	Duration float64
	// Average is the time-weighted mean of the signal; 0 when Duration is
	// not positive.
	Average float64
	// StdDev is the time-weighted population standard deviation,
	// sqrt(avg(x²) - avg(x)²); 0 when Duration is not positive or when
	// rounding makes that variance negative (upstream yields NaN there and
	// its only consumer turns it into 0).
	StdDev float64
	// Min and Max are the extreme values the signal took in the window,
	// including its value when the window started.
	Min, Max float64
}

// NewIntegrator returns an Integrator whose first window starts at now with
// the signal at 0.
func NewIntegrator(now time.Time) *Integrator {
	return &Integrator{last: now}
}

// Set records that the signal has the value x from now on.
func (g *Integrator) Set(now time.Time, x float64) {
	g.advance(now)
	g.x = x
	if x < g.min {
		g.min = x
	}
	if x > g.max {
		g.max = x
	}
}

// stats integrates up to now and summarizes the current window without
// ending it.
func (g *Integrator) stats(now time.Time) Stats {
	g.advance(now)
	s := Stats{Duration: g.elapsed, Min: g.min, Max: g.max}
	if g.elapsed <= 0 {
		return s
	}
	s.Average = g.sumX / g.elapsed
	if variance := g.sumXX/g.elapsed - s.Average*s.Average; variance >= 0 {
		s.StdDev = math.Sqrt(variance)
	}
	return s
}

// Reset returns the statistics of the window ending at now and starts a new
// one there, with min and max both at the current value.
func (g *Integrator) Reset(now time.Time) Stats {
	s := g.stats(now)
	g.elapsed, g.sumX, g.sumXX = 0, 0, 0
	g.min, g.max = g.x, g.x
	return s
}

// advance closes the constant segment [last, now). A now earlier than the
// previous call counts as no time passing (upstream's clock cannot go
// backwards; an injected one could, and must not corrupt the integrals).
func (g *Integrator) advance(now time.Time) {
	if now.Before(g.last) {
		return
	}
	dt := now.Sub(g.last).Seconds()
	g.last = now
	g.elapsed += dt
	g.sumX += g.x * dt
	g.sumXX += g.x * g.x * dt
}
