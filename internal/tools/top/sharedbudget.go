package top

import (
	"fmt"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// The apf_shared_budget_* gauges of apf serve
// (docs/spec/observability.md#shared-concurrency-limit).
const (
	metricBudgetLimit    = "apf_shared_budget_limit_seats"
	metricBudgetShare    = "apf_shared_budget_share_seats"
	metricBudgetReplicas = "apf_shared_budget_replicas"
	metricBudgetLast     = "apf_shared_budget_last_exchange_timestamp_seconds"
)

// SharedBudget is a replica's view of a concurrency limit shared by the
// replicas of apf serve (--shared-concurrency-limit): its share beside
// the limit, and how fresh that is.
type SharedBudget struct {
	// LimitSeats is the limit the replicas divide, ShareSeats this
	// replica's part of it.
	LimitSeats float64 `json:"limitSeats"`
	ShareSeats float64 `json:"shareSeats"`
	// Replicas is how many live replicas it saw.
	Replicas float64 `json:"replicas"`
	// LastExchange is when it last exchanged its share through etcd;
	// null before the first.
	LastExchange *time.Time `json:"lastExchange"`
}

// readSharedBudget reads the gauges, nil when the share is not among them.
func readSharedBudget(families map[string]*dto.MetricFamily) *SharedBudget {
	share, ok := onlyGauge(families, metricBudgetShare)
	if !ok {
		return nil
	}
	b := &SharedBudget{ShareSeats: share}
	b.LimitSeats, _ = onlyGauge(families, metricBudgetLimit)
	b.Replicas, _ = onlyGauge(families, metricBudgetReplicas)
	if s, ok := onlyGauge(families, metricBudgetLast); ok && s > 0 {
		t := time.Unix(0, int64(s*1e9)).UTC()
		b.LastExchange = &t
	}
	return b
}

// sharedBudgetLine is the view's line about the shared limit, with the
// levels' nominal seats summed beside the share; "" without one.
func sharedBudgetLine(r *Report) string {
	b := r.SharedBudget
	if b == nil {
		return ""
	}
	var nominal float64
	for _, l := range r.Levels {
		if l.NominalSeats != nil {
			nominal += *l.NominalSeats
		}
	}
	line := fmt.Sprintf("shared limit: share %s of %s seats over %s replicas, levels' nominal seats %s",
		number(b.ShareSeats), number(b.LimitSeats), number(b.Replicas), number(nominal))
	if b.LastExchange != nil {
		age := r.Time.Sub(*b.LastExchange).Round(100 * time.Millisecond)
		line += fmt.Sprintf(", exchanged %v ago", max(age, 0))
	} else {
		line += ", never exchanged"
	}
	return line
}
