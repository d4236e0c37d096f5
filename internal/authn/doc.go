// Package authn decides who sent an HTTP request and whether they may do
// what it asks, with kube-apiserver's flags, identities and answers, so that
// kubectl, front proxies and existing kubeconfigs work against apf serve
// unchanged.
//
// # Authentication
//
// An Authenticator holds up to three authenticators, tried in
// kube-apiserver's order, and falls back to the anonymous user:
//
//   - Request header (--requestheader-*): a front proxy whose client
//     certificate verifies against the request-header CA, with an allowed
//     common name, names the user, UID, groups and extra in headers
//     (X-Remote-User, X-Remote-Group and X-Remote-Extra-<key> by default).
//     Without such a certificate the headers are worth nothing.
//   - Client certificate (--client-ca-file): the common name of a
//     certificate that verifies against the client CA is the user name,
//     its organizations the groups.
//   - Bearer token (--token-auth-file): "Authorization: Bearer <token>"
//     looked up in a static CSV file.
//   - Anonymous (--anonymous-auth): a request with no credentials is
//     system:anonymous in group system:unauthenticated.
//
// The first authenticator that identifies a user wins. Credentials that are
// present but wrong (a certificate from the wrong CA or with a name that is
// not allowed, an unknown token) fail the request with 401 unless another
// authenticator succeeds; they never fall through to anonymous, or a typo in
// a token would silently downgrade a client instead of telling it. Every
// authenticated user gets the group system:authenticated.
//
// One TLS listener serves all of them: TLSConfig asks for client
// certificates without requiring them and lets the handshake accept any
// that chains to either CA. The handshake cannot tell which CA vouched for
// a certificate, so each authenticator verifies the chain again against its
// own pool; a user certificate therefore can never pose as a front proxy.
//
// Once a request is authenticated, its Authorization header and every
// request-header identity header are removed, trusted or not, so that a
// backend behind apf can neither see the credentials nor be fooled by
// headers a client made up.
//
// # Authorization
//
// The Authorizer applies one small fixed policy rather than RBAC: apf
// serves only the flowcontrol API, and a table of three rules (see policy)
// says all there is to say. Members of system:masters and of the
// configured admin groups may do everything. Everyone, anonymous included,
// may get the health endpoints (/healthz, /livez, /readyz and below) and
// /version; every authenticated user may get discovery (/api, /apis,
// /openapi and below) and read (get, list, watch) FlowSchemas,
// PriorityLevelConfigurations and their status. Everything else (writes,
// /metrics, /debug/api_priority_and_fairness/) is for admins only.
// Non-resource paths with "." or ".." segments match no rule, so that a
// path cleaned further on cannot turn a public prefix into something else.
//
// # Answers
//
// Middleware answers failures with kube-apiserver's Status bodies
// (UnauthorizedStatus, ForbiddenStatus) so that kubectl prints its usual
// "Error from server (Forbidden): ..." lines. On success it puts the user
// into the request context with request.WithUser, where the APF filter
// classifies it.
//
// # Internal organization
//
//   - options.go: Options, flags, New, TLSConfig and CA files.
//   - authenticator.go: Authenticator and the request-header,
//     client-certificate, bearer-token and anonymous authenticators.
//   - tokenfile.go: the static token file.
//   - authorizer.go: Authorizer and the policy table.
//   - middleware.go: Middleware and the 401 and 403 Status bodies.
//
// The package depends on the standard library, k8s.io/apimachinery (Status
// and its error constructors) and request (the attributes and the
// context keys); it must not depend on the APF algorithms, on the HTTP
// filters of apfhttp or on storage. CA and token files are
// read once, by New; changing them takes a restart.
package authn
