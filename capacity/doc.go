// Package capacity learns the server concurrency limit from the upstream
// it protects: how many requests the upstream serves at once before they
// start to queue inside it. Fed the latency and the outcome of each
// answer, an Estimator returns the limit, always between an operator's
// floor and ceiling. The priority levels then share that limit as they
// share a static one (a driver applies it as a new server concurrency
// limit: nominal shares, lending and borrowing unchanged, exempt levels
// untouched).
//
// This package must not depend on the wall clock, locks or goroutines:
// every input takes the time it happens at, as package engine's do, so the
// same code runs in a server (controller.Adaptive) and on the virtual
// clock of the simulator (package sim), and a test drives it step by step.
//
// # The model
//
// An upstream serves some number C of requests at once in about the same
// time each (its baseline latency); past that knee the rest wait inside
// it, and its latency grows by a baseline for every C more. The limit
// wants to sit a little past the knee: under it, the upstream idles while
// requests wait in the levels' queues; far past it, requests wait inside
// the upstream, where fair queuing cannot order them, and the light users
// wait behind the flood.
//
// The law is a gradient, taken once per window (at least Window long, and
// at least MinSamples latencies of requests dispatched since it began):
//
//	gradient = clamp(Tolerance × baseline / sampled, MinGradient, Tolerance)
//
// where sampled is the mean of the window's latencies per seat, its
// slowest Trim left out, and baseline the same figure measured with the
// upstream unloaded. A gradient within 5% of 1 holds the limit; under 1
// it sets the limit to limit × gradient at once; over 1, the limit goes
// Smoothing of the way to limit × gradient, unless the window's peak use
// stayed under half the limit. Past the knee the mean latency is baseline
// × limit/C (Little's law), so the fall lands on Tolerance × C in one
// step: the equilibrium keeps a queue of (Tolerance − 1) baselines inside
// the upstream, whatever C is. Overload answers (5xx, 429, time-outs)
// reaching OverloadShare of a window's answers multiply the limit by
// Backoff instead. The limit in force follows the learned one when they
// are a seat apart or more.
//
// The baseline is measured by pinning the limit, every ProbeInterval
// (plus jitter), to ProbeShare of itself: once the requests dispatched
// before have drained, the upstream is under its knee, and the latencies
// of the requests dispatched since are its unloaded ones. A window that
// finds the upstream faster than the baseline lowers it at once; only a
// measurement raises it. docs/spec/adaptive-limit.md gives the law,
// every parameter's default and why, and how it compares with Envoy's
// adaptive concurrency and Netflix's Gradient2 and Vegas.
//
// # Internal organization
//
//   - config.go: Config, its defaults and their validation.
//   - sample.go: Sample and Outcome (what a driver observes), and the
//     reservoir that keeps a uniform sample of a window's latencies in a
//     buffer allocated once, so that Observe allocates nothing.
//   - estimator.go: the Estimator: windows, the gradient, the overload
//     backoff and the measurements of the baseline.
package capacity
