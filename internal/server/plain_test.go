package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/apfhttp"
)

// In front of a service that is not a Kubernetes API server, the paths
// and queries kube-apiserver treats as long-running (exec, log, proxy,
// attach, portforward, ?watch=true, /debug/pprof/) are the service's
// ordinary calls: they go through APF and are cut at the request timeout
// like any other, in both layouts of the addresses and with --profile
// service whatever the upstream. In front of a Kubernetes API server they
// stay long-running, as kube-apiserver has them.

// kubeShaped answers the probe of what the upstream is (/version, /apis)
// as a Kubernetes API server does and passes every other request to h:
// a stand-in whose watches and long-running requests are to be
// kube-apiserver's.
func kubeShaped(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/version":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"major":"1","minor":"37","gitVersion":"v1.37.2","goVersion":"go1.26.8","platform":"linux/amd64"}`)
		case "/apis":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`)
		default:
			h(w, r)
		}
	})
}

// plainPaths look long-running to kube-apiserver's rule.
var plainPaths = []string{
	"/api/v1/namespaces/a/pods/b/log",
	"/api/v1/namespaces/a/pods/b/exec",
	"/api/v1/namespaces/a/services/b/proxy/c",
	"/api/v1/pods?watch=true",
	"/debug/pprof/profile",
}

// slowService answers every path "ok", after the query's d when it has
// one.
func slowService(t *testing.T) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d, err := time.ParseDuration(r.URL.Query().Get("d")); err == nil {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(up.Close)
	return up
}

// withQuery adds q to path's query.
func withQuery(path, q string) string {
	if strings.Contains(path, "?") {
		return path + "&" + q
	}
	return path + "?" + q
}

// checkPlain checks that every plain path is classified by APF and cut at
// the request timeout (1 s) when the service takes 3 s.
func checkPlain(t *testing.T, gw *e2eServer) {
	t.Helper()
	for _, p := range plainPaths {
		code, h, body := gw.do(http.MethodGet, p, readerToken, nil)
		if code != http.StatusOK || string(body) != "ok" || h.Get(apfhttp.PriorityLevelUIDHeader) == "" {
			t.Errorf("%s: %d %q, PF headers %q: want the service's answer, classified by APF", p, code, body, h.Get(apfhttp.PriorityLevelUIDHeader))
		}
		req, err := http.NewRequest(http.MethodGet, gw.url+withQuery(p, "d=3s"), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+readerToken)
		start := time.Now()
		resp, err := gw.client.Do(req)
		took := time.Since(start)
		if err != nil {
			t.Errorf("%s taking 3 s: %v after %v, want the request timeout's 504 after 1 s", p, err, took)
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusGatewayTimeout || took > 2500*time.Millisecond {
			t.Errorf("%s taking 3 s: %d after %v, want the request timeout's 504 after 1 s", p, resp.StatusCode, took)
		}
	}
}

func TestGatewayPlainInFrontOfAService(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	up := slowService(t)
	for _, c := range []struct {
		name string
		tune func(*Options)
	}{
		{"shared address", func(*Options) {}},
		{"admin address", func(o *Options) { o.AdminListen = "127.0.0.1:0" }},
		{"service profile", func(o *Options) { o.Profile = "service" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			logs := &syncBuffer{}
			gw := startGateway(t, up.URL, gatewayTokens(t), func(o *Options) {
				o.RequestTimeout = time.Second
				o.Logger = slog.New(slog.NewTextHandler(logs, nil))
				c.tune(o)
			})
			defer gw.stop()
			checkPlain(t, gw)
			if c.name != "service profile" && !strings.Contains(logs.String(), "the upstream is not a Kubernetes API server: what is proxied is long-running only by a route of --gateway-config") {
				t.Errorf("the log does not say what the upstream is and what follows:\n%s", logs.String())
			}
		})
	}
}

// A Kubernetes API server's long-running requests stay long-running: not
// through APF, which kube-apiserver lets them pass; its watches go
// through APF.
func TestGatewayKubernetesLongRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	_, url := kubeStandIn(t)
	gw := startGateway(t, url, gatewayTokens(t), func(o *Options) { o.RequestTimeout = time.Second })
	defer gw.stop()
	for _, p := range []string{"/api/v1/namespaces/a/pods/b/log", "/api/v1/namespaces/a/pods/b/exec"} {
		_, h, _ := gw.do(http.MethodGet, p, readerToken, nil)
		if v := h.Get(apfhttp.PriorityLevelUIDHeader); v != "" {
			t.Errorf("%s in front of a Kubernetes API server: classified by APF (%q), want long-running", p, v)
		}
	}
	// A watch goes through APF, as on kube-apiserver.
	if _, h, _ := gw.do(http.MethodGet, "/api/v1/pods?watch=true&timeoutSeconds=1", readerToken, nil); h.Get(apfhttp.PriorityLevelUIDHeader) == "" {
		t.Errorf("a watch in front of a Kubernetes API server: not classified by APF")
	}
}

// A watch through the gateway to a client that reads its header and then
// nothing is cut once a write to it has waited --stream-write-timeout,
// through every filter of the chain (the access log's among them): the
// upstream's watch ends and the gateway's handler with it, instead of
// both waiting for the client to close its connection.
func TestGatewayCutsAStalledWatch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	ended := make(chan struct{}, 1)
	event := strings.Repeat("e", 16<<10)
	up := httptest.NewServer(kubeShaped(func(w http.ResponseWriter, r *http.Request) {
		defer func() { ended <- struct{}{} }()
		rc := http.NewResponseController(w)
		for {
			if _, err := io.WriteString(w, event); err != nil || rc.Flush() != nil {
				return
			}
		}
	}))
	t.Cleanup(up.Close)
	logs := &syncBuffer{}
	gw := startGateway(t, up.URL, gatewayTokens(t), func(o *Options) {
		o.StreamWriteTimeout = 500 * time.Millisecond
		o.AccessLog.Destination = filepath.Join(t.TempDir(), "access.log")
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	defer gw.stop()
	req, err := http.NewRequest(http.MethodGet, gw.url+"/api/v1/pods?watch=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+readerToken)
	resp, err := gw.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The header read, nothing more.
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the upstream's watch still runs 20 s after the client stopped reading")
	}
	if err := waitFor(10*time.Second, func() bool { return strings.Contains(logs.String(), "the client took nothing of it for 500ms") }); err != nil {
		t.Errorf("the cut is not logged with its reason:\n%s", logs.String())
	}
}
