package workestimate

import (
	"time"

	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/request"
)

// WatchCounter reports how many registered watches a write to a scope may
// have to notify. *WatchTracker implements it.
//
// The scope is passed by value, not as the request's *request.Info: an
// argument of an interface call escapes, and a pointer would move every
// request's attributes to the heap.
type WatchCounter interface {
	InterestedIn(scope WatchScope) int
}

// WatchScope is what a write touches: its resource, and its namespace and
// object name when it has them.
type WatchScope struct {
	Group, Resource, Namespace, Name string
}

// Estimator computes the seats a request occupies. It is safe for
// concurrent use as long as its ObjectCounts and WatchCounter are.
type Estimator struct {
	cfg     Config
	counts  ObjectCounts
	watches WatchCounter
	keys    keyCache
}

// New returns an Estimator. counts may be nil (every list then costs the
// minimum, as for a resource nobody counts) and so may watches (writes then
// have no final phase).
func New(cfg Config, counts ObjectCounts, watches WatchCounter) *Estimator {
	return &Estimator{cfg: cfg.normalized(), counts: counts, watches: watches}
}

// EstimateWithWatches returns the work estimate of a request: info is the
// request as request.Parse resolved it (a list or watch is priced by its
// Info.List), maxSeats the priority level's maximum seats (0 when unset or
// for an exempt level) and now the time object counts are judged against.
// It also returns the interested watch count of a write, for the
// watch_count_samples histogram; observed is true exactly when upstream
// observes that histogram: for writes other than serviceaccounts/token.
func (e *Estimator) EstimateWithWatches(now time.Time, info *request.Info, maxSeats int) (est fairqueue.WorkEstimate, watches int, observed bool) {
	if info == nil {
		// Upstream charges the maximum when it cannot tell what the
		// request is.
		return fairqueue.WorkEstimate{InitialSeats: capSeats(maxSeats, max(e.cfg.MaximumListSeats, e.cfg.MaximumMutatingSeats))}, 0, false
	}
	// Dispatch is by verb alone, as upstream: a non-resource DELETE or
	// PATCH reaches the mutating estimate, which finds no watches.
	switch info.Verb {
	case "list":
		return e.list(now, info, maxSeats), 0, false
	case "watch":
		if e.cfg.WatchListEstimated {
			return e.list(now, info, maxSeats), 0, false
		}
	case "create", "update", "patch", "delete":
		return e.mutating(info, maxSeats)
	}
	return e.minimum(), 0, false
}

// minimum is the estimate of a request that costs nothing special.
func (e *Estimator) minimum() fairqueue.WorkEstimate {
	return fairqueue.WorkEstimate{InitialSeats: e.cfg.MinimumSeats}
}

// capSeats returns the level's maximum seats bounded by an estimator cap;
// 0 (unset) means the cap.
func capSeats(levelMax, limit int) int {
	if levelMax <= 0 || levelMax > limit {
		return limit
	}
	return levelMax
}
