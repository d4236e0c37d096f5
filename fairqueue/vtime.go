package fairqueue

import (
	"math"
	"time"
)

// epochDecrement (D) is how far R and every reading taken from it are moved
// back when R gets large; epochThreshold is the R that triggers it
// (docs/spec/fair-queuing.md#epochs). R can only get there after ~10^11
// seat-seconds per queue, so in practice this never runs, but it keeps uint64
// arithmetic safe.
const (
	epochDecrement = maxSeatSeconds / 2
	epochThreshold = epochDecrement + epochDecrement/2
)

// sync advances virtual time to now and returns now as nanoseconds since
// base. It must run first in every state-changing call, because the rate
// of R depends on the state that held since the previous call.
//
// R grows at min(seatsRequested, limit)/busyQueues seat-seconds per second:
// the service each busy queue would get if the seats were shared equally.
// The increment is computed in float64 exactly like upstream so virtual
// times match bit for bit. A time before the latest one seen counts as the
// latest one (R never moves back).
func (qs *QueueSet) sync(now time.Time) int64 {
	t := int64(now.Sub(qs.base))
	if t <= qs.lastNs {
		return qs.lastNs
	}
	if qs.cfg.DeadlineAware {
		qs.drain.accrue(t, qs.totSeatsInUse)
	}
	if qs.busyQueues > 0 {
		seats := min(qs.seatsRequested, qs.cfg.ConcurrencyLimit)
		rate := float64(seats) / float64(qs.busyQueues)
		prev := qs.r
		qs.r += SeatSeconds(int64(math.Round(rate * float64(t-qs.lastNs) / nanosPerUnit)))
		if qs.r >= epochThreshold && qs.r >= prev {
			qs.advanceEpoch()
		}
	}
	qs.lastNs, qs.now = t, now
	return t
}

// advanceEpoch moves R, every busy queue's nextDispatchR and every waiting
// request's arrivalR back by D. Idle queues get nextDispatchR 0: their
// reading is stale anyway and is overwritten by the next arrival. A
// reading that would underflow is counted as a failed advance (upstream's
// epoch_advance_total{success="false"}).
func (qs *QueueSet) advanceEpoch() {
	qs.r -= epochDecrement
	ok := true
	for _, q := range qs.queues {
		if !q.busy() {
			q.nextDispatchR = 0
			continue
		}
		if q.nextDispatchR < epochDecrement {
			ok = false
		}
		q.nextDispatchR -= epochDecrement
		for r := q.waiting.head; r != nil; r = r.next {
			if r.arrivalR < epochDecrement {
				ok = false
			}
			r.arrivalR -= epochDecrement
		}
		qs.retag(q)
	}
	qs.epochAdvances++
	if !ok {
		qs.epochFailures++
	}
}
