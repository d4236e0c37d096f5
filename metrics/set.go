package metrics

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Set is every APF metric, registered once. Create it with [New]; its methods
// are safe for concurrent use.
type Set struct {
	v     *vecs
	clock func() time.Time

	// Mutating holds the global handles for request_kind="mutating".
	Mutating *KindMetrics
	// ReadOnly holds the global handles for request_kind="readOnly".
	ReadOnly *KindMetrics
	// SeatFairFrac is apiserver_flowcontrol_seat_fair_frac, the fair
	// fraction of the latest borrowing adjustment (facts §4.2 step 3).
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
	s := &Set{clock: time.Now}
	for _, o := range opts {
		o(s)
	}
	s.v = define(s.clock)
	s.SeatFairFrac = s.v.seatFairFrac
	s.Mutating = s.kind(KindMutating)
	s.ReadOnly = s.kind(KindReadOnly)
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
// pl: its per-level series and the series of every (pl, flow schema) pair.
// Handles resolved for pl before the call keep working but are no longer
// exported; resolve new ones if the level comes back.
func (s *Set) DeleteLevel(pl string) {
	m := prometheus.Labels{labelPL: pl}
	for _, d := range s.v.byLevel {
		d.DeletePartialMatch(m)
	}
	for _, r := range s.v.ratioByLevel {
		r.deleteMatching(m)
	}
}

// DeleteFlow removes from the exposition the label sets of the pair (pl, fs),
// for use when a flow schema is removed or now leads to a different level.
func (s *Set) DeleteFlow(pl, fs string) {
	m := prometheus.Labels{labelPL: pl, labelFS: fs}
	for _, d := range s.v.byLevelAndSchema {
		d.DeletePartialMatch(m)
	}
}
