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
//     hand-written table whose expected answers come from the facts sheet,
//     for a custom configuration, and for random requests;
//   - shuffle sharding: apf shuffle.Dealer against upstream's Dealer;
//   - fair queuing: apf fairqueue.Level against upstream's queueset, both
//     driven step by step on one virtual clock: random scripts of arrivals
//     of any width, completions, final phases, cancellations and limit
//     changes, compared step by step (TestQueueSetRandom); and saturated
//     levels, compared on per-flow seat-seconds (TestPeerFairness).
//
// BenchmarkPeer/<scenario>/<impl> (impl apf or upstream) runs the same
// fair-queuing scenarios through both implementations on the same machine
// in the same run: uncontended, parallel, saturated (4 seats, 64
// goroutines, 1000 flows), reject (queue full) and reject-level (no
// queues). make bench-peer prints them as benchstat columns.
//
// Internal organization: upstream.go builds and drives upstream's APF
// controller, upstream_queueset.go a bare upstream queueset; the *_test.go
// files each hold one differential check and its input table, except
// queueset_bench_test.go (the benchmarks, and the two implementations
// behind one small interface that the fairness test reuses) and
// vclock_test.go (the virtual clock both implementations share).
package peer
