// Package apfdebug renders the API Priority and Fairness debug dumps and
// serves them over HTTP (docs/library.md shows where a program mounts
// them).
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
// Plain row types (PriorityLevel, Queue, Request) are the contract between
// where the numbers come from and the text: the Write* functions turn rows
// into text, and Handler asks a Source for rows on each request.
// FromController is the Source of a controller (controller.go, convert.go:
// each level's fairqueue.Dump made into rows, and the flow schema,
// distinguisher and attributes the controller recorded of each request);
// tests and tools can serve rows of their own.
//
// The row order of WriteQueues and WriteRequests is the caller's; only
// WritePriorityLevels sorts, because upstream promises that order and the
// others do not. A Source should follow upstream's content rules: every
// level (exempt included) in DumpPriorityLevels; no queue rows for the exempt
// and reject levels; request rows queue by queue, waiting ones (with their
// index) before executing ones (index -1), then the queueless executing ones
// (queue -1). fairqueue.Dump already lists requests in that order.
//
// apfdebug sits above the controller, beside apfhttp: it reads the
// controller's levels (Controller.Levels, controller.DescribeRequest), and
// neither the controller nor the middleware imports it; a server mounts
// its Handler.
package apfdebug
