package controller

import (
	"time"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/fairqueue"
)

// Outcome is what APF did with a request, as a Record tells it.
type Outcome uint8

// The outcomes. OutcomeNone is a Record that Admit never filled: the
// request did not go through APF (a long-running request other than a
// watch, a filter that refused it first) or Admit failed for a reason
// that is not a rejection.
const (
	OutcomeNone Outcome = iota
	// OutcomeDispatched: a limited level dispatched the request, at once
	// or after it waited in a queue.
	OutcomeDispatched
	// OutcomeExempt: an exempt level ran the request without a limit.
	OutcomeExempt
	// OutcomeRejected: the request was refused (Record.Reason says why).
	OutcomeRejected
)

// String returns "dispatched", "exempt", "rejected" or "" for OutcomeNone.
func (o Outcome) String() string {
	switch o {
	case OutcomeDispatched:
		return "dispatched"
	case OutcomeExempt:
		return "exempt"
	case OutcomeRejected:
		return "rejected"
	}
	return ""
}

// Record is what APF did with one request, written once on the request
// path for whoever reads it afterwards: an access log, a trace, a response
// header telling the caller why it waited. The caller owns it and passes
// it to AdmitRecord, which fills in the classification, the queue, the
// wait, the seats and the outcome; Ticket.Done adds the execution time.
// Admit without a Record does none of this, so a server that reads
// nothing pays nothing.
//
// The strings are the configuration's own (shared, never copied), so
// filling a Record allocates nothing. A Record is read by the goroutine
// that admitted the request, after Admit returned (and, for the execution
// time, after Done); it is not safe to read while the request is being
// admitted.
type Record struct {
	// Outcome says whether the request was dispatched, exempt or
	// rejected; OutcomeNone means the rest is unset.
	Outcome Outcome
	// Reason is why a rejected request was refused: queue-full,
	// concurrency-limit or time-out (which includes a caller that went
	// away while it waited).
	Reason fairqueue.RejectReason
	// RetryAfter is the Retry-After, in seconds, sent with a rejection.
	RetryAfter int

	// FlowSchema and its MatchingPrecedence, PriorityLevel, their UIDs
	// (empty for a mandatory object the controller imagines) and the
	// flow distinguisher (empty unless the level queues with more than
	// one queue).
	FlowSchema, FlowSchemaUID       string
	MatchingPrecedence              int32
	PriorityLevel, PriorityLevelUID string
	FlowDistinguisher               string

	// Queue is the index of the queue chosen from the flow's hand, or -1
	// when the level has no queues (exempt and reject levels). Queued says
	// whether the request waited there: false when it was dispatched on
	// arrival or turned away at once.
	Queue  int
	Queued bool
	// Arrival is when Admit was called; Wait is how long it took from
	// there to dispatch or rejection (0 for a request dispatched at once).
	Arrival time.Time
	Wait    time.Duration

	// Estimate is the work estimate: initial seats, final seats and the
	// final phase's duration (the additional latency). Seats is what the
	// level charged, once dispatched: the estimate with the final seats
	// capped at the level's limit (the additional latency grown to keep
	// the final work); for a rejected request it is the estimate.
	Estimate, Seats fairqueue.WorkEstimate
	// Execution is how long the request held its initial seats: from
	// dispatch to Ticket.Done (for a watch, its initial phase). Zero until
	// Done.
	Execution time.Duration
}

// EstimatedExecution is the execution time fair queuing assumes for every
// request when it orders the queues (G, fairqueue.EstimatedServiceTime);
// Record.Execution is the actual one.
const EstimatedExecution = fairqueue.EstimatedServiceTime

// note fills r from an admission that ended at now, as a dispatch; a
// rejection then sets Outcome, Reason and RetryAfter.
func (r *Record) note(res *classify.Result, req *fairqueue.Request, est fairqueue.WorkEstimate, arrival, now time.Time, queued, exempt bool) {
	r.FlowSchema, r.FlowSchemaUID = res.FlowSchema.Name, res.FlowSchema.UID
	r.MatchingPrecedence = 0
	if o := res.FlowSchema.Object; o != nil {
		r.MatchingPrecedence = o.Spec.MatchingPrecedence
	}
	r.PriorityLevel, r.PriorityLevelUID = res.PriorityLevel.Name, res.PriorityLevel.UID
	r.FlowDistinguisher = res.FlowDistinguisher
	r.Queue, r.Queued = req.QueueIndex(), queued
	r.Arrival, r.Wait = arrival, max(now.Sub(arrival), 0)
	r.Estimate, r.Seats = est, req.Estimate()
	r.Outcome = OutcomeDispatched
	if exempt {
		r.Outcome = OutcomeExempt
	}
	r.Reason, r.RetryAfter, r.Execution = 0, 0, 0
}
