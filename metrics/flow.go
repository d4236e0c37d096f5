package metrics

import "github.com/prometheus/client_golang/prometheus"

// FlowMetrics holds the resolved handles of one (priority level, flow schema)
// pair. Resolve it once per pair with [Set.Flow] when a configuration is
// compiled.
type FlowMetrics struct {
	// Dispatched is dispatched_requests_total (exempt requests included).
	Dispatched prometheus.Counter
	// RejectedQueueFull is rejected_requests_total{reason="queue-full"}.
	RejectedQueueFull prometheus.Counter
	// RejectedConcurrencyLimit is
	// rejected_requests_total{reason="concurrency-limit"}.
	RejectedConcurrencyLimit prometheus.Counter
	// RejectedTimeOut is rejected_requests_total{reason="time-out"}.
	RejectedTimeOut prometheus.Counter
	// NoAccommodation is request_dispatch_no_accommodation_total.
	NoAccommodation prometheus.Counter

	// InqueueRequests is current_inqueue_requests.
	InqueueRequests prometheus.Gauge
	// InqueueSeats is current_inqueue_seats.
	InqueueSeats prometheus.Gauge
	// ExecutingRequests is current_executing_requests (initial phase only).
	ExecutingRequests prometheus.Gauge
	// ExecutingSeats is current_executing_seats (final phase included).
	ExecutingSeats prometheus.Gauge

	// QueueLengthAfterEnqueue is request_queue_length_after_enqueue.
	QueueLengthAfterEnqueue prometheus.Observer
	// WaitExecuted is request_wait_duration_seconds{execute="true"}, for a
	// request that got a queue set ticket, including one that later timed
	// out (facts §9).
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
}

// Rejected returns the rejection counter for reason, one of ReasonQueueFull,
// ReasonConcurrencyLimit and ReasonTimeOut; any other reason yields nil.
func (f *FlowMetrics) Rejected(reason string) prometheus.Counter {
	switch reason {
	case ReasonQueueFull:
		return f.RejectedQueueFull
	case ReasonConcurrencyLimit:
		return f.RejectedConcurrencyLimit
	case ReasonTimeOut:
		return f.RejectedTimeOut
	}
	return nil
}

// Flow resolves the handles of the pair (pl, fs). Calling it again for the
// same pair returns handles on the same series.
func (s *Set) Flow(pl, fs string) *FlowMetrics {
	s.mu.Lock()
	schemas := s.flows[pl]
	if schemas == nil {
		schemas = map[string]struct{}{}
		s.flows[pl] = schemas
	}
	schemas[fs] = struct{}{}
	s.mu.Unlock()
	v := s.v
	return &FlowMetrics{
		Dispatched:               v.dispatched.WithLabelValues(pl, fs),
		RejectedQueueFull:        v.rejected.WithLabelValues(pl, fs, ReasonQueueFull),
		RejectedConcurrencyLimit: v.rejected.WithLabelValues(pl, fs, ReasonConcurrencyLimit),
		RejectedTimeOut:          v.rejected.WithLabelValues(pl, fs, ReasonTimeOut),
		NoAccommodation:          v.noAccommodation.WithLabelValues(pl, fs),
		InqueueRequests:          v.inqueueRequests.WithLabelValues(pl, fs),
		InqueueSeats:             v.inqueueSeats.WithLabelValues(pl, fs),
		ExecutingRequests:        v.executingRequests.WithLabelValues(pl, fs),
		ExecutingSeats:           v.executingSeats.WithLabelValues(pl, fs),
		QueueLengthAfterEnqueue:  v.queueLength.WithLabelValues(pl, fs),
		WaitExecuted:             v.waitDuration.WithLabelValues(pl, fs, "true"),
		WaitRejected:             v.waitDuration.WithLabelValues(pl, fs, "false"),
		ExecutionRegular:         v.executionSeconds.WithLabelValues(pl, fs, "regular"),
		ExecutionWatch:           v.executionSeconds.WithLabelValues(pl, fs, "watch"),
		WatchCountSamples:        v.watchCount.WithLabelValues(pl, fs),
		WorkEstimatedSeats:       v.workSeats.WithLabelValues(pl, fs),
	}
}
