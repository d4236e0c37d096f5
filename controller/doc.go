// Package controller is the transport-neutral core of API Priority and
// Fairness: it turns configuration objects into an enforced configuration
// and admits requests against it. The HTTP middleware (package apfhttp), a
// gRPC interceptor or the simulator all call the same Admit.
//
// # The model
//
// A Source delivers FlowSchemas and PriorityLevelConfigurations
// (StaticSource, or DirSource, a directory of manifests polled for
// changes). Every change is digested whole (facts §2.6): objects that fail
// validation are ignored and reported, the rest are compiled by package
// classify, which imagines the mandatory objects that are missing, and
// the result is published as an immutable snapshot through an
// atomic.Pointer. A snapshot holds the matcher, the per-level state in a
// slice indexed by classify.PriorityLevel.Index, and the per-flow-schema
// metric handles indexed by classify.FlowSchema.Index, so the request path
// does no map lookup and takes no controller lock.
//
// Per-level state outlives snapshots. A level that stays keeps its
// fairqueue.Level, reconfigured in place. A level that leaves quiesces:
// it admits nothing new (a request that classified to it just before the
// swap gets fairqueue.ErrQuiescing and is classified again against the new
// snapshot, which is published before any level quiesces), keeps its share
// of seats so that what it holds drains, and is dropped at the first
// adjustment after it is idle. A level that comes back while draining is
// resumed with its queues and virtual time (facts §2.6).
//
// Borrowing (facts §4.2) uses borrow.Adjuster. Each level's queue set
// reports its occupancy (waiting and executing requests and their seats)
// to the level's feed, an Observer called under the fairqueue.Level's own
// lock, so the feed needs no lock of its own: it sets the adjuster's
// integrator for that level to the seat demand. An adjustment (after every
// digest and every borrow.AdjustmentPeriod in Run) holds every live
// level's lock (Level.WithLock) while it reads and resets the integrators,
// releases them, then imposes the limits with SetConcurrencyLimit and sets
// the limit gauges. Exempt levels are never limited.
//
// # Admission
//
// Admit classifies, estimates the work (package workestimate, capped by
// the level's max seats from the latest adjustment), and waits in the
// level with the wait context of facts §8.2: the request context with a
// deadline at arrival + min(¼ of the remaining request time, or of
// RequestTimeout, 1 min). That context is embedded in the pooled Ticket
// and builds its channel and timer lazily, only if the request queues, so
// an uncontended admission and Done allocate nothing. A rejection is a
// *RejectedError carrying the reason, the UIDs for the response headers,
// and the Retry-After chosen by the level's RetryAfter tracker (facts
// §8.4).
//
// # Metrics
//
// Every metric of facts §9 is exported, through the handles of package
// metrics resolved when a configuration is digested. Three kinds of
// update:
//
//   - On the request path, with no lock beyond the metric's own: the
//     per-flow counters, gauges and histograms. The in-queue gauges are
//     touched only by a request that queues: it learns that it did when
//     the queue set first asks its wait context for Done.
//   - From the level's occupancy feed, under the level's lock, on every
//     change: the four timing-ratio histograms (demand_seats, and
//     priority_level_request_utilization waiting and executing and
//     priority_level_seat_utilization, whose numerators are the queue
//     set's waiting requests, executing requests and seats held, final
//     phases included). The four share one lock of their own
//     (metrics.LevelMetrics.SetOccupancy), taken once per change. Exempt
//     levels feed only demand_seats, as upstream's exempt levels have no
//     queue set gauges.
//   - The request-kind metrics: apiserver_current_inflight_requests and
//     apiserver_current_inqueue_requests are the high watermarks, over the
//     last second, of executing and of queued requests by request_kind
//     (get, list and watch are readOnly, other verbs mutating; exempt
//     requests count as executing). The request path only does atomic adds
//     (watermark.go); every second Run publishes the watermarks and starts
//     new windows at the current counts, and sets the numerators of
//     read_vs_write_current_requests to the current counts, so that ratio
//     is sampled once a second rather than on every change. Its
//     denominators (queue capacity of the queuing levels, sum of nominal
//     limits) are set at each adjustment.
//   - Sampled every second by Run, off the request path (sample.go), from
//     each limited level's Stats and Dump: current_r; dispatch_r and
//     latest_s, set only if the level dispatched since the previous sample
//     (to R at the sample, and to the largest nextDispatchR of any queue);
//     next_s_bounds and next_discounted_s_bounds over the queues with
//     waiting requests (all queues if none waits), taking S as the queue's
//     nextDispatchR and the discounted S as S − seatsInUse×G; and the
//     increments of request_dispatch_no_accommodation_total and
//     epoch_advance_total. These are approximations of upstream's
//     per-dispatch values: the queue set does not report each dispatch,
//     and the no-accommodation count, which the queue set keeps per level,
//     is credited to the flow schema of the oldest waiting queue head at
//     the sample (held over to the next sample when nothing waits).
//
// # Debug dumps
//
// The Controller implements apfdebug.Source (debug.go): every level with
// a queue set, quiescing ones included, in dump_priority_levels; the
// queues of every non-exempt level in dump_queues; and every waiting and
// executing request in dump_requests, the exempt and reject levels'
// executing ones with queue index -1. The fairqueue.Request's Tag is the
// Ticket, which keeps, copied from the request attributes at Admit
// without allocating, the flow schema, distinguisher, user, verb, path,
// namespace, name, API group and version, resource and subresource. A
// small lock on the Ticket keeps a dump's reads whole when it races with
// the Ticket's recycling (the row may then show the next request's
// attributes). Serve the dumps with apfdebug.Handler(c) mounted at
// apfdebug.PathPrefix, or apfhttp.DebugHandler(c).
//
// # Choices that differ from upstream
//
//   - current_inqueue_requests and _seats count a request from just before
//     it enters the queue set until Wait returns, so a request dispatched
//     at once shows as queued for the length of one call: the queue set
//     reports no enqueue event.
//   - current_executing_seats drops the initial seats at Done and holds
//     the final seats for AdditionalLatency on the controller's clock,
//     which matches the queue set except when it narrows a final phase
//     wider than the limit.
//   - The arrival time is the time Admit is called; there is no separate
//     request-received timestamp.
//   - The virtual-time gauges, request_dispatch_no_accommodation_total
//     and epoch_advance_total are sampled each second (see Metrics), and
//     read_vs_write_current_requests is updated once a second.
//
// # Internal organization
//
//   - controller.go: Config, New, Run, digesting a configuration,
//     adjustments, LevelView.
//   - admit.go: Admit, Ticket, RejectedError.
//   - waitctx.go: the lazy wait context.
//   - retryafter.go: the Retry-After tracker.
//   - source.go: Source, StaticSource, DirSource.
//   - debug.go: the apfdebug.Source implementation.
//   - watermark.go: the request-kind watermarks.
//   - sample.go: the metrics Run samples every second.
//
// The package depends on the apf core packages, the API types,
// client_golang through package metrics and apfdebug for the dump rows;
// it does not import net/http itself (apfdebug does, for its Handler).
package controller
