package controller

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/apfproject/apf/capacity"
)

// Adaptive learns the controller's server concurrency limit from the
// upstream it protects (package capacity; docs/spec/adaptive-limit.md):
// the caller tells it, for each request that is not long-running, how
// long the upstream took to send the response headers and what it
// answered, and each limit the law decides on is put into force through
// SetServerConcurrencyLimit, the path the shared budget takes: the
// levels' nominal limits are derived again from their shares, lending
// and borrowing run as before, exempt levels are untouched, and the
// shadow configuration is told.
//
// Make one with Controller.NewAdaptive. Nothing on the request path
// changes when there is none: the controller does not call it; the
// caller does, after the answer. It is safe for concurrent use.
//
// An Adaptive owns the server concurrency limit: another caller of
// SetServerConcurrencyLimit would be overwritten at its next change, and
// would overwrite it. A shared budget steers its bounds instead
// (FitServerConcurrencyLimit).
type Adaptive struct {
	c *Controller
	// floor and ceiling are the bounds it was made with, which a share
	// of a shared budget divides.
	floor, ceiling int

	mu  sync.Mutex
	est *capacity.Estimator
	err error
	// outcomes counts the answers observed, by capacity.Outcome.
	outcomes [3]uint64
}

// errAdaptiveTwice refuses a second Adaptive on one controller.
var errAdaptiveTwice = errors.New("controller: the server concurrency limit is adaptive already")

// NewAdaptive makes the server concurrency limit adaptive, between
// cfg.Floor and cfg.Ceiling: it is set to cfg's initial limit now
// (cfg.Initial, the floor by default), and then follows what the returned
// Adaptive is told. A controller has one at most.
func (c *Controller) NewAdaptive(cfg capacity.Config) (*Adaptive, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.adaptive != nil {
		return nil, errAdaptiveTwice
	}
	if cfg.Seed == 0 {
		// Replicas measure their baselines at different moments.
		cfg.Seed = uint64(c.clock.Now().UnixNano())
	}
	est, err := capacity.New(c.clock.Now(), cfg)
	if err != nil {
		return nil, err
	}
	if err := c.setLimitLocked(est.Limit()); err != nil {
		return nil, err
	}
	a := &Adaptive{c: c, est: est, floor: cfg.Floor, ceiling: cfg.Ceiling}
	c.adaptive = a
	return a, nil
}

// Observe tells of one answer of the upstream: latency is the time from
// the request's dispatch (when Admit returned its Ticket) to the response
// headers, seats the seats it held (Ticket.Estimate().InitialSeats), and
// outcome what the upstream answered: capacity.Overloaded for a 5xx or a
// 429, capacity.TimedOut when no headers came before the request's
// deadline, capacity.Answered for anything else. Long-running requests
// (watches, streams) must not be observed: their time is their client's.
func (a *Adaptive) Observe(latency time.Duration, seats int, outcome capacity.Outcome) {
	c := a.c
	// The requests executing now, this one included, and those waiting
	// in the levels' queues: a limit nobody uses does not grow
	// (capacity.Sample.Busy), but one whose levels hold requests back is
	// used, even while borrowing has not yet given the busy level the
	// seats idle ones lend.
	k := c.kinds
	busy := k.mutating.executing.cur.Load() + k.readOnly.executing.cur.Load() +
		k.mutating.waiting.cur.Load() + k.readOnly.waiting.cur.Load()
	a.mu.Lock()
	defer a.mu.Unlock()
	if int(outcome) < len(a.outcomes) {
		a.outcomes[outcome]++
	}
	d := a.est.Observe(c.clock.Now(), capacity.Sample{Latency: latency, Seats: seats, Outcome: outcome, Busy: int(busy)})
	if d.Changed() {
		// Under a.mu, so that two decisions reach the controller in the
		// order they were made.
		a.err = c.SetServerConcurrencyLimit(d.Limit)
	}
}

// FitServerConcurrencyLimit makes seats, a replica's share of a shared
// budget that divides the ceiling (docs/spec/adaptive-limit.md#shared),
// the bound the limit is learned under, and returns the new ceiling: the
// largest server concurrency limit whose levels' nominal limits fit in
// seats (as Controller.FitServerConcurrencyLimit fits a static limit).
// The floor becomes the same part of the floor the Adaptive was made
// with, at least 1. The limit in force moves within the new bounds at
// once. With it, an Adaptive is what a shared budget steers in place of
// the controller.
func (a *Adaptive) FitServerConcurrencyLimit(seats int) (int, error) {
	if seats < 1 {
		return 0, fmt.Errorf("controller: %d seats: at least 1 is needed", seats)
	}
	c := a.c
	c.mu.Lock()
	ceiling := min(c.fitLocked(seats), a.ceiling)
	c.mu.Unlock()
	floor := min(max(1, int(math.Round(float64(a.floor)*float64(ceiling)/float64(a.ceiling)))), ceiling)
	a.mu.Lock()
	defer a.mu.Unlock()
	d, err := a.est.SetBounds(floor, ceiling)
	if err != nil {
		return 0, err
	}
	if d.Changed() {
		if a.err = c.SetServerConcurrencyLimit(d.Limit); a.err != nil {
			return 0, a.err
		}
	}
	return ceiling, nil
}

// Demand is the controller's Demand, for a shared budget that steers the
// Adaptive.
func (a *Adaptive) Demand() []LevelDemand { return a.c.Demand() }

// ObserveTicket is Observe for the request t admitted, whose response
// headers arrive now: its latency is counted from its dispatch, and its
// seats are its estimate's. Call it before t.Done. A watch is not
// observed.
func (a *Adaptive) ObserveTicket(t *Ticket, outcome capacity.Outcome) {
	if t.watch {
		return
	}
	a.Observe(a.c.clock.Now().Sub(t.start), max(t.req.Work.InitialSeats, 1), outcome)
}

// Status returns what the law knows: the limit, the baseline and sampled
// latencies, whether it is measuring the baseline.
func (a *Adaptive) Status() capacity.Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.est.Status()
}

// Changes returns how many times the limit changed for reason r.
func (a *Adaptive) Changes(r capacity.Reason) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.est.Changes(r)
}

// Err returns the error of the latest change the controller refused (a
// configuration whose levels cannot share the limit), nil when it took
// it.
func (a *Adaptive) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// Adaptive returns the controller's Adaptive, nil when its limit is not
// adaptive.
func (c *Controller) Adaptive() *Adaptive {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.adaptive
}
