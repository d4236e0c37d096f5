package testproc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// WaitReady waits for the CA file, then for the probe; Do sends the token
// and the body.
func TestWaitReady(t *testing.T) {
	var ready atomic.Bool
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "who", http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/readyz" && !ready.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		if r.Method == http.MethodPost && r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "type", http.StatusUnsupportedMediaType)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	p, err := Start("/bin/sh", filepath.Join(dir, "proc"), "-c", "exec sleep 60")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	caFile := filepath.Join(dir, "ca.crt")
	newClient := func(roots *x509.CertPool) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	}
	probe := ReadyzProbe(srv.URL, "tok", time.Second)

	_, err = WaitReady(p, "server", caFile, time.Now().Add(200*time.Millisecond), newClient, probe)
	if err == nil || !strings.Contains(err.Error(), "no CA certificate") {
		t.Fatalf("without a CA file: %v", err)
	}
	der := srv.Certificate().Raw
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = WaitReady(p, "server", caFile, time.Now().Add(200*time.Millisecond), newClient, probe)
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("not ready: %v", err)
	}
	time.AfterFunc(150*time.Millisecond, func() { ready.Store(true) })
	c, err := WaitReady(p, "server", caFile, time.Now().Add(10*time.Second), newClient, probe)
	if err != nil {
		t.Fatal(err)
	}
	if code, body, err := Do(context.Background(), c, http.MethodPost, srv.URL+"/x", "tok", `{}`); err != nil || code != 200 || string(body) != "ok" {
		t.Fatalf("Do: %d %q %v", code, body, err)
	}

	p.Stop(time.Second)
	if _, err := WaitReady(p, "server", caFile, time.Now().Add(10*time.Second), newClient, probe); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("after the process ended: %v", err)
	}
}
