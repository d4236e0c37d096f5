package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// FlowCounts is what a (priority level, flow schema) pair's counters hold:
// its dispatched requests and its rejections by reason.
type FlowCounts struct {
	Dispatched, QueueFull, ConcurrencyLimit, TimeOut uint64
}

// Rejected is the sum of the rejections of every reason.
func (c FlowCounts) Rejected() uint64 { return c.QueueFull + c.ConcurrencyLimit + c.TimeOut }

// Counts reads the pair's counters. A counter that never counted (its
// series not created yet, or discarded after the pair was deleted) reads
// 0. It reads the series the request path already updates, so a console
// or a report that wants hit counts adds nothing to that path; it is meant
// for periodic reads (it writes each counter into a protobuf message).
func (f *FlowMetrics) Counts() FlowCounts {
	c := FlowCounts{
		QueueFull:        f.counters[0].value(),
		ConcurrencyLimit: f.counters[1].value(),
		TimeOut:          f.counters[2].value(),
	}
	if t, ok := f.totals(); ok {
		c.Dispatched = t.dispatched
	}
	return c
}

// value returns the counter's value without creating its series.
func (c *lazyCounter) value() uint64 {
	p := c.p.Load()
	if p == nil {
		return 0
	}
	m, ok := (*p).(prometheus.Metric)
	if !ok {
		return 0
	}
	var out dto.Metric
	if err := m.Write(&out); err != nil || out.Counter == nil {
		return 0
	}
	return uint64(out.Counter.GetValue())
}
