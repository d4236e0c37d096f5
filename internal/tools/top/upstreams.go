package top

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// The apf_upstream_* families of apf serve's gateway pools
// (docs/spec/observability.md#upstream-pools), each with the labels pool
// and upstream.
const (
	metricUpstreamHealthy     = "apf_upstream_healthy"
	metricUpstreamOutstanding = "apf_upstream_outstanding_requests"
	metricUpstreamRequests    = "apf_upstream_requests_total"
	metricUpstreamErrors      = "apf_upstream_errors_total"
)

// UpstreamMetrics is one member of a gateway pool in one scrape; the
// counters are kept per series (by code, by reason).
type UpstreamMetrics struct {
	Healthy, Outstanding float64
	Requests, Errors     map[string]float64
}

// upstreamKey names a member: its pool and its URL.
type upstreamKey struct{ pool, upstream string }

// readUpstreams reads the pools' families; nil when the server exports
// none (a kube-apiserver, apf serve without --upstream).
func readUpstreams(families map[string]*dto.MetricFamily) map[upstreamKey]*UpstreamMetrics {
	var out map[upstreamKey]*UpstreamMetrics
	member := func(x *dto.Metric) *UpstreamMetrics {
		k := upstreamKey{label(x, "pool"), label(x, "upstream")}
		if k.upstream == "" {
			return nil
		}
		if out == nil {
			out = map[upstreamKey]*UpstreamMetrics{}
		}
		m := out[k]
		if m == nil {
			m = &UpstreamMetrics{Requests: map[string]float64{}, Errors: map[string]float64{}}
			out[k] = m
		}
		return m
	}
	value := func(x *dto.Metric) float64 {
		switch {
		case x.Gauge != nil:
			return x.Gauge.GetValue()
		case x.Counter != nil:
			return x.Counter.GetValue()
		case x.Untyped != nil:
			return x.Untyped.GetValue()
		}
		return 0
	}
	for name, set := range map[string]func(*UpstreamMetrics, *dto.Metric){
		metricUpstreamHealthy:     func(m *UpstreamMetrics, x *dto.Metric) { m.Healthy = value(x) },
		metricUpstreamOutstanding: func(m *UpstreamMetrics, x *dto.Metric) { m.Outstanding = value(x) },
		metricUpstreamRequests:    func(m *UpstreamMetrics, x *dto.Metric) { m.Requests[label(x, "code")] += value(x) },
		metricUpstreamErrors:      func(m *UpstreamMetrics, x *dto.Metric) { m.Errors[label(x, "reason")] += value(x) },
	} {
		f := families[name]
		if f == nil {
			continue
		}
		for _, x := range f.GetMetric() {
			if m := member(x); m != nil {
				set(m, x)
			}
		}
	}
	return out
}

// Upstream is one member of one of the gateway's pools (apf serve
// --upstream).
type Upstream struct {
	Pool     string `json:"pool"`
	Upstream string `json:"upstream"`
	// Healthy says whether it takes new requests.
	Healthy     bool    `json:"healthy"`
	Outstanding float64 `json:"outstanding"`
	// RequestsPerSecond counts its answers, ServerErrorsPerSecond those
	// that were 5xx, ErrorsPerSecond the requests that got no answer;
	// null without two samples.
	RequestsPerSecond     *float64 `json:"requestsPerSecond"`
	ServerErrorsPerSecond *float64 `json:"serverErrorsPerSecond"`
	ErrorsPerSecond       *float64 `json:"errorsPerSecond"`
}

// upstreams computes the members' lines of the report, with rates over
// dt seconds since prev when both are there.
func upstreams(prev, cur map[upstreamKey]*UpstreamMetrics, dt float64) []Upstream {
	var out []Upstream
	for k, m := range cur {
		u := Upstream{Pool: k.pool, Upstream: k.upstream, Healthy: m.Healthy > 0, Outstanding: m.Outstanding}
		if p := prev[k]; prev != nil && dt > 0 {
			if p == nil {
				p = &UpstreamMetrics{}
			}
			var answered, server, failed float64
			for code, v := range m.Requests {
				d := increase(p.Requests[code], v)
				answered += d
				if strings.HasPrefix(code, "5") {
					server += d
				}
			}
			for reason, v := range m.Errors {
				failed += increase(p.Errors[reason], v)
			}
			u.RequestsPerSecond, u.ServerErrorsPerSecond, u.ErrorsPerSecond = ptr(answered/dt), ptr(server/dt), ptr(failed/dt)
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b Upstream) int {
		return cmp.Or(cmp.Compare(a.Pool, b.Pool), cmp.Compare(a.Upstream, b.Upstream))
	})
	return out
}

// upstreamLines are the view's lines about the pools: one per member;
// none without a pool.
func upstreamLines(r *Report) []string {
	if len(r.Upstreams) == 0 {
		return nil
	}
	lines := []string{"upstreams:"}
	for _, u := range r.Upstreams {
		state := "out"
		if u.Healthy {
			state = "in"
		}
		line := fmt.Sprintf("  %s %s  %s  outstanding %s", u.Pool, u.Upstream, state, number(u.Outstanding))
		if u.RequestsPerSecond != nil {
			line += fmt.Sprintf("  answered/s %s  5xx/s %s  failed/s %s", number(*u.RequestsPerSecond), number(*u.ServerErrorsPerSecond), number(*u.ErrorsPerSecond))
		}
		lines = append(lines, line)
	}
	return lines
}
