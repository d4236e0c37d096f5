// Package apfhttp puts API Priority and Fairness in front of a net/http
// handler (facts §8).
//
// Middleware parses each request (package request), asks the controller
// to admit it, sets the X-Kubernetes-PF-FlowSchema-UID and
// X-Kubernetes-PF-PriorityLevel-UID headers before the handler writes, and
// answers a rejection with exactly upstream's 429: plain text "Too many
// requests, please try again later." and a Retry-After in seconds.
// Long-running requests other than watches bypass APF entirely. A request
// that cannot be parsed, or that carries no user, gets upstream's 500.
//
// Seats are released when the handler returns, also when it panics (the
// panic goes on) or when the client disconnects (the handler sees its
// context end and returns; a request still waiting is removed from its
// queue and its wait ends with time-out).
//
// Watches hold their seats only for their initial phase. Upstream ends
// that phase when the storage layer has sent the initial events, a signal
// a generic handler does not give; here it ends at the handler's first
// WriteHeader, Write or Flush (the first moment anything reaches the
// client, which is when a watch server has finished its initial burst or
// started streaming), or when the handler returns, whichever comes first.
// The watch counts in the controller's watch tracker until the handler
// returns.
//
// MaxInflight is the filter used when APF is disabled (facts §8.5): two
// plain semaphores, no queuing.
//
// The package depends on package controller and request; no algorithm
// lives here.
package apfhttp
