package fairqueue

import (
	"math"
	"time"
)

// Deadline-aware queueing (Config.DeadlineAware).
//
// Kubernetes lets a queued request wait out its whole wait limit even when
// the level could never have dispatched it in time, and then answers 429
// with a Retry-After that says nothing about the level. A client learns
// late, and comes back with everyone else. A deadline-aware level instead
// measures how fast its queues drain and, for a request that would queue
// on a saturated level, predicts when fair queuing would reach it:
//
//   - the drain rate D is what the level's seats get done per second:
//     the work of the requests that ended (seat-seconds of their
//     estimates, the unit virtual time counts in) per seat-second the
//     seats were busy,
//     times the seats the level has now. Both are exponentially decayed
//     sums over drainWindow. Per busy seat-second, it calibrates itself
//     (requests that run 100 times longer than estimated get 100 times
//     less estimated work done per busy seat-second) and it does not
//     count the time the level was not saturated; times the seats of
//     now, it follows a change of the level's limit (borrowing) at once.
//   - fair queuing serves the busy queues alike, so before r is dispatched
//     every other queue gets as much work done as r's queue does up to
//     and including r, or its whole backlog if that is smaller: the work
//     ahead of r is A = Σ over waiting queues min(backlog, W) + r's, where
//     W is r's queue's backlog plus r's work (a water level). Arrivals
//     after r only add to this, so A/D is an optimistic estimate.
//   - r is rejected on arrival with TimeOut when A/D exceeds lateShare of
//     its wait limit: it would have waited that long only to be rejected.
//
// A level measured for less than drainWindow, or that dispatched nothing
// in it, predicts nothing. Every rejection of a deadline-aware level
// carries the level's time to drain, Σ backlog / D (Request.DrainTime),
// for the caller's Retry-After.

// drainWindow is the time constant of the drain-rate average: long enough
// to smooth the dispatches of a few seats, short enough to follow a change
// of the upstream within seconds.
const drainWindow = 2 * time.Second

// drainMeter measures the work a level's seats get done per busy
// seat-second.
type drainMeter struct {
	// work is the work of the requests that ended and busy the
	// seat-seconds the seats were in use, both in seat-seconds, each part
	// decayed by exp(-age/drainWindow). Work is counted when a request
	// ends, not when it starts: counted at the start, a burst of
	// dispatches would count as done before any seat had been busy.
	work, busy float64
	lastNs     int64
	// firstNs is when the first request measured ended, -1 before any.
	firstNs int64
}

// accrue records that seats were in use from the last reading until t
// (ns), decaying what was recorded before.
func (m *drainMeter) accrue(t int64, seats int) {
	if t <= m.lastNs {
		return
	}
	dt := float64(t-m.lastNs) / float64(drainWindow)
	keep := math.Exp(-dt)
	m.work *= keep
	// ∫ seats·exp(-(t-s)/τ) ds over the interval.
	m.busy = m.busy*keep + float64(seats)*drainWindow.Seconds()*(1-keep)
	m.lastNs = t
}

// add records the work of a request that ended at t, once accrue has
// brought the meter to t.
func (m *drainMeter) add(t int64, work SeatSeconds) {
	if m.firstNs < 0 {
		m.firstNs = t
	}
	m.work += seconds(work)
}

// perSeat returns the work done per busy seat-second as of the meter's
// last reading at t, and whether it was measured over a whole window and
// on enough busy time to mean something.
func (m *drainMeter) perSeat(t int64) (float64, bool) {
	if m.firstNs < 0 || t-m.firstNs < int64(drainWindow) || m.busy < minBusySeatSeconds {
		return 0, false
	}
	return m.work / m.busy, m.work > 0
}

// lateShare is the share of its wait limit past which a request's
// predicted wait rejects it. A/D counts the work ahead of r now, not the
// arrivals that fair queuing will serve before it (a queue whose backlog
// is short now grows while r waits), so it is optimistic: under an open
// flood at twice what a level dispatched (bench/adaptive), the whole wait
// limit let 9% of the requests that timed out wait for it; 0.85 of it
// answered 99% of them on arrival, with the same goodput.
const lateShare = 0.85

// minBusySeatSeconds is the least busy time, decayed, a drain rate is
// worked out from: a tenth of a seat busy over the window.
const minBusySeatSeconds = 0.2

// lateArrival reports whether r, about to wait in q on a saturated level
// at t, cannot be dispatched within its wait limit at the measured drain
// rate.
func (qs *QueueSet) lateArrival(t int64, q *queue, r *Request) bool {
	d, ok := qs.drainRate(t)
	if !ok {
		return false
	}
	level := q.totalWorkSum + r.totalWork
	ahead := r.totalWork
	for _, w := range qs.waitingQueues {
		ahead += min(w.totalWorkSum, level)
	}
	return seconds(ahead)/d > lateShare*r.WaitLimit.Seconds()
}

// drainTime returns how long the level takes to dispatch everything
// waiting at the drain rate measured at t, 0 when the rate is not known.
func (qs *QueueSet) drainTime(t int64) time.Duration {
	d, ok := qs.drainRate(t)
	if !ok {
		return 0
	}
	var backlog SeatSeconds
	for _, w := range qs.waitingQueues {
		backlog += w.totalWorkSum
	}
	return time.Duration(seconds(backlog) / d * float64(time.Second))
}

// drainRate returns D, the work the level's seats get done per second
// when all of them are busy, as measured at t.
func (qs *QueueSet) drainRate(t int64) (float64, bool) {
	perSeat, ok := qs.drain.perSeat(t)
	d := perSeat * float64(qs.cfg.ConcurrencyLimit)
	return d, ok && d > 0
}

// seconds converts work to seat-seconds.
func seconds(w SeatSeconds) float64 { return float64(w) * nanosPerUnit / float64(time.Second) }
