package fairqueue

import "time"

// EstimatedServiceTime is G, the service time the queue set assumes for the
// initial phase of every request when it dispatches it: 3 ms. The guess is
// corrected by the actual duration when the request finishes.
const EstimatedServiceTime = 3 * time.Millisecond

// WorkEstimate says how many seats a request occupies and for how long
// after its handler returns (docs/spec/work-estimation.md).
//
// A request holds InitialSeats while its handler runs. If AdditionalLatency
// is positive it then holds FinalSeats for that much longer, without the
// client waiting (for example to account for watch notifications after a
// write). The queue set reserves MaxSeats for the whole time.
type WorkEstimate struct {
	InitialSeats      int
	FinalSeats        int
	AdditionalLatency time.Duration
}

// MaxSeats returns max(InitialSeats, FinalSeats), the number of seats the
// request holds from dispatch until its final phase ends.
func (w WorkEstimate) MaxSeats() int {
	return max(w.InitialSeats, w.FinalSeats)
}

// normalized returns w with negative fields clamped to zero. The queue set
// never sees a negative seat count or latency: they would corrupt the
// unsigned work sums.
func (w WorkEstimate) normalized() WorkEstimate {
	w.InitialSeats = max(w.InitialSeats, 0)
	w.FinalSeats = max(w.FinalSeats, 0)
	w.AdditionalLatency = max(w.AdditionalLatency, 0)
	return w
}

// totalWork returns InitialSeats×g + FinalSeats×AdditionalLatency, each
// rounded separately as upstream does; g is the service time assumed for
// the initial phase in nanoseconds (G, or a paced level's measure).
func (w WorkEstimate) totalWork(g int64) SeatSeconds {
	return seatsTimesNanos(w.InitialSeats, g) + w.finalWork()
}

// finalWork returns FinalSeats×AdditionalLatency.
func (w WorkEstimate) finalWork() SeatSeconds {
	return seatsTimesNanos(w.FinalSeats, int64(w.AdditionalLatency))
}
