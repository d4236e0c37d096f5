package proxy

import (
	"github.com/apfproject/apf/internal/testing/testpki"

	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// quietLogger drops the proxy's warnings so expected failures do not
// clutter the test output.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// mustURL parses a URL or fails the test.
func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// newProxy builds a proxy or fails the test.
func newProxy(t testing.TB, o Options) http.Handler {
	t.Helper()
	if o.Logger == nil {
		o.Logger = quietLogger()
	}
	h, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return h
}

// front serves h on 127.0.0.1 for the duration of the test.
func front(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// writeFile writes a file under the test's temporary directory.
func writeFile(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// caFileFor writes the certificate of a TLS httptest server as a PEM file.
func caFileFor(t testing.TB, s *httptest.Server) string {
	t.Helper()
	return writeFile(t, "ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}))
}

// clientPKI is a CA and a client certificate it signed.
type clientPKI struct {
	pool              *x509.CertPool
	certFile, keyFile string
}

// newClientPKI makes a CA and a client certificate with the given common
// name, and writes the client certificate and key as PEM files.
func newClientPKI(t testing.TB, cn string) clientPKI {
	t.Helper()
	ca := testpki.NewCA(t, "test client CA")
	certFile, keyFile := testpki.WriteFiles(t, ca.Issue(t, cn, nil))
	return clientPKI{pool: ca.Pool(), certFile: certFile, keyFile: keyFile}
}

// tlsUpstream starts an HTTPS upstream offering HTTP/2, optionally
// requiring client certificates signed by clientCAs.
func tlsUpstream(t testing.TB, h http.Handler, clientCAs *x509.CertPool) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	s.EnableHTTP2 = true
	if clientCAs != nil {
		s.TLS = &tls.Config{ClientCAs: clientCAs, ClientAuth: tls.RequireAndVerifyClientCert}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// decodeStatus reads a Kubernetes Status body.
func decodeStatus(t testing.TB, r io.Reader) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.NewDecoder(r).Decode(&st); err != nil {
		t.Fatalf("decoding the Status body: %v", err)
	}
	return st
}

// within runs f in a goroutine and fails the test if it has not returned
// after a generous bound (it guards against hangs, it times nothing).
func within(t testing.TB, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not finish", what)
	}
}

func runtimeNumGoroutine() int { return runtime.NumGoroutine() }
