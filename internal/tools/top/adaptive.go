package top

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// The apf_adaptive_* metrics of apf serve --adaptive-concurrency-limit
// (docs/spec/adaptive-limit.md).
const (
	metricAdaptiveLimit    = "apf_adaptive_limit_seats"
	metricAdaptiveFloor    = "apf_adaptive_floor_seats"
	metricAdaptiveCeiling  = "apf_adaptive_ceiling_seats"
	metricAdaptiveBaseline = "apf_adaptive_baseline_latency_seconds"
	metricAdaptiveSampled  = "apf_adaptive_sampled_latency_seconds"
	metricAdaptiveMeasure  = "apf_adaptive_measuring"
	metricAdaptiveChanges  = "apf_adaptive_limit_changes_total"
)

// AdaptiveLimit is a server concurrency limit apf serve learns from its
// upstream's latency: the limit in force within its bounds, the latencies
// per seat it compares, and its changes so far by reason.
type AdaptiveLimit struct {
	LimitSeats   float64 `json:"limitSeats"`
	FloorSeats   float64 `json:"floorSeats"`
	CeilingSeats float64 `json:"ceilingSeats"`
	// BaselineLatencySeconds and SampledLatencySeconds are the upstream's
	// latency per seat when unloaded (measured now and then) and lately.
	BaselineLatencySeconds float64 `json:"baselineLatencySeconds"`
	SampledLatencySeconds  float64 `json:"sampledLatencySeconds"`
	// Measuring says the limit is pinned low while the baseline is
	// measured.
	Measuring bool `json:"measuring"`
	// Changes counts the limit's changes since the server started, by
	// reason (grow, shrink, overload, probe, probed).
	Changes map[string]float64 `json:"changes"`
}

// readAdaptiveLimit reads the metrics, nil when the limit is not learned.
func readAdaptiveLimit(families map[string]*dto.MetricFamily) *AdaptiveLimit {
	limit, ok := onlyGauge(families, metricAdaptiveLimit)
	if !ok {
		return nil
	}
	a := &AdaptiveLimit{LimitSeats: limit, Changes: map[string]float64{}}
	a.FloorSeats, _ = onlyGauge(families, metricAdaptiveFloor)
	a.CeilingSeats, _ = onlyGauge(families, metricAdaptiveCeiling)
	a.BaselineLatencySeconds, _ = onlyGauge(families, metricAdaptiveBaseline)
	a.SampledLatencySeconds, _ = onlyGauge(families, metricAdaptiveSampled)
	m, _ := onlyGauge(families, metricAdaptiveMeasure)
	a.Measuring = m != 0
	if f := families[metricAdaptiveChanges]; f != nil {
		for _, x := range f.GetMetric() {
			a.Changes[label(x, "reason")] += counter(x)
		}
	}
	return a
}

// adaptiveLine is the view's line about a learned limit; "" without one.
func adaptiveLine(r *Report) string {
	a := r.AdaptiveLimit
	if a == nil {
		return ""
	}
	line := fmt.Sprintf("adaptive limit: %s seats (floor %s, ceiling %s); upstream latency per seat %s against a baseline of %s",
		number(a.LimitSeats), number(a.FloorSeats), number(a.CeilingSeats), seconds(a.SampledLatencySeconds), seconds(a.BaselineLatencySeconds))
	if a.Measuring {
		line += "; measuring the baseline (the limit pinned low)"
	}
	var changes []string
	for _, why := range slices.Sorted(maps.Keys(a.Changes)) {
		if n := a.Changes[why]; n > 0 {
			changes = append(changes, number(n)+" "+why)
		}
	}
	if len(changes) > 0 {
		line += "; changes so far: " + strings.Join(changes, ", ")
	}
	return line
}

// seconds renders a latency in seconds for a person: "21.1ms".
func seconds(s float64) string {
	if s <= 0 {
		return "-"
	}
	return time.Duration(s * float64(time.Second)).Round(100 * time.Microsecond).String()
}
