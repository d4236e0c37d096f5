package route

import (
	"math"
	"sync/atomic"
)

// A size-based estimate (SizeEstimate) learns from the route's own
// answers: each response's size, counted as it is written to the client,
// moves an exponentially weighted average by sizeWeight of the
// difference, so that the estimate follows what the route answers now
// while one odd response moves it by an eighth at most. Until the first
// response the estimate is MinSeats. The average is one atomic word per
// route, updated by compare-and-swap: no lock on the request path, and
// no update lost to a response finishing at the same moment.
//
// The seats are the average divided by BytesPerSeat, rounded up, between
// MinSeats and MaxSeats; the request's priority level bounds them
// further by its maximum seats per request, as it bounds every estimate.
// A request is priced before its own answer exists, so a route whose
// answers grow is underpriced for a few requests, and one whose answers
// shrink overpriced, until the average catches up.

// sizeWeight is the weight of the newest response in the average.
const sizeWeight = 1.0 / 8

type sizeState struct {
	// avg holds the average's float64 bits; 0 before the first response.
	avg atomic.Uint64
}

// EstimatedSeats is the work estimate of the route's next request: Seats when the
// route fixes it, the size-based estimate with BySize, 0 (the work
// estimator's) otherwise.
func (r *Route) EstimatedSeats() int {
	if r.Seats > 0 || r.BySize == nil {
		return r.Seats
	}
	b := r.BySize
	avg := math.Float64frombits(r.sizes.avg.Load())
	seats := int(math.Ceil(avg / float64(b.BytesPerSeat)))
	return min(max(seats, b.MinSeats), b.MaxSeats)
}

// ObserveResponse records the size of one of the route's responses, in
// bytes; a route without a size-based estimate ignores it.
func (r *Route) ObserveResponse(bytes int64) {
	if r.BySize == nil || bytes < 0 {
		return
	}
	for {
		old := r.sizes.avg.Load()
		avg := math.Float64frombits(old)
		next := float64(bytes)
		if old != 0 {
			next = avg + sizeWeight*(float64(bytes)-avg)
		}
		if next == 0 {
			// Keep "observed" distinct from "never": the smallest
			// positive average costs MinSeats all the same.
			next = math.SmallestNonzeroFloat64
		}
		if r.sizes.avg.CompareAndSwap(old, math.Float64bits(next)) {
			return
		}
	}
}

// adopt carries the learned sizes of prev's routes over to c's routes of
// the same name and estimate, so that a reload does not forget them.
func (c *Config) adopt(prev *Config) {
	if prev == nil {
		return
	}
	for _, r := range c.Routes {
		if r.BySize == nil {
			continue
		}
		for _, p := range prev.Routes {
			if p.Name == r.Name && p.BySize != nil && *p.BySize == *r.BySize {
				r.sizes = p.sizes
				break
			}
		}
	}
}
