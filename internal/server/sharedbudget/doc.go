// Package sharedbudget divides one server concurrency limit among the
// `apf serve` replicas that share an etcd cluster and an upstream
// (--shared-concurrency-limit), instead of each replica enforcing all of
// it. The protocol, its invariants and its bounds are in
// docs/spec/shared-budget.md.
//
// share.go holds the division itself, Shares: a pure function of the
// limit and the live replicas' demand that knows nothing of etcd, so that
// its invariants (the shares sum to the limit, every replica gets its
// floor, a replica's share does not fall when its demand rises) are
// tested on their own.
//
// exchange.go is one replica's side of the protocol: a lease per replica,
// a record per replica under a key prefix (its demand per priority level,
// its share, the seats it holds), and rounds, every period and whenever
// another record changes, that read every record, compute the shares,
// shrink the controller's limit at once and grow it only after a write
// conditioned on nobody having written since the read. When etcd cannot
// be reached the share in force stays. metrics.go holds the
// apf_shared_budget_* metrics.
//
// The package depends on package controller (the limit it sets, the demand
// it reads), etcd's client and client_golang. It must not depend on
// package server, and nothing on the request path calls it.
package sharedbudget
