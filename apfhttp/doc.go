// Package apfhttp puts API Priority and Fairness in front of a net/http
// handler (docs/spec/requests.md).
//
// Middleware takes each request's attributes (package request), asks the
// controller to admit it, sets the X-Kubernetes-PF-FlowSchema-UID and
// X-Kubernetes-PF-PriorityLevel-UID headers before the handler writes, and
// answers a rejection with exactly upstream's 429: plain text "Too many
// requests, please try again later." and a Retry-After in seconds.
// Long-running requests other than watches bypass APF entirely. A request
// that cannot be parsed, or that carries no user, gets upstream's 500.
// docs/library.md shows where it stands in an embedding program.
//
// # One parse
//
// A request is parsed once. WithRequestAttributes, the edge filter, parses
// it (request.Parse) and stores the attributes in its context
// (request.WithAttributes); every filter after it reads them there instead
// of parsing again: Middleware and MaxInflight here, and a server's own
// filters (deadline, authentication, which fills in the user,
// authorization). Work estimation reads the list options from the same
// attributes (request.Info.List), so the raw query goes no further than
// the edge. A program that leaves the edge filter out still works:
// Middleware and MaxInflight then parse the request themselves, into
// memory on the stack, at no extra allocation. Those parses, and the paths
// most requests do not take, happen in functions of their own, out of the
// filters' frames: a filter's frame stays on the stack for as long as its
// request runs, a held watch's for hours, and the room it reserves decides
// whether the runtime can shrink the stack of a goroutine that waits
// (docs/benchmarks.md#held-watch-streams).
//
// With Options.Record, each request's controller.Record (what APF did
// with it: classification, queue, wait, seats, outcome, execution time) is
// filled for the filters in front to read once the handler has returned:
// an access log, tracing. Without it the middleware records nothing.
//
// Seats are released when the handler returns, also when it panics (the
// panic goes on) or when the client disconnects (the handler sees its
// context end and returns; a request still waiting is removed from its
// queue and its wait ends with time-out).
//
// A request a server's own routing made long-running (request.Route's
// LongRunning, which apf serve's gateway routes set) is admitted as a
// watch is: at its start, its seats given back at its first output. Once
// admitted it is offered to Options.Hold, which may refuse it (a cap on
// the requests held at once: the seats go back and Hold has answered)
// or hold it until it ends. A route's Seats, also on the attributes,
// price the request in the engine instead of the work estimator.
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
// # Learned object counts
//
// A list is priced by the number and size of the objects it returns, which
// a server in front of an API server cannot ask storage for. With
// Options.ObjectCounts set, the middleware learns them from the list
// answers it relays. A list of a whole resource (all namespaces or one)
// without label or field selector and without a continue token is served
// through a writer that passes every byte on unchanged and, when the
// answer is a 200 in application/json, feeds it to a streaming JSON
// scanner of the package's own (the top of scan.go says what it
// recognises, when it gives up, its limits, and why it allocates
// nothing). An answer in gzip (what the API server sends a client that
// accepts it, once a list passes 128 KiB, so most large lists) is
// decompressed on the side first, on a goroutine that lives for that
// response, behind a pipe that holds nothing beyond the decompressor's
// window; it costs a few allocations and the decompression's CPU, a
// fraction of what the API server spent compressing. The scanner keeps no
// part of the body and allocates nothing: it validates the document,
// counts the elements of the top-level "items" array (the "rows" of a
// Table) and the bytes they span, and reads metadata.remainingItemCount
// and whether metadata.continue is set. A well-formed answer is complete
// when it has no continue token, or when it says how many items remain
// (the count is then the page plus the rest); anything else (a later
// page, an answer in protobuf, YAML or another content encoding, an error,
// a truncated or malformed body or gzip stream) teaches nothing. Table
// rows are counted but their sizes are not taken for object sizes. The
// figures go to workestimate.Learned, whose bounds keep memory fixed
// whatever paths clients ask for, and whose counts do not go stale (see
// package workestimate); the program calls its Prune now and then. The
// writer and scanner are pooled, and requests that are not lists are
// served with the writer they came with, so learning costs them nothing.
//
// # Explanations
//
// With Options.Explain set, a request that sends X-APF-Explain: 1, from a
// caller Options.Explain allows, gets X-APF-Explanation: its FlowSchema
// and precedence, level, flow distinguisher, queue and hand, wait, seats,
// and estimated and actual execution time (explain.go,
// docs/spec/explain.md). A request that does not ask costs one header
// lookup more; with Options.Explain nil, one nil test. The header's
// format is the middleware's; the endpoint that classifies a described
// request, as apf classify does, is apf serve's.
//
// MaxInflight is the filter used when APF is disabled
// (docs/spec/requests.md#max-in-flight-filter): two plain semaphores, no
// queuing.
//
// # Internal organization
//
//   - apfhttp.go: Options, Middleware, WithRequestAttributes, MaxInflight.
//   - explain.go: the explanation header.
//   - learn.go, inflate.go: learned object counts, the writer that watches
//     list answers pass and the decompressor beside it.
//   - scan*.go: the streaming scanner of list answers.
//
// The package depends on packages controller, request and workestimate,
// and on nothing of a server's: the debug dumps (package apfdebug, which a
// program mounts beside the middleware), the console, the shadow
// configuration and the explain endpoint are composed by the server that
// serves them (apf serve's debug endpoints). None of APF's algorithms
// lives here.
package apfhttp
