package top

import (
	"fmt"
	"io"
	"math"
	"slices"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The metric families read from /metrics, with kube-apiserver's names
// (docs/spec/observability.md#metrics). Everything else in the exposition
// is ignored.
const (
	metricNominalSeats      = "apiserver_flowcontrol_nominal_limit_seats"
	metricCurrentSeats      = "apiserver_flowcontrol_current_limit_seats"
	metricExecutingRequests = "apiserver_flowcontrol_current_executing_requests"
	metricExecutingSeats    = "apiserver_flowcontrol_current_executing_seats"
	metricWaitingRequests   = "apiserver_flowcontrol_current_inqueue_requests"
	metricWaitingSeats      = "apiserver_flowcontrol_current_inqueue_seats"
	metricDispatched        = "apiserver_flowcontrol_dispatched_requests_total"
	metricRejected          = "apiserver_flowcontrol_rejected_requests_total"
	metricWaitDuration      = "apiserver_flowcontrol_request_wait_duration_seconds"
)

// Label names of those families.
const (
	labelLevel   = "priority_level"
	labelSchema  = "flow_schema"
	labelReason  = "reason"
	labelExecute = "execute"
)

// Metrics is what one scrape of /metrics says about each priority level.
type Metrics struct {
	// Levels holds every level that any of the families read names.
	Levels map[string]*LevelMetrics
	// Families counts the apiserver_flowcontrol_* families read; 0 means
	// the server exports none of them (APF is off, or this is not a
	// Kubernetes-style API server).
	Families int
	// SharedBudget is what apf serve's apf_shared_budget_* gauges say
	// (sharedbudget.go); nil when the server exports none.
	SharedBudget *SharedBudget
	// AdaptiveLimit is what apf serve's apf_adaptive_* metrics say of a
	// learned server limit, nil without one.
	AdaptiveLimit *AdaptiveLimit
	// Upstreams are apf serve's gateway pools' members
	// (upstreams.go); nil when the server exports none.
	Upstreams map[upstreamKey]*UpstreamMetrics
}

// LevelMetrics is one priority level in one scrape. The seat gauges are
// per level and nil when the exposition has none for the level; the
// per-(level, schema) gauges are summed over the level's flow schemas and
// are 0 when the level has no series yet, as servers create those series
// on a level's first request. Counters and the histogram are kept per
// series, so that a rate is the sum of each series' own increase and a
// series that is reset or new counts from zero.
type LevelMetrics struct {
	NominalSeats, CurrentSeats *float64

	ExecutingRequests, ExecutingSeats float64
	WaitingRequests, WaitingSeats     float64

	// Dispatched is dispatched_requests_total by flow schema.
	Dispatched map[string]float64
	// Rejected is rejected_requests_total by flow schema and reason.
	Rejected map[schemaReason]float64
	// PacedService and PacedTurn are apf serve's apf_paced_* gauges of
	// a paced level (paced.go), nil for any other.
	PacedService, PacedTurn *float64

	// Wait is request_wait_duration_seconds{execute="true"} by flow schema:
	// the requests that got into their level's queue set (every
	// dispatched one, and those that then timed out waiting). Requests
	// turned away on arrival (execute="false") waited no time and are
	// left out, so that the p99 is the wait of the requests that queued.
	Wait map[string]Histogram
}

type schemaReason struct{ schema, reason string }

// Histogram is one series of a Prometheus histogram: cumulative counts
// at increasing upper bounds, the last one +Inf.
type Histogram struct {
	Bounds []float64
	Counts []float64
}

// ParseMetrics reads a Prometheus text exposition (the format
// kube-apiserver's /metrics gives to a client that accepts text/plain) and
// keeps the priority-level families. A malformed exposition is an error:
// the text parser cannot resynchronise after a bad line.
func ParseMetrics(r io.Reader) (*Metrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("reading the metrics: %w", err)
	}
	m := &Metrics{Levels: map[string]*LevelMetrics{}}
	level := func(metric *dto.Metric) *LevelMetrics {
		name := label(metric, labelLevel)
		if name == "" {
			return nil
		}
		l := m.Levels[name]
		if l == nil {
			l = &LevelMetrics{Dispatched: map[string]float64{}, Rejected: map[schemaReason]float64{}, Wait: map[string]Histogram{}}
			m.Levels[name] = l
		}
		return l
	}
	m.SharedBudget = readSharedBudget(families)
	m.AdaptiveLimit = readAdaptiveLimit(families)
	m.Upstreams = readUpstreams(families)
	readPaced(families, level)
	for name, f := range families {
		var each func(*LevelMetrics, *dto.Metric)
		switch name {
		case metricNominalSeats:
			each = func(l *LevelMetrics, x *dto.Metric) { l.NominalSeats = ptr(gauge(x)) }
		case metricCurrentSeats:
			each = func(l *LevelMetrics, x *dto.Metric) { l.CurrentSeats = ptr(gauge(x)) }
		case metricExecutingRequests:
			each = func(l *LevelMetrics, x *dto.Metric) { l.ExecutingRequests += gauge(x) }
		case metricExecutingSeats:
			each = func(l *LevelMetrics, x *dto.Metric) { l.ExecutingSeats += gauge(x) }
		case metricWaitingRequests:
			each = func(l *LevelMetrics, x *dto.Metric) { l.WaitingRequests += gauge(x) }
		case metricWaitingSeats:
			each = func(l *LevelMetrics, x *dto.Metric) { l.WaitingSeats += gauge(x) }
		case metricDispatched:
			each = func(l *LevelMetrics, x *dto.Metric) { l.Dispatched[label(x, labelSchema)] += counter(x) }
		case metricRejected:
			each = func(l *LevelMetrics, x *dto.Metric) {
				l.Rejected[schemaReason{label(x, labelSchema), label(x, labelReason)}] += counter(x)
			}
		case metricWaitDuration:
			each = func(l *LevelMetrics, x *dto.Metric) {
				if label(x, labelExecute) != "true" || x.Histogram == nil {
					return
				}
				if h, ok := histogram(x.Histogram); ok {
					l.Wait[label(x, labelSchema)] = h
				}
			}
		default:
			continue
		}
		m.Families++
		for _, x := range f.GetMetric() {
			if l := level(x); l != nil {
				each(l, x)
			}
		}
	}
	return m, nil
}

// gauge reads a gauge's (or an untyped sample's) value.
func gauge(metric *dto.Metric) float64 {
	switch {
	case metric.Gauge != nil:
		return metric.Gauge.GetValue()
	case metric.Untyped != nil:
		return metric.Untyped.GetValue()
	}
	return 0
}

// counter reads a counter's (or an untyped sample's) value.
func counter(metric *dto.Metric) float64 {
	switch {
	case metric.Counter != nil:
		return metric.Counter.GetValue()
	case metric.Untyped != nil:
		return metric.Untyped.GetValue()
	}
	return 0
}

// onlyGauge reads the value of the family name that holds one sample with
// no labels, and says whether there was one.
func onlyGauge(families map[string]*dto.MetricFamily, name string) (float64, bool) {
	f := families[name]
	if f == nil || len(f.GetMetric()) == 0 {
		return 0, false
	}
	x := f.GetMetric()[0]
	if x.Gauge == nil && x.Untyped == nil {
		return 0, false
	}
	return gauge(x), true
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// histogram converts a parsed histogram into cumulative counts by bound,
// ending with +Inf (the text parser may or may not keep that bucket).
// Buckets out of order or with NaN bounds make it unusable.
func histogram(h *dto.Histogram) (Histogram, bool) {
	var out Histogram
	for _, b := range h.GetBucket() {
		ub := b.GetUpperBound()
		if math.IsNaN(ub) || (len(out.Bounds) > 0 && ub <= out.Bounds[len(out.Bounds)-1]) {
			return Histogram{}, false
		}
		c := float64(b.GetCumulativeCount())
		if b.CumulativeCountFloat != nil {
			c = b.GetCumulativeCountFloat()
		}
		out.Bounds = append(out.Bounds, ub)
		out.Counts = append(out.Counts, c)
	}
	total := float64(h.GetSampleCount())
	if h.SampleCountFloat != nil {
		total = h.GetSampleCountFloat()
	}
	if len(out.Bounds) == 0 || !math.IsInf(out.Bounds[len(out.Bounds)-1], 1) {
		out.Bounds = append(out.Bounds, math.Inf(1))
		out.Counts = append(out.Counts, total)
	}
	return out, true
}

// increase is how much a counter grew from prev to cur. A counter that went
// down was reset (the server restarted, or the series was deleted and
// created again) and counts from zero, as Prometheus counts it.
func increase(prev, cur float64) float64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}

// histogramIncrease is the per-bucket increase of one series between two
// scrapes; a series that was reset or is new counts from zero. Bounds
// that changed between the scrapes (a different server build) make the
// series count from zero too.
func histogramIncrease(prev Histogram, hadPrev bool, cur Histogram) Histogram {
	if !hadPrev || !slices.Equal(prev.Bounds, cur.Bounds) || cur.Counts[len(cur.Counts)-1] < prev.Counts[len(prev.Counts)-1] {
		return cur
	}
	out := Histogram{Bounds: cur.Bounds, Counts: make([]float64, len(cur.Counts))}
	for i := range cur.Counts {
		out.Counts[i] = max(cur.Counts[i]-prev.Counts[i], 0)
	}
	return out
}

// addHistograms adds b's cumulative counts into acc, bound by bound; a
// bound only one of them has takes the other's count at the next lower
// bound it has, which is what a cumulative count means.
func addHistograms(acc, b Histogram) Histogram {
	if len(acc.Bounds) == 0 {
		return Histogram{Bounds: slices.Clone(b.Bounds), Counts: slices.Clone(b.Counts)}
	}
	bounds := slices.Clone(acc.Bounds)
	bounds = append(bounds, b.Bounds...)
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	out := Histogram{Bounds: bounds, Counts: make([]float64, len(bounds))}
	for i, ub := range bounds {
		out.Counts[i] = cumulativeAt(acc, ub) + cumulativeAt(b, ub)
	}
	return out
}

// cumulativeAt is h's cumulative count at bound ub: the count of the
// largest bound of h not above ub.
func cumulativeAt(h Histogram, ub float64) float64 {
	c := 0.0
	for i, b := range h.Bounds {
		if b > ub {
			break
		}
		c = h.Counts[i]
	}
	return c
}

// quantile estimates the q-quantile of the observations a histogram
// holds, as Prometheus' histogram_quantile does: find the bucket where
// the rank q*count falls and interpolate linearly inside it, taking 0 as
// the lower edge of the first bucket (wait times are not negative). A
// rank in the +Inf bucket gives the largest finite bound: all the
// histogram knows is that the value is above it. ok is false when the
// histogram holds no observation.
func quantile(q float64, h Histogram) (v float64, ok bool) {
	n := len(h.Counts)
	if n == 0 || h.Counts[n-1] <= 0 {
		return 0, false
	}
	rank := q * h.Counts[n-1]
	// The first bucket whose cumulative count reaches the rank.
	i := 0
	for i < n-1 && h.Counts[i] < rank {
		i++
	}
	if math.IsInf(h.Bounds[i], 1) {
		if i == 0 {
			return 0, false
		}
		return h.Bounds[i-1], true
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = h.Bounds[i-1], h.Counts[i-1]
	} else if h.Bounds[0] <= 0 {
		return h.Bounds[0], true
	}
	inBucket := h.Counts[i] - below
	if inBucket <= 0 {
		return h.Bounds[i], true
	}
	return lower + (h.Bounds[i]-lower)*(rank-below)/inBucket, true
}

func ptr[T any](v T) *T { return &v }
