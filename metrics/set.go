package metrics

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Set is every APF metric, registered once. Create it with [New]; its methods
// are safe for concurrent use.
type Set struct {
	v     *vecs
	clock func() time.Time

	// mu guards flows, the handles made by Flow by priority level and flow
	// schema (so that DeleteLevel can name the pairs' label sets), and the
	// creation of their series.
	mu    sync.Mutex
	flows map[string]map[string]*FlowMetrics

	// Mutating holds the global handles for request_kind="mutating".
	Mutating *KindMetrics
	// ReadOnly holds the global handles for request_kind="readOnly".
	ReadOnly *KindMetrics
	// SeatFairFrac is apiserver_flowcontrol_seat_fair_frac, the fair
	// fraction of the latest borrowing adjustment
	// (docs/spec/concurrency.md#three-regimes).
	SeatFairFrac prometheus.Gauge
}

// Option changes how [New] builds a Set.
type Option func(*Set)

// WithClock sets the clock that timing-ratio histograms read when they are
// collected and when a child is created. The default is time.Now. Times passed
// to [RatioGauge] methods must come from the same clock.
func WithClock(now func() time.Time) Option {
	return func(s *Set) { s.clock = now }
}

// New defines every metric and registers each family once with reg. A nil
// reg registers nothing, which suits tests of other packages that only need
// working handles. It fails if reg refuses any family, for example because a
// Set was already registered with it.
func New(reg prometheus.Registerer, opts ...Option) (*Set, error) {
	s := &Set{clock: time.Now, flows: map[string]map[string]*FlowMetrics{}}
	for _, o := range opts {
		o(s)
	}
	s.v = define(s.clock)
	s.v.striped.s = s
	s.SeatFairFrac = s.v.seatFairFrac
	s.Mutating = s.kind(kindMutating)
	s.ReadOnly = s.kind(kindReadOnly)
	if reg == nil {
		return s, nil
	}
	for _, c := range s.v.collectorsInOrder {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering APF metrics: %w", err)
		}
	}
	return s, nil
}

// KindMetrics holds the resolved handles of one request_kind (mutating or
// readOnly).
type KindMetrics struct {
	// InflightRequests is apiserver_current_inflight_requests: the high
	// watermark of executing requests over the last second.
	InflightRequests prometheus.Gauge
	// InqueueRequests is apiserver_current_inqueue_requests: the high
	// watermark of waiting requests over the last second (APF only).
	InqueueRequests prometheus.Gauge
	// Waiting is read_vs_write_current_requests{phase="waiting"}; its
	// denominator is the sum over queued levels of queues*queueLengthLimit.
	Waiting *RatioGauge
	// Executing is read_vs_write_current_requests{phase="executing"}; its
	// denominator is the sum of nominal concurrency limits.
	Executing *RatioGauge
}

func (s *Set) kind(k string) *KindMetrics {
	return &KindMetrics{
		InflightRequests: s.v.inflightByKind.WithLabelValues(k),
		InqueueRequests:  s.v.inqueueByKind.WithLabelValues(k),
		Waiting:          s.v.readVsWrite.child(nil, 0, 1, phaseWaiting, k),
		Executing:        s.v.readVsWrite.child(nil, 0, 1, phaseExecuting, k),
	}
}

// DeleteLevel removes from the exposition every label set of priority level
// pl: its per-level series and the series of every (pl, flow schema) pair
// resolved with Flow. Handles resolved for pl before the call keep working
// but are no longer exported; resolve new ones if the level comes back.
//
// Deletion names each label set exactly, so that its cost does not depend
// on how many other series exist: removing the levels and schemas of a
// large configuration one by one stays linear in its size.
func (s *Set) DeleteLevel(pl string) {
	v := s.v
	for _, g := range []*prometheus.GaugeVec{v.currentR, v.dispatchR, v.latestS, v.nominalLimit, v.lowerLimit,
		v.upperLimit, v.currentLimit, v.demandHighWater, v.demandAverage, v.demandStdev, v.demandSmoothed, v.targetSeats} {
		g.DeleteLabelValues(pl)
	}
	for _, bound := range []string{"min", "max"} {
		v.nextSBounds.DeleteLabelValues(pl, bound)
		v.nextDiscSBounds.DeleteLabelValues(pl, bound)
	}
	v.epochAdvance.DeleteLabelValues(pl, "true")
	v.epochAdvance.DeleteLabelValues(pl, "false")
	v.demandSeats.delete(pl)
	v.requestUtil.delete(phaseWaiting, pl)
	v.requestUtil.delete(phaseExecuting, pl)
	v.seatUtil.delete(pl)

	s.mu.Lock()
	defer s.mu.Unlock()
	for fs, f := range s.flows[pl] {
		f.retired = true
		s.deleteFlowSeries(pl, fs)
	}
	delete(s.flows, pl)
}

// DeleteFlow removes from the exposition the label sets of the pair (pl, fs),
// for use when a flow schema is removed or now leads to a different level.
func (s *Set) DeleteFlow(pl, fs string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.flows[pl][fs]; f != nil {
		f.retired = true
		delete(s.flows[pl], fs)
	}
	s.deleteFlowSeries(pl, fs)
}

func (s *Set) deleteFlowSeries(pl, fs string) {
	v := s.v
	// The striped series go with the pair's FlowMetrics, which the
	// caller removed from s.flows.
	for _, g := range []*prometheus.GaugeVec{v.inqueueRequests, v.inqueueSeats} {
		g.DeleteLabelValues(pl, fs)
	}
	v.noAccommodation.DeleteLabelValues(pl, fs)
	for _, reason := range []string{reasonQueueFull, reasonConcurrencyLimit, reasonTimeOut} {
		v.rejected.DeleteLabelValues(pl, fs, reason)
	}
	v.watchCount.DeleteLabelValues(pl, fs)
}
