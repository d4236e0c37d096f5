// Package shadow runs a candidate API Priority and Fairness configuration
// on the live traffic without enforcing it, and reports what it would have
// done differently: the requests it classifies under another FlowSchema or
// priority level, and each shadow level's would-be dispatches, waits and
// rejections by reason (docs/spec/shadow.md).
//
// # The model
//
// The candidate is staged as a set of objects (apf serve reads them from a
// directory, --shadow-config-dir). The shadow configuration is the live
// configuration with every staged object in place of the live object of
// the same kind and name, or added (Overlay): exactly what `kubectl apply
// -f` of the staged objects makes of the live configuration, so promoting
// the candidate is an ordinary apply, and the prediction is about the
// configuration that apply produces. It is followed as both change.
//
// A Shadow is a second engine.Engine, with its own queue sets and
// borrowing, run on virtual time by an engine/stepper.Stepper (the one
// the simulator uses) from one goroutine of its own (Run); the stepper's
// clock follows the timestamps the shadow is handed. The live controller
// tells it of every request (it implements controller.Shadow): the
// arrival, with the request's attributes and its live FlowSchema, and the
// end of the live request, with its execution time; and of the live
// server concurrency limit, when the shadow is set and at every change
// (a shared budget's share, say), so that the shadow's levels share the
// seats the live levels share. The shadow
// classifies the request in the shadow configuration, counts it as moved
// when the FlowSchema or the level differs, and runs it through its shadow
// level's queue set at its live arrival time. A request the shadow level
// dispatches holds its shadow seats until the live request ends: the
// shadow sees live completions, not its own. One still waiting when the
// live request ends executes, once the shadow dispatches it, as long as
// the live one did; one the live configuration rejected executes as long
// as the level's requests did on average. A shadow request waits at most
// its wait limit and is then rejected with time-out, as live.
//
// docs/spec/shadow.md#how-far-a-prediction-can-be-trusted says what that
// model gets right and where it errs.
//
// # What the request path pays
//
// The controller's hook costs nothing without a shadow: one atomic load.
// With one, Arrive and Finish copy the facts into a buffered channel with
// a non-blocking send and return; they never wait for the shadow, never
// take its lock and never fail. When the channel is full the event is
// dropped and counted (apf_shadow_dropped_requests_total): the shadow's
// figures then miss those requests. A shadow request whose completion was
// dropped is ended by the shadow after twice the request timeout.
//
// # Bounds
//
// The shadow holds at most Config.MaxRequests requests (arrivals beyond
// are dropped and counted), Config.Buffer events in its channel, one
// pending event per request it holds (its stepper's), the last
// HistoryLength one-second samples per level, and at most a thousand
// distinct pairs of classifications in its move counts. Levels and
// schemas that leave both configurations are forgotten.
//
// # Internal organization
//
//   - shadow.go: Config, New, the request path's side (Arrive, Finish,
//     ServerLimit), Run, reading and overlaying the configurations.
//   - run.go: what the shadow counts of its levels and of the requests it
//     follows, from its stepper's hooks.
//   - metrics.go: the apf_shadow_* metrics.
//   - state.go: State, the text dump and its HTTP handler.
//
// The package depends on package engine (and through it the core),
// engine/stepper, controller (the Source and Shadow interfaces), client_golang and the
// standard library's net/http for its dump handler; it knows nothing of
// apf serve, storage or authorization.
package shadow
