package fairqueue

// Occupancy is what a queue set holds at one moment: the requests waiting
// in its queues and executing, and the seats each group counts (MaxSeats
// per request; a request in its final phase keeps its seats in SeatsInUse
// after it has left Executing).
type Occupancy struct {
	Waiting, WaitingSeats int
	Executing, SeatsInUse int
}

// Demand is the seat demand of the borrowing adjustment
// (docs/spec/concurrency.md#demand-statistics): seats held by dispatched
// requests plus seats wanted by waiting ones.
func (o Occupancy) Demand() int { return o.SeatsInUse + o.WaitingSeats }

// Occupancy returns what the queue set holds now. A caller that follows
// the occupancy over time (the borrowing's demand, utilization histograms)
// reads it after each call that changes state: the instants inside one
// call weigh nothing in a time integral. The one instant that can matter
// to an extreme is an arrival's, which holds the request's MaxSeats as
// waiting before dispatch may narrow a final phase wider than the limit;
// a caller that keeps the demand's maximum counts it from the request's
// estimate.
func (qs *QueueSet) Occupancy() Occupancy {
	return Occupancy{
		Waiting: qs.totWaiting, WaitingSeats: qs.totSeatsWaiting,
		Executing: qs.totExecuting, SeatsInUse: qs.totSeatsInUse,
	}
}
