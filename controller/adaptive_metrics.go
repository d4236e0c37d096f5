package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/apfproject/apf/capacity"
)

// Register adds the apf_adaptive_* metrics to reg
// (docs/spec/adaptive-limit.md#metrics): the limit in force and its
// bounds, the baseline and sampled latencies per seat, the gradient,
// whether a measurement is in progress, the answers observed by outcome
// and the limit's changes by reason. Each is read from the Adaptive when
// reg is gathered: the request path pays nothing for them.
func (a *Adaptive) Register(reg prometheus.Registerer) error {
	status := func(f func(capacity.Status) float64) func() float64 {
		return func() float64 { return f(a.Status()) }
	}
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "apf_adaptive_limit_seats",
			Help: "The server concurrency limit the adaptive limit puts into force (pinned low while it measures the upstream's baseline latency)."},
			status(func(s capacity.Status) float64 { return float64(s.Limit) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "apf_adaptive_floor_seats",
			Help: "The lowest server concurrency limit the adaptive limit may set (with a shared budget, this replica's part of the floor)."},
			status(func(s capacity.Status) float64 { return float64(s.Floor) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "apf_adaptive_ceiling_seats",
			Help: "The highest server concurrency limit the adaptive limit may set (with a shared budget, what this replica's share allows)."},
			status(func(s capacity.Status) float64 { return float64(s.Ceiling) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "apf_adaptive_baseline_latency_seconds",
			Help: "The upstream's latency per seat unloaded, as its latest measurement found it (or a window found lower since); 0 before the first."},
			status(func(s capacity.Status) float64 { return s.Baseline.Seconds() })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "apf_adaptive_sampled_latency_seconds",
			Help: "The upstream's latency per seat in the latest window that decided (its trimmed mean); 0 before the first."},
			status(func(s capacity.Status) float64 { return s.Sampled.Seconds() })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "apf_adaptive_gradient",
			Help: "The latest window's gradient: tolerance times the baseline over the sampled latency, bounded; under 1 the limit falls, over 1 it grows."},
			status(func(s capacity.Status) float64 { return s.Gradient })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "apf_adaptive_tolerance",
			Help: "The tolerance in force: how much slower than the baseline the sampled latency may be before the limit falls, raised above the configured one on an upstream whose latency the latest measurement found noisy."},
			status(func(s capacity.Status) float64 { return s.Tolerance })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "apf_adaptive_measuring",
			Help: "1 while the adaptive limit measures the upstream's baseline latency (the limit pinned low), 0 otherwise."},
			status(func(s capacity.Status) float64 {
				if s.Probing {
					return 1
				}
				return 0
			})),
	}
	for _, why := range capacity.Reasons {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "apf_adaptive_limit_changes_total",
			Help:        "Changes of the server concurrency limit by the adaptive limit, by reason: grow, shrink (the latency), overload (the upstream's overload answers), probe and probed (a measurement of the baseline pinning the limit, and its end), bounds (the floor or ceiling moved: a shared budget's share changed).",
			ConstLabels: prometheus.Labels{"reason": why.String()}},
			func() float64 { return float64(a.Changes(why)) }))
	}
	for _, out := range []capacity.Outcome{capacity.Answered, capacity.Overloaded, capacity.TimedOut} {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "apf_adaptive_observed_total",
			Help:        "Answers of the upstream the adaptive limit was told of, by outcome: answered, overloaded (5xx, 429), timed-out.",
			ConstLabels: prometheus.Labels{"outcome": out.String()}},
			func() float64 { return float64(a.observed(out)) }))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// observed returns how many answers of outcome out were observed.
func (a *Adaptive) observed(out capacity.Outcome) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if int(out) >= len(a.outcomes) {
		return 0
	}
	return a.outcomes[out]
}
