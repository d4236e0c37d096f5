// Package engine is API Priority and Fairness with nothing around it: the
// one place where classification, work estimation, queue sets and
// concurrency borrowing are put together. It answers, for a given time,
// where a request goes and what it costs (Place), what a configuration
// change does to the priority levels (Compile, then Install), and what
// the periodic borrowing adjustment decides (Adjust). It owns no
// goroutine, lock or clock: time is an argument of every call.
//
// Two drivers run it. The controller drives it for servers: a lock per
// priority level, a blocking wait for a request that queues, the
// goroutines that adjust and sample every so often, and the metrics. The
// simulator drives it on a virtual clock, one event at a time. What one
// driver needs the other usually needs too, so it belongs here rather
// than beside either of them.
//
// # The model
//
// A configuration (FlowSchemas and PriorityLevelConfigurations in any
// served version, as config.Object) is compiled once (Compile: validation,
// then package classify's matcher, which imagines the mandatory objects
// that are missing) and installed (Install) into the engine's levels. A
// priority level outlives configurations: one that stays keeps its queue
// set, reconfigured in place; one that leaves retires (the driver stops
// routing to it, what it holds drains, and Adjust drops it once idle);
// one that comes back before it was dropped resumes with its queues. A
// level that switches between exempt and limited cannot be changed in
// place: the old one drains outside the borrowing books and a new one
// takes the name.
//
// Install hands out a Snapshot, immutable, that requests are placed
// against: the matcher and, by classify.PriorityLevel.Index, the levels.
// Place classifies the request, estimates its work (capped by its level's
// largest request from the latest adjustment) and derives its wait limit.
// Place is safe for concurrent use with everything else, which is what
// lets a server place requests without a lock of the engine's.
//
// Each level's queue set is run by the driver through the level's Queue,
// which the driver makes for each new level (Config.NewQueue) around the
// fairqueue.QueueSet the engine created. Every change the engine makes to
// a running level — its concurrency limit after an adjustment, its queue
// configuration, retiring and resuming it — goes through the Queue, so a
// driver that locks, or that has to wake or start the requests a change
// dispatches, does so. The engine observes every queue set's occupancy
// (it is the fairqueue.Observer) to feed the level's seat demand to the
// borrowing adjuster, then passes the occupancy on to the Queue when the
// Queue is an Observer too. The level integrates the demand over time, so
// it tells the queue set it has no use for occupancies that last no time
// (fairqueue.Integrator) unless the Queue observes and says otherwise.
// That observation happens inside the driver's calls on the queue set,
// under whatever lock the driver holds; Adjust and Install read the demand
// holding every level (Queue.WithLock).
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
//     to DefaultRequestTimeout (60 s). A driver may change the limit of a
//     running engine (SetServerConcurrencyLimit, scl.go): the levels'
//     limits are derived again and imposed as after a configuration
//     change.
//   - A limited level's queue set enforces its current limit from the
//     latest adjustment, but at least one seat when the level has nominal
//     seats (EnforcedLimit): upstream's adjustment gives a lending level
//     with no recent demand a limit of 0, under which its queue set would
//     hold a request until the next adjustment. The adjustments, and the
//     limits reported, stay upstream's.
//   - A request may wait in its queue for a quarter of the time it has
//     (its deadline less its arrival, or the request timeout when it has
//     no deadline), at most MaxWait: WaitLimit. A request asking for a
//     shorter timeout than the server's (the timeout query parameter) has
//     that much (TimeAllowed).
//
// # Concurrency contract
//
// Snapshot.Place and the Level getters may be called at any time from any
// goroutine. Install and Adjust must not run concurrently with each other,
// and call the Queues of the levels they change; a driver serializes them
// (the controller with a mutex; the simulator by being single-threaded).
// Calls on a level's queue set, and on its Queue, are the driver's to
// serialize.
//
// The package depends on the core packages (classify, workestimate,
// fairqueue, borrow, and shuffle for explanations), config, request and
// apimachinery's Duration (the JSON form of an explanation); it knows
// nothing of HTTP, storage, goroutines or wall clocks, and it is the only
// package that imports those four core packages together.
package engine
