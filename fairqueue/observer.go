package fairqueue

import "time"

// Observer receives the level's seat demand, for the borrowing adjustment
// (facts §4.2 step 1): the seats held by dispatched requests (final phases
// included) plus the seats wanted by waiting ones, each request counting
// MaxSeats.
//
// SeatDemand is called, with the time of the operation, every time an
// operation step changes that number — several times in one call when one
// call enqueues and dispatches — so a time integrator fed from it sees the
// same values, high watermark included, as upstream's. It runs inside the
// queue set's call (under Level's lock): it must be quick and must not
// call back.
type Observer interface {
	SeatDemand(now time.Time, seats int)
}

// noteDemand reports the seat demand to the observer if it changed.
func (qs *QueueSet) noteDemand() {
	d := qs.totSeatsInUse + qs.totSeatsWaiting
	if d == qs.demand {
		return
	}
	qs.demand = d
	if qs.obs != nil {
		qs.obs.SeatDemand(qs.now, d)
	}
}
