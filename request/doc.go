// Package request describes an incoming request the way API Priority and
// Fairness sees it: what the HTTP method, path and query say about the target
// (Info, parsed by Parse as a Kubernetes API server would), who is asking
// (User), and whether the request is long-running. docs/library.md shows
// how an embedding program uses it.
//
// # One parse
//
// A request is read once, by Parse, and everything after works from the
// result. Besides the target, Info carries what later stages would
// otherwise read the query again for: the list options that price a list
// or watch (Info.List, for work estimation) and the client's own time
// limit (Info.Timeout, for the request deadline). No raw query travels
// further: classification, estimation and admission take Attributes
// (Info plus User) alone, so a caller without a URL, such as a gRPC
// interceptor or the simulator, builds the same value.
//
// In an HTTP server the parse happens once at the edge: the first filter
// stores the Attributes in the request context (WithAttributes) and the
// filters after it read them from there (AttributesFrom); authentication
// fills in User and also stores the user on its own (WithUser), for code
// that needs only the user.
//
// The package knows nothing of net/http: callers pass the method, the path and
// the raw query string, so the same code serves the HTTP middleware, the
// transport-neutral admit call and the simulator.
//
// # Fidelity
//
// FlowSchemas written for kube-apiserver must classify a request here exactly
// as they would there, so Parse reproduces kube-apiserver's request-info
// resolution rule for rule, quirks included (each is noted where it is
// implemented). Where the decision depends on decoding list options, Parse
// uses apimachinery's own decoder rather than an imitation of it. The list
// options kept for work estimation are the first values of their
// parameters, read as the meta/v1 codec reads them; of those options only
// limit and timeoutSeconds can fail to decode, which tests check against
// the codec for every option it knows.
//
// # Cost
//
// Parse runs on every request, before any queuing, so its common cases
// (non-resource paths, requests that name an object, lists and watches with a
// plain query) allocate nothing: the path is walked in place instead of being
// split into a slice, the returned strings are substrings of the input or
// constants, and plain queries are scanned without decoding. Only queries that
// carry selectors, escapes or malformed options pay for the real decoder.
//
// # Internal organization
//
//   - parse.go: Parse, the resolution of path and method.
//   - segments.go: the allocation-free walk over path segments.
//   - types.go: Info, ListOptions, User, Attributes.
//   - context.go: the context keys a server's filters share: the user
//     (WithUser, UserFrom) and the parsed attributes (WithAttributes,
//     AttributesFrom).
//   - query.go: the one reading of the query: list or watch, the name a
//     field selector may give, the list options and the timeout; the
//     in-place scan and the fallback to apimachinery's codec.
//   - verbs.go: verb constants and the method-to-verb mappings.
//   - errors.go: the one error Parse can return.
//   - longrunning.go: long-running rules (kube-apiserver's and the generic
//     server's) and IsWatch.
//   - user.go: well-known users and groups, service-account user names.
//
// The package depends only on the standard library and k8s.io/apimachinery;
// it must not depend on the rest of apf.
package request
