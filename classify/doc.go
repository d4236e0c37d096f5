// Package classify decides, for one request, which FlowSchema matches it, the
// priority level that schema sends it to, and the flow it belongs to.
//
// # Model
//
// A configuration is a set of FlowSchemas and PriorityLevelConfigurations.
// Compile digests it once into an immutable Matcher; Classify then answers
// per request without allocating. The digest follows the API server's
// configuration consumer:
//
//   - A priority level is usable when its spec is structurally sound (type
//     and sections agree, Reject has no queuing, Queue has a hand the
//     shuffle-sharding dealer accepts). Broken levels are ignored. When no
//     usable "exempt" or "catch-all" level exists, the built-in mandatory one
//     stands in ("imagined": it has no UID).
//   - A FlowSchema whose level is not usable dangles: it is reported and
//     takes no part in matching. That holds for a schema naming a missing
//     mandatory level too: the stand-in serves the mandatory schemas only,
//     as in the API server, which imagines those levels after digesting the
//     schemas.
//   - The usable schemas are ordered by matchingPrecedence, then by name. When
//     no usable "exempt" schema exists the built-in one goes first; when no
//     usable "catch-all" schema exists the built-in one goes last.
//   - The first schema with a matching rule wins. A rule matches when one of
//     its subjects matches the user and one of its resource rules (for a
//     resource request) or non-resource rules (otherwise) matches the
//     request. A request nothing matches (a user in neither
//     system:authenticated nor system:unauthenticated, say) goes to
//     catch-all.
//
// The flow distinguisher (the user name for ByUser, the namespace for
// ByNamespace) and the flow hash, SHA-256 over the schema name, a zero byte
// and the distinguisher, are computed only for levels that queue with more
// than one queue, because only those deal hands from the hash.
//
// # Internal organization
//
// Scanning every schema for every request costs time linear in the size of
// the configuration. Instead Compile indexes each schema under the subjects
// it names: user names (service-account subjects with a fixed name are
// indexed under the user name they stand for), group names, service-account
// namespaces (for "ns/*"), and a wildcard list for "*" subjects. A request
// consults only the lists for its user name, its groups, its service-account
// namespace and the wildcard list; each list is sorted by position in the
// matching order, so the search stops at the first full match that no other
// list can beat. The full rule check (subjects and rules together, as the
// API defines) confirms every candidate, so the index only ever prunes
// schemas that cannot match.
//
// The package depends on the flowcontrol v1 types (the project's internal
// model), the bootstrap configuration and the shuffle-sharding dealer's
// limits; it knows nothing of HTTP, storage or clocks.
package classify
