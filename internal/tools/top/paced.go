package top

import (
	"fmt"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// The apf_paced_* gauges of apf serve --paced-dispatch
// (docs/spec/observability.md#paced-dispatch), one series a paced level.
const (
	metricPacedService = "apf_paced_service_seconds"
	metricPacedTurn    = "apf_paced_turn_seconds"
)

// readPaced notes each paced level's measured service time and turn in
// the level level returns.
func readPaced(families map[string]*dto.MetricFamily, level func(*dto.Metric) *LevelMetrics) {
	for name, set := range map[string]func(*LevelMetrics, float64){
		metricPacedService: func(l *LevelMetrics, v float64) { l.PacedService = ptr(v) },
		metricPacedTurn:    func(l *LevelMetrics, v float64) { l.PacedTurn = ptr(v) },
	} {
		for _, x := range families[name].GetMetric() {
			if l := level(x); l != nil {
				set(l, gauge(x))
			}
		}
	}
}

// pacedLine says what the paced levels measured, "" when none is paced.
func pacedLine(r *Report) string {
	var parts []string
	for _, l := range r.Levels {
		if l.PacedServiceSeconds == nil {
			continue
		}
		turn := "-"
		if l.PacedTurnSeconds != nil {
			turn = fineSeconds(*l.PacedTurnSeconds)
		}
		parts = append(parts, fmt.Sprintf("%s %s, a turn every %s", l.Name, fineSeconds(*l.PacedServiceSeconds), turn))
	}
	if len(parts) == 0 {
		return ""
	}
	return "paced dispatch (measured service time, turn between starts): " + strings.Join(parts, "; ")
}

// fineSeconds renders a short time in seconds to the microsecond:
// "21.123ms", "800µs".
func fineSeconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Microsecond).String()
}
