package fairqueue

// dispatch starts waiting requests while the limit allows
// (docs/spec/fair-queuing.md#dispatch).
// Each round picks the queue whose head would finish first in virtual
// time, nextDispatchR + head.totalWork, ties going to the first queue after
// the one last dispatched from. If that head does not fit, nothing else is
// dispatched either: the whole level waits for seats rather than let
// narrower requests starve a wide one.
//
// A paced level also stops at the gap after the latest start (pace.go).
//
// Every request started is appended to buf, except self (the arriving
// request, whose fate Arrive reports).
func (qs *QueueSet) dispatch(t int64, buf []*Request, self *Request) []*Request {
	for qs.totWaiting != 0 && qs.totSeatsInUse < qs.cfg.ConcurrencyLimit {
		if qs.cfg.Paced && !qs.pace.allows(t) {
			break
		}
		q := qs.pickQueue()
		r := q.waiting.head
		if !qs.fits(r.maxSeats) {
			qs.noAccommodation++
			break
		}
		qs.startFromQueue(t, q, r)
		if r != self {
			buf = append(buf, r)
		}
	}
	return buf
}

// pickQueue returns the waiting queue with the smallest virtual finish of
// its head. Upstream scans all queues round robin from robin+1 and keeps
// the first strict minimum; scanning only queues with waiters (their
// heads' virtual finishes, waitingTags) and breaking ties by distance from
// robin+1 picks the same queue.
//
// The smallest tag is found first, in a pass the compiler makes free of
// branches (a compare-and-keep that mispredicts half the time costs more
// than the whole pass); only then are the queues holding it looked at,
// and usually there is one.
func (qs *QueueSet) pickQueue() *queue {
	tags := qs.waitingTags
	least := tags[0]
	for _, tag := range tags[1:] {
		least = min(least, tag)
	}
	n := len(qs.queues)
	best, bestDist := -1, n
	for i, tag := range tags {
		if tag != least {
			continue
		}
		dist := qs.waitingQueues[i].index - qs.robin - 1
		if dist < 0 {
			dist += n
		}
		if dist < bestDist {
			best, bestDist = i, dist
		}
	}
	return qs.waitingQueues[best]
}

// fits reports whether a request of the given width may start now: it
// fits in the free seats, or it is wider than the whole limit and nothing
// executes (so it runs alone rather than never). Exempt levels always fit.
// As upstream, "nothing executes" ignores seats held by final phases.
func (qs *QueueSet) fits(seats int) bool {
	switch {
	case qs.cfg.Queues < 0:
		return true
	case seats > qs.cfg.ConcurrencyLimit:
		return qs.totExecuting == 0
	}
	return qs.totSeatsInUse+seats <= qs.cfg.ConcurrencyLimit
}

// startFromQueue dispatches r, the head of q.
func (qs *QueueSet) startFromQueue(t int64, q *queue, r *Request) {
	qs.removeWaiting(q, r)
	qs.start(t, q, r)
}

// start dispatches r, which has left q's waiting list (or, from
// startAtOnce, never joined it).
func (qs *QueueSet) start(t int64, q *queue, r *Request) {
	// A final phase wider than the whole limit is narrowed to the limit and
	// lengthened to keep its work. The waiting totals above were reduced by
	// the uncapped width, the same width they were raised by; upstream
	// subtracts the capped one and leaks the difference (an upstream quirk,
	// see docs/spec/fair-queuing.md#dispatch; deliberately fixed, see
	// doc.go).
	if limit := qs.cfg.ConcurrencyLimit; r.est.FinalSeats > limit {
		r.est.AdditionalLatency = r.est.finalWork().durationPerSeat(float64(limit))
		r.est.FinalSeats = limit
		r.maxSeats = r.est.MaxSeats()
	}
	qs.robin = q.index
	if qs.cfg.Paced {
		qs.pace.started(t, r.maxSeats, qs.cfg.ConcurrencyLimit)
	}
	r.startNs = t
	r.state = stateExecuting
	qs.addExecuting(q, r)
	qs.dispatched++
	q.nextDispatchR += r.totalWork
	qs.retag(q)
	qs.bound(q)
}

// startQueueless dispatches r on an exempt or reject level.
func (qs *QueueSet) startQueueless(t int64, r *Request) {
	r.startNs = t
	r.state = stateExecuting
	qs.queueless.pushBack(r)
	qs.totExecuting++
	qs.totSeatsInUse += r.maxSeats
	qs.dispatched++
}
