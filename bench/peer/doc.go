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
//   - shuffle sharding: apf shuffle.Dealer against upstream's Dealer.
//
// Benchmarks of the fair-queuing core (BenchmarkPeer/<scenario>/<impl>, impl
// being apf or upstream)
// belong here too, so that both implementations run the same scenario on the
// same machine in the same run.
//
// Internal organization: upstream.go builds and drives upstream's APF
// controller (reusable by benchmarks); the *_test.go files each hold one
// differential check and its input table.
package peer
