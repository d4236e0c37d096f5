// Package engine is API Priority and Fairness with nothing around it: the
// one place where classification, work estimation, queue sets and
// concurrency borrowing are put together, as a state machine in the manner
// of etcd raft's RawNode. Every input says what happened at a time given
// as an argument, and returns a value saying what the engine did; nothing
// is called back. It owns no goroutine, lock or clock, and defines no
// interface for its drivers to implement.
//
// Two drivers run it: package controller for servers, on the wall clock (a
// lock per priority level, a blocking wait for a request that queues, the
// goroutines that adjust and sample, the metrics from the returned
// values), and package engine/stepper on virtual time (one event heap,
// shared by the simulator and the shadow configuration). What one driver
// needs the other usually needs too, so it belongs here rather than beside
// either of them.
//
// # The model
//
// A configuration (FlowSchemas and PriorityLevelConfigurations in any
// served version, as config.Object) is compiled once (Compile: validation,
// then package classify's matcher, which imagines the mandatory objects
// that are missing) and installed (Install) into the engine's levels. A
// priority level outlives configurations: one that stays keeps its queue
// set, reconfigured in place; one that leaves retires (it refuses arrivals
// once quiesced, what it holds drains, and an Adjust drops it once idle);
// one that comes back before it was dropped resumes with its queues. A
// level that switches between exempt and limited cannot be changed in
// place: the old one drains outside the borrowing books and a new one
// takes the name.
//
// Every change makes a Snapshot, immutable, that requests are placed
// against: the matcher, the levels by classify.PriorityLevel.Index, and
// their limits from the latest adjustment. Place classifies a request,
// estimates its work (capped by its level's largest request) and derives
// its wait limit; it reads only the snapshot, so a server places requests
// without any lock.
//
// # Two grains of input
//
// A Level is its queue set (fairqueue.QueueSet), its seat demand and
// whether it admits arrivals. Its inputs, which the driver serializes per
// level (the controller with one short lock per level), are the hot path:
//
//   - Arrive (a request arrives), Finish (its handler returned), Release
//     (its final phase ended), Cancel (its wait limit passed or its client
//     left), each with the request;
//   - Tick, on a paced level (Config.PacedDispatch), when the gap between
//     starts it asked for has passed (Outcome.Wake);
//   - Apply (an Update an engine-wide input made for the level), Quiesce
//     and CloseWindow (the demand window an engine-wide input needs).
//
// Each returns an Outcome by value: the decision for the request, the
// requests it dispatched (in a buffer the level reuses: no allocation),
// how long a final phase holds its seats and when a paced level wants its
// Tick (the timers the driver sets), and
// the occupancy after it, for metrics. Inside the input the level feeds
// its demand integrator: the occupancy after it, and the instant an
// admitted arrival waits with its whole width, which a final phase wider
// than the limit may narrow at dispatch; an instant weighs nothing in a
// time integral, only in the demand's maximum.
//
// The engine-wide inputs, which the driver serializes with each other,
// are Install, SetServerLimit and Adjust. Each takes the levels' closed
// demand windows (Window, from CloseWindow under each level's own
// serialization, one level at a time) and returns a Change: the per-level
// Updates to apply (a limit, a queue configuration, resuming), the new
// Snapshot to publish after them, the levels to quiesce after that, the
// levels added and dropped, and the adjustments for the limit gauges. The
// engine never reads a level's queue set from an engine-wide input, and
// never asks for a lock: the returned values say what each level must be
// told. The server concurrency limit is an input like the others
// (SetServerLimit), so every engine whose limit changes gets it the same
// way.
//
// # Explanations
//
// Snapshot.Explain, and Explainer for a configuration that is not
// running, say how a request would be handled without placing it: the
// FlowSchema and the rule that match (package classify's Explain, which
// also says why every schema ahead of the winner did not match), the
// priority level and its type, the flow and the queues of its hand (dealt
// by package shuffle as the level's queue set deals them), the seats from
// work estimation and the wait limit. Both run the same function, and the
// answer encodes to JSON as a command or a debug endpoint shows it. It
// costs nothing on the request path: Place does not share a line with it.
//
// # Rules defined here
//
//   - The server concurrency limit defaults to
//     borrow.DefaultServerConcurrencyLimit (600) and the request timeout
//     to DefaultRequestTimeout (60 s).
//   - A level's queue and borrowing parameters come from its
//     PriorityLevelConfiguration (levelconfig.go): Queues -1 for the
//     exempt level, 0 for a rejecting one; missing pointers as defaulted.
//   - A limited level's queue set enforces its current limit from the
//     latest adjustment, but at least one seat when the level has nominal
//     seats (enforcedLimit): upstream's adjustment gives a lending level
//     with no recent demand a limit of 0, under which its queue set would
//     hold a request until the next adjustment. The adjustments, and the
//     limits reported, stay upstream's.
//   - A request may wait in its queue for a quarter of the time it has
//     (its deadline less its arrival, or the request timeout when it has
//     no deadline), at most a minute: WaitLimit. A request asking for a
//     shorter timeout than the server's (the timeout query parameter) has
//     that much (TimeAllowed).
//
// # Internal organization
//
//   - engine.go: Engine, Config, the engine-wide inputs and Change.
//   - level.go: Level, its inputs, Outcome, Update, Window.
//   - place.go: Snapshot, Place, TimeAllowed. scl.go: SetServerLimit.
//   - compile.go: Compile. levelconfig.go: a level's parameters from its
//     object. explain.go: explanations.
//
// The package depends on the core packages (classify, workestimate,
// fairqueue, borrow, and shuffle for explanations), config, request and
// apimachinery's Duration (the JSON form of an explanation); it knows
// nothing of HTTP, storage, goroutines, locks or wall clocks, and it is
// the only package that imports those four core packages together.
package engine
