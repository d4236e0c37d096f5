// Package apfdebug renders the API Priority and Fairness debug dumps and
// serves them over HTTP.
//
// Three dumps exist, at three levels of detail
// (docs/spec/observability.md#debug-dumps):
//
//   - dump_priority_levels: one row per priority level, sorted by name;
//   - dump_queues: one row per queue of every queuing priority level;
//   - dump_requests: one row per waiting or executing request, optionally
//     followed by the request's attributes (?includeRequestDetails=x).
//
// Their text is byte-compatible with kube-apiserver so that scripts written
// against `kubectl get --raw /debug/api_priority_and_fairness/...` keep
// working: every line is its cells joined by ",\t" and ended by "\n", and the
// whole is aligned by a text/tabwriter with minimum width 8, tab width 0,
// padding 1, pad character ' ' and no flags. Each aligned cell therefore
// carries its comma and at least one space; the last cell of a line has
// neither. Header spellings are upstream's, including "FlowDistingsher".
//
// # Internal organization
//
// The package is deliberately ignorant of where the numbers come from. Plain
// row types (PriorityLevel, Queue, Request) are the whole contract; the
// Write* functions turn rows into text, and Handler asks a Source for rows on
// each request. The controller implements Source; tests and tools can use a
// slice. Helpers convert a fairqueue.Dump into rows so that a Source stays a
// few lines long.
//
// The row order of WriteQueues and WriteRequests is the caller's; only
// WritePriorityLevels sorts, because upstream promises that order and the
// others do not. A Source should follow upstream's content rules: every
// level (exempt included) in DumpPriorityLevels; no queue rows for the exempt
// and reject levels; request rows queue by queue, waiting ones (with their
// index) before executing ones (index -1), then the queueless executing ones
// (queue -1). fairqueue.Dump already lists requests in that order.
//
// apfdebug depends on fairqueue (for SeatSeconds and Dump) and the standard
// library only; it must not depend on the controller or on any HTTP edge.
package apfdebug
