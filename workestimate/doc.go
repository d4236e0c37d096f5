// Package workestimate decides how many seats a request occupies in API
// Priority and Fairness, and for how long (docs/spec/work-estimation.md).
//
// # The model
//
// A priority level hands out seats. Most requests take one seat while their
// handler runs. Two kinds of request cost more, and the estimator says how
// much more, before the request is queued:
//
//   - A list (or a watch that begins by listing) costs in proportion to the
//     memory it holds at once: the number of objects it touches times their
//     average size, at 100,000 bytes per seat. A list answered from the
//     watch cache streams its answer, so it never counts more than 1 MB
//     (10 seats); a list from storage may count up to the list cap of 100
//     seats. When size-based estimation is switched off, the older
//     count-based rule applies instead (100 objects per seat, cap 10).
//   - A write (create, update, patch, delete) takes one seat while it runs
//     and then, after its handler returns, a number of final seats for a
//     short extra time: the work of sending its events to the watches that
//     may be interested. Ten watches make one final seat, each held for
//     5 ms; when the level cannot spare that many seats the same seat-time
//     is spread over fewer seats for longer.
//
// Everything else (get, deletecollection, proxy, non-resource requests)
// takes the minimum: one seat, no final phase. Each estimate is then
// clamped to the priority level's own maximum seats.
//
// # What the estimator needs to know
//
// The list estimate needs the object count and average object size of each
// resource. It asks an ObjectCounts. A count older than three minutes is no
// longer believed, and the estimate assumes the worst (10^9 objects of
// 1.5 MB). A resource that nobody counts costs the minimum. That is how
// aggregated APIs, whose objects live in another server, are priced. An
// embedding program that knows its storage keeps the counts in a Tracker
// (Set) or answers them itself (an ObjectCounts of its own); a proxy in
// front of an API server learns them from the answers it relays (Learned).
//
// # Learned counts
//
// Learned is the ObjectCounts for a program that has no storage of its
// own and sees only the answers of the API server behind it. It is fed
// ListObservations of complete list answers: lists without a label or
// field selector that are either unpaginated or the first page of a list
// that says how many items remain. A complete list across all namespaces
// gives the exact count of a resource and replaces what namespaced lists
// said before; complete lists of single namespaces count those namespaces.
// Get answers the larger of the whole-resource count and the sum of the
// namespace counts, with the average object size of the same
// observations. Such counts do not go stale: a count from storage that
// stops being refreshed means a broken storage, but a resource that
// nobody has listed lately has merely not been listed, so Get never
// reports a count stale; Prune, called about hourly, forgets what has not
// been observed for an hour. A Learned keeps at most 4096 resources and 4096 namespaces
// per resource by default (NewLearned sets other bounds); once full it
// ignores new resources and namespaces, so that requests for arbitrary
// paths cannot make it grow without end. Get takes only a read lock and
// does not allocate.
//
// The write estimate needs the number of watches in progress that may see
// the write. WatchTracker counts them by (group, resource, namespace, name).
// A write is seen by the watches on its whole resource, on its namespace
// and on its own object. Pod watches that select a single node through
// spec.nodeName are not counted: the watch cache serves them from an index,
// so a write to another node's pod costs them nothing.
//
// # Time
//
// Nothing here reads the wall clock. Staleness and pruning are judged
// against a time the caller passes in (EstimateWithWatches, Tracker.Get,
// Set, Prune), so tests and the simulator can replay any history exactly.
//
// # Internal organization
//
//   - config.go: Config, its defaults, and how unset fields are filled in.
//   - estimator.go: Estimator and the dispatch by verb.
//   - list.go: the list and watch estimate, step by step as in
//     docs/spec/work-estimation.md#lists-and-watches.
//     It reads the list options from request.Info.List, which
//     request.Parse decodes from the query exactly as the API server's
//     codec does, so a query that fails to decode there fails here too,
//     and costs the level's maximum.
//   - mutating.go: the write estimate (docs/spec/work-estimation.md#writes).
//   - objectcount.go: ObjectCounts, Tracker.
//   - learned.go: Learned, the counts learned from list answers.
//   - watch.go: WatchTracker.
//
// # Choices that differ from the upstream structure
//
// Upstream reads the request from an http.Request context and reads feature
// gates and etcd capabilities from globals. Here the request is a
// request.Info alone: the query was read once, when the request was
// parsed, and what the estimate needs of it (page size, resource version
// and its match rule, continue token, initial events, selectors, whether
// the options decode at all) travels in Info.List, so a caller with no URL
// (a gRPC method, a simulated arrival) passes nothing extra. The gates and
// the storage capability are fields of Config (SizeBasedListCost, WatchListEstimated,
// ConsistentReadsFromCache). The arithmetic is the same. Seat counts
// saturate rather than wrap on absurd object counts. The interested watch
// count that upstream records in its watch_count_samples histogram is
// returned by EstimateWithWatches, so the metrics layer records it with the
// flow schema and priority level names it already holds. A watch's forget
// function may safely be called more than once.
//
// The package depends on request (the parsed request), fairqueue (the
// WorkEstimate type) and apimachinery's resource-version-match constants
// and field-selector parsing. It must not depend on HTTP serving, storage or metrics.
package workestimate
