package fairqueue

import (
	"time"

	"github.com/apfproject/apf/shuffle"
)

// QueueSet is the fair-queuing state of one priority level: a pure state
// machine with no goroutines, locks or clock of its own. Every method that
// changes state takes the current time; the caller serializes calls (a
// server with one lock per level) and passes non-decreasing times (an
// earlier time counts as the latest one seen).
//
// Methods that may dispatch waiting requests append them to a caller
// buffer and return it, so the caller can wake whoever waits for them.
type QueueSet struct {
	// The fields are laid out for the request path, which usually finds
	// the queue set's memory last written by another processor: those it
	// reads come first and those it writes follow, packed into as few
	// cache lines as they fit; the hand cache and rarely used state go
	// last.

	cfg    Config // Queues is the desired number; see Reconfigure for QLL/HandSize at 0
	dealer *shuffle.Dealer
	// queues may hold more than cfg.Queues queues while extras drain.
	queues []*queue
	// base is the time given to New; all other times are int64
	// nanoseconds since base.
	base time.Time

	// waitingQueues holds, unordered, the queues with waiting requests:
	// the only ones dispatch needs to look at. waitingTags[i] is the
	// virtual finish of waitingQueues[i]'s head (its nextDispatchR plus
	// the head's total work), kept beside it so that dispatch's search for
	// the smallest reads one contiguous array instead of following two
	// pointers a queue.
	waitingQueues []*queue
	waitingTags   []SeatSeconds
	// now is the latest time seen, as given, and lastNs the same in
	// nanoseconds since base.
	now    time.Time
	lastNs int64
	// r is the virtual time R, in seat-seconds per queue since base.
	r SeatSeconds
	// robin is the index of the queue last dispatched from. It starts at
	// 0, as upstream's does, so the first round-robin scan starts at
	// queue 1.
	robin int
	// enqueues counts queue choices; it rotates where a hand is read from.
	enqueues uint64

	totWaiting      int
	totSeatsWaiting int
	totExecuting    int
	totSeatsInUse   int
	// busyQueues counts queues with waiting or executing requests.
	busyQueues int
	// seatsRequested is Σ over queues of seatsInUse + waiting MaxSeats.
	seatsRequested int

	arrived, dispatched, rejected, cancelled int
	noAccommodation                          int
	epochAdvances, epochFailures             int

	// queueless holds executing requests of exempt and reject levels.
	queueless reqList
	// drain measures the dispatch rate of a deadline-aware level.
	drain drainMeter
	// pace spaces the starts of a paced level.
	pace pacer
	// queueAlways turns startAtOnce off, so that a test can check that it
	// changes nothing.
	queueAlways bool

	// hands remembers the hands of recent flows.
	hands handCache
}

// New returns an empty queue set configured by cfg, with now as the start
// of its time. It fails if cfg is invalid: a negative limit or queue length
// limit, or a queue count and hand size the shuffle-sharding dealer
// refuses.
func New(cfg Config, now time.Time) (*QueueSet, error) {
	dealer, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	qs := &QueueSet{cfg: cfg, dealer: dealer, base: now, now: now, drain: drainMeter{firstNs: -1}}
	qs.addQueues(cfg.Queues)
	return qs, nil
}

// Config returns the configuration in force. After a switch to Queues 0 it
// still holds the previous HandSize and QueueLengthLimit (see Reconfigure).
func (qs *QueueSet) Config() Config { return qs.cfg }

// addQueues grows the queue slice to n queues.
func (qs *QueueSet) addQueues(n int) {
	for len(qs.queues) < n {
		qs.queues = append(qs.queues, &queue{index: len(qs.queues), wpos: -1})
	}
	if cap(qs.waitingQueues) < len(qs.queues) {
		w := make([]*queue, len(qs.waitingQueues), len(qs.queues))
		copy(w, qs.waitingQueues)
		qs.waitingQueues = w
		tags := make([]SeatSeconds, len(qs.waitingTags), len(qs.queues))
		copy(tags, qs.waitingTags)
		qs.waitingTags = tags
	}
}

// SetConcurrencyLimit changes the number of seats (a borrowing adjustment;
// negative counts as 0) and dispatches whatever the new limit allows,
// appending it to buf. Lowering the limit never stops running requests: the
// level is over its limit until enough of them finish.
func (qs *QueueSet) SetConcurrencyLimit(now time.Time, limit int, buf []*Request) []*Request {
	t := qs.sync(now)
	qs.cfg.ConcurrencyLimit = max(limit, 0)
	return qs.dispatch(t, buf, nil)
}

// Reconfigure applies a new configuration
// (docs/spec/fair-queuing.md#reconfiguration) and dispatches what it allows,
// appending it to buf. It never loses a request:
//   - more queues are added at once;
//   - surplus queues are removed by attrition: when a request's seats are
//     released and its queue holds nothing else, that queue goes and later
//     queues move down one index;
//   - with Queues 0 (the level now rejects), queued requests stay and are
//     still dispatched in fair order, so the previous HandSize and
//     QueueLengthLimit are kept.
//
// An invalid cfg, or one switching between exempt and limited
// (errExemptSwitch), changes nothing and returns an error.
func (qs *QueueSet) Reconfigure(now time.Time, cfg Config, buf []*Request) ([]*Request, error) {
	dealer, err := cfg.validate()
	if err != nil {
		return buf, err
	}
	if (cfg.Queues < 0) != (qs.cfg.Queues < 0) {
		return buf, errExemptSwitch
	}
	t := qs.sync(now)
	if cfg.Queues == 0 {
		cfg.HandSize = qs.cfg.HandSize
		cfg.QueueLengthLimit = qs.cfg.QueueLengthLimit
	}
	qs.addQueues(cfg.Queues)
	qs.cfg, qs.dealer = cfg, dealer
	qs.hands.reset()
	return qs.dispatch(t, buf, nil), nil
}

// timeAt converts nanoseconds since base back to a time.
func (qs *QueueSet) timeAt(ns int64) time.Time {
	return qs.base.Add(time.Duration(ns))
}

// IsIdle reports whether nothing waits and nothing executes. Seats held
// by final phases do not count, as upstream.
func (qs *QueueSet) IsIdle() bool {
	return qs.totWaiting == 0 && qs.totExecuting == 0
}
