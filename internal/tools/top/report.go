package top

import (
	"cmp"
	"slices"
	"sort"
	"time"
)

// Report is what the view shows, computed from one sample, or from two
// for the rates. It is also the JSON document of `apf top -o json`;
// numbers that could not be read are null.
type Report struct {
	Server string    `json:"server"`
	Time   time.Time `json:"time"`
	// IntervalSeconds is the time between the two samples the rates are
	// taken over; 0 when there was one sample and there are no rates.
	IntervalSeconds float64 `json:"intervalSeconds"`
	Levels          []Level `json:"levels"`
	// Flows are the busiest flows, busiest first.
	Flows []Flow `json:"flows"`
	// FlowsTotal counts every flow with a request waiting or executing.
	FlowsTotal int `json:"flowsTotal"`
	// Borrowing names the levels whose current seats are above their
	// nominal seats, most borrowed first.
	Borrowing []string `json:"borrowing"`
	// Missing lists what could not be read, and why.
	Missing []Missing `json:"missing"`
	// Notes are other things the reader should know: why rates are
	// absent, lines of a dump that could not be read.
	Notes []string `json:"notes,omitempty"`
	// SharedBudget is the replica's share of a concurrency limit shared
	// with other replicas (apf serve --shared-concurrency-limit); absent
	// otherwise.
	SharedBudget *SharedBudget `json:"sharedBudget,omitempty"`
	// AdaptiveLimit is the server limit apf serve learns from its
	// upstream (--adaptive-concurrency-limit), nil when it is static.
	AdaptiveLimit *AdaptiveLimit `json:"adaptiveLimit,omitempty"`
	// Upstreams are the members of apf serve's gateway pools, by pool and
	// URL; absent from a server without them.
	Upstreams []Upstream `json:"upstreams,omitempty"`
}

// Level is one priority level.
type Level struct {
	Name string `json:"name"`
	// NominalSeats and CurrentSeats are the level's nominal concurrency
	// limit and the limit borrowing last set.
	NominalSeats *float64 `json:"nominalSeats"`
	CurrentSeats *float64 `json:"currentSeats"`
	// BorrowedSeats is CurrentSeats-NominalSeats: above 0 the level
	// borrows seats other levels lend, below 0 it lends.
	BorrowedSeats *float64 `json:"borrowedSeats"`
	// State is "borrowing", "lending" or "" (neither, or not known).
	State             string   `json:"state"`
	ExecutingRequests *float64 `json:"executingRequests"`
	ExecutingSeats    *float64 `json:"executingSeats"`
	WaitingRequests   *float64 `json:"waitingRequests"`
	WaitingSeats      *float64 `json:"waitingSeats"`
	// ActiveQueues counts the queues with a request waiting.
	ActiveQueues *int `json:"activeQueues"`
	// DispatchedPerSecond and RejectedPerSecond are rates over the
	// interval; RejectedByReason splits the rejections by reason
	// (queue-full, concurrency-limit, time-out) when /metrics was read.
	DispatchedPerSecond *float64           `json:"dispatchedPerSecond"`
	RejectedPerSecond   *float64           `json:"rejectedPerSecond"`
	RejectedByReason    map[string]float64 `json:"rejectedByReason"`
	// WaitP99Seconds is the 99th percentile of the time the requests
	// that entered a queue during the interval waited, estimated from
	// request_wait_duration_seconds; null when none did.
	WaitP99Seconds *float64 `json:"waitP99Seconds"`
	// PacedServiceSeconds and PacedTurnSeconds are what a paced level
	// (apf serve --paced-dispatch) measured: its requests' service time
	// and the time between two one-seat starts' turns; absent for any
	// other level.
	PacedServiceSeconds *float64 `json:"pacedServiceSeconds,omitempty"`
	PacedTurnSeconds    *float64 `json:"pacedTurnSeconds,omitempty"`
}

// Flow is one flow (priority level, FlowSchema, distinguisher) with
// requests in the server at the moment of the sample.
type Flow struct {
	PriorityLevel     string      `json:"priorityLevel"`
	FlowSchema        string      `json:"flowSchema"`
	Distinguisher     string      `json:"distinguisher"`
	ExecutingRequests int         `json:"executingRequests"`
	ExecutingSeats    int         `json:"executingSeats"`
	WaitingRequests   int         `json:"waitingRequests"`
	WaitingSeats      int         `json:"waitingSeats"`
	Queues            []FlowQueue `json:"queues"`
}

// FlowQueue is a queue that holds some of a flow's requests (the flow's
// hand has more queues: the dumps show only those its requests are in).
type FlowQueue struct {
	Index int `json:"index"`
	// Waiting and Executing are the flow's requests in the queue.
	Waiting   int `json:"waiting"`
	Executing int `json:"executing"`
	// QueueWaiting and QueueExecuting are every flow's requests in the
	// queue, from dump_queues; null without it.
	QueueWaiting   *int `json:"queueWaiting"`
	QueueExecuting *int `json:"queueExecuting"`
}

// DefaultFlows is how many flows a report keeps.
const DefaultFlows = 10

// NewReport computes the report of cur, with rates over the time since
// prev (nil for none). flows bounds the flows kept (0: DefaultFlows).
func NewReport(prev, cur *Sample, flows int) *Report {
	if flows <= 0 {
		flows = DefaultFlows
	}
	r := &Report{Server: cur.Server, Time: cur.At.UTC(), Missing: nonNil(cur.Missing), Levels: []Level{}, Flows: []Flow{}, Borrowing: []string{}}
	r.Notes = append(r.Notes, cur.Problems...)

	levels := map[string]*Level{}
	get := func(name string) *Level {
		l := levels[name]
		if l == nil {
			l = &Level{Name: name}
			levels[name] = l
		}
		return l
	}
	if cur.Metrics != nil {
		r.SharedBudget = cur.Metrics.SharedBudget
		r.AdaptiveLimit = cur.Metrics.AdaptiveLimit
		for name, m := range cur.Metrics.Levels {
			l := get(name)
			l.NominalSeats, l.CurrentSeats = m.NominalSeats, m.CurrentSeats
			l.ExecutingRequests, l.ExecutingSeats = ptr(m.ExecutingRequests), ptr(m.ExecutingSeats)
			l.WaitingRequests, l.WaitingSeats = ptr(m.WaitingRequests), ptr(m.WaitingSeats)
			l.PacedServiceSeconds, l.PacedTurnSeconds = m.PacedService, m.PacedTurn
		}
	}
	for _, row := range cur.Levels {
		l := get(row.Name)
		l.ActiveQueues = ptr(row.ActiveQueues)
		// The dump's counts stand in for the metrics' when those could
		// not be read; when both were, the metrics' are kept, so that
		// requests and seats come from the same moment.
		if cur.Metrics == nil {
			l.ExecutingRequests, l.WaitingRequests = ptr(float64(row.Executing)), ptr(float64(row.Waiting))
		}
	}
	if cur.Metrics != nil {
		// A level the metrics do not name but the dump does has no series
		// yet: nothing executing or waiting.
		for _, l := range levels {
			if l.ExecutingRequests == nil {
				l.ExecutingRequests, l.ExecutingSeats, l.WaitingRequests, l.WaitingSeats = ptr(0.0), ptr(0.0), ptr(0.0), ptr(0.0)
			}
		}
	}
	for _, l := range levels {
		if l.NominalSeats != nil && l.CurrentSeats != nil {
			d := *l.CurrentSeats - *l.NominalSeats
			l.BorrowedSeats = &d
			switch {
			case d > 0:
				l.State = "borrowing"
			case d < 0:
				l.State = "lending"
			}
		}
	}
	r.rates(prev, cur, get)
	if cur.Metrics != nil && cur.Metrics.Upstreams != nil {
		var before map[upstreamKey]*UpstreamMetrics
		if prev != nil && prev.Metrics != nil {
			before = prev.Metrics.Upstreams
			if before == nil {
				before = map[upstreamKey]*UpstreamMetrics{}
			}
		}
		dt := 0.0
		if before != nil {
			dt = cur.MetricsAt.Sub(prev.MetricsAt).Seconds()
		}
		r.Upstreams = upstreams(before, cur.Metrics.Upstreams, dt)
	}

	for _, l := range levels {
		r.Levels = append(r.Levels, *l)
	}
	slices.SortFunc(r.Levels, func(a, b Level) int { return cmp.Compare(a.Name, b.Name) })
	for _, l := range r.Levels {
		if l.State == "borrowing" {
			r.Borrowing = append(r.Borrowing, l.Name)
		}
	}
	sort.SliceStable(r.Borrowing, func(i, j int) bool {
		return *levels[r.Borrowing[i]].BorrowedSeats > *levels[r.Borrowing[j]].BorrowedSeats
	})

	all := busiestFlows(cur.Requests, cur.Queues)
	r.FlowsTotal = len(all)
	if len(all) > flows {
		all = all[:flows]
	}
	r.Flows = all
	return r
}

// rates fills in the per-second rates and the wait p99 from the
// difference between prev and cur: from the metrics when both samples
// read them, else from dump_priority_levels' counters.
func (r *Report) rates(prev, cur *Sample, get func(string) *Level) {
	if prev == nil {
		r.Notes = append(r.Notes, "rates need two samples: dispatched/s, rejected/s and the wait p99 come with the next one")
		return
	}
	switch {
	case prev.Metrics != nil && cur.Metrics != nil:
		dt := cur.MetricsAt.Sub(prev.MetricsAt).Seconds()
		if dt <= 0 {
			return
		}
		r.IntervalSeconds = dt
		for name, m := range cur.Metrics.Levels {
			l := get(name)
			p := prev.Metrics.Levels[name]
			if p == nil {
				p = &LevelMetrics{}
			}
			dispatched := 0.0
			for fs, v := range m.Dispatched {
				dispatched += increase(p.Dispatched[fs], v)
			}
			l.DispatchedPerSecond = ptr(dispatched / dt)
			rejected, byReason := 0.0, map[string]float64{}
			for k, v := range m.Rejected {
				d := increase(p.Rejected[k], v)
				rejected += d
				if d > 0 {
					byReason[k.reason] += d / dt
				}
			}
			l.RejectedPerSecond, l.RejectedByReason = ptr(rejected/dt), byReason
			var wait Histogram
			for fs, h := range m.Wait {
				ph, ok := p.Wait[fs]
				wait = addHistograms(wait, histogramIncrease(ph, ok, h))
			}
			if v, ok := quantile(0.99, wait); ok {
				l.WaitP99Seconds = &v
			}
		}
		// Levels only the dumps name have no series: nothing happened.
		for _, row := range cur.Levels {
			if l := get(row.Name); l.DispatchedPerSecond == nil {
				l.DispatchedPerSecond, l.RejectedPerSecond, l.RejectedByReason = ptr(0.0), ptr(0.0), map[string]float64{}
			}
		}
	case prev.Levels != nil && cur.Levels != nil:
		dt := cur.LevelsAt.Sub(prev.LevelsAt).Seconds()
		if dt <= 0 {
			return
		}
		r.IntervalSeconds = dt
		before := map[string]LevelRow{}
		for _, row := range prev.Levels {
			before[row.Name] = row
		}
		for _, row := range cur.Levels {
			if !row.HasCounters {
				continue
			}
			l := get(row.Name)
			p := before[row.Name]
			l.DispatchedPerSecond = ptr(increase(float64(p.Dispatched), float64(row.Dispatched)) / dt)
			l.RejectedPerSecond = ptr(increase(float64(p.Rejected), float64(row.Rejected)) / dt)
		}
		r.Notes = append(r.Notes, "rates from dump_priority_levels' counters: no rejections by reason and no wait p99 without /metrics")
	default:
		r.Notes = append(r.Notes, "no rates: neither /metrics nor dump_priority_levels was read in two samples in a row")
	}
}

// flowKey names a flow.
type flowKey struct{ level, schema, distinguisher string }

// busiestFlows gathers dump_requests' rows by flow, with the lengths of
// their queues from dump_queues, busiest first: most seats taken or
// wanted (executing and waiting), then most requests, then by name.
func busiestFlows(requests []RequestRow, queues []QueueRow) []Flow {
	type queueKey struct {
		level string
		index int
	}
	queueRows := map[queueKey]QueueRow{}
	for _, q := range queues {
		queueRows[queueKey{q.Level, q.Index}] = q
	}
	byFlow := map[flowKey]*Flow{}
	inQueue := map[flowKey]map[int]*FlowQueue{}
	var order []flowKey
	for _, rq := range requests {
		k := flowKey{rq.Level, rq.Schema, rq.Distinguisher}
		f := byFlow[k]
		if f == nil {
			f = &Flow{PriorityLevel: rq.Level, FlowSchema: rq.Schema, Distinguisher: rq.Distinguisher, Queues: []FlowQueue{}}
			byFlow[k] = f
			inQueue[k] = map[int]*FlowQueue{}
			order = append(order, k)
		}
		seats := max(rq.InitialSeats, 1)
		var q *FlowQueue
		if rq.Queue >= 0 {
			if q = inQueue[k][rq.Queue]; q == nil {
				q = &FlowQueue{Index: rq.Queue}
				if row, ok := queueRows[queueKey{k.level, rq.Queue}]; ok {
					q.QueueWaiting, q.QueueExecuting = ptr(row.Pending), ptr(row.Executing)
				}
				inQueue[k][rq.Queue] = q
			}
		}
		if rq.Executing() {
			f.ExecutingRequests++
			f.ExecutingSeats += seats
			if q != nil {
				q.Executing++
			}
		} else {
			f.WaitingRequests++
			f.WaitingSeats += seats
			if q != nil {
				q.Waiting++
			}
		}
	}
	out := make([]Flow, 0, len(order))
	for _, k := range order {
		f := byFlow[k]
		for _, q := range inQueue[k] {
			f.Queues = append(f.Queues, *q)
		}
		slices.SortFunc(f.Queues, func(a, b FlowQueue) int { return cmp.Compare(a.Index, b.Index) })
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b Flow) int {
		return cmp.Or(
			cmp.Compare(b.ExecutingSeats+b.WaitingSeats, a.ExecutingSeats+a.WaitingSeats),
			cmp.Compare(b.ExecutingRequests+b.WaitingRequests, a.ExecutingRequests+a.WaitingRequests),
			cmp.Compare(a.PriorityLevel, b.PriorityLevel),
			cmp.Compare(a.FlowSchema, b.FlowSchema),
			cmp.Compare(a.Distinguisher, b.Distinguisher),
		)
	})
	return out
}
