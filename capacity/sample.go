package capacity

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Outcome is what the upstream answered.
type Outcome uint8

const (
	// Answered is any answer that is not an overload signal: 2xx, 3xx,
	// 4xx but 429. Its latency is a sample.
	Answered Outcome = iota
	// Overloaded is an upstream's 5xx or 429: it said it is over its
	// capacity (or broken, which the limit cannot tell apart). Its
	// latency, often that of a quick refusal, is not a sample.
	Overloaded
	// TimedOut is a request that got no response headers before its
	// deadline. Its latency is only a lower bound, and not a sample.
	TimedOut
)

func (o Outcome) String() string {
	switch o {
	case Answered:
		return "answered"
	case Overloaded:
		return "overloaded"
	case TimedOut:
		return "timed-out"
	}
	return "unknown"
}

// Sample is one request's answer, observed when its response headers
// arrived (or its deadline passed).
type Sample struct {
	// Latency is the time from dispatch (the moment APF let the request
	// go to the upstream) to the response headers. Requests that are not
	// long-running only: a watch's or a stream's time is its client's.
	Latency time.Duration
	// Seats is the seats the request held; its latency counts per seat
	// (Latency/Seats), so that a costly list and a cheap get compare.
	// Less than 1 counts as 1.
	Seats int
	// Outcome is what the upstream answered.
	Outcome Outcome
	// Busy is the seats (or requests) executing when it was answered,
	// this one included, plus those waiting for seats in the server's
	// queues; 0 when unknown. The limit does not grow while the peak of a
	// window stays under half of it: a limit nobody uses or wants says
	// nothing about the upstream.
	Busy int
}

// perSeat returns the sample's latency per seat, in nanoseconds.
func (s *Sample) perSeat() float64 {
	return float64(max(s.Latency, 0)) / float64(max(s.Seats, 1))
}

const (
	// reservoirSize bounds the latencies a window or a measurement keeps:
	// beyond it, a uniform sample of them (reservoir sampling), enough
	// for a quantile within a few percent.
	reservoirSize = 256
	// maxSamples bounds MinSamples and ProbeSamples.
	maxSamples = 1_000_000
)

// reservoir keeps a uniform sample of the values added since its reset,
// in a buffer allocated once.
type reservoir struct {
	v    []float64
	seen int
}

func newReservoir() reservoir { return reservoir{v: make([]float64, 0, reservoirSize)} }

func (r *reservoir) reset() { r.v, r.seen = r.v[:0], 0 }

func (r *reservoir) add(x float64, rng *rand.Rand) {
	r.seen++
	if len(r.v) < cap(r.v) {
		r.v = append(r.v, x)
		return
	}
	if j := rng.IntN(r.seen); j < len(r.v) {
		r.v[j] = x
	}
}

// trimmedCV returns the coefficient of variation (standard deviation
// over mean) of the values kept, the largest trim of them left out, 0
// when fewer than two remain or their mean is 0. It sorts them in place.
func (r *reservoir) trimmedCV(trim float64) float64 {
	n := len(r.v)
	keep := max(n-int(trim*float64(n)), 1)
	if keep < 2 {
		return 0
	}
	slices.Sort(r.v)
	var sum, sq float64
	for _, x := range r.v[:keep] {
		sum += x
	}
	mean := sum / float64(keep)
	if mean <= 0 {
		return 0
	}
	for _, x := range r.v[:keep] {
		sq += (x - mean) * (x - mean)
	}
	return math.Sqrt(sq/float64(keep-1)) / mean
}

// trimmedMean returns the mean of the values kept, the largest trim of
// them left out (at least one value stays), 0 when there are none. It
// sorts them in place.
func (r *reservoir) trimmedMean(trim float64) float64 {
	n := len(r.v)
	if n == 0 {
		return 0
	}
	slices.Sort(r.v)
	keep := max(n-int(trim*float64(n)), 1)
	sum := 0.0
	for _, x := range r.v[:keep] {
		sum += x
	}
	return sum / float64(keep)
}
