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
// Explain gives the same answer with its reasons, for people: the rule of
// the winning schema that matched and, rule by rule, which part of each
// schema ahead of it (subject, verb, API group, resource, namespace or
// cluster scope, non-resource URL) the request failed. It scans the
// schemas in order with the matching's own field tests, leaving the index
// and the flow cache alone, and is never on the request path.
//
// # Internal organization
//
// Scanning every schema for every request costs time linear in the size of
// the configuration. Instead Compile numbers every rule of every usable
// schema in the matching order and files each rule under the subjects it
// names (user names, with service-account subjects of a fixed name filed
// under the user name they stand for; group names; service-account
// namespaces for "ns/*"; a wildcard list for "*") and under the scopes its
// resource and non-resource rules cover (each namespace named, every
// namespace, cluster scope, non-resource paths). A request intersects the
// lists of its user name, its groups, its service-account namespace and the
// wildcard with the lists of its own scope, walking them in order, so the
// first rule found in both and confirmed by the rest of its rule is the
// answer. Long lists inside a rule (namespaces, resources, URLs, resource
// rules) are kept as sets too.
//
// A rule is filed once per subject and once per namespace, never under
// their product, so compiling costs time and memory linear in the size of
// the configuration: a schema with ten thousand rules, each naming its own
// user and namespace, costs ten times one with a thousand
// (TestCompileCostIsLinear), and classification does not slow down as the
// configuration grows (BenchmarkClassifyScale).
//
// Two direct-mapped caches, rebuilt with every Matcher, spare the request
// path repeated work: the memo (memo.go) keeps the answer for the fields a
// classification reads (user name and groups, verb, API group, resource,
// subresource and namespace, or the path of a non-resource request), so a
// request like a recent one skips the index; the flow cache
// (flowcache.go) keeps the SHA-256 flow hashes. Both compare every field
// of their key on a hit, so a hit is exactly the answer the index would
// give, and both allocate only on a miss.
//
// The package depends on the flowcontrol v1 types (the project's internal
// model), the request's attributes (package request), the bootstrap
// configuration and the shuffle-sharding dealer's limits; it knows nothing
// of HTTP, storage or clocks.
package classify
