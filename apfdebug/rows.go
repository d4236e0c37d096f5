package apfdebug

import (
	"time"

	"github.com/apfproject/apf/fairqueue"
)

// PriorityLevel is one row of dump_priority_levels.
type PriorityLevel struct {
	Name               string
	ActiveQueues       int // queues holding at least one waiting request
	IsIdle             bool
	IsQuiescing        bool
	WaitingRequests    int
	ExecutingRequests  int
	DispatchedRequests int
	RejectedRequests   int
	TimedoutRequests   int // always 0, as upstream: time-outs count as cancelled
	CancelledRequests  int
}

// Queue is one row of dump_queues.
type Queue struct {
	PriorityLevel     string
	Index             int
	PendingRequests   int
	ExecutingRequests int
	SeatsInUse        int
	NextDispatchR     fairqueue.SeatSeconds
	InitialSeatsSum   int
	MaxSeatsSum       int
	TotalWorkSum      fairqueue.SeatSeconds
}

// Request is one row of dump_requests.
type Request struct {
	PriorityLevel     string
	FlowSchema        string
	QueueIndex        int // -1 for queueless requests (exempt and reject levels)
	IndexInQueue      int // -1 for executing requests
	FlowDistinguisher string
	ArriveTime        time.Time
	InitialSeats      int
	FinalSeats        int
	AdditionalLatency time.Duration
	StartTime         time.Time // zero while waiting

	// Details is printed only when the dump is asked for details; nil then
	// prints empty cells.
	Details *RequestDetails
}

// RequestDetails are the request attributes printed by
// dump_requests?includeRequestDetails=x.
type RequestDetails struct {
	UserName    string
	Verb        string
	APIPath     string
	Namespace   string
	Name        string
	APIVersion  string // see GroupVersion
	Resource    string
	Subresource string
}

// groupVersion formats an API group and version the way the APIVersion
// column shows them: "group/version", or just "version" for the core
// (empty) group.
func groupVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}
