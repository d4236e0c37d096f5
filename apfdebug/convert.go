package apfdebug

import "github.com/apfproject/apf/fairqueue"

// priorityLevelFromDump builds the dump_priority_levels row of a queue set.
func priorityLevelFromDump(name string, quiescing bool, d fairqueue.Dump) PriorityLevel {
	return PriorityLevel{
		Name:               name,
		ActiveQueues:       d.ActiveQueues,
		IsIdle:             d.Idle,
		IsQuiescing:        quiescing,
		WaitingRequests:    d.WaitingRequests,
		ExecutingRequests:  d.ExecutingRequests,
		DispatchedRequests: d.Dispatched,
		RejectedRequests:   d.Rejected,
		TimedoutRequests:   d.TimedOut,
		CancelledRequests:  d.Cancelled,
	}
}

// appendQueues appends the dump_queues rows of a queue set to dst, in queue
// index order.
func appendQueues(dst []Queue, priorityLevel string, d fairqueue.Dump) []Queue {
	for _, q := range d.Queues {
		dst = append(dst, Queue{
			PriorityLevel:     priorityLevel,
			Index:             q.Index,
			PendingRequests:   q.PendingRequests,
			ExecutingRequests: q.ExecutingRequests,
			SeatsInUse:        q.SeatsInUse,
			NextDispatchR:     q.NextDispatchR,
			InitialSeatsSum:   q.InitialSeatsSum,
			MaxSeatsSum:       q.MaxSeatsSum,
			TotalWorkSum:      q.TotalWorkSum,
		})
	}
	return dst
}

// tagFunc extracts, from the Tag a caller attached to a fairqueue request,
// what the queue set does not know: the matched FlowSchema, the flow
// distinguisher and, when details are wanted, the request's attributes.
type tagFunc func(tag any, includeDetails bool) (flowSchema, distinguisher string, details *RequestDetails)

// appendRequests appends the dump_requests rows of a queue set to dst, in the
// order of d.Requests. d must come from Dump(true); tag may be nil, leaving
// the FlowSchema, distinguisher and details empty.
func appendRequests(dst []Request, priorityLevel string, d fairqueue.Dump, includeDetails bool, tag tagFunc) []Request {
	for _, r := range d.Requests {
		row := Request{
			PriorityLevel:     priorityLevel,
			QueueIndex:        r.QueueIndex,
			IndexInQueue:      r.IndexInQueue,
			ArriveTime:        r.ArriveTime,
			InitialSeats:      r.InitialSeats,
			FinalSeats:        r.FinalSeats,
			AdditionalLatency: r.AdditionalLatency,
			StartTime:         r.StartTime,
		}
		if tag != nil {
			row.FlowSchema, row.FlowDistinguisher, row.Details = tag(r.Tag, includeDetails)
		}
		dst = append(dst, row)
	}
	return dst
}
