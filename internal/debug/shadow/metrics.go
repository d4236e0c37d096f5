package shadow

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/fairqueue"
)

// waitBuckets are those of apiserver_flowcontrol_request_wait_duration_seconds,
// so that a shadow level's would-be waits compare bucket for bucket with a
// live level's waits.
var waitBuckets = []float64{0, .005, .02, .05, .1, .2, .5, 1, 2, 5, 10, 15, 30}

// metricSet is the apf_shadow_* metrics (docs/spec/shadow.md#metrics).
// They are updated by the shadow's goroutine only.
type metricSet struct {
	configError       prometheus.Gauge
	nominal, current  *prometheus.GaugeVec
	executing         *prometheus.GaugeVec
	waiting           *prometheus.GaugeVec
	dispatchedV       *prometheus.CounterVec
	rejectedV         *prometheus.CounterVec
	waitV             *prometheus.HistogramVec
	movedV            *prometheus.CounterVec
	byLevel, bySchema []interface {
		DeletePartialMatch(prometheus.Labels) int
	}
	// cache holds the series of each shadow FlowSchema, resolved once
	// rather than at every request; emptied whenever series are deleted.
	cache map[*classify.FlowSchema]*schemaMetrics
}

// schemaMetrics are the series of one shadow FlowSchema at its level.
type schemaMetrics struct {
	dispatched        prometheus.Counter
	rejected          [4]prometheus.Counter // by fairqueue.RejectReason, made when first needed
	waitRan, waitRej  prometheus.Observer
	level, flowSchema string
}

func newMetricSet(reg prometheus.Registerer, s *Shadow) (*metricSet, error) {
	pl, fs := "priority_level", "flow_schema"
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{pl})
	}
	m := &metricSet{
		cache: map[*classify.FlowSchema]*schemaMetrics{},
		configError: prometheus.NewGauge(prometheus.GaugeOpts{Name: "apf_shadow_config_error",
			Help: "1 when the latest reading of the shadow configuration (the live objects or the staged ones) failed, and the shadow runs the configuration read before; 0 otherwise."}),
		nominal:   gauge("apf_shadow_nominal_limit_seats", "Nominal number of execution seats of each shadow priority level."),
		current:   gauge("apf_shadow_current_limit_seats", "Execution seats of each shadow priority level after the shadow's latest borrowing adjustment."),
		executing: gauge("apf_shadow_current_executing_requests", "Requests the shadow priority level would have executing, sampled every second."),
		waiting:   gauge("apf_shadow_current_inqueue_requests", "Requests the shadow priority level would have waiting in its queues, sampled every second."),
		dispatchedV: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apf_shadow_dispatched_requests_total",
			Help: "Live requests the shadow configuration would have dispatched, by shadow priority level and FlowSchema."}, []string{pl, fs}),
		rejectedV: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apf_shadow_rejected_requests_total",
			Help: "Live requests the shadow configuration would have rejected, by shadow priority level, FlowSchema and reason (queue-full, concurrency-limit, time-out)."}, []string{pl, fs, "reason"}),
		waitV: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "apf_shadow_request_wait_duration_seconds",
			Help:    "Time live requests would have waited in the shadow priority level's queues, by whether they would then have executed.",
			Buckets: waitBuckets}, []string{pl, fs, "execute"}),
		movedV: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apf_shadow_moved_requests_total",
			Help: "Live requests the shadow configuration classifies under another FlowSchema or priority level than the live one."},
			[]string{"live_flow_schema", "live_priority_level", fs, pl}),
	}
	m.byLevel = []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{m.nominal, m.current, m.executing, m.waiting, m.dispatchedV, m.rejectedV, m.waitV, m.movedV}
	m.bySchema = m.byLevel[4:]
	if reg == nil {
		return m, nil
	}
	dropped := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "apf_shadow_dropped_requests_total",
		Help: "Arrivals and completions of live requests the shadow did not follow because it was behind or held as many requests as it may: its figures miss them."},
		func() float64 { return float64(s.dropped.Load()) })
	forced := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "apf_shadow_forced_completions_total",
		Help: "Shadow requests ended by the shadow itself because the live completion never reached it."},
		func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return float64(s.lost)
		})
	for _, c := range []prometheus.Collector{m.configError, m.nominal, m.current, m.executing, m.waiting,
		m.dispatchedV, m.rejectedV, m.waitV, m.movedV, dropped, forced} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// of returns the series of fs, resolving them the first time.
func (m *metricSet) of(fs *classify.FlowSchema) *schemaMetrics {
	if h := m.cache[fs]; h != nil {
		return h
	}
	pl := fs.PriorityLevel.Name
	h := &schemaMetrics{
		dispatched: m.dispatchedV.WithLabelValues(pl, fs.Name),
		waitRan:    m.waitV.WithLabelValues(pl, fs.Name, "true"),
		waitRej:    m.waitV.WithLabelValues(pl, fs.Name, "false"),
		level:      pl, flowSchema: fs.Name,
	}
	m.cache[fs] = h
	return h
}

func (m *metricSet) dispatched(fs *classify.FlowSchema, wait time.Duration) {
	h := m.of(fs)
	h.dispatched.Inc()
	h.waitRan.Observe(wait.Seconds())
}

func (m *metricSet) rejected(fs *classify.FlowSchema, r fairqueue.RejectReason, wait time.Duration) {
	h := m.of(fs)
	if int(r) >= len(h.rejected) {
		return
	}
	if h.rejected[r] == nil {
		h.rejected[r] = m.rejectedV.WithLabelValues(h.level, h.flowSchema, r.String())
	}
	h.rejected[r].Inc()
	h.waitRej.Observe(wait.Seconds())
}

func (m *metricSet) moved(k moveKey) prometheus.Counter {
	return m.movedV.WithLabelValues(k.LiveFlowSchema, k.LivePriorityLevel, k.FlowSchema, k.PriorityLevel)
}

func (m *metricSet) deleteMove(k moveKey) {
	m.movedV.DeleteLabelValues(k.LiveFlowSchema, k.LivePriorityLevel, k.FlowSchema, k.PriorityLevel)
}

func (m *metricSet) deleteLevel(name string) {
	clear(m.cache)
	for _, v := range m.byLevel {
		v.DeletePartialMatch(prometheus.Labels{"priority_level": name})
	}
}

func (m *metricSet) deleteSchema(name string) {
	clear(m.cache)
	for _, v := range m.bySchema {
		v.DeletePartialMatch(prometheus.Labels{"flow_schema": name})
	}
}
