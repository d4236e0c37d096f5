package fairqueue

import "time"

// Stats is a snapshot of a queue set's gauges and counters.
type Stats struct {
	WaitingRequests   int // requests in queues
	WaitingSeats      int // Σ MaxSeats of waiting requests
	ExecutingRequests int // dispatched and not finished (final phases excluded)
	SeatsInUse        int // seats held, final phases included
	ActiveQueues      int // queues with waiting requests (the dump's ActiveQueues)
	Queues            int // queues, surplus ones still draining included
	ConcurrencyLimit  int

	// Counters since New. Every Arrive ends up in exactly one of Dispatched,
	// Rejected or (for now) WaitingRequests; Cancelled requests are counted
	// in Rejected too, as upstream counts them, so
	//   Arrived = Dispatched + Rejected + WaitingRequests.
	Arrived    int
	Dispatched int
	Rejected   int // queue-full, concurrency-limit and time-out
	TimedOut   int // always 0, as upstream's TimedoutRequests
	Cancelled  int // time-out rejections (Cancel)

	// NoAccommodation counts dispatch attempts stopped because the chosen
	// head did not fit (request_dispatch_no_accommodation_total).
	NoAccommodation int
	// EpochAdvances counts virtual-time epoch advances; EpochFailures
	// those in which some reading underflowed (epoch_advance_total).
	EpochAdvances, EpochFailures int

	// CurrentR is virtual time as of the last state-changing call.
	CurrentR SeatSeconds

	// PacedService and PacedTurn are a paced level's measured service
	// time and the time between two one-seat starts' turns (pace.go); 0
	// on a level that is not paced or has no measure yet.
	PacedService, PacedTurn time.Duration
}

// Stats returns the current gauges and counters.
func (qs *QueueSet) Stats() Stats {
	return Stats{
		WaitingRequests:   qs.totWaiting,
		WaitingSeats:      qs.totSeatsWaiting,
		ExecutingRequests: qs.totExecuting,
		SeatsInUse:        qs.totSeatsInUse,
		ActiveQueues:      len(qs.waitingQueues),
		Queues:            len(qs.queues),
		ConcurrencyLimit:  qs.cfg.ConcurrencyLimit,
		Arrived:           qs.arrived,
		Dispatched:        qs.dispatched,
		Rejected:          qs.rejected,
		Cancelled:         qs.cancelled,
		NoAccommodation:   qs.noAccommodation,
		EpochAdvances:     qs.epochAdvances,
		EpochFailures:     qs.epochFailures,
		CurrentR:          qs.r,
		PacedService:      qs.pacedService(),
		PacedTurn:         qs.pacedTurn(),
	}
}

// Dump is the debug view of a queue set
// (docs/spec/observability.md#debug-dumps).
type Dump struct {
	Stats
	Idle bool

	// Queues lists every queue by index.
	Queues []QueueDump
	// Requests lists, when asked for, every waiting and executing
	// request: queue by queue, the waiting ones in order and then the
	// executing ones in dispatch order; then the queueless executing ones.
	// Requests in their final phase are not listed, as upstream.
	Requests []RequestDump
}

// QueueDump is one queue's row of dump_queues.
type QueueDump struct {
	Index             int
	PendingRequests   int
	ExecutingRequests int
	SeatsInUse        int
	NextDispatchR     SeatSeconds
	InitialSeatsSum   int
	MaxSeatsSum       int
	TotalWorkSum      SeatSeconds
}

// RequestDump is one request's row of dump_requests.
type RequestDump struct {
	QueueIndex        int // -1 for queueless requests (exempt and reject levels)
	IndexInQueue      int // -1 for executing requests
	Tag               any
	ArriveTime        time.Time
	InitialSeats      int
	FinalSeats        int
	AdditionalLatency time.Duration
	StartTime         time.Time // zero while waiting
}

// Dump returns the debug view; includeRequests adds the per-request rows.
func (qs *QueueSet) Dump(includeRequests bool) Dump {
	d := Dump{Stats: qs.Stats(), Idle: qs.IsIdle(), Queues: make([]QueueDump, len(qs.queues))}
	for i, q := range qs.queues {
		d.Queues[i] = qs.queueDump(i, q)
	}
	if !includeRequests {
		return d
	}
	d.Requests = make([]RequestDump, 0, qs.totWaiting+qs.totExecuting)
	for i, q := range qs.queues {
		k := 0
		for r := q.waiting.head; r != nil; r = r.next {
			d.Requests = append(d.Requests, qs.dumpRequest(r, i, k))
			k++
		}
		for r := q.executing.head; r != nil; r = r.next {
			d.Requests = append(d.Requests, qs.dumpRequest(r, i, -1))
		}
	}
	for r := qs.queueless.head; r != nil; r = r.next {
		d.Requests = append(d.Requests, qs.dumpRequest(r, -1, -1))
	}
	return d
}

// VisitQueues calls f with each queue's row of the dump, in order, and
// returns the stats: what Dump(false) returns, without building the slice
// of rows. f must not call the queue set.
func (qs *QueueSet) VisitQueues(f func(QueueDump)) Stats {
	for i, q := range qs.queues {
		f(qs.queueDump(i, q))
	}
	return qs.Stats()
}

// queueDump is the dump's row of q, the i-th queue.
func (qs *QueueSet) queueDump(i int, q *queue) QueueDump {
	return QueueDump{
		Index:             i,
		PendingRequests:   q.waiting.n,
		ExecutingRequests: q.executing.n,
		SeatsInUse:        q.seatsInUse,
		NextDispatchR:     q.nextDispatchR,
		InitialSeatsSum:   q.initialSeatsSum,
		MaxSeatsSum:       q.maxSeatsSum,
		TotalWorkSum:      q.totalWorkSum,
	}
}

func (qs *QueueSet) dumpRequest(r *Request, queue, index int) RequestDump {
	return RequestDump{
		QueueIndex:        queue,
		IndexInQueue:      index,
		Tag:               r.Tag,
		ArriveTime:        r.arriveTime(),
		InitialSeats:      r.est.InitialSeats,
		FinalSeats:        r.est.FinalSeats,
		AdditionalLatency: r.est.AdditionalLatency,
		StartTime:         r.StartTime(),
	}
}
