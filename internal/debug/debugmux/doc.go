// Package debugmux is what apf serve answers under
// /debug/api_priority_and_fairness/, beside the API: the places where
// people and scripts look into API Priority and Fairness at work.
//
// Handler composes, for one controller:
//
//   - the three dumps (package apfdebug: dump_priority_levels,
//     dump_queues, dump_requests), byte for byte as kube-apiserver writes
//     them (docs/spec/observability.md#debug-dumps);
//   - ExplainPath, how the configuration in force classifies a described
//     request, what `apf classify` prints for it (package explain, its
//     neighbour in internal/debug; docs/spec/explain.md#the-endpoint);
//   - the live web console under console.PathPrefix (package console;
//     docs/spec/console.md);
//   - with a shadow configuration running (package shadow;
//     docs/spec/shadow.md), its dump at ShadowPath and its section of the
//     console.
//
// All of them sit under one prefix so that one rule guards them: the
// server mounts Handler at apfdebug.PathPrefix behind the same
// authentication, authorization and APF as every request, which lets only
// admins and the groups a policy names read them.
//
// The middleware a library embeds (package apfhttp) knows nothing of this
// package: a program that wants the dumps mounts apfdebug.Handler itself,
// and the console, the explain endpoint and the shadow are the server's.
package debugmux
