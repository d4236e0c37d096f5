// Package testserve starts `apf serve` inside a test, on 127.0.0.1, and
// writes kubeconfigs that reach it, for the tests of packages that read a
// cluster the way an admin's tools do (through a kubeconfig and client-go)
// rather than through the server's own test helpers. The server stops when
// the test ends.
//
// It is for tests only; it depends on internal/server.
package testserve

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/server"
)

// The tokens of the server's token file: an administrator in
// system:masters, and a user in the group devs only.
const (
	AdminToken  = "testserve-admin-token"
	ReaderToken = "testserve-reader-token"
	tokenFile   = AdminToken + ",admin,uid-admin,\"system:masters\"\n" +
		ReaderToken + ",reader,uid-reader,devs\n"
)

// Server is one running apf serve.
type Server struct {
	// URL is the server's https:// address, CAFile the CA that signed its
	// certificate.
	URL, CAFile string
	dir         string
}

// Start runs apf serve on the embedded etcd in a temporary directory,
// with the options configure changes (it may be nil; Listen, DataDir,
// CertDir and the token file are set before it is called), and waits
// until /readyz answers 200, which means the mandatory and suggested
// objects exist, and until the maintenance pass that follows the first
// has ended. The maintenance period is an hour, so that an object a test
// deletes stays deleted while it runs.
func Start(t testing.TB, configure func(*server.Options)) *Server {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(tokenFile), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := server.DefaultOptions()
	opts.DataDir = filepath.Join(dir, "data")
	opts.CertDir = filepath.Join(dir, "pki")
	opts.Auth.TokenAuthFile = tokens
	opts.MaintenancePeriod = time.Hour
	opts.ShutdownTimeout = 2 * time.Second
	opts.Logger = slog.New(slog.DiscardHandler)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Listen = ln.Addr().String()
	// Ready means the first maintenance pass succeeded; the second runs
	// right after it. Start returns once both have, so that nothing a
	// test changes is put back while it runs.
	passes := make(chan error, 8)
	opts.OnMaintenancePass = func(err error) {
		select {
		case passes <- err:
		default:
		}
	}
	if configure != nil {
		configure(&opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.New(ctx, opts)
	if err != nil {
		cancel()
		_ = ln.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln, nil) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("apf serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("apf serve did not stop within 30 s")
		}
	})
	s := &Server{URL: "https://" + opts.Listen, CAFile: filepath.Join(opts.CertDir, "ca.crt"), dir: dir}
	var client *http.Client
	deadline := time.Now().Add(60 * time.Second)
	for {
		if client == nil {
			if pem, err := os.ReadFile(s.CAFile); err == nil {
				pool := x509.NewCertPool()
				pool.AppendCertsFromPEM(pem)
				client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
					TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
			}
		}
		if client != nil {
			if resp, err := client.Get(s.URL + "/readyz"); err == nil {
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					waitPasses(t, passes, 2)
					return s
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("apf serve not ready after 60 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitPasses waits until n maintenance passes have succeeded.
func waitPasses(t testing.TB, passes <-chan error, n int) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for n > 0 {
		select {
		case err := <-passes:
			if err == nil {
				n--
			}
		case <-timeout:
			t.Fatal("apf serve: the maintenance passes did not succeed within 60 s")
		}
	}
}

// Kubeconfig writes a kubeconfig whose one context, named context, reaches
// the server with token, and returns its path.
func (s *Server) Kubeconfig(t testing.TB, context, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(s.KubeconfigText(context, token)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// KubeconfigText is the kubeconfig Kubeconfig writes.
func (s *Server) KubeconfigText(context, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster:
    server: %[2]s
    certificate-authority: %[3]s
users:
- name: %[1]s
  user:
    token: %[4]s
contexts:
- name: %[1]s
  context: {cluster: %[1]s, user: %[1]s}
current-context: %[1]s
`, context, s.URL, s.CAFile, token)
}
