package workestimate

import (
	"errors"
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/request"
)

// list estimates a list, or a watch that first lists. The steps are
// numbered as in docs/spec/work-estimation.md#lists-and-watches.
func (e *Estimator) list(now time.Time, info *request.Info, levelMax int) fairqueue.WorkEstimate {
	// 1. The level's maximum, bounded by the list cap.
	maxSeats := capSeats(levelMax, e.cfg.MaximumListSeats)

	// 2. A name, from the path or a metadata.name field selector.
	single := info.Name != ""

	// 3. The list options, decoded by request.Parse as the API server's
	// codec decodes them: options that do not decode cost the maximum.
	opts := &info.List
	if opts.Invalid {
		return fairqueue.WorkEstimate{InitialSeats: maxSeats}
	}

	// 4. A watch resuming from a given resourceVersion without initial
	// events only streams changes.
	if info.Verb == "watch" {
		if !opts.SendInitialEvents && opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return e.minimum()
		}
	}

	// 5. Storage or watch cache.
	fromCache := info.Verb == "watch" || !e.fromStorage(opts)

	// 6. What is stored.
	if e.counts == nil {
		return e.minimum()
	}
	stats, err := e.counts.Get(now, e.keys.key(info.APIGroup, info.Resource))
	switch {
	case err == nil:
	case errors.Is(err, ErrCountNotFound):
		return e.minimum()
	default: // stale, or a failure treated as stale
		stats = Stats{Count: staleObjectCount, AvgSizeBytes: unknownObjectSize}
	}

	// 7. Seats.
	var seats int64
	if e.cfg.SizeBasedListCost {
		seats = e.seatsBySize(stats, opts.Limit, fromCache, single, opts.Selector)
	} else {
		seats = e.seatsByCount(stats, opts.Limit, fromCache, single, opts.Selector)
	}

	// 8. Clamp.
	seats = max(seats, int64(e.cfg.MinimumSeats))
	seats = min(seats, int64(maxSeats))
	return fairqueue.WorkEstimate{InitialSeats: int(seats)}
}

// fromStorage reports whether the API server would send a list with these
// options to storage rather than answer it from its watch cache. Continue
// tokens and exact resource versions go to storage: the cache keeps no
// snapshots of the past.
func (e *Estimator) fromStorage(opts *request.ListOptions) bool {
	switch metav1.ResourceVersionMatch(opts.ResourceVersionMatch) {
	case metav1.ResourceVersionMatchExact:
		return true
	case metav1.ResourceVersionMatchNotOlderThan:
		return false
	case "":
		switch {
		case opts.Continue:
			return true
		case opts.Limit > 0 && opts.ResourceVersion != "" && opts.ResourceVersion != "0":
			return true
		case opts.ResourceVersion == "":
			return !e.cfg.ConsistentReadsFromCache
		}
		return false
	default:
		return true
	}
}

// limited returns the number of objects a list returns: all of them, or
// the page size when that is smaller.
func limited(count, limit int64) int64 {
	if limit > 0 && limit < count {
		return limit
	}
	return count
}

// seatsBySize is the size-based estimate: seats pay for the bytes of the
// listed objects held in memory at once.
func (e *Estimator) seatsBySize(s Stats, limit int64, fromCache, single, selector bool) int64 {
	avg := s.AvgSizeBytes
	if avg <= 0 && s.Count != 0 {
		avg = unknownObjectSize
	}
	n := limited(s.Count, limit)
	var objs int64
	switch {
	case single:
		objs = 1
	case fromCache:
		objs = n
	case selector:
		// Storage reads whole pages and filters them afterwards, so a
		// selective list touches at least half of everything.
		objs = max(n, s.Count/2)
	default:
		objs = n
	}
	mem := mulSat(objs, avg)
	if fromCache {
		// The cache streams its answer.
		mem = min(mem, cacheMemoryCap)
	}
	return ceilDiv(mem, e.cfg.BytesPerSeat)
}

// seatsByCount is the count-based estimate: seats pay for the objects
// processed.
func (e *Estimator) seatsByCount(s Stats, limit int64, fromCache, single, selector bool) int64 {
	n := limited(s.Count, limit)
	var objs int64
	switch {
	case single:
		objs = 1
	case fromCache:
		objs = s.Count
	case selector:
		objs = addSat(s.Count, n)
	default:
		objs = addSat(n, n)
	}
	return ceilDiv(objs, e.cfg.ObjectsPerSeat)
}

// ceilDiv returns ⌈a/b⌉ for b > 0, and 0 for a ≤ 0 (the caller clamps to
// the minimum).
func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a-1)/b + 1
}

// mulSat multiplies, saturating at MaxInt64 instead of wrapping; counts
// come from outside and may be absurd.
func mulSat(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return a * b
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// addSat adds, saturating at MaxInt64.
func addSat(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
