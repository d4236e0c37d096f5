package engine

import (
	"time"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/request"
	"github.com/apfproject/apf/workestimate"
)

// Snapshot is one installed configuration with the levels' limits of the
// latest change: what requests are placed against. It is immutable and
// safe for concurrent use; every engine-wide input makes a new one.
type Snapshot struct {
	matcher *classify.Matcher
	levels  []*Level // by classify.PriorityLevel.Index
	est     *workestimate.Estimator
	timeout time.Duration
	// limits and maxSeats are each level's latest adjustment and its
	// per-request seat cap (0 before the first), by index.
	limits   []*Adjustment
	maxSeats []int
}

// Matcher returns the configuration's classification.
func (s *Snapshot) Matcher() *classify.Matcher { return s.matcher }

// Levels returns the levels in force, by classify.PriorityLevel.Index. The
// slice is shared: do not modify it.
func (s *Snapshot) Levels() []*Level { return s.levels }

// Limits returns the latest adjustment of the level of index i
// (classify.PriorityLevel.Index) as of the snapshot, nil before the first.
func (s *Snapshot) Limits(i int) *Adjustment { return s.limits[i] }

// Placement is where a request goes and what it costs.
type Placement struct {
	classify.Result
	// Level is the request's priority level (that of Result.PriorityLevel).
	Level *Level
	// Work is the request's estimated seats and final phase.
	Work fairqueue.WorkEstimate
	// Watches is the number of watches a write was estimated to notify;
	// WatchesObserved says whether the API server would count it in
	// watch_count_samples.
	Watches         int
	WatchesObserved bool
	// WaitLimit is how long the request may wait in its queue.
	WaitLimit time.Duration
}

// Place classifies a request arriving at now, estimates its work and
// derives its wait limit from its deadline (the zero time when it has
// none: the request timeout applies).
func (s *Snapshot) Place(now time.Time, a *request.Attributes, deadline time.Time) Placement {
	var timeLeft time.Duration
	if !deadline.IsZero() {
		// At least a nanosecond: a deadline already passed leaves no
		// time, not the request timeout.
		timeLeft = max(deadline.Sub(now), 1)
	}
	return s.PlaceClassified(now, a, s.matcher.Classify(a), timeLeft)
}

// PlaceClassified is Place for a request the caller classified already
// with this snapshot's Matcher, given the time the request has left (0
// when it has no deadline: the request timeout applies): a simulator
// sending the same few request templates millions of times keeps each
// template's Result for as long as the configuration stays, and knows
// each request's time left without a deadline to subtract.
func (s *Snapshot) PlaceClassified(now time.Time, a *request.Attributes, res classify.Result, timeLeft time.Duration) Placement {
	i := res.PriorityLevel.Index
	p := Placement{Result: res, Level: s.levels[i]}
	p.Work, p.Watches, p.WatchesObserved = s.est.EstimateWithWatches(now, &a.Info, s.maxSeats[i])
	if a.Route.Seats > 0 {
		p.Work = routeSeats(a.Route.Seats, s.maxSeats[i])
	}
	if timeLeft == 0 {
		timeLeft = s.timeout
	}
	p.WaitLimit = WaitLimit(timeLeft)
	return p
}

// routeSeats is the estimate of a request whose seats a server's route
// fixed (request.Route.Seats): those seats, bounded by the level's
// maximum per request (levelMax, 0 when not yet known), with no final
// phase.
func routeSeats(seats, levelMax int) fairqueue.WorkEstimate {
	if levelMax > 0 && seats > levelMax {
		seats = levelMax
	}
	return fairqueue.WorkEstimate{InitialSeats: seats}
}

// TimeAllowed is how long a request may take in all: the request timeout,
// or less when the request asks for less with a timeout of its own
// (request.Info.Timeout, from the timeout query parameter), unless it is
// long-running.
func TimeAllowed(requestTimeout time.Duration, info *request.Info) time.Duration {
	if info.Timeout > 0 && info.Timeout < requestTimeout && !info.IsLongRunning() {
		return info.Timeout
	}
	return requestTimeout
}
