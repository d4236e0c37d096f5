// Package fairqueue is the queue set of one priority level: it decides, for
// each request of the level, whether it runs now, waits in a queue, or is
// rejected, and in which order waiting requests run, so that the flows
// sharing the level get equal shares of its seats
// (docs/spec/fair-queuing.md).
//
// The package depends only on the shuffle-sharding dealer and the standard
// library. It knows nothing of HTTP, Kubernetes types, metrics or
// configuration objects: callers hand it a flow hash, a work estimate and
// an opaque tag, and read counters and dumps back.
//
// # The model
//
// A level has a concurrency limit in seats. A request occupies
// InitialSeats while its handler runs and, when its estimate has an
// AdditionalLatency, FinalSeats for that much longer after the handler
// returns (the notifications a write triggers). The queue set reserves
// MaxSeats = max(InitialSeats, FinalSeats) for the whole time. Work is
// measured in seat-seconds, as a fixed-point SeatSeconds (10^8 units per
// seat-second) so that sums are exact.
//
// Fairness is defined on queues. Each flow (a hash of the flow schema and
// its distinguisher) is dealt a hand of queues by shuffle sharding
// (package shuffle); a request joins the queue of its hand with the least
// waiting work, reading the hand from an offset that rotates with every
// choice. Two flows rarely share a whole hand, so a heavy flow that fills
// its queues still leaves a light flow some queue of its own.
//
// Between queues the level runs fair queuing, adapted from packet networks
// to requests that hold several of many seats for a time nobody knows in
// advance. Virtual time R measures the service an idealized level would
// have given each queue with something to do: it grows at
//
//	min(seats requested, limit) / busy queues
//
// seat-seconds per second, where a queue is busy while it has waiting or
// executing requests, and the seats requested are those held through each
// queue plus the MaxSeats of its waiters. Each queue keeps nextDispatchR,
// the virtual time at which it may next dispatch; its head would finish at
// nextDispatchR plus the head's total work, InitialSeats×G +
// FinalSeats×AdditionalLatency, with G = 3ms standing in for the unknown
// service time. Dispatch always serves the head that would finish first,
// ties going round robin from the queue served last, and advances that
// queue's nextDispatchR by the work. When the request finishes after a
// real service time S, the guess is corrected: nextDispatchR moves by
// InitialSeats×(S − G). Two bounds keep virtual time honest: a queue that
// was idle restarts at the current R (no credit for having been away), and
// a queue's nextDispatchR is never earlier than its oldest waiter's arrival
// in virtual time ("anti-windup": a queue that cannot use its share may
// not bank it and burst later).
//
// The head chosen must fit in the free seats. If it does not, nothing is
// dispatched until it does: narrower requests may not overtake a wide one
// forever. A request wider than the whole limit runs alone, once nothing
// executes; its final phase is then narrowed to the limit and lengthened
// to keep the same work.
//
// Admission differs by kind of level. A queuing level rejects a request
// (queue-full) only when all seats are in use and its chosen queue already
// holds QueueLengthLimit requests; so the limit counts requests, and only
// while the level is saturated. A reject level (zero queues) runs a
// request if it fits, or if it is wider than the limit and nothing
// executes, and rejects it (concurrency-limit) otherwise; a limit of 0
// therefore still admits one request at a time, as upstream. An exempt
// level dispatches everything at once but still counts requests and seats.
// A waiter that gives up is removed and rejected with reason time-out.
//
// When R gets within a quarter of the uint64 range of overflowing (it
// cannot in practice: that takes some 10^11 seat-seconds per queue) R and
// every reading taken from it are moved back by half the range, an epoch
// advance.
//
// # The non-blocking contract
//
// QueueSet is a pure state machine in the style of etcd's raft: no
// goroutines, no locks, no clock. Every state-changing method takes the
// current time, and the caller serializes calls. Methods never block and
// never call out. The answers are values:
//
//   - Arrive says Dispatched, Queued or Rejected (with Request.Reason),
//     and returns any other waiters it let start.
//   - Finish, Release, SetConcurrencyLimit and Reconfigure return the
//     requests they dispatched, appended to a caller buffer, so that the
//     caller can wake their waiters; Finish also says how long the final
//     phase holds seats, after which the caller calls Release.
//   - Cancel removes a waiter, or reports that it was dispatched already.
//   - A paced level (Config.Paced, pace.go) may hold back a request it
//     could start: PacedUntil says until when, and Dispatch, called
//     then, starts it.
//   - Occupancy reads what the queue set holds, for the borrowing's seat
//     demand and the utilization metrics, after each call.
//
// Every Arrive ends in exactly one of: Rejected; Dispatched, Finish (and
// Release after a final phase); Queued, then dispatched by a later call
// (and on as before) or removed by Cancel. The caller owns Request
// storage, which is what keeps the hot path free of allocation; the
// Request documentation says when it may be reused.
//
// Blocking is not this package's business. Package engine puts a queue
// set inside each of its priority levels; package controller holds each
// level under a lock of its own and blocks a request that queues until a
// later call dispatches it; the simulator and the shadow configuration run
// the queue sets on a virtual clock, one event at a time.
//
// # Internal organization
//
//   - queueset.go: the QueueSet type, construction, limit and configuration
//     changes. arrive.go: admission, queue choice, the anti-windup bound.
//     dispatch.go: the dispatch loop, queue selection, the fit rule.
//     finish.go: completion, final-phase release, cancellation.
//     vtime.go: virtual time and epochs. books.go: the running totals.
//     stats.go: Stats and Dump. occupancy.go: what the queue set holds.
//     deadline.go: deadline-aware queueing. pace.go: paced dispatch.
//   - Requests sit on intrusive doubly linked lists (list.go): each queue's
//     waiting FIFO and executing list, and one list of queueless executing
//     requests. Enqueue, dequeue, removal from the middle and completion
//     are O(1) and allocate nothing.
//   - Nothing on the hot path scans all queues. books.go keeps, next to
//     each list change, the totals that otherwise need a scan: the busy
//     queue count and requested seats that set R's pace, so that advancing
//     R is O(1), and the set of queues that have waiters, so that dispatch
//     looks only at those, with the virtual finish of each one's head in
//     an array beside it (kept by retag wherever a head or a queue's
//     nextDispatchR moves), so that the search for the smallest reads
//     contiguous numbers rather than two pointers a queue. The dealer
//     deals into an array inside the QueueSet, and the hands of recent
//     flows are kept in a small direct-mapped cache (hands.go), so a
//     returning flow is not dealt again. Times are int64 nanoseconds since the QueueSet's creation;
//     time.Time is only converted at the API boundary.
//   - An arrival that finds nothing waiting and fits is dispatched at once
//     (startAtOnce in arrive.go) without joining and leaving its queue's
//     waiting list: the counts and virtual times are those the round trip
//     would leave, and the pointer writes it would make, each a write
//     barrier while the garbage collector marks, are saved.
//
// Arrive, Finish and the dispatch of a waiter allocate nothing
// (BenchmarkQueueSet measures both paths).
//
// # Where this package differs from upstream, on purpose
//
// The arithmetic of virtual time is upstream's, float64 steps and rounding
// included, and so are queue choice, admission, dispatch order and its
// tie-breaking (the round robin starts at queue 0, as upstream's zero
// index), completion correction and attrition. A differential run against
// upstream's queue set on a shared fake clock (random arrivals,
// completions, final phases, cancellations, limit changes and
// reconfigurations at irregular nanosecond times) agreed on every queue's
// nextDispatchR and work sums, every queue's waiting and executing
// requests, and every counter after every step. The following differ:
//
//   - The waiting-seat total (an upstream quirk, see
//     docs/spec/fair-queuing.md#dispatch) is fixed. Upstream adds a request's
//     uncapped MaxSeats to the total of waiting seats when it queues, but
//     subtracts the capped MaxSeats when it is dispatched with a final phase
//     wider than the limit, so the total, and the seat demand that drives
//     borrowing, grows by the difference forever. Here the amount added is
//     the amount subtracted.
//   - A queue removed by attrition while another request's final phase
//     still holds seats in it is detached, and that request's later
//     release only updates the detached queue. Upstream looks the queue up
//     again by its stale index, which by then belongs to another queue,
//     and removes that queue with its waiting requests, or slices out of
//     range. Both were reproduced against v0.37.2: two writes of one queue
//     in their final phase while the level switches to rejecting (or to
//     fewer queues) end in a panic, either at the second release or at
//     the next dispatch, which finds waiters counted but no queue holding
//     them. Which queues are removed, and when, is otherwise upstream's.
//   - Upstream's waiter learns of a cancellation outside the queue set's
//     lock, so a request can be dequeued for dispatch after its context
//     ended, getting neither seats nor a count anywhere. Here Cancel and
//     dispatch are calls on the same state machine, which the caller
//     serializes: the request is either dispatched (Cancel returns false;
//     the caller runs it with its ended context) or cancelled (time-out,
//     counted as rejected and cancelled); Arrived = Dispatched + Rejected +
//     WaitingRequests always holds.
//   - A time earlier than the latest one seen counts as no time passing;
//     upstream would wind R back through unsigned wrap-around.
//   - Negative work-estimate fields count as zero (upstream's seat counts
//     are unsigned; a negative latency would wrap its work sums).
//   - Reconfigure refuses to switch between exempt and limited (upstream
//     never does it: a level's type is tied to its name) and refuses
//     negative limits; upstream's QueueSet does not validate them.
//   - An arrival can, through round-robin tie-breaking, also let other
//     waiters start; upstream wakes them through their promises. Here
//     Arrive returns them. The decisions are the same.
//   - The dump lists executing requests in dispatch order; upstream's
//     order is a map's.
//
// Cancel does not dispatch, as upstream: when the request it removes was
// the head holding the level up, the next completion dispatches.
package fairqueue
