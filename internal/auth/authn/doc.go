// Package authn decides who sent an HTTP request, with kube-apiserver's
// flags, identities and answers, so that kubectl, front proxies and
// existing kubeconfigs work against apf serve unchanged. What the user may
// then do is package authz's to decide.
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
// headers a client made up. The same pass over the header names notes
// whether the request asks for impersonation (an Impersonate-* header):
// AuthenticateThen sends only such a request through the impersonation
// filter, which kube-apiserver runs right after authentication, so that
// the others pay nothing for it.
//
// # Answers
//
// Authenticate answers a failure with kube-apiserver's Status body
// (UnauthorizedStatus) so that kubectl prints its usual "error: You must be
// logged in to the server (Unauthorized)". On success it puts the user on
// the request's attributes (or, without them, into the request context
// with request.WithUser), where the APF filter classifies it and the
// authorizer judges it.
//
// # Internal organization
//
//   - options.go: Options, flags, New, TLSConfig and CA files.
//   - authenticator.go: Authenticator and the request-header,
//     client-certificate, bearer-token and anonymous authenticators.
//   - tokenfile.go: the static token file.
//   - middleware.go: Authenticate, AuthenticateThen and the 401 Status
//     body.
//
// The package depends on the standard library, k8s.io/apimachinery (Status
// and its error constructors) and request (the attributes and the
// context keys); it must not depend on authorization (package authz), on
// the APF algorithms, on the HTTP filters of apfhttp or on storage. CA and token files are
// read once, by New; changing them takes a restart.
package authn
