package fairqueue

import "strconv"

// Decision is what happened to a request when it arrived.
type Decision uint8

const (
	// Dispatched means the request holds its seats and may run now.
	Dispatched Decision = iota + 1
	// Queued means the request waits in a queue; it is dispatched later by
	// some other call, or removed by Cancel.
	Queued
	// Rejected means the request was turned away; Request.Reason says why.
	Rejected
)

// String returns "dispatched", "queued" or "rejected".
func (d Decision) String() string {
	switch d {
	case Dispatched:
		return "dispatched"
	case Queued:
		return "queued"
	case Rejected:
		return "rejected"
	}
	return "Decision(" + strconv.Itoa(int(d)) + ")"
}

// RejectReason says why a request was rejected. Its String values are the
// "reason" label values of apiserver_flowcontrol_rejected_requests_total.
type RejectReason uint8

const (
	// QueueFull: the level was saturated and the chosen queue already held
	// QueueLengthLimit requests.
	QueueFull RejectReason = iota + 1
	// ConcurrencyLimit: a reject level had no room for the request.
	ConcurrencyLimit
	// TimeOut: the request was cancelled while it waited in its queue (its
	// wait limit passed or its client went away).
	TimeOut
)

// String returns "queue-full", "concurrency-limit" or "time-out".
func (r RejectReason) String() string {
	switch r {
	case QueueFull:
		return "queue-full"
	case ConcurrencyLimit:
		return "concurrency-limit"
	case TimeOut:
		return "time-out"
	}
	return "RejectReason(" + strconv.Itoa(int(r)) + ")"
}
