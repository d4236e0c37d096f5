// Package sim answers "what would this configuration do to this traffic?"
// by replaying traffic through the same classification, work estimation,
// fair queuing and borrowing code the server runs, on a virtual clock.
//
// This package must not depend on HTTP, etcd or the wall clock.
//
// # The model
//
// A run is a discrete-event simulation of one API server. Traffic comes
// from a Source as Arrivals in time order: each is a request (its
// attributes as the server would parse them, its user, the object count a
// list would read) with the time it arrives and the time its handler will
// run once dispatched. Two sources are provided: WorkloadSource generates
// synthetic traffic from a YAML Workload (clients with arrival processes
// and request mixes, service times drawn from distributions), and
// AuditSource replays a Kubernetes audit log, taking arrivals and service
// times from each completed request's timestamps.
//
// Run drives package engine, the one composition of the core, through
// package engine/stepper, the driver of every virtual clock (the shadow
// configuration's too): the configuration is compiled
// and installed into the engine's levels (the mandatory objects imagined
// where missing), every arrival is placed by the engine (classification,
// work estimation, the wait limit, with the constants it defines), each
// level's queue set runs as the engine made it, and the engine's
// borrowing adjustment runs every engine.AdjustmentPeriod on the seat
// demand it observed. Writes pay for the watches registered at that
// moment. What the controller does with goroutines, timers and a mutex
// per level, the stepper does with a single event heap: the same inputs
// to the engine, in the same order, at the same virtual times. That is
// why a
// simulated figure can be trusted to be the server's, and why a run is
// deterministic: the same configuration and arrivals (the same workload
// and seed) give an identical Result.
//
// The simulator does not model what lies outside APF: the server's CPU,
// etcd, or clients that retry after a 429 (a Source is open-loop: it
// sends at its own pace whatever happens). The one exception is an
// upstream, when the run has one (Config.Upstream, or a workload's
// upstream section): a service that serves so many requests at once,
// each for its own service time, the others waiting inside it, first
// come, first served, its capacity changing from phase to phase. A
// dispatched request then executes for as long as the upstream takes to
// answer it, which depends on what the server sent it before, so that a
// server concurrency limit can be judged by what it does to the
// upstream: per phase, the goodput against the capacity, the queueing
// inside the upstream and each client's response times (UpstreamResult).
// The adaptive server limit (Config.AdaptiveLimit, package capacity)
// learns from those latencies on the virtual clock, deterministically.
//
// # Internal organization
//
//   - engine.go: Config, Run and the loop that feeds the stepper. The
//     stepper holds each request in flight with its one pending event (a
//     wait limit, the end of a handler or of a final phase, the close of
//     a watch kept open after its request) and the borrowing adjustment;
//     the simulator keeps, per request, where its counts go and the watch
//     it registers (recycled through a free list), and hears dispatches,
//     rejections and ends through the stepper's hooks. Arrivals are
//     pulled from the Source one at a time, and samples are taken every
//     SampleInterval; at equal times, the stepper's events go first (the
//     requests', then the adjustment), then the sample, then the arrival.
//     Memory is therefore bounded by the requests in flight and open
//     watches, not by the traffic's length.
//   - upstream.go: the upstream model. A request's start is assigned
//     when it is dispatched (the stepper hears its service time then,
//     stepper.Request.SetService): after every request sent before it
//     started, once fewer than the capacity are being served, found from
//     a heap of the busy servers' ends and the phases' boundaries. Each
//     phase keeps its figures from its settle time on; the measurement
//     ends at the last arrival, when the clients stop.
//   - adaptive.go: the adaptive limit. The stepper's hooks feed each
//     answer of a request that is not long-running to a
//     capacity.Estimator; the limit it wants is put into force between
//     two of the stepper's inputs (a hook must not call the stepper), as
//     a new server limit.
//   - waits.go: the wait statistics. Waits are kept exactly up to a few
//     thousand per level, schema or flow, then in a log-linear histogram
//     (128 buckets per power of two) that bounds both memory and the
//     quantile error (under 1%).
//   - workload.go and dist.go: the YAML workload, its validation with
//     field paths, and its generator; every client replica draws from its
//     own random stream seeded from the workload's seed and its position,
//     and replicas are merged through a heap by next arrival.
//   - audit.go: audit-log replay. A log is read as kube-apiserver's log
//     backend writes it: audit.k8s.io/v1 Events, one JSON object per
//     line, at any level from Metadata up, plain or gzip-compressed,
//     several files in a row (rotated logs). A request is written at
//     several stages; the replay keeps its ResponseComplete (or Panic)
//     event, which times it, and counts every other line by why it was
//     skipped (AuditStats: earlier stages, lines that are not JSON or
//     not an Event, duplicates, requests that never reached APF). The
//     user classified is the impersonated one when there is one, as
//     kube-apiserver's APF, behind its impersonation filter, sees it.
//     Logs are written in completion order, so arrivals are re-sorted
//     through a heap within a window (70 s by default: every request
//     that is not long-running ends within the request timeout);
//     watches are split into a short initialization (their service
//     time) and the time they stay open.
//   - auditread.go: the line reader. A line at the RequestResponse
//     level may carry a response of hundreds of megabytes; the reader
//     checks each line's JSON as a stream and keeps only the members
//     outside the bodies, so memory stays bounded by what is in flight
//     whatever the lines' and the log's length.
//
// The sample logs the tests replay (examples/sim/audit-sample.jsonl, and
// examples/sim/audit-cluster.log.gz in kube-apiserver's exact format with
// every stage and bodies) were written by a generator of realistic audit
// logs that lives with the tests (auditfixture_test.go).
//
// Object counts reach the estimator through a one-slot ObjectCounts that
// the engine sets to the arrival's ListSize just before estimating it:
// the estimator asks only about the request at hand, and the engine is
// single-threaded.
package sim
