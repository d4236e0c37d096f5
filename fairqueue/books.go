package fairqueue

// The functions here move a request between a queue's lists and keep every
// running total that depends on those lists in step, so that no operation
// has to scan the queues: the waiting and executing counts and seats, the
// busy-queue count and requested seats that set the pace of virtual time,
// and the set of queues with waiters that dispatch scans.

// addWaiting appends r to q's waiting list.
func (qs *QueueSet) addWaiting(q *queue, r *Request) {
	if !q.busy() {
		qs.busyQueues++
	}
	if q.waiting.n == 0 {
		q.wpos = len(qs.waitingQueues)
		qs.waitingQueues = append(qs.waitingQueues, q)
		qs.waitingTags = append(qs.waitingTags, 0)
	}
	q.waiting.pushBack(r)
	qs.retag(q)
	q.initialSeatsSum += r.est.InitialSeats
	q.maxSeatsSum += r.maxSeats
	q.totalWorkSum += r.totalWork
	qs.seatsRequested += r.maxSeats
	qs.totWaiting++
	qs.totSeatsWaiting += r.maxSeats
	r.queue = q
	r.state = stateWaiting
}

// removeWaiting takes r out of q's waiting list.
func (qs *QueueSet) removeWaiting(q *queue, r *Request) {
	q.waiting.remove(r)
	q.initialSeatsSum -= r.est.InitialSeats
	q.maxSeatsSum -= r.maxSeats
	q.totalWorkSum -= r.totalWork
	qs.seatsRequested -= r.maxSeats
	qs.totWaiting--
	qs.totSeatsWaiting -= r.maxSeats
	if q.waiting.n == 0 {
		end := len(qs.waitingQueues) - 1
		last := qs.waitingQueues[end]
		qs.waitingQueues[q.wpos] = last
		qs.waitingTags[q.wpos] = qs.waitingTags[end]
		last.wpos = q.wpos
		qs.waitingQueues[end] = nil
		qs.waitingQueues = qs.waitingQueues[:end]
		qs.waitingTags = qs.waitingTags[:end]
		q.wpos = -1
	} else {
		qs.retag(q)
	}
	if !q.busy() {
		qs.busyQueues--
	}
}

// retag records the virtual finish of q's head in waitingTags, after q's
// head or nextDispatchR changed; it does nothing if nothing waits in q.
func (qs *QueueSet) retag(q *queue) {
	if q.wpos >= 0 {
		qs.waitingTags[q.wpos] = q.nextDispatchR + q.waiting.head.totalWork
	}
}

// addExecuting records that r, dispatched from q, now executes and holds
// its seats.
func (qs *QueueSet) addExecuting(q *queue, r *Request) {
	if !q.busy() {
		qs.busyQueues++
	}
	q.executing.pushBack(r)
	q.seatsInUse += r.maxSeats
	qs.seatsRequested += r.maxSeats
	qs.totExecuting++
	qs.totSeatsInUse += r.maxSeats
}

// endExecuting records that r's handler returned. Its seats stay held
// until releaseSeats.
func (qs *QueueSet) endExecuting(r *Request) {
	qs.totExecuting--
	q := r.queue
	if q == nil {
		qs.queueless.remove(r)
		return
	}
	q.executing.remove(r)
	if !q.busy() {
		qs.busyQueues--
	}
}

// releaseSeats frees r's seats and ends its life in the queue set.
func (qs *QueueSet) releaseSeats(r *Request) {
	qs.totSeatsInUse -= r.maxSeats
	if qs.cfg.DeadlineAware && r.queue != nil {
		qs.drain.add(qs.lastNs, r.totalWork)
	}
	if q := r.queue; q != nil {
		q.seatsInUse -= r.maxSeats
		if q.index >= 0 {
			qs.seatsRequested -= r.maxSeats
			qs.removeIfEmpty(q)
		}
	}
	r.queue = nil
	r.state = stateFree
}

// removeIfEmpty removes q if there are more queues than desired and q has
// nothing waiting or executing (attrition,
// docs/spec/fair-queuing.md#reconfiguration). Later queues move down one
// index, and robin with them, so round-robin order is kept.
//
// Seats other requests still hold in their final phase do not keep q, as
// upstream; those requests keep pointing at the removed queue (index -1),
// and releasing them later only updates its own count. Upstream instead
// reuses the stale index and can remove an unrelated queue, with its
// waiters; see doc.go.
func (qs *QueueSet) removeIfEmpty(q *queue) {
	if len(qs.queues) <= qs.cfg.Queues || q.busy() {
		return
	}
	i := q.index
	copy(qs.queues[i:], qs.queues[i+1:])
	qs.queues[len(qs.queues)-1] = nil
	qs.queues = qs.queues[:len(qs.queues)-1]
	for j := i; j < len(qs.queues); j++ {
		qs.queues[j].index = j
	}
	if qs.robin >= i {
		qs.robin--
	}
	qs.seatsRequested -= q.seatsInUse
	q.index = -1
}
