// Package pool is a running upstream pool of the gateway: several
// upstreams serving the same API (the kube-apiservers of one cluster, the
// replicas of a service), one member each, behind one http.RoundTripper.
//
// The pool knows nothing of APF: the APF middleware in front decides
// whether and when a request is sent, and the pool decides where.
//
//   - Balancing: a request goes to the member with the fewest outstanding
//     requests (sent and not yet finished: a response whose body is still
//     being read, a watch, an upgraded connection all count until they
//     end), ties broken at random, among the members that take traffic.
//     When none does (all failing their checks or ejected), every member
//     is tried as if it did: a pool never refuses a request by itself,
//     which keeps a pool of one exactly a single upstream.
//   - Active checks (Options.HealthCheck): each member's Path is fetched
//     every Interval, within Timeout; a 2xx passes. UnhealthyThreshold
//     failures in a row take the member out, HealthyThreshold passes in a
//     row bring it back (and end a passive ejection). Members start in.
//   - Passive checks (Options.Ejection): ConsecutiveFailures connection
//     errors or 5xx answers in a row eject the member for Duration; any
//     other answer resets the count.
//   - Retries: a request is sent again, to another member, only when it
//     provably never reached the first: no connection was ever handed to
//     it (the dial was refused, timed out, or the TLS handshake failed), so
//     not one byte of it was written. A request that may have been sent
//     is never retried, whatever its method: an idempotent verb does not
//     make a second execution harmless (a watch would be opened twice, a
//     delete answered NotFound). Each member is tried at most once.
//   - Long-lived requests: a watch, a log stream or an upgraded connection
//     is one round trip and stays on the member it started on for as long
//     as it lasts; it counts as outstanding there until it ends. Taking a
//     member out (checks, ejection) sends new requests elsewhere and
//     drains it: what runs there runs to its end.
//   - Shutdown: the server stops accepting and lets what runs finish as it
//     always does; the pool's checks stop with the server's loops, and its
//     idle connections are closed (Close).
//
// A caller that carries requests over connections of its own (an event
// loop) goes through the same steps as RoundTrip, and the pool sees the
// same, through a Try (Begin).
//
// Per-member metrics (Metrics) are in apf's own namespace, apf_upstream_*;
// DumpHandler serves the members' state at DumpPath beside the APF dumps.
package pool
