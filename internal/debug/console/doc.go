// Package console is the live web console of API Priority and Fairness: one
// page, updated every second, that shows every priority level (nominal and
// current seats, so borrowing and lending are visible, requests executing
// and waiting over the last minutes, dispatches and rejections by reason),
// the queues of a chosen level as a picture (occupancy per queue, which
// flows sit where) with its busiest flows, and the FlowSchemas in matching
// order with their recent hits.
//
// # The model
//
// A Source produces the State, a JSON document, on demand; FromController
// is the Source of a controller.Controller (its Stats, and the dump of the
// chosen level's queue set). Handler serves, under PathPrefix:
//
//   - PathPrefix itself: the page, which comes with the State as of its
//     request (a JSON data block the script draws before it connects, so
//     that the first paint shows the levels and FlowSchemas however slow
//     the event stream is); its script and style sheet next to it,
//     embedded in the binary (no network access needed, no CDN);
//   - PathPrefix+"state": the State as one JSON document
//     (?level=<name> adds that level's queue picture);
//   - PathPrefix+"events": the same State as server-sent events, one
//     "state" event a second. The first event holds the levels' whole
//     history, the following ones only the samples since the previous
//     event. A stream ends by itself after Options.MaxStream, or a second
//     before its request's deadline, and the page connects again: a
//     server that counts each request against a priority level (apf serve
//     does: the console is served behind APF, as the dumps are) holds a
//     seat for an open stream, and that bounds how long.
//
// apf serve mounts the console next to the dumps (its debug endpoints,
// internal/debug/debugmux), so it is access-controlled exactly as they are: by
// the same authentication and authorization chain as every request, which
// lets only admins and the groups a policy names read
// /debug/api_priority_and_fairness/. (apf serve answers a browser refused
// the console with a page that says how to open it, under the same status
// code: internal/server's console.go.) The page sends only GET requests and
// is served with a Content-Security-Policy that allows nothing but its own
// origin; it writes the data it receives as text, never as markup.
//
// The page is usable with the keyboard alone: the levels are rows of
// buttons (Tab to reach one, Enter to open its queues), and a select
// chooses the level as well.
//
// The package depends on net/http, package controller, package shadow
// (whose predictions it shows; the shadow knows nothing of the console)
// and the core packages it exports figures of (engine, fairqueue,
// metrics), and on nothing of apf serve.
//
// # Internal organization
//
//   - state.go: State and its parts, the JSON the page reads.
//   - upstreams.go: Upstream and WithUpstreams, the section of a
//     gateway's upstream pools, which a server that proxies adds to its
//     Source; shown only when the State has members.
//   - shadow.go: Shadow, ShadowOf and WithShadow, the section of a
//     shadow configuration (docs/spec/shadow.md), which a server that
//     runs one adds to its Source; the page shows it only when the State
//     has it.
//   - source.go: Source and FromController.
//   - handler.go: Handler, Options, the server-sent events.
//   - assets/: the page, its script and its style sheet.
package console
