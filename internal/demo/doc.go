// Package demo is the live demonstration behind `apf demo` (and `make
// run`): API Priority and Fairness protecting an API from one runaway
// client, in a single process, with nothing to install.
//
// # What runs
//
// Three parts, all on 127.0.0.1 and all stopped, with their temporary
// directory removed, when the demo ends:
//
//   - A demo upstream: a small Kubernetes-shaped API (pod lists and gets,
//     creates) whose answers take a jittered service time, so that a
//     request holds its seat about as long as on a real API server. A
//     cluster-wide pod list costs four times a namespace's, as reading the
//     whole cluster does.
//   - `apf serve` in front of it (package server), on the built-in
//     mandatory and suggested configuration, its etcd embedded in the
//     temporary directory, plain HTTP, bearer tokens from a generated token
//     file. The server's concurrency limit is scaled down from
//     kube-apiserver's 400+200 to 20+10 seats, so a handful of loops
//     overload it; its request timeout is 4 s, so a request waits at most
//     1 s in its queue (a quarter, as in kube-apiserver) and the table moves
//     quickly.
//   - A traffic generator: the user "flood" runs many concurrent loops
//     listing every pod in the cluster, retrying 429s without honouring
//     Retry-After; alice, bob, carol and dave send a few namespaced
//     requests a second each, well below their fair share; a kube-system
//     service account sends a steady trickle. The bootstrap FlowSchemas put
//     the users in global-default, one flow per user (ByUser), and the
//     service account in workload-high.
//
// Traffic starts only once every bootstrap object is in force: earlier,
// with only the mandatory objects, requests would fall into catch-all, and
// the demand they left there would weigh on the borrowing for minutes.
//
// # What it shows
//
// Every second a table shows each priority level (nominal and current
// seats, executing, waiting, dispatched and rejected per second, read from
// the controller's queue sets) and each client (sent, 2xx and 429 per
// second, requests in flight, p50 and p99 latency over the last five
// seconds, measured by the client). The flood fills its own queues of
// global-default, waits out the 1 s limit and gets 429s; the other users
// share the same level, land in other queues thanks to shuffle sharding,
// and fair queuing serves them first, so they get no 429s and keep a low
// latency. The level's seats grow once the borrowing adjustment (every
// 10 s) lends it what idle levels do not use; the flood's concurrency is
// chosen to exceed even that.
//
// Rates come from differences of counters between frames; latencies from
// a log-scale histogram (4% buckets), bounded in memory however long the
// demo runs. The table fits in 80 columns; it is redrawn in place on a
// terminal and printed as successive blocks otherwise. When the demo ends
// (its duration, or the context: Ctrl-C in `apf demo`) the traffic stops,
// the server shuts down, and a summary gives each client's totals and
// latency quantiles.
//
// The package depends on the server and the controller only through their
// exported API; it adds nothing to the request path.
package demo
