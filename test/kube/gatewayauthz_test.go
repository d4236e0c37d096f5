package kube

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apfproject/apf/test/testproc"
)

// TestGatewayAuthorizesProxied: a gateway of its own, apf serve
// --authorization-proxied with the Builtin mode alone, in front of the
// kube-apiserver through a relay that records every path it passes on.
// Builtin grants ordinary users nothing of the upstream's but discovery,
// and the kube-apiserver's RBAC grants bob nothing either but the
// flowcontrol API, so each request below is refused by both: the
// gateway's 403, resource and non-resource, as bob, as an anonymous
// caller and as the admin impersonating noxu, must be the kube-apiserver's
// answer to the same request sent to it directly (status, Status body and
// headers, PF headers included, since both authorize after APF), and the
// relay must have passed none of them on. A request both allow passes.
func TestGatewayAuthorizesProxied(t *testing.T) {
	e := testEnv(t)
	relay := newRecordingRelay(t, e.kube)
	gw := startAuthorizingGateway(t, e, relay.URL)

	noxu := http.Header{"Impersonate-User": {"noxu"}}
	refused := []request{
		{method: http.MethodGet, path: "/api/v1/namespaces/default/pods", token: readerToken},
		{method: http.MethodGet, path: "/api/v1/nodes", token: readerToken},
		{method: http.MethodDelete, path: "/apis/apps/v1/namespaces/default/deployments/kt-nothing", token: readerToken},
		{method: http.MethodGet, path: "/api/v1/namespaces/default/pods/kt-pod/log", token: readerToken},
		{method: http.MethodGet, path: "/api/v1/namespaces/default/configmaps?watch=true", token: readerToken},
		{method: http.MethodGet, path: "/kt-nonresource/path", token: readerToken},
		{method: http.MethodPost, path: "/kt-nonresource", token: readerToken, body: "{}"},
		{method: http.MethodGet, path: "/api/v1/namespaces", token: "-"},
		{method: http.MethodGet, path: "/kt-anonymous", token: "-"},
		{method: http.MethodGet, path: "/api/v1/namespaces/default/secrets", header: noxu},
		{method: http.MethodGet, path: "/kt-noxu", header: noxu},
	}
	for _, r := range refused {
		t.Run(r.String()+who(r), func(t *testing.T) {
			direct := e.kube.mustSend(t, r)
			if direct.code != http.StatusForbidden {
				t.Fatalf("%s: the kube-apiserver answered %d, not 403: the case no longer provokes a refusal\n%s", r, direct.code, clip(direct.raw))
			}
			proxied := gw.mustSend(t, r)
			compareAnswers(t, r, direct, proxied)
			path, _, _ := strings.Cut(r.path, "?")
			if seen := relay.saw(path); len(seen) != 0 {
				t.Errorf("%s: refused by the gateway, yet the upstream got %q", r, seen)
			}
		})
	}
	allowed := request{method: http.MethodGet, path: "/api/v1/namespaces/default"}
	direct, proxied := e.kube.mustSend(t, allowed), gw.mustSend(t, allowed)
	if direct.code != http.StatusOK {
		t.Fatalf("%s: kube %d", allowed, direct.code)
	}
	compareAnswers(t, allowed, direct, proxied)
	if seen := relay.saw(allowed.path); len(seen) != 1 {
		t.Errorf("%s: allowed, and the upstream got it %d times", allowed, len(seen))
	}
}

// who names an anonymous caller for a subtest's name, which
// request.String names the others in.
func who(r request) string {
	if r.token == "-" {
		return " (anonymous)"
	}
	return ""
}

// recordingRelay passes every request on to a server, over plain HTTP on
// 127.0.0.1, and records the paths it passed.
type recordingRelay struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
}

func newRecordingRelay(t *testing.T, to *server) *recordingRelay {
	t.Helper()
	u, err := url.Parse(to.url)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(to.caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	r := &recordingRelay{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.paths = append(r.paths, req.URL.Path)
		r.mu.Unlock()
		rp.ServeHTTP(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

// saw returns the passed requests whose path is path.
func (r *recordingRelay) saw(path string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.paths {
		if p == path {
			out = append(out, p)
		}
	}
	return out
}

// startAuthorizingGateway starts bin/apf serve in front of upstream with
// --authorization-proxied and the Builtin mode, the token file of the
// environment, and stops it when the test ends.
func startAuthorizingGateway(t *testing.T, e *env, upstream string) *server {
	t.Helper()
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.dir, "authz-gateway")
	s := &server{name: "gateway", url: "https://" + net.JoinHostPort("127.0.0.1", port), caFile: filepath.Join(dir, "data", "pki", "ca.crt")}
	s.proc, err = testproc.Start(filepath.Join(e.binDir, "apf"), dir, "serve",
		"--data-dir="+filepath.Join(dir, "data"),
		"--listen=127.0.0.1:"+port,
		"--token-auth-file="+filepath.Join(e.dir, "tokens.csv"),
		"--upstream="+upstream,
		"--upstream-identity=passthrough",
		"--authorization-mode=Builtin",
		"--authorization-proxied",
		"--shutdown-timeout=2s",
	)
	if err != nil {
		t.Fatalf("the authorizing gateway: %v", err)
	}
	t.Cleanup(func() { s.proc.Stop(stopTimeout) })
	if err := s.waitReady(time.Now().Add(startTimeout)); err != nil {
		t.Fatal(fmt.Errorf("the authorizing gateway: %w", err))
	}
	return s
}
