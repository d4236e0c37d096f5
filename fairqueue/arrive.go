package fairqueue

import (
	"time"

	"github.com/apfproject/apf/shuffle"
)

// Arrive admits r, whose Hash, Work and Tag the caller has set, and says
// what happened to it:
//   - Dispatched: r holds its seats; run it, then call Finish.
//   - Queued: r waits; a later call will return it among the dispatched
//     requests, unless Cancel removes it first.
//   - Rejected: r.Reason() says why; r is free again.
//
// Exempt levels always dispatch. Reject levels dispatch if the request
// fits (or is wider than the whole limit and nothing executes) and reject
// with ConcurrencyLimit otherwise. Queue levels pick the least loaded
// queue of the flow's hand, reject with QueueFull only when the level is
// saturated and that queue is at its length limit, and otherwise enqueue r
// and dispatch as much as fair order and the limit allow.
//
// That dispatch can, in rare tie-breaking cases, start requests other than
// r: they are appended to buf (r itself never is: its fate is the
// Decision). Arrive panics if r is still in flight (queued, executing or
// in its final phase): a reused Request must be over first.
func (qs *QueueSet) Arrive(now time.Time, r *Request, buf []*Request) (Decision, []*Request) {
	if r.state != stateFree {
		panic("fairqueue: Arrive of a Request that is still in flight")
	}
	t := qs.sync(now)
	qs.begin(r, t)

	switch {
	case qs.cfg.Queues < 0:
		qs.startQueueless(t, r)
		return Dispatched, buf
	case qs.cfg.Queues == 0:
		if !qs.fits(r.maxSeats) {
			qs.reject(r, ConcurrencyLimit)
			return Rejected, buf
		}
		qs.startQueueless(t, r)
		return Dispatched, buf
	}

	q := qs.chooseQueue(r.Hash)
	r.queueIdx = int32(q.index)
	if saturated := qs.totSeatsInUse >= qs.cfg.ConcurrencyLimit; saturated {
		if q.waiting.n >= qs.cfg.QueueLengthLimit {
			qs.reject(r, QueueFull)
			return Rejected, buf
		}
		if qs.cfg.DeadlineAware && r.WaitLimit > 0 && qs.lateArrival(t, q, r) {
			qs.reject(r, TimeOut)
			return Rejected, buf
		}
	}
	if !q.busy() {
		q.nextDispatchR = qs.r
	}
	if !qs.queueAlways && qs.totWaiting == 0 && qs.totSeatsInUse < qs.cfg.ConcurrencyLimit && qs.fits(r.maxSeats) &&
		(!qs.cfg.Paced || qs.pace.allows(t)) {
		qs.startAtOnce(t, q, r)
		return Dispatched, buf
	}
	qs.addWaiting(q, r)
	r.queueLen = int32(min(q.waiting.n, 1<<31-1))
	qs.bound(q)
	buf = qs.dispatch(t, buf, r)
	if r.state == stateExecuting {
		return Dispatched, buf
	}
	return Queued, buf
}

// begin records r's arrival at t (ns since base).
func (qs *QueueSet) begin(r *Request, t int64) {
	r.qs, r.queue = qs, nil
	r.est = r.Work.normalized()
	r.maxSeats = r.est.MaxSeats()
	r.serviceNs = qs.assumedService()
	r.totalWork = r.est.totalWork(r.serviceNs)
	r.arrivalR = qs.r
	r.arriveNs, r.startNs = t, -1
	r.queueLen, r.queueIdx, r.reason, r.drain = 0, -1, 0, 0
	qs.arrived++
}

// reject records that r was turned away for reason.
func (qs *QueueSet) reject(r *Request, reason RejectReason) {
	r.reason = reason
	r.state = stateFree
	qs.rejected++
	if qs.cfg.DeadlineAware {
		r.drain = qs.drainTime(qs.lastNs)
	}
}

// chooseQueue deals the flow's hand (or finds it among the hands dealt
// recently) and returns the queue in it with the
// least waiting work (docs/spec/fair-queuing.md#queue-choice). The hand is
// read starting at a rotating offset, and the first of equal queues wins, so
// ties spread evenly.
func (qs *QueueSet) chooseQueue(hash uint64) *queue {
	var scratch [shuffle.MaxHandSize]int
	hand := qs.hands.hand(qs.dealer, hash, &scratch)
	h := uint64(len(hand))
	j := qs.enqueues % h
	qs.enqueues++
	best := qs.queues[hand[j]]
	for i := uint64(1); i < h; i++ {
		if j++; j == h {
			j = 0
		}
		if q := qs.queues[hand[j]]; q.totalWorkSum < best.totalWorkSum {
			best = q
		}
	}
	return best
}

// bound is the anti-windup rule: a queue's next dispatch may not be earlier
// in virtual time than the arrival of its oldest waiter. Without it a queue
// that cannot use its share would bank credit and later burst past everyone.
func (qs *QueueSet) bound(q *queue) {
	if h := q.waiting.head; h != nil && q.nextDispatchR < h.arrivalR {
		q.nextDispatchR = h.arrivalR
		qs.retag(q)
	}
}

// startAtOnce enqueues r in q and dispatches it at once, as Arrive would
// when nothing else waits and r fits: dispatch would then pick q, whose
// only waiter is r, and nothing after it. The uncontended request, the
// common one, so skips the round trip through q's waiting list and the
// set of waiting queues (list links written and cleared again, each a
// pointer write the garbage collector's write barrier may have to
// record), and leaves every count, virtual time and reading exactly as
// that round trip would: the lists and running sums end where they
// started.
func (qs *QueueSet) startAtOnce(t int64, q *queue, r *Request) {
	r.queue = q
	r.queueLen = 1
	// bound(q) with r as q's head.
	if q.nextDispatchR < r.arrivalR {
		q.nextDispatchR = r.arrivalR
	}
	qs.start(t, q, r)
}
