// Package controller runs API Priority and Fairness for a server: it
// drives package engine (the composition of classification, work
// estimation, queue sets and borrowing) with the locks, the blocking wait,
// the goroutines and the metrics a server needs, and turns configuration
// objects from a Source into the configuration in force. It is
// transport-neutral: the HTTP middleware (package apfhttp), a gRPC
// interceptor or a queue consumer all call the same Admit. docs/library.md
// shows how a program embeds it.
//
// # The model
//
// A Source delivers FlowSchemas and PriorityLevelConfigurations
// (StaticSource, or DirSource, a directory of manifests polled for
// changes by a digest of their contents). Every change is compiled whole,
// without a lock (engine.Compile: objects that fail validation are ignored
// and reported, the mandatory objects that are missing are imagined), then
// installed under the
// controller's mutex (Engine.Install), which publishes the new snapshot
// through an atomic.Pointer together with the metric handles of its flow
// schemas. The request path reads that snapshot and takes no controller
// lock. Config.OnReload hears the outcome of every reading of the source,
// for a server's reload metrics.
//
// The controller is the engine's only blocking driver, the one on the wall
// clock. What it adds, per priority level, is a Level: one short lock
// under which every input on the engine's level runs, the level's metrics
// and its Retry-After tracker. An admission takes that lock once to
// arrive and once to finish; a request the level queues waits on a
// channel of its Ticket, which whatever input dispatches it (another's
// finish, a new limit) wakes. Arrivals, finishes and the ends of final
// phases wake just after releasing the lock, so that it is not held
// while the waker reaches into memory the waiter's processor wrote last;
// the rarer inputs wake under it. A final phase ends by one
// timer of the controller's clock. The engine's Outcome of each input
// carries what the controller applies: the requests to wake, the final
// phase's length, the occupancy for the utilization histograms.
//
// The engine-wide inputs (a configuration installed, the periodic
// adjustment, a new server limit) run under the controller's mutex: the
// controller closes each level's demand window under that level's lock,
// hands the windows to the engine, then applies the returned Change level
// by level, each under its own lock, publishes the new snapshot, and only
// then quiesces the levels that left: a request a quiescing level turns
// away finds the new snapshot when Admit classifies it again. The
// controller never holds two level locks. Run adjusts every
// engine.AdjustmentPeriod, and the limit gauges are set from the
// adjustments a Change carries.
//
// # Admission
//
// Admit places the request with the engine (classification, the work
// estimate capped by the level's largest request from the latest
// adjustment, and the wait limit: a quarter of the time to the request
// context's deadline, or of RequestTimeout when it has none, at most a
// minute), arrives at its level and, when the level queues it, waits
// until the level dispatches it, its wait limit passes or its context
// ends (docs/spec/requests.md#wait-limit). Only a request that queues
// reads its context's deadline, sets a timer and touches the in-queue
// gauges: the Ticket is pooled, with its wake-up channel and its wait's
// timer (a clock.Timer, set again by each wait), so that neither an
// uncontended admission and Done nor a wait allocates. A rejection is a *RejectedError carrying the reason,
// the UIDs for the response headers, and the Retry-After chosen by the
// level's Retry-After tracker (docs/spec/requests.md#retry-after).
//
// AdmitRecord is Admit that also fills a caller's Record with what APF
// did: the FlowSchema and its precedence, the level, the flow
// distinguisher, the queue chosen from the hand, the wait, the seats
// estimated and charged, the outcome; Ticket.Done adds the execution
// time. It is made once, on the request path, for whatever reads it
// afterwards (an access log, a trace, a response header); with no Record
// the request path does nothing more than test a nil pointer.
//
// AdmitFunc is the same admission for a server that does not park a
// goroutine per request (an event loop): it never blocks, and a callback
// hears what Admit would return, at once or, for a request that queued,
// when the level dispatches it (on a goroutine the dispatching input
// starts, outside the level's lock), its wait limit passes or its context
// ends (a timer and context.AfterFunc). The three race; the first ends
// the wait and the others find it over (asyncwait.go).
//
// # Metrics
//
// Every metric of docs/spec/observability.md#metrics is exported, through
// the handles of package metrics resolved when a configuration is digested.
// Three kinds of update:
//
//   - On the request path, with no lock beyond the metric's own: the
//     per-flow counters, gauges and histograms, those every request
//     updates in the stripe of its processor (metrics.FlowStripe, taken
//     once at admission and kept in the Ticket). The in-queue gauges are
//     touched only by a request that queues.
//   - From the occupancy each input on a level returns, under the level's
//     lock, when it changed: the four timing-ratio histograms (demand_seats,
//     and priority_level_request_utilization waiting and executing and
//     priority_level_seat_utilization, whose numerators are the queue
//     set's waiting requests, executing requests and seats held, final
//     phases included). Each change is logged under the level's lock and
//     the log applied to the four, under one lock of their own, every 32
//     changes and before a reading or a new denominator
//     (metrics.LevelMetrics.NoteOccupancy). Exempt levels feed only
//     demand_seats, at once, as upstream's exempt levels have no queue set
//     gauges.
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
// Levels is the one view of the levels: every level in the borrowing
// books, those draining after they left the configuration included, with
// its Level (whose queue set's Stats and Dump are safe to call), its latest
// limits and its Retry-After. Package apfdebug renders the three dumps
// from it (apfdebug.FromController). A queue-set dump row's Tag is the
// request's Ticket; DescribeRequest reads what the controller recorded at
// Admit (flow schema, distinguisher, user, verb, path, namespace, name,
// API group and version, resource and subresource), copied from the
// request attributes without allocating. A small lock on the Ticket keeps
// a dump's reads whole when it races with the Ticket's recycling (the row
// may then show the next request's attributes).
//
// # Choices that differ from upstream
//
//   - current_inqueue_requests and _seats count a request from just after
//     its level queued it until its wait ends: the queue set reports no
//     enqueue event.
//   - current_executing_seats drops the initial seats at Done and holds
//     the final seats, as the queue set charged them (a final phase wider
//     than the limit narrowed), until the one timer that ends the final
//     phase in the queue set too.
//   - The arrival time is the time Admit is called; there is no separate
//     request-received timestamp.
//   - The virtual-time gauges, request_dispatch_no_accommodation_total
//     and epoch_advance_total are sampled each second (see Metrics), and
//     read_vs_write_current_requests is updated once a second.
//
// # Internal organization
//
//   - controller.go: Config, New, Run, Level, applying what the
//     engine-wide inputs return, adjustments and their gauges, LevelView.
//   - admit.go: Admit, the wait of a request that queues, Ticket and its
//     final phase, RejectedError.
//   - asyncwait.go: AdmitFunc and the wait of a request it queued.
//   - admitting.go: Admitting, whether every level can admit (readiness).
//   - shadow.go: Shadow, the hook a shadow configuration hears admissions
//     and server limits through.
//   - record.go: Record, Outcome: what AdmitRecord tells its caller.
//   - retryafter.go: the Retry-After tracker.
//   - source.go: Source, StaticSource, DirSource.
//   - debug.go: DescribeRequest, for the dumps.
//   - watermark.go: the request-kind watermarks.
//   - sample.go: the metrics Run samples every second.
//   - explain.go: Explain and Hand, the configuration in force explained
//     for a debug endpoint or a request that asked (docs/spec/explain.md),
//     never on the ordinary request path.
//   - scl.go: SetServerConcurrencyLimit and Demand, for a server whose
//     concurrency limit changes while it runs (apf serve's shared budget,
//     docs/spec/shared-budget.md), off the request path.
//   - stats.go: Stats, the live figures of a console (levels with
//     their history, dispatches and rejections by reason, FlowSchema
//     hits), sampled with the metrics, off the request path.
//
// The package depends on package engine (and through it the core),
// fairqueue's types, package metrics (client_golang), package clock and
// the API types. It imports no HTTP package: apfhttp is the HTTP face and
// apfdebug renders the dumps.
package controller
