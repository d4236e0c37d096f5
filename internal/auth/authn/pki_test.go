package authn

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/apfproject/apf/internal/testing/testpki"
)

// pki is the set of CAs most tests use.
type pki struct {
	client, proxy, other *testpki.CA
}

func newPKI(t *testing.T) pki {
	return pki{client: testpki.NewCA(t, "client-ca"), proxy: testpki.NewCA(t, "front-proxy-ca"), other: testpki.NewCA(t, "unrelated-ca")}
}

// withCert returns r as if it had come over TLS with the client
// certificate c (nil: TLS without one).
func withCert(r *http.Request, c *tls.Certificate) *http.Request {
	r.TLS = &tls.ConnectionState{HandshakeComplete: true}
	if c != nil {
		r.TLS.PeerCertificates = []*x509.Certificate{c.Leaf}
	}
	return r
}

func get(path string) *http.Request {
	return httptest.NewRequest(http.MethodGet, path, nil)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
