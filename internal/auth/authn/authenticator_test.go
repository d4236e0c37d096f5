package authn

import (
	"github.com/apfproject/apf/internal/testing/testpki"

	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/apfproject/apf/request"
)

// fullOptions configures every authenticator.
func fullOptions(t *testing.T, p pki) Options {
	o := DefaultOptions()
	o.TokenAuthFile = writeFile(t, "tokens.csv", "good-token,alice,uid-a,\"dev,ops\"\nmaster-token,root,uid-r,system:masters\n")
	o.ClientCAFile = p.client.File
	o.RequestHeaderClientCAFile = p.proxy.File
	o.RequestHeaderAllowedNames = []string{"front-proxy"}
	o.RequestHeaderUIDHeaders = []string{"X-Remote-Uid"}
	return o
}

func mustNew(t *testing.T, o Options) *Authenticator {
	t.Helper()
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAuthenticate(t *testing.T) {
	p := newPKI(t)
	a := mustNew(t, fullOptions(t, p))

	userCert := p.client.Issue(t, "carol", []string{"team-a", "team-b"})
	noCNCert := p.client.Issue(t, "", []string{"team-a"})
	serverOnly := p.client.Issue(t, "srv", nil, x509.ExtKeyUsageServerAuth)
	proxyCert := p.proxy.Issue(t, "front-proxy", nil)
	strangerProxy := p.proxy.Issue(t, "someone-else", nil)
	foreign := p.other.Issue(t, "mallory", []string{"system:masters"})
	// A user certificate signed by the client CA whose name happens to
	// be an allowed proxy name must not be able to assert headers.
	fakeProxy := p.client.Issue(t, "front-proxy", nil)

	authed := func(name, uid string, groups ...string) *request.User {
		return &request.User{Name: name, UID: uid, Groups: append(groups, "system:authenticated")}
	}
	proxyHeaders := http.Header{
		"X-Remote-User":                     {"dora"},
		"X-Remote-Uid":                      {"uid-d"},
		"X-Remote-Group":                    {"g1", "g2"},
		"X-Remote-Extra-Scopes":             {"read", "write"},
		"X-Remote-Extra-A%2fb%3":            {"v"},
		"X-Remote-Extra-Acme.com%2Fproject": {"p1"},
	}

	for _, tc := range []struct {
		name    string
		cert    *tls.Certificate
		headers http.Header
		want    *request.User // nil: 401
		errMsg  string
	}{
		{name: "anonymous", want: anonymousUser},
		{name: "token", headers: http.Header{"Authorization": {"Bearer good-token"}},
			want: authed("alice", "uid-a", "dev", "ops")},
		{name: "token scheme case", headers: http.Header{"Authorization": {"bEARER good-token trailing"}},
			want: authed("alice", "uid-a", "dev", "ops")},
		{name: "unknown token is 401, not anonymous", headers: http.Header{"Authorization": {"Bearer nope"}},
			errMsg: "invalid bearer token"},
		{name: "basic auth is not a token", headers: http.Header{"Authorization": {"Basic Zm9vOmJhcg=="}},
			want: anonymousUser},
		{name: "empty bearer", headers: http.Header{"Authorization": {"Bearer "}}, want: anonymousUser},
		{name: "client cert", cert: &userCert, want: authed("carol", "", "team-a", "team-b")},
		// The proxy authenticator's complaint about a certificate it did
		// not sign stands, since no authenticator identifies anyone.
		{name: "client cert without CN", cert: &noCNCert, errMsg: "request header: verifying certificate"},
		{name: "client cert without client auth usage", cert: &serverOnly, errMsg: "incompatible key usage"},
		{name: "unrelated CA", cert: &foreign, errMsg: "unknown authority"},
		{name: "unrelated CA loses to a good token", cert: &foreign,
			headers: http.Header{"Authorization": {"Bearer good-token"}}, want: authed("alice", "uid-a", "dev", "ops")},
		{name: "client cert beats token", cert: &userCert,
			headers: http.Header{"Authorization": {"Bearer nope"}}, want: authed("carol", "", "team-a", "team-b")},
		{name: "proxy", cert: &proxyCert, headers: proxyHeaders.Clone(), want: &request.User{
			Name: "dora", UID: "uid-d", Groups: []string{"g1", "g2", "system:authenticated"},
			Extra: map[string][]string{"scopes": {"read", "write"}, "a%2fb%3": {"v"}, "acme.com/project": {"p1"}},
		}},
		{name: "proxy without a user header", cert: &proxyCert,
			headers: http.Header{"X-Remote-Group": {"g1"}}, errMsg: "client certificate: verifying certificate"},
		{name: "proxy without a user header but a token", cert: &proxyCert,
			headers: http.Header{"X-Remote-Group": {"g1"}, "Authorization": {"Bearer good-token"}},
			want:    authed("alice", "uid-a", "dev", "ops")},
		{name: "headers without any cert", headers: proxyHeaders.Clone(), want: anonymousUser},
		{name: "headers with a user cert", cert: &userCert, headers: proxyHeaders.Clone(),
			want: authed("carol", "", "team-a", "team-b")},
		{name: "headers with a user cert named like the proxy", cert: &fakeProxy, headers: proxyHeaders.Clone(),
			want: authed("front-proxy", "")},
		{name: "headers with a proxy cert whose name is not allowed", cert: &strangerProxy,
			headers: proxyHeaders.Clone(), errMsg: "not in the allowed names"},
		{name: "headers with a foreign cert and a token", cert: &foreign,
			headers: withAuth(proxyHeaders, "Bearer good-token"), want: authed("alice", "uid-a", "dev", "ops")},
		{name: "token user already in system:masters", headers: http.Header{"Authorization": {"Bearer master-token"}},
			want: authed("root", "uid-r", "system:masters")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := get("/apis")
			if tc.headers != nil {
				r.Header = tc.headers
			}
			if tc.cert != nil {
				r = withCert(r, tc.cert)
			}
			got, err := a.Authenticate(r)
			if tc.want == nil {
				if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), tc.errMsg) {
					t.Fatalf("got %+v, %v; want ErrUnauthorized with %q", got, err, tc.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for k := range r.Header {
				if k == "Authorization" || strings.HasPrefix(k, "X-Remote-") {
					t.Errorf("header %s not stripped", k)
				}
			}
		})
	}
}

func withAuth(h http.Header, auth string) http.Header {
	c := h.Clone()
	c.Set("Authorization", auth)
	return c
}

func TestAnonymousOff(t *testing.T) {
	p := newPKI(t)
	o := fullOptions(t, p)
	o.AnonymousAuth = false
	a := mustNew(t, o)

	if _, err := a.Authenticate(get("/healthz")); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("no credentials: got %v, want ErrUnauthorized", err)
	}
	r := get("/healthz")
	r.Header.Set("X-Remote-User", "dora") // untrusted: no proxy certificate
	if _, err := a.Authenticate(r); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("untrusted headers: got %v, want ErrUnauthorized", err)
	}
	r = get("/healthz")
	r.Header.Set("Authorization", "Bearer good-token")
	if u, err := a.Authenticate(r); err != nil || u.Name != "alice" {
		t.Fatalf("token: got %+v, %v", u, err)
	}
}

func TestNothingConfigured(t *testing.T) {
	a := mustNew(t, DefaultOptions())
	p := newPKI(t)
	c := p.client.Issue(t, "carol", nil)
	r := withCert(get("/"), &c)
	r.Header.Set("Authorization", "Bearer whatever")
	r.Header.Set("X-Remote-User", "dora")
	u, err := a.Authenticate(r)
	if err != nil || u != anonymousUser {
		t.Fatalf("got %+v, %v; want anonymous", u, err)
	}
	// Even with no request-header authentication configured, the
	// identity headers are removed, as is Authorization.
	if len(r.Header) != 0 {
		t.Fatalf("headers after: %v", r.Header)
	}
	o := DefaultOptions()
	o.ClientCAFile = p.client.File
	a2 := mustNew(t, o)
	noCN := p.client.Issue(t, "", []string{"g"})
	if u, err := a2.Authenticate(withCert(get("/"), &noCN)); err != nil || u != anonymousUser {
		t.Fatalf("certificate without CN: got %+v, %v; want anonymous", u, err)
	}
	if _, err := New(Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := (func() (*request.User, error) { a := mustNew(t, Options{}); return a.Authenticate(get("/")) })(); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("zero Options: got %v, want ErrUnauthorized", err)
	}
}

func TestCustomHeaders(t *testing.T) {
	p := newPKI(t)
	o := DefaultOptions()
	o.RequestHeaderClientCAFile = p.proxy.File
	o.RequestHeaderUsernameHeaders = []string{"X-User", "X-Other-User"}
	o.RequestHeaderGroupHeaders = []string{"X-Group-A", "X-Group-B"}
	o.RequestHeaderExtraHeadersPrefix = []string{"X-Extra-", "X-More-"}
	a := mustNew(t, o)
	pc := p.proxy.Issue(t, "anything-goes", nil)
	r := withCert(get("/"), &pc)
	r.Header = http.Header{
		"X-User":        {""},
		"X-Other-User":  {"", "eve"},
		"X-Group-B":     {"b"},
		"X-Group-A":     {"a1", "", "a2"},
		"X-Extra-K":     {"1"},
		"X-More-K":      {"2"},
		"X-Remote-User": {"ignored"},
	}
	u, err := a.Authenticate(r)
	if err != nil {
		t.Fatal(err)
	}
	want := &request.User{Name: "eve", Groups: []string{"a1", "a2", "b", "system:authenticated"}, Extra: map[string][]string{"k": nil}}
	if u.Name != want.Name || !reflect.DeepEqual(u.Groups, want.Groups) || len(u.Extra["k"]) != 2 {
		t.Fatalf("got %+v", u)
	}
	if len(r.Header) != 1 || r.Header.Get("X-Remote-User") != "ignored" {
		t.Fatalf("headers after: %v", r.Header)
	}
}

func TestNewErrors(t *testing.T) {
	p := newPKI(t)
	notPEM := writeFile(t, "junk.crt", "hello")
	badBlock := writeFile(t, "bad.crt", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
	badTokens := writeFile(t, "tokens.csv", "a,b\n")
	for _, tc := range []struct {
		name string
		o    Options
		msg  string
	}{
		{"missing token file", Options{TokenAuthFile: "/nonexistent"}, "token file"},
		{"bad token file", Options{TokenAuthFile: badTokens}, "line 1"},
		{"missing client CA", Options{ClientCAFile: "/nonexistent"}, "--client-ca-file"},
		{"client CA not PEM", Options{ClientCAFile: notPEM}, "no PEM certificates"},
		{"client CA bad block", Options{ClientCAFile: badBlock}, "PEM block 1"},
		{"proxy CA not PEM", Options{RequestHeaderClientCAFile: notPEM}, "--requestheader-client-ca-file"},
		{"allowed names without CA", Options{RequestHeaderAllowedNames: []string{"x"}, ClientCAFile: p.client.File}, "needs --requestheader-client-ca-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %q", err, tc.msg)
			}
			if _, err := TLSConfig(tc.o, nil); tc.o.ClientCAFile != "" && tc.o.ClientCAFile != p.client.File && err == nil {
				t.Fatal("TLSConfig accepted a bad CA file")
			}
		})
	}
}

func TestTLSConfig(t *testing.T) {
	p := newPKI(t)
	base := &tls.Config{MinVersion: tls.VersionTLS13, ServerName: "x"}
	cfg, err := TLSConfig(Options{}, base)
	if err != nil || cfg == base || cfg.ClientAuth != tls.NoClientCert || cfg.ClientCAs != nil || cfg.MinVersion != tls.VersionTLS13 {
		t.Fatalf("no CAs: got %+v, %v", cfg, err)
	}
	cfg, err = TLSConfig(Options{ClientCAFile: p.client.File, RequestHeaderClientCAFile: p.proxy.File}, base)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ClientAuth != tls.VerifyClientCertIfGiven || cfg.MinVersion != tls.VersionTLS13 || base.ClientCAs != nil {
		t.Fatalf("got %+v", cfg)
	}
	for _, ca := range []*testpki.CA{p.client, p.proxy} {
		c := ca.Issue(t, "x", nil)
		if _, err := c.Leaf.Verify(x509.VerifyOptions{Roots: cfg.ClientCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s: %v", ca.Cert.Subject.CommonName, err)
		}
	}
	c := p.other.Issue(t, "x", nil)
	if _, err := c.Leaf.Verify(x509.VerifyOptions{Roots: cfg.ClientCAs}); err == nil {
		t.Error("unrelated CA trusted")
	}
}
