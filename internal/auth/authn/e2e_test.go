package authn

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestTLSEndToEnd serves the authentication filter on a real TLS listener
// configured by TLSConfig and talks to it with client certificates from
// each CA. (What each user may then do is package authz's.)
func TestTLSEndToEnd(t *testing.T) {
	p := newPKI(t)
	o := fullOptions(t, p)
	srv := httptest.NewUnstartedServer(Authenticate(mustNew(t, o))(echo))
	cfg, err := TLSConfig(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = cfg
	srv.StartTLS()
	defer srv.Close()

	client := func(cert *tls.Certificate) *http.Client {
		tr := srv.Client().Transport.(*http.Transport).Clone()
		if cert != nil {
			// Always send the certificate: with Certificates, Go's
			// client would leave out one the server's list of
			// acceptable CAs does not name.
			tr.TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				return cert, nil
			}
		}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	userCert := p.client.Issue(t, "carol", []string{"team-a"})
	proxyCert := p.proxy.Issue(t, "front-proxy", nil)
	strangerProxy := p.proxy.Issue(t, "someone-else", nil)
	foreign := p.other.Issue(t, "mallory", []string{"system:masters"})

	const fs = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
	for _, tc := range []struct {
		name         string
		cert         *tls.Certificate
		method, path string
		headers      map[string]string
		code         int
		user, groups string
		handshake    bool // the TLS handshake must fail
	}{
		{name: "client cert reads", cert: &userCert, method: "GET", path: fs, code: 200,
			user: "carol", groups: "team-a,system:authenticated"},
		{name: "client cert writes as its user", cert: &userCert, method: "POST", path: fs, code: 200,
			user: "carol", groups: "team-a,system:authenticated"},
		{name: "client cert ignores identity headers", cert: &userCert, method: "GET", path: fs,
			code: 200, user: "carol", groups: "team-a,system:authenticated",
			headers: map[string]string{"X-Remote-User": "dora", "X-Remote-Group": "system:masters"}},
		{name: "proxy asserts an admin", cert: &proxyCert, method: "POST", path: fs,
			code: 200, user: "dora", groups: "system:masters,system:authenticated",
			headers: map[string]string{"X-Remote-User": "dora", "X-Remote-Group": "system:masters", "X-Remote-Extra-Scopes": "s"}},
		{name: "proxy name not allowed", cert: &strangerProxy, method: "GET", path: "/healthz",
			headers: map[string]string{"X-Remote-User": "dora"}, code: 401},
		{name: "unrelated CA fails the handshake", cert: &foreign, method: "GET", path: "/healthz", handshake: true},
		{name: "token", method: "GET", path: fs, headers: map[string]string{"Authorization": "Bearer good-token"},
			code: 200, user: "alice", groups: "dev,ops,system:authenticated"},
		{name: "unknown token", method: "GET", path: "/healthz", headers: map[string]string{"Authorization": "Bearer bad"}, code: 401},
		{name: "anonymous health", method: "GET", path: "/livez", code: 200, user: "system:anonymous", groups: "system:unauthenticated"},
		{name: "anonymous with untrusted headers", method: "GET", path: "/readyz",
			headers: map[string]string{"X-Remote-User": "dora", "X-Remote-Group": "system:masters"},
			code:    200, user: "system:anonymous", groups: "system:unauthenticated"},
		{name: "anonymous discovery", method: "GET", path: "/apis", code: 200, user: "system:anonymous", groups: "system:unauthenticated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			resp, err := client(tc.cert).Do(req)
			if tc.handshake {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("got %s, want a TLS error", resp.Status)
				}
				if !strings.Contains(err.Error(), "tls") && !strings.Contains(err.Error(), "certificate") {
					t.Fatalf("got %v, want a TLS error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.code)
			}
			if got := resp.Header.Get("X-Test-User"); got != tc.user {
				t.Errorf("user %q, want %q", got, tc.user)
			}
			if got := resp.Header.Get("X-Test-Groups"); got != tc.groups {
				t.Errorf("groups %q, want %q", got, tc.groups)
			}
			if leak := resp.Header.Get("X-Test-Leak"); leak != "" {
				t.Errorf("header %s reached the handler", leak)
			}
		})
	}
}
