// Package metrics defines every Prometheus metric that API Priority and
// Fairness exports, with the names, types, label names (in order) and bucket
// boundaries of the upstream kube-apiserver, so that existing dashboards and
// alerts keep working against apf. docs/library.md shows how an embedding
// program registers them.
//
// # The set
//
// All metrics are defined in one place (defs.go) and created together by
// [New], which registers them once with the given [prometheus.Registerer].
// A process holds exactly one [Set]; a second registration into the same
// registry fails with the registry's own error.
//
// # Handles
//
// Looking a child up by label values hashes the values and takes a lock, which
// is too much for the request path. The handle model moves that work to the
// moment a configuration is compiled:
//
//   - [Set.Level] returns a [LevelMetrics] holding the resolved gauges,
//     counters and ratio histograms of one priority level;
//   - [Set.Flow] returns a [FlowMetrics] holding the resolved children of one
//     (priority level, flow schema) pair, one field per label-value
//     combination (for example one counter per rejection reason);
//   - [Set.Mutating] and [Set.ReadOnly] hold the per-request-kind handles of
//     the global metrics.
//
// The seven series every admitted request updates
// (dispatched_requests_total, current_executing_requests,
// current_executing_seats, request_wait_duration_seconds,
// request_execution_seconds, work_estimated_seats and
// request_queue_length_after_enqueue) are not Prometheus children: a pair
// keeps them in a few stripes that share no cache line, a request updating
// the stripe of the processor it runs on ([Stripe], [FlowMetrics.Stripe]),
// and the exposition sums the stripes (stripes.go says why). The
// FlowMetrics fields for these series write to the caller's stripe.
//
// A compiled configuration keeps these handles next to the level and schema
// they describe; the hot path only calls Inc, Add, Set or Observe on them and
// allocates nothing. When a configuration drops a level or a schema,
// [Set.DeleteLevel] and [Set.DeleteFlow] remove their label sets from the
// exposition. Handles resolved earlier stay usable but are no longer
// exported, so a new configuration must resolve fresh ones.
//
// # Timing-ratio histograms
//
// Four metrics (demand_seats, priority_level_request_utilization,
// priority_level_seat_utilization and read_vs_write_current_requests) are
// timing-ratio histograms: each child tracks a numerator and a denominator
// that change over time, and the histogram records how long the ratio
// numerator/denominator spent in each bucket. The model:
//
//   - A [RatioGauge] holds the current ratio r and the time t of its last
//     change. Setting the numerator ([RatioGauge.Set]) or the denominator
//     ([RatioGauge.SetDenominator]) at time now first credits the bucket
//     containing r with the elapsed time now-t, in nanoseconds, and adds
//     r*(now-t) to the sum; then it stores the new ratio and sets t = now.
//     A time that is not after t credits nothing.
//   - On collection the collector does the same crediting up to the time read
//     from the clock injected with [WithClock], so the exposition includes the
//     current ratio's time so far.
//   - The exposition is a plain Prometheus histogram: bucket counts are the
//     cumulative nanoseconds spent at or below each upper bound, the count is
//     the total nanoseconds observed, and the sum is the time integral of the
//     ratio in ratio-nanoseconds. The average ratio over a window is therefore
//     delta(sum)/delta(count). Nanosecond weights are what upstream exposes.
//   - A zero denominator gives an infinite or NaN ratio, which is credited to
//     the +Inf bucket only; callers pass positive denominators (the fact sheet
//     defines them so that they never are zero).
//
// Times passed to a RatioGauge must come from the same clock as the one given
// to [WithClock].
//
// This package depends only on client_golang and the standard library; it
// must not depend on the rest of apf.
package metrics
