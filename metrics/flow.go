package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Counter is what the request path does with a counter.
type Counter interface {
	Inc()
	Add(float64)
}

// UpDown is what the request path does with a gauge that only moves by
// steps: current_executing_requests and current_executing_seats, which a
// pair keeps in stripes (stripes.go) and which therefore cannot be set.
type UpDown interface {
	Inc()
	Dec()
	Add(float64)
	Sub(float64)
}

// Gauge is what the request path does with a gauge.
type Gauge interface {
	Inc()
	Dec()
	Add(float64)
	Sub(float64)
	Set(float64)
}

// FlowMetrics holds the handles of one (priority level, flow schema) pair.
// Resolve it once per pair with [Set.Flow] when a configuration is
// compiled.
//
// Each handle creates its series on first use, as the API server does: a
// schema that never sees a request exports nothing, and a configuration of
// thousands of schemas costs a few hundred bytes for each until its
// schemas are used (creating every series up front cost 15 KB and about a
// hundred exposition lines per schema). After [Set.DeleteFlow] or
// [Set.DeleteLevel] a handle not yet used discards what it is given, so a
// request that outlives its schema cannot bring the schema's series back.
type FlowMetrics struct {
	// Dispatched is dispatched_requests_total (exempt requests included).
	Dispatched Counter
	// RejectedQueueFull is rejected_requests_total{reason="queue-full"}.
	RejectedQueueFull Counter
	// RejectedConcurrencyLimit is
	// rejected_requests_total{reason="concurrency-limit"}.
	RejectedConcurrencyLimit Counter
	// RejectedTimeOut is rejected_requests_total{reason="time-out"}.
	RejectedTimeOut Counter
	// NoAccommodation is request_dispatch_no_accommodation_total.
	NoAccommodation Counter

	// InqueueRequests is current_inqueue_requests.
	InqueueRequests Gauge
	// InqueueSeats is current_inqueue_seats.
	InqueueSeats Gauge
	// ExecutingRequests is current_executing_requests (initial phase only).
	ExecutingRequests UpDown
	// ExecutingSeats is current_executing_seats (final phase included).
	ExecutingSeats UpDown

	// QueueLengthAfterEnqueue is request_queue_length_after_enqueue.
	QueueLengthAfterEnqueue prometheus.Observer
	// WaitExecuted is request_wait_duration_seconds{execute="true"}, for a
	// request that got a queue set ticket, including one that later timed
	// out.
	WaitExecuted prometheus.Observer
	// WaitRejected is request_wait_duration_seconds{execute="false"}, for a
	// request rejected at arrival.
	WaitRejected prometheus.Observer
	// ExecutionRegular is request_execution_seconds{type="regular"}.
	ExecutionRegular prometheus.Observer
	// ExecutionWatch is request_execution_seconds{type="watch"}.
	ExecutionWatch prometheus.Observer
	// WatchCountSamples is watch_count_samples.
	WatchCountSamples prometheus.Observer
	// WorkEstimatedSeats is work_estimated_seats.
	WorkEstimatedSeats prometheus.Observer

	set     *Set
	pl, fs  string
	retired bool // guarded by set.mu

	counters  [4]lazyCounter
	gauges    [2]lazyGauge
	observers [1]lazyObserver
	// stripes holds the request-path figures (stripes.go), allocated at
	// the pair's first request.
	stripes atomic.Pointer[[]FlowStripe]
	// created holds the creation time of each striped series, in Unix
	// nanoseconds, 0 until its first use.
	created [stripedSeries]atomic.Int64
}

// Flow returns the handles of the pair (pl, fs). Calling it again for the
// same pair returns the same handles, until the pair is deleted.
func (s *Set) Flow(pl, fs string) *FlowMetrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	schemas := s.flows[pl]
	if schemas == nil {
		schemas = map[string]*FlowMetrics{}
		s.flows[pl] = schemas
	}
	if f := schemas[fs]; f != nil {
		return f
	}
	v := s.v
	f := &FlowMetrics{set: s, pl: pl, fs: fs}
	counter := func(i int, vec *prometheus.CounterVec, extra ...string) Counter {
		f.counters[i] = lazyCounter{lazy[Counter]{f: f, resolve: func() Counter { return vec.WithLabelValues(f.labels(extra)...) }}}
		return &f.counters[i]
	}
	gauge := func(i int, vec *prometheus.GaugeVec) Gauge {
		f.gauges[i] = lazyGauge{lazy[Gauge]{f: f, resolve: func() Gauge { return vec.WithLabelValues(pl, fs) }}}
		return &f.gauges[i]
	}
	observer := func(i int, vec *prometheus.HistogramVec, extra ...string) prometheus.Observer {
		f.observers[i] = lazyObserver{lazy[prometheus.Observer]{f: f, resolve: func() prometheus.Observer { return vec.WithLabelValues(f.labels(extra)...) }}}
		return &f.observers[i]
	}
	f.RejectedQueueFull = counter(0, v.rejected, reasonQueueFull)
	f.RejectedConcurrencyLimit = counter(1, v.rejected, reasonConcurrencyLimit)
	f.RejectedTimeOut = counter(2, v.rejected, reasonTimeOut)
	f.NoAccommodation = counter(3, v.noAccommodation)
	f.InqueueRequests = gauge(0, v.inqueueRequests)
	f.InqueueSeats = gauge(1, v.inqueueSeats)
	f.WatchCountSamples = observer(0, v.watchCount)
	// The series every request updates are kept in stripes: these
	// handles write to the caller's stripe, and the request path uses
	// the stripes directly (FlowMetrics.Stripe).
	f.Dispatched = stripedCounter{f}
	f.ExecutingRequests = stripedGauge{f: f}
	f.ExecutingSeats = stripedGauge{f: f, seats: true}
	f.WaitExecuted = stripedObserver{f, usedWaitExecuted}
	f.WaitRejected = stripedObserver{f, usedWaitRejected}
	f.ExecutionRegular = stripedObserver{f, usedExecutionRegular}
	f.ExecutionWatch = stripedObserver{f, usedExecutionWatch}
	f.WorkEstimatedSeats = stripedObserver{f, usedWorkSeats}
	f.QueueLengthAfterEnqueue = stripedObserver{f, usedQueueLength}
	schemas[fs] = f
	return f
}

// labels returns the pair's label values followed by extra.
func (f *FlowMetrics) labels(extra []string) []string {
	return append([]string{f.pl, f.fs}, extra...)
}

// lazy is a handle whose series is created by resolve on first use. The
// fast path is one atomic load; resolving takes the Set's lock, so that it
// cannot race with the deletion of the pair.
type lazy[T any] struct {
	f       *FlowMetrics
	resolve func() T
	p       atomic.Pointer[T]
}

func (l *lazy[T]) get() T {
	if p := l.p.Load(); p != nil {
		return *p
	}
	return l.slow()
}

func (l *lazy[T]) slow() T {
	s := l.f.set
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := l.p.Load(); p != nil {
		return *p
	}
	var h T
	if l.f.retired {
		h = any(discard{}).(T)
	} else {
		h = l.resolve()
	}
	l.p.Store(&h)
	return h
}

type lazyCounter struct{ lazy[Counter] }

func (c *lazyCounter) Inc()          { c.get().Inc() }
func (c *lazyCounter) Add(v float64) { c.get().Add(v) }

type lazyGauge struct{ lazy[Gauge] }

func (g *lazyGauge) Inc()          { g.get().Inc() }
func (g *lazyGauge) Dec()          { g.get().Dec() }
func (g *lazyGauge) Add(v float64) { g.get().Add(v) }
func (g *lazyGauge) Sub(v float64) { g.get().Sub(v) }
func (g *lazyGauge) Set(v float64) { g.get().Set(v) }

type lazyObserver struct{ lazy[prometheus.Observer] }

func (o *lazyObserver) Observe(v float64) { o.get().Observe(v) }

// discard takes the updates of a deleted pair's unused handles.
type discard struct{}

func (discard) Inc()            {}
func (discard) Dec()            {}
func (discard) Add(float64)     {}
func (discard) Sub(float64)     {}
func (discard) Set(float64)     {}
func (discard) Observe(float64) {}
