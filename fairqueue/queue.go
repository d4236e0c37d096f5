package fairqueue

// queue is one fair queue: a FIFO of waiting requests, the requests it has
// dispatched that are still executing, and its place in virtual time.
type queue struct {
	// index is the queue's position in QueueSet.queues, or -1 once the
	// queue has been removed (see QueueSet.removeIfEmpty).
	index int
	// wpos is the queue's position in QueueSet.waitingQueues, or -1 when
	// nothing waits in it.
	wpos int
	// totalWorkSum, the work waiting, is what choosing a queue reads of
	// each queue in the hand; it sits beside the waiting list, which the
	// choice then writes, so that both are usually in one cache line.
	totalWorkSum SeatSeconds
	waiting      reqList
	// nextDispatchR is the virtual time at which the queue's head will be
	// dispatched in the virtual world.
	nextDispatchR SeatSeconds

	executing reqList
	// seatsInUse counts the seats held by requests dispatched from this
	// queue, including those in their final phase.
	seatsInUse int

	// Running sums over the waiting requests.
	initialSeatsSum int
	maxSeatsSum     int
}

// busy reports whether the queue counts as active for virtual time: it has
// waiting or executing requests (final-phase seats do not count).
func (q *queue) busy() bool { return q.waiting.n != 0 || q.executing.n != 0 }
