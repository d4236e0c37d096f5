package fairqueue

import (
	"fmt"
	"time"
)

// check recomputes everything the queue set keeps incrementally and
// compares. lingering lists the requests known to be in their final phase
// (they are on no list, so the caller has to say). With settled, it also
// checks that dispatch ran to completion: nothing that could start was
// left waiting (every state-changing call but Cancel guarantees that),
// unless a paced level holds it back for the gap between starts.
func (qs *QueueSet) check(lingering []*Request, settled bool) error {
	var waiting, seatsWaiting, executing, seatsInUse, busy, requested, withWaiters int
	held := map[*queue]int{}
	for _, r := range lingering {
		if r.qs != qs || r.state != stateLingering {
			return fmt.Errorf("lingering request %v is in state %d", r.Tag, r.state)
		}
		seatsInUse += r.maxSeats
		if r.queue != nil {
			held[r.queue] += r.maxSeats
		}
	}
	for i, q := range qs.queues {
		if q.index != i {
			return fmt.Errorf("queue %d has index %d", i, q.index)
		}
		var n, init, maxs int
		var work SeatSeconds
		var prev *Request
		for r := q.waiting.head; r != nil; r = r.next {
			if r.prev != prev || r.queue != q || r.state != stateWaiting || r.qs != qs {
				return fmt.Errorf("queue %d: bad waiting request %v", i, r.Tag)
			}
			n++
			init += r.est.InitialSeats
			maxs += r.maxSeats
			work += r.totalWork
			prev = r
		}
		if prev != q.waiting.tail || n != q.waiting.n {
			return fmt.Errorf("queue %d: waiting list has %d, counts %d", i, n, q.waiting.n)
		}
		if init != q.initialSeatsSum || maxs != q.maxSeatsSum || work != q.totalWorkSum {
			return fmt.Errorf("queue %d: sums %d/%d/%v, recomputed %d/%d/%v", i,
				q.initialSeatsSum, q.maxSeatsSum, q.totalWorkSum, init, maxs, work)
		}
		if n > 0 {
			withWaiters++
			if q.wpos < 0 || q.wpos >= len(qs.waitingQueues) || qs.waitingQueues[q.wpos] != q {
				return fmt.Errorf("queue %d: not in waitingQueues at %d", i, q.wpos)
			}
			if len(qs.waitingTags) != len(qs.waitingQueues) {
				return fmt.Errorf("%d waiting tags for %d waiting queues", len(qs.waitingTags), len(qs.waitingQueues))
			}
			if tag, want := qs.waitingTags[q.wpos], q.nextDispatchR+q.waiting.head.totalWork; tag != want {
				return fmt.Errorf("queue %d: waiting tag %v, head's virtual finish %v", i, tag, want)
			}
			if q.nextDispatchR < q.waiting.head.arrivalR {
				return fmt.Errorf("queue %d: nextDispatchR %v before head arrival %v", i, q.nextDispatchR, q.waiting.head.arrivalR)
			}
		} else if q.wpos != -1 {
			return fmt.Errorf("queue %d: empty but wpos %d", i, q.wpos)
		}
		waiting += n
		seatsWaiting += maxs
		qseats := held[q]
		delete(held, q)
		exSeats := 0
		n, prev = 0, nil
		for r := q.executing.head; r != nil; r = r.next {
			if r.prev != prev || r.queue != q || r.state != stateExecuting || r.qs != qs {
				return fmt.Errorf("queue %d: bad executing request %v", i, r.Tag)
			}
			n++
			exSeats += r.maxSeats
			prev = r
		}
		if prev != q.executing.tail || n != q.executing.n {
			return fmt.Errorf("queue %d: executing list has %d, counts %d", i, n, q.executing.n)
		}
		executing += n
		seatsInUse += exSeats
		if qseats += exSeats; qseats != q.seatsInUse {
			return fmt.Errorf("queue %d: seatsInUse %d, recomputed %d", i, q.seatsInUse, qseats)
		}
		if q.busy() {
			busy++
		}
		requested += q.seatsInUse + q.maxSeatsSum
	}
	// Lingering requests of removed queues.
	for q, s := range held {
		if q.index != -1 {
			return fmt.Errorf("lingering request's queue %d is not in the queue set", q.index)
		}
		if q.seatsInUse != s {
			return fmt.Errorf("removed queue: seatsInUse %d, recomputed %d", q.seatsInUse, s)
		}
	}
	var prev *Request
	n := 0
	for r := qs.queueless.head; r != nil; r = r.next {
		if r.prev != prev || r.queue != nil || r.state != stateExecuting || r.qs != qs {
			return fmt.Errorf("bad queueless request %v", r.Tag)
		}
		n++
		seatsInUse += r.maxSeats
		prev = r
	}
	if prev != qs.queueless.tail || n != qs.queueless.n {
		return fmt.Errorf("queueless list has %d, counts %d", n, qs.queueless.n)
	}
	executing += n
	switch {
	case withWaiters != len(qs.waitingQueues):
		return fmt.Errorf("waitingQueues has %d, %d queues have waiters", len(qs.waitingQueues), withWaiters)
	case waiting != qs.totWaiting || seatsWaiting != qs.totSeatsWaiting:
		return fmt.Errorf("waiting %d/%d seats, recomputed %d/%d", qs.totWaiting, qs.totSeatsWaiting, waiting, seatsWaiting)
	case executing != qs.totExecuting || seatsInUse != qs.totSeatsInUse:
		return fmt.Errorf("executing %d, seats %d; recomputed %d, %d", qs.totExecuting, qs.totSeatsInUse, executing, seatsInUse)
	case busy != qs.busyQueues || requested != qs.seatsRequested:
		return fmt.Errorf("busy %d, requested %d; recomputed %d, %d", qs.busyQueues, qs.seatsRequested, busy, requested)
	case qs.Occupancy() != Occupancy{waiting, seatsWaiting, executing, seatsInUse}:
		return fmt.Errorf("occupancy %+v, recomputed waiting %d/%d seats, executing %d, %d seats in use", qs.Occupancy(), waiting, seatsWaiting, executing, seatsInUse)
	case len(qs.queues) > 0 && (qs.robin < -1 || qs.robin >= len(qs.queues)):
		return fmt.Errorf("robin %d out of range for %d queues", qs.robin, len(qs.queues))
	case qs.arrived != qs.dispatched+qs.rejected+qs.totWaiting:
		return fmt.Errorf("arrived %d != dispatched %d + rejected %d + waiting %d", qs.arrived, qs.dispatched, qs.rejected, qs.totWaiting)
	case qs.cfg.Queues > 0 && len(qs.queues) < qs.cfg.Queues:
		return fmt.Errorf("%d queues, %d desired", len(qs.queues), qs.cfg.Queues)
	}
	if settled && qs.totWaiting > 0 && qs.totSeatsInUse < qs.cfg.ConcurrencyLimit && (!qs.cfg.Paced || qs.pace.allows(qs.lastNs)) {
		if q := qs.pickQueue(); qs.fits(q.waiting.head.maxSeats) {
			return fmt.Errorf("request %v could be dispatched but waits", q.waiting.head.Tag)
		}
	}
	return nil
}

// arrive1 is Arrive for a test that needs only the decision.
func arrive1(qs *QueueSet, now time.Time, r *Request) Decision {
	d, _ := qs.Arrive(now, r, nil)
	return d
}
