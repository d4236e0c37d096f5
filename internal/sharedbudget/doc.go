// Package sharedbudget divides one server concurrency limit among the
// `apf serve` replicas that share an etcd cluster and an upstream
// (--shared-concurrency-limit), instead of each replica enforcing all of
// it (docs/spec/shared-budget.md).
//
// share.go holds the division itself, Shares: a pure function of the
// limit and the live replicas' demand that knows nothing of etcd, so that
// its invariants (the shares sum to the limit, every replica gets its
// floor, a replica's share does not fall when its demand rises) are
// tested on their own.
//
// The package must not depend on package server, nor on anything on the
// request path: it reads the controller's demand and changes its limit
// through the controller, never through the requests.
package sharedbudget
