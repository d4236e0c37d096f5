// Package peer measures and checks apf against upstream Kubernetes API
// Priority and Fairness, side by side, in one process.
//
// It is a separate Go module on purpose: it is the only place in the
// repository that imports k8s.io/apiserver. The product module never does;
// here upstream serves as the yardstick. Each check feeds the very same input
// to apf's package and to upstream's counterpart and compares the answers:
//
//   - request info: apf request.Parse and IsLongRunning against upstream's
//     RequestInfoFactory and kube-apiserver's long-running rule;
//   - bootstrap: apf config/bootstrap objects against upstream's bootstrap
//     package, spec by spec;
//   - classification: apf classify against upstream's APF controller (a real
//     configController fed through a fake clientset and informers), for a
//     hand-written table whose expected answers come from the specification
//     notes (docs/spec), for a custom configuration, and for random requests;
//   - shuffle sharding: apf shuffle.Dealer against upstream's Dealer;
//   - fair queuing: apf's queue set (fairqueue.QueueSet, made blocking
//     as the controller makes it) against upstream's queueset, both
//     driven step by step on one virtual clock: random scripts of arrivals
//     of any width, completions, final phases, cancellations and limit
//     changes, compared step by step (TestQueueSetRandom); and saturated
//     levels, compared on per-flow seat-seconds (TestPeerFairness);
//   - front-proxy identity: the X-Remote-* headers apf's proxy sends in
//     front-proxy mode, read back by upstream's request-header
//     authenticator (behind its front-proxy certificate check and the
//     system:authenticated adder), must give exactly the caller
//     (TestFrontProxyIdentity);
//   - request timeout: the answer to a request whose deadline passed
//     before its handler answered, from upstream's timeout filter and
//     from apf's apistatus.WriteTimeout, byte for byte
//     (TestTimeoutFilterAnswer).
//
// BenchmarkPeer/<scenario>/<impl> (impl apf or upstream) runs the same
// fair-queuing scenarios through both implementations on the same machine
// in the same run: uncontended, parallel, saturated (4 seats, 64
// goroutines, 1000 flows), reject (queue full) and reject-level (no
// queues). make bench-peer prints them as benchstat columns, then splits
// the saturated runs by the cross-processor round trip each reports
// (cmd/peermodes), which sets that scenario's time on a VM.
//
// It then runs whole HTTP admission filters in front of a handler that
// does nothing, for one GET of a pod by an authenticated user under the
// bootstrap configuration (request info, classification, work estimation,
// admission, release): filter-uncontended (one goroutine) and
// filter-parallel (GOMAXPROCS goroutines) call the chain's ServeHTTP
// in-process with a discarding ResponseWriter; http-loopback serves it on
// 127.0.0.1 to 64 keep-alive clients and reports req/s and bare-ratio, the
// throughput kept relative to an unfiltered server measured in alternating
// bursts within the same run. The impls there are apf (apfhttp.Middleware
// over a controller.Controller), upstream (k8s.io/apiserver's
// WithRequestInfo, an authentication stand-in and WithPriorityAndFairness
// with its work estimator over the controller StartUpstream runs),
// semaphore (the same request info and user in front of a plain 600-slot
// max-in-flight limiter, the cheapest admission there is, so that the
// price of fairness shows) and, in http-loopback only, four baselines:
// bare (no filter), headers (only the two X-Kubernetes-PF-* response
// headers every classified response carries), floor (those headers and
// the authentication stand-in, everything an APF filter pays in this rig
// before admission) and floor-again (the floor measured against itself:
// its floor-ratio is the rig's own error on that run, what a filter that
// cost nothing would score). The rigs of one run take turns going first
// in each round of bursts. make bench-peer's benchstat columns show only
// upstream and apf; the raw output holds the rest.
//
// Internal organization: upstream.go builds and drives upstream's APF
// controller, upstream_queueset.go a bare upstream queueset; the *_test.go
// files each hold one differential check and its input table, except
// queueset_bench_test.go (the fair-queuing benchmarks, and the two
// implementations behind one small interface that the fairness test
// reuses), filter_bench_test.go (the filter scenarios, the upstream and
// semaphore chains, and TestFilterChains, which checks every chain once),
// filter_apf_bench_test.go (apf's chain, kept apart) and vclock_test.go
// (the virtual clock both implementations share).
package peer
