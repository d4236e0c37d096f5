// Package route is the gateway's configuration file (apf serve
// --gateway-config, kind GatewayConfiguration of
// gateway.apfproject.io/v1alpha1): what a gateway in front of a service
// that is not a Kubernetes API server must be told about the requests it
// proxies, since their method and path say nothing of it by Kubernetes'
// rules: which requests are long-running, how long the others may take,
// what they cost, which pool of upstreams they go to; and caps on the
// long-running requests held at once. docs/gateway-config.md describes the
// format for its users.
//
// # The model
//
// A Config is the file decoded and validated, immutable. Its Routes are
// tried in the order of the file and the first that matches a request's
// method and URL path decides (Config.Match); the server writes the
// route's decision on the request's attributes (request.Route), where its
// deadline filter and the APF middleware read it, so that neither knows
// this package. A route's work estimate is fixed, or follows the sizes of
// the route's recent answers (sizes.go): that state is the only part of a
// Config that changes, one atomic word per route, carried over a reload
// to the route of the same name and estimate.
//
// Holds counts the long-running requests held at once, per flow (a
// FlowSchema and a flow distinguisher) and per priority level, against
// the caps of the Config in force: APF takes a long-running request's
// seats back once its answer starts, and nothing else would bound how
// many streams one flow keeps open.
//
// Watcher keeps a Config in step with its file, as --config-dir's
// syncer keeps FlowSchemas in step with theirs: it polls, takes a change
// once two polls read the same bytes, and keeps the last good Config when
// the file is refused.
//
// # Decoding
//
// The file is read with the configuration package's own reader of
// manifests (config.Documents, config.DecodeStrict), so that it follows
// the rules FlowSchema manifests follow: YAML or JSON, case-sensitive
// field names, an unknown or repeated field an error naming it, and every
// error, validation's too (apimachinery's field errors, with their
// paths), at its file:line. Validation reports everything at once.
// Durations are written as Go durations ("30s") and parsed in validation,
// so that a bad one is an error at its field rather than the end of
// decoding.
//
// The pools section is decoded into PoolSpec, which the running pools
// take field by field; this package builds no pool and opens no
// connection.
//
// # Internal organization
//
//   - types.go: Config, Route, PoolSpec, Limits; matching.
//   - decode.go: the file as written, Decode and validation.
//   - sizes.go: the work estimate by response size.
//   - holds.go: the caps on held long-running requests.
//   - reload.go: Watcher.
//
// It depends on config (the reader of manifests) and apimachinery's
// validation, and on nothing of the server, HTTP or the controller.
package route
