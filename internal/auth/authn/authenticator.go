package authn

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/apfproject/apf/request"
)

// ErrUnauthorized is wrapped by every error Authenticate returns: the
// request must be answered 401.
var ErrUnauthorized = errors.New("unauthorized")

// errInvalidToken is kube-apiserver's word for a bearer token it does not
// know.
var errInvalidToken = errors.New("invalid bearer token")

// anonymousUser is the user of a request without credentials. It is shared:
// users handed out are never modified.
var anonymousUser = &request.User{
	Name:   request.AnonymousUser,
	Groups: []string{request.AllUnauthenticatedGroup},
}

// Authenticator finds out who sent a request. It is safe for concurrent
// use and holds no per-request state.
type Authenticator struct {
	proxy     *proxyAuth               // request-header authentication; nil when off
	clientCAs *x509.CertPool           // client-certificate authentication; nil when off
	tokens    map[string]*request.User // bearer tokens; nil when off
	anonymous bool

	// identityHeaders are removed from every request after
	// authentication: the request-header identity headers and
	// Authorization. extraPrefixes (lower case) likewise.
	identityHeaders []string
	extraPrefixes   []string
}

// Authenticate returns the user who sent r, trying in kube-apiserver's
// order the front proxy's request headers, the client certificate and the
// bearer token; the first that identifies a user wins. An authenticator
// whose credentials are present but wrong (a certificate that does not
// verify against its CA, a proxy whose name is not allowed, an unknown
// token) records an error, which fails the request only when no other
// authenticator succeeds: a bad credential never falls back to anonymous.
// A request with no credentials at all is the anonymous user when
// anonymous requests are enabled, and fails otherwise.
//
// Every user other than system:anonymous gets the group
// system:authenticated, once. The returned user is shared and must not be
// modified.
//
// On success, Authenticate removes the Authorization header and every
// request-header identity header from r (the configured or default names,
// also when request-header authentication is off), trusted or not,
// so that nothing further (a proxied backend) can take them for an
// identity. Every error wraps ErrUnauthorized.
func (a *Authenticator) Authenticate(r *http.Request) (*request.User, error) {
	u, _, err := a.authenticate(r)
	return u, err
}

// authenticate is Authenticate, which also says whether r carries an
// impersonation header (a name starting with Impersonate-, as net/http
// canonicalizes it): the pass over the header names that removes the
// identity headers notes it, so that a request without one pays nothing
// more for impersonation.
func (a *Authenticator) authenticate(r *http.Request) (*request.User, bool, error) {
	var errs []error
	if a.proxy != nil {
		u, err := a.proxy.authenticate(r)
		if u != nil {
			return a.done(r, withAuthenticatedGroup(u))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("request header: %w", err))
		}
	}
	if a.clientCAs != nil {
		u, err := certUser(r, a.clientCAs)
		if u != nil {
			return a.done(r, withAuthenticatedGroup(u))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("client certificate: %w", err))
		}
	}
	if a.tokens != nil {
		if token, ok := bearerToken(r.Header); ok {
			if u := a.tokens[token]; u != nil {
				return a.done(r, u)
			}
			errs = append(errs, errInvalidToken)
		}
	}
	if len(errs) > 0 {
		return nil, false, fmt.Errorf("%w: %w", ErrUnauthorized, errors.Join(errs...))
	}
	if a.anonymous {
		return a.done(r, anonymousUser)
	}
	return nil, false, fmt.Errorf("%w: no credentials, and anonymous requests are disabled", ErrUnauthorized)
}

// done strips the identity headers from r and returns u, and whether r
// carries an impersonation header.
func (a *Authenticator) done(r *http.Request, u *request.User) (*request.User, bool, error) {
	for _, h := range a.identityHeaders {
		r.Header.Del(h)
	}
	impersonating := false
	for k := range r.Header {
		if strings.HasPrefix(k, impersonationPrefix) {
			impersonating = true
		} else if hasExtraPrefix(k, a.extraPrefixes) != "" {
			delete(r.Header, k)
		}
	}
	return u, impersonating, nil
}

// impersonationPrefix starts the name of every impersonation header
// (Impersonate-User, -Group, -Uid, -Extra-KEY) as net/http files it.
const impersonationPrefix = "Impersonate-"

// withAuthenticatedGroup adds system:authenticated to u's groups, as
// kube-apiserver does for every authenticated user: not for
// system:anonymous, and not when u already has system:authenticated or
// system:unauthenticated. It returns u itself when nothing is added, else a
// copy.
func withAuthenticatedGroup(u *request.User) *request.User {
	if u.Name == request.AnonymousUser ||
		slices.Contains(u.Groups, request.AllAuthenticatedGroup) ||
		slices.Contains(u.Groups, request.AllUnauthenticatedGroup) {
		return u
	}
	c := *u
	c.Groups = append(slices.Clip(u.Groups), request.AllAuthenticatedGroup)
	return &c
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header. As in kube-apiserver, the scheme is case-insensitive, a single
// space separates it from the token, anything after a further space is
// ignored, and a header with another scheme or an empty token carries no
// token at all (it is not an error: other authenticators may use it).
func bearerToken(h http.Header) (string, bool) {
	auth := strings.TrimSpace(h.Get("Authorization"))
	scheme, rest, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token, _, _ := strings.Cut(rest, " ")
	return token, token != ""
}

// verifyClientCert verifies the connection's client certificate against
// roots for client authentication, with the other certificates the client
// sent as intermediates. It returns nil, nil when there is no certificate.
//
// The TLS layer has already verified the chain, but against the union of
// every CA the listener trusts (see TLSConfig); which CA signed it decides
// which authenticator may use it, so each verifies again against its own.
func verifyClientCert(r *http.Request, roots *x509.CertPool) (*x509.Certificate, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	opts := x509.VerifyOptions{
		Roots:     roots,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if len(r.TLS.PeerCertificates) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range r.TLS.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	if _, err := leaf.Verify(opts); err != nil {
		return nil, fmt.Errorf("verifying certificate %s: %w", certName(leaf), err)
	}
	return leaf, nil
}

// certName identifies a certificate in errors.
func certName(c *x509.Certificate) string {
	return fmt.Sprintf("CN=%q, serial %s, issuer %q", c.Subject.CommonName, c.SerialNumber, c.Issuer.String())
}

// certUser is client-certificate authentication: the common name is the
// user name and the organizations are the groups. A verified certificate
// without a common name identifies nobody (no error), as upstream.
func certUser(r *http.Request, roots *x509.CertPool) (*request.User, error) {
	leaf, err := verifyClientCert(r, roots)
	if leaf == nil || leaf.Subject.CommonName == "" {
		return nil, err
	}
	return &request.User{
		Name:   leaf.Subject.CommonName,
		Groups: slices.Clone(leaf.Subject.Organization),
	}, nil
}

// proxyAuth is request-header authentication: a front proxy, identified by
// its client certificate, asserts the user in headers.
type proxyAuth struct {
	roots         *x509.CertPool
	allowedNames  []string // empty: any common name
	userHeaders   []string
	uidHeaders    []string
	groupHeaders  []string
	extraPrefixes []string // lower case
}

// authenticate returns the user the headers name when the connection's
// certificate is a trusted proxy's. A certificate that does not verify, or
// whose common name is not allowed, is an error; no certificate, or a
// trusted proxy that names no user, identifies nobody.
func (p *proxyAuth) authenticate(r *http.Request) (*request.User, error) {
	leaf, err := verifyClientCert(r, p.roots)
	if leaf == nil {
		return nil, err
	}
	if len(p.allowedNames) > 0 && !slices.Contains(p.allowedNames, leaf.Subject.CommonName) {
		return nil, fmt.Errorf("proxy certificate CN=%q is not in the allowed names", leaf.Subject.CommonName)
	}
	name := firstValue(r.Header, p.userHeaders)
	if name == "" {
		return nil, nil
	}
	u := &request.User{
		Name:   name,
		UID:    firstValue(r.Header, p.uidHeaders),
		Groups: allValues(r.Header, p.groupHeaders),
	}
	if len(p.extraPrefixes) > 0 {
		for k, vv := range r.Header {
			rest := hasExtraPrefix(k, p.extraPrefixes)
			if rest == "" {
				continue
			}
			key := strings.ToLower(rest)
			// Keys are percent-encoded, since header names cannot
			// hold every character a key may; a key that does not
			// decode is taken as it is.
			if dec, err := url.PathUnescape(key); err == nil {
				key = dec
			}
			if u.Extra == nil {
				u.Extra = make(map[string][]string)
			}
			u.Extra[key] = append(u.Extra[key], vv...)
		}
	}
	return u, nil
}

// hasExtraPrefix returns what follows the first of the (lower-case)
// prefixes that header name k starts with, compared case-insensitively, or
// "" when none does or nothing follows.
func hasExtraPrefix(k string, prefixes []string) string {
	for _, p := range prefixes {
		if len(k) > len(p) && strings.EqualFold(k[:len(p)], p) {
			return k[len(p):]
		}
	}
	return ""
}

// firstValue returns the first non-empty value of the first of names that
// has one.
func firstValue(h http.Header, names []string) string {
	for _, n := range names {
		for _, v := range h.Values(n) {
			if v != "" {
				return v
			}
		}
	}
	return ""
}

// allValues returns every non-empty value of every header in names, in
// order. Values are not split on commas: each header line is one group.
func allValues(h http.Header, names []string) []string {
	var out []string
	for _, n := range names {
		for _, v := range h.Values(n) {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}
