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
// reports its seat demand to a small feed with its own mutex, which sets
// the adjuster's integrator for that level; an adjustment (after every
// digest and every borrow.AdjustmentPeriod in Run) takes every feed lock,
// updates, releases them, then imposes the limits with
// SetConcurrencyLimit and sets the limit gauges. Exempt levels are never
// limited.
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
//
// # Internal organization
//
//   - controller.go: Config, New, Run, digesting a configuration,
//     adjustments, LevelView.
//   - admit.go: Admit, Ticket, RejectedError.
//   - waitctx.go: the lazy wait context.
//   - retryafter.go: the Retry-After tracker.
//   - source.go: Source, StaticSource, DirSource.
//
// The package depends on the apf core packages, the API types and
// client_golang through package metrics; it must not depend on net/http.
package controller
