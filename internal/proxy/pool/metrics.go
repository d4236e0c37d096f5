package pool

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// The metric names, in apf's own namespace: they describe apf's gateway,
// which kube-apiserver has no counterpart of. Every series has the labels
// pool (the pool's name) and upstream (the member's scheme://host).
const (
	MetricRequests    = "apf_upstream_requests_total"
	MetricErrors      = "apf_upstream_errors_total"
	MetricRetries     = "apf_upstream_retries_total"
	MetricLatency     = "apf_upstream_response_latency_seconds"
	MetricOutstanding = "apf_upstream_outstanding_requests"
	MetricHealthy     = "apf_upstream_healthy"
	MetricEjections   = "apf_upstream_ejections_total"
	MetricChecks      = "apf_upstream_health_checks_total"
)

// Metrics are the pools' figures in one Prometheus registry. One Metrics
// serves every pool of a server.
type Metrics struct {
	requests, errs, retries, ejections, checks *prometheus.CounterVec
	latency                                    *prometheus.HistogramVec
	outstanding                                *prometheus.GaugeVec
	healthy                                    *prometheus.Desc

	mu    sync.Mutex
	pools []*Pool
}

// NewMetrics registers the pools' metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	l := []string{"pool", "upstream"}
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRequests,
			Help: "Requests the gateway sent to an upstream that it answered, by the HTTP status code of the answer."}, append(l, "code")),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricErrors,
			Help: "Requests the gateway sent to an upstream that got no answer: reason unreachable (no connection could be made, so nothing was sent: the request is tried on another member if one is left) or failed (the connection failed after the request may have been sent: never retried)."}, append(l, "reason")),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRetries,
			Help: "Requests that could not reach an upstream (nothing was sent) and were tried on another member of its pool."}, l),
		ejections: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricEjections,
			Help: "Times an upstream was ejected from its pool for connection errors or 5xx answers in a row (passive checks)."}, l),
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricChecks,
			Help: "Active health checks of an upstream, by result (pass or fail)."}, append(l, "result")),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricLatency,
			Help:    "Time from sending a request to an upstream to its response headers, in seconds (a watch's or a stream's is its start).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}, l),
		outstanding: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricOutstanding,
			Help: "Requests sent to an upstream and not finished: an answer being read, a watch or an upgraded connection counts until it ends. The pool sends each request to the member with the fewest."}, l),
		healthy: prometheus.NewDesc(MetricHealthy,
			"1 when an upstream takes new requests, 0 while its active health checks have taken it out or its passive checks have ejected it.", l, nil),
	}
	for _, c := range []prometheus.Collector{m.requests, m.errs, m.retries, m.ejections, m.checks, m.latency, m.outstanding, healthCollector{m}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// memberHandles are one member's series, resolved once.
type memberHandles struct {
	outstanding prometheus.Gauge
	latency     prometheus.Observer
	retries     prometheus.Counter
	ejections   prometheus.Counter
	met         *Metrics
	pool, label string
	pass, fail  prometheus.Counter
	// byCode are the requests' series resolved so far, by status code (a
	// lookup in the vector a request costs about as much as the rest of
	// the pool's accounting).
	byCode *[600]atomic.Pointer[prometheus.Counter]
}

// handles resolves a member's series.
func (m *Metrics) handles(pool, label string) memberHandles {
	return memberHandles{
		outstanding: m.outstanding.WithLabelValues(pool, label),
		latency:     m.latency.WithLabelValues(pool, label),
		retries:     m.retries.WithLabelValues(pool, label),
		ejections:   m.ejections.WithLabelValues(pool, label),
		pass:        m.checks.WithLabelValues(pool, label, "pass"),
		fail:        m.checks.WithLabelValues(pool, label, "fail"),
		met:         m, pool: pool, label: label,
		byCode: new([600]atomic.Pointer[prometheus.Counter]),
	}
}

// discard stands for every series of a pool without metrics.
var discard = struct {
	prometheus.Gauge
	prometheus.Histogram
	prometheus.Counter
}{
	prometheus.NewGauge(prometheus.GaugeOpts{Name: "discard"}),
	prometheus.NewHistogram(prometheus.HistogramOpts{Name: "discard"}),
	prometheus.NewCounter(prometheus.CounterOpts{Name: "discard"}),
}

// nop are the handles of a member of a pool without metrics.
var nop = memberHandles{outstanding: discard.Gauge, latency: discard.Histogram, retries: discard.Counter, ejections: discard.Counter, pass: discard.Counter, fail: discard.Counter}

func (h *memberHandles) requests(code int) prometheus.Counter {
	if h.met == nil {
		return discard.Counter
	}
	if code < 0 || code >= len(h.byCode) {
		return h.met.requests.WithLabelValues(h.pool, h.label, strconv.Itoa(code))
	}
	if c := h.byCode[code].Load(); c != nil {
		return *c
	}
	c := h.met.requests.WithLabelValues(h.pool, h.label, strconv.Itoa(code))
	h.byCode[code].Store(&c)
	return c
}

func (h *memberHandles) errors(reason string) prometheus.Counter {
	if h.met == nil {
		return discard.Counter
	}
	return h.met.errs.WithLabelValues(h.pool, h.label, reason)
}

func (h *memberHandles) checks(ok bool) prometheus.Counter {
	if ok {
		return h.pass
	}
	return h.fail
}

// add counts p's members in the health gauge.
func (m *Metrics) add(p *Pool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pools = append(m.pools, p)
}

// remove forgets p's series.
func (m *Metrics) remove(p *Pool) {
	m.mu.Lock()
	for i, q := range m.pools {
		if q == p {
			m.pools = append(m.pools[:i], m.pools[i+1:]...)
			break
		}
	}
	m.mu.Unlock()
	match := prometheus.Labels{"pool": p.name}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{m.requests, m.errs, m.retries, m.ejections, m.checks, m.latency, m.outstanding} {
		v.DeletePartialMatch(match)
	}
}

// healthCollector reads the members' health when scraped: an ejection
// ends with time, not with an event.
type healthCollector struct{ m *Metrics }

func (c healthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.m.healthy }

func (c healthCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	pools := append([]*Pool(nil), c.m.pools...)
	c.m.mu.Unlock()
	for _, p := range pools {
		for _, s := range p.Members() {
			v := 0.0
			if s.Healthy {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.m.healthy, prometheus.GaugeValue, v, p.name, s.Upstream)
		}
	}
}
