package fairqueue

import "time"

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

// Observer follows a queue set's occupancy: the borrowing adjustment
// integrates its Demand, and the level's utilization histograms follow all
// of it.
//
// Occupancy is called, with the time of the operation, every time an
// operation step changes the occupancy — several times in one call when
// one call enqueues and dispatches — so a time integrator fed from it sees
// the same values, high watermark included, as upstream's (an Integrator
// may be spared the instants that carry no weight, see there). It runs inside
// the queue set's call (under Level's lock, see Level.WithLock): it must
// be quick and must not call back. Because it runs under that lock, state
// it keeps needs no lock of its own if its readers use Level.WithLock.
type Observer interface {
	Occupancy(now time.Time, o Occupancy)
}

// Integrator is implemented by an Observer that only integrates the
// occupancy over time (time-weighted histograms, averages, a demand's
// extremes, which an instant at the same demand does not move). When
// IntegratesOverTime returns true, the queue set does not report an
// occupancy that lasts no time: an arrival dispatched at once, with
// nothing waiting before it, is reported executing, without the instant
// at which it waited (see startAtOnce). Such an instant has no weight
// in any integral, and the demand (seats in use plus seats waiting) is the
// same before and after the dispatch, so an integrator sees the same
// values either way, and the uncontended request saves a report.
type Integrator interface {
	Observer
	IntegratesOverTime() bool
}

// noteOccupancy reports the occupancy to the observer if it changed.
func (qs *QueueSet) noteOccupancy() {
	o := Occupancy{
		Waiting: qs.totWaiting, WaitingSeats: qs.totSeatsWaiting,
		Executing: qs.totExecuting, SeatsInUse: qs.totSeatsInUse,
	}
	if o == qs.occupancy {
		return
	}
	qs.occupancy = o
	if qs.obs != nil {
		qs.obs.Occupancy(qs.now, o)
	}
}
