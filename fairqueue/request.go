package fairqueue

import "time"

// Request is one request's place in a queue set. The caller owns the
// storage, which is what lets the hot path run without allocating: embed it
// in a per-request struct or keep a pool.
//
// The caller sets Hash, Work and Tag, then calls Arrive. From then until
// the request is over, the queue set owns the Request and the caller must
// not modify it. The request is over, and the Request may be reused for a
// new Arrive (after resetting the exported fields as needed), when:
//   - Arrive returned Rejected, or Cancel returned true;
//   - Finish returned release == 0;
//   - Release returned (after Finish returned release > 0).
type Request struct {
	// The links and what dispatch reads and writes lead, in one cache
	// line where the allocation allows: a waiting request is dispatched
	// by whichever processor finishes another, which usually finds its
	// memory on the other one.
	prev, next *Request
	queue      *queue      // nil for queueless (exempt and reject) requests
	maxSeats   int         // est.MaxSeats()
	totalWork  SeatSeconds // from the uncapped estimate, as upstream
	arrivalR   SeatSeconds // R at arrival; moved back by epoch advances
	startNs    int64       // dispatch, in ns since qs.base
	state      reqState
	reason     RejectReason
	queueLen   int32 // queue length right after enqueue
	queueIdx   int32 // index of the queue chosen from the hand, or -1
	qs         *QueueSet
	est        WorkEstimate  // Work normalized, then capped at dispatch
	serviceNs  int64         // the initial phase's service time totalWork assumes (G)
	arriveNs   int64         // arrival, in ns since qs.base
	drain      time.Duration // the level's time to drain when r was rejected (deadline-aware levels)

	// Hash is the flow hash (classify.Result.FlowHash). It selects the
	// request's hand of queues; requests with equal hashes are one flow.
	Hash uint64
	// Work is the caller's estimate of the request's seats and final phase.
	// Negative fields count as zero.
	Work WorkEstimate
	// Tag is the caller's data. The queue set only hands it back, in Dump
	// (a flow schema, distinguisher, user and path, say).
	Tag any
	// WaitLimit is how long the request may wait in a queue; 0 means not
	// known. Only deadline-aware levels read it (Config.DeadlineAware).
	WaitLimit time.Duration
}

// reqState is where a request is in its life.
type reqState uint8

const (
	stateFree      reqState = iota // never used, or over
	stateWaiting                   // in a queue's waiting list
	stateExecuting                 // dispatched, handler running
	stateLingering                 // handler returned, final-phase seats held
)

// Reason returns why the request was rejected, or 0 if it was not.
func (r *Request) Reason() RejectReason { return r.reason }

// DrainTime returns, for a request a deadline-aware level rejected, how
// long that level would take to dispatch every request waiting in it at
// the rate it was measured to drain: what a client told to come back
// should wait. It is 0 when the level is not deadline-aware, the request
// was not rejected, or the level had not drained long enough to be
// measured.
func (r *Request) DrainTime() time.Duration { return r.drain }

// Estimate returns the work estimate the queue set is using: Work with
// negative fields clamped, and, once dispatched, with FinalSeats capped at
// the concurrency limit (AdditionalLatency grows to keep the final work).
func (r *Request) Estimate() WorkEstimate { return r.est }

// QueueLengthAfterEnqueue returns the length of the request's queue just
// after the request joined it (the request_queue_length_after_enqueue
// observation), or 0 if it never queued.
func (r *Request) QueueLengthAfterEnqueue() int { return int(r.queueLen) }

// QueueIndex returns the index of the queue the request's hand chose for
// it when it arrived (also when that queue was full and the request was
// rejected), or -1 when the level does not queue (exempt and reject
// levels) or the request never arrived.
func (r *Request) QueueIndex() int {
	if r.qs == nil {
		return -1
	}
	return int(r.queueIdx)
}

// arriveTime returns when the request arrived, or the zero time if it never
// did.
func (r *Request) arriveTime() time.Time {
	if r.qs == nil {
		return time.Time{}
	}
	return r.qs.timeAt(r.arriveNs)
}

// StartTime returns when the request was dispatched, or the zero time if it
// has not been.
func (r *Request) StartTime() time.Time {
	if r.qs == nil || r.startNs < 0 {
		return time.Time{}
	}
	return r.qs.timeAt(r.startNs)
}
