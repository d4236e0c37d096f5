// Package top is `apf top`: a live view of any server with API Priority
// and Fairness, a kube-apiserver or apf serve, read through a kubeconfig.
//
// # What it reads
//
// Only what kube-apiserver serves, in its formats, so that the same view
// works on both servers:
//
//   - /metrics, the Prometheus text exposition, for the apiserver_flowcontrol_*
//     families (docs/spec/observability.md#metrics): each level's nominal
//     and current seats, its executing and waiting requests and seats,
//     and the counters and the wait histogram the rates come from;
//   - the three debug dumps (docs/spec/observability.md#debug-dumps):
//     dump_priority_levels (active queues, and counters that stand in for
//     the metrics' when /metrics is refused), dump_queues (queue lengths)
//     and dump_requests (every waiting and executing request, with its
//     flow schema and distinguisher: the flows).
//
// Each part is read on its own: a part the user may not read (kube-apiserver
// authorizes them as the non-resource URLs /metrics and
// /debug/api_priority_and_fairness/*), or that fails, is listed as missing
// with the server's message, what the view lacks for it and what would
// grant it; the rest is shown.
//
// # The model
//
// A Sample is one round of reads. A Report is computed from two samples:
// gauges from the later one, rates (dispatched/s, rejected/s by reason)
// and the wait p99 from the difference between them. Counters and
// histograms are compared series by series, a series that went down or
// is new counting from zero, as Prometheus does; the p99 is
// histogram_quantile's estimate over the interval's bucket increases of
// request_wait_duration_seconds{execute="true"}, the requests that got
// into a queue (those turned away on arrival waited no time). A flow is
// (priority level, FlowSchema, distinguisher), its requests counted from
// dump_requests; the busiest take the most seats, executing and waiting.
// A level borrows when its current seats exceed its nominal seats and
// lends when they are below.
//
// A replica of apf serve sharing its concurrency limit with others
// (--shared-concurrency-limit) also exports apf_shared_budget_* gauges
// (docs/spec/observability.md#shared-concurrency-limit); when they are
// there the view shows the replica's share of the limit beside the sum
// of the levels' nominal seats (sharedbudget.go). A gateway in front of
// a pool of upstreams (--upstream with one URL or more) exports
// apf_upstream_* families (docs/spec/observability.md#upstream-pools):
// the view lists each member, in or out of its pool, its outstanding
// requests and its answers, 5xx and failures per second
// (upstreams.go). A kube-apiserver has none of these, and nothing of them
// shows.
//
// # Internal organization
//
//   - metrics.go: the exposition read into per-level figures; counter
//     increases, histogram increases and quantiles.
//   - dumps.go: the dumps read by their header's column names.
//   - fetch.go: the kubeconfig, the four reads of a Sample, and the
//     explanation of each part that could not be read.
//   - report.go: Report, computed from samples, without I/O.
//   - render.go: the Report as text (fitted to a screen) and as JSON.
//   - run.go: the command: the JSON snapshot, the loop, the terminal
//     (redrawn in place with plain ANSI sequences, raw mode for the q
//     key) and the plain output for pipes.
//
// The package depends on client-go (the kubeconfig and the transport),
// the Prometheus text parser and golang.org/x/term; it must not depend on
// the server, the controller or anything else of apf's: it reads a server
// from the outside, as any client would.
package top
