package sharedbudget

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the apf_shared_budget_* metrics of one replica
// (docs/spec/observability.md#shared-concurrency-limit).
type Metrics struct {
	limit, share, held, replicas, last prometheus.Gauge
	failures                           prometheus.Counter
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		limit: prometheus.NewGauge(prometheus.GaugeOpts{Name: "apf_shared_budget_limit_seats",
			Help: "The server concurrency limit the replicas sharing an etcd cluster divide among themselves."}),
		share: prometheus.NewGauge(prometheus.GaugeOpts{Name: "apf_shared_budget_share_seats",
			Help: "This replica's share of the shared concurrency limit: the server concurrency limit it enforces."}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{Name: "apf_shared_budget_held_seats",
			Help: "The seats this replica last published as held: the larger of its share and the seats its requests held."}),
		replicas: prometheus.NewGauge(prometheus.GaugeOpts{Name: "apf_shared_budget_replicas",
			Help: "The live replicas, this one included, seen at the last successful exchange."}),
		last: prometheus.NewGauge(prometheus.GaugeOpts{Name: "apf_shared_budget_last_exchange_timestamp_seconds",
			Help: "When this replica last exchanged its demand and share through etcd successfully, in seconds since the Unix epoch."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "apf_shared_budget_exchange_failures_total",
			Help: "Exchanges through etcd that failed; the replica kept its share in force."}),
	}
	for _, c := range []prometheus.Collector{m.limit, m.share, m.held, m.replicas, m.last, m.failures} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) observe(limit, share, held, replicas int, at time.Time) {
	m.limit.Set(float64(limit))
	m.share.Set(float64(share))
	m.held.Set(float64(held))
	m.replicas.Set(float64(replicas))
	m.last.Set(float64(at.UnixNano()) / 1e9)
}
