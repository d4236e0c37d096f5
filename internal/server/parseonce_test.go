package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apfproject/apf/apfhttp"
	"github.com/apfproject/apf/internal/auth/authz"
	"github.com/apfproject/apf/request"
)

// TestEachRequestParsedOnce drives the server's real handler chain (panic
// recovery, the edge parse, deadline, authentication, APF, authorization,
// then apf's own endpoints or the gateway) in process, with paths that
// request.Parse refuses ("/api/v1/watch" and its flowcontrol twin).
//
// Sent as they are, the edge filter answers the 500: the request is parsed
// there. Sent with attributes already in the context (as if an edge in
// front had parsed them) it must get through every filter, each acting on
// those attributes: the deadline on their Timeout, authentication putting
// the user on them, APF classifying them, authorization judging them. Any
// filter that parsed the request again would fail on the path and answer
// 500 (authentication, APF, authorization), or, for the deadline, give no
// deadline at all, and the upstream would wait for its fallback instead of
// seeing the request cancelled.
func TestEachRequestParsedOnce(t *testing.T) {
	const fallback = 10 * time.Second
	var reached, cancelled atomic.Int32
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/watch" {
			http.NotFound(w, r)
			return
		}
		reached.Add(1)
		select {
		case <-r.Context().Done():
			cancelled.Add(1)
		case <-time.After(fallback):
		}
	}))
	defer upstream.Close()
	gw := startGateway(t, upstream.URL, gatewayTokens(t, "carol"), func(o *Options) {
		o.RequestTimeout = time.Minute
		o.UpstreamTimeout = time.Minute
	})
	defer gw.stop()
	h := gw.server.Handler()

	send := func(path string, a *request.Attributes) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("Authorization", "Bearer token-carol")
		if a != nil {
			r = r.WithContext(request.WithAttributes(r.Context(), a))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	const proxied, own = "/api/v1/watch", "/apis/flowcontrol.apiserver.k8s.io/v1/watch"

	// Without attributes: the edge parses, and answers upstream's 500.
	for _, path := range []string{proxied, own} {
		rec := send(path, nil)
		if want := "Internal Server Error: \"" + path + "\": failed to create RequestInfo: unable to determine kind and namespace from url, " + path + "\n"; rec.Code != http.StatusInternalServerError || rec.Body.String() != want {
			t.Errorf("%s without attributes: %d %q, want 500 %q", path, rec.Code, rec.Body.String(), want)
		}
	}
	if reached.Load() != 0 {
		t.Fatal("a request that does not parse reached the upstream")
	}

	// Proxied, with attributes of a pod read that asks for 300 ms.
	pod := &request.Attributes{Info: request.Info{
		IsResourceRequest: true, Path: "/api/v1/namespaces/shop/pods/p", Verb: "get",
		APIPrefix: "api", APIVersion: "v1", Namespace: "shop", Resource: "pods", Name: "p",
		Timeout: 300 * time.Millisecond,
	}}
	start := time.Now()
	rec := send(proxied, pod)
	took := time.Since(start)
	// The deadline's answer is kube-apiserver's timeout Status, which
	// carries none of the header set behind the deadline (the APF
	// headers included); the upstream reached below shows that APF let
	// the request through.
	if rec.Code != http.StatusGatewayTimeout || rec.Body.String() != kubeTimeoutBody {
		t.Errorf("proxied with attributes: %d %q, want 504 at the attributes' 300 ms deadline", rec.Code, rec.Body.String())
	}
	if rec.Header().Get(apfhttp.FlowSchemaUIDHeader) != "" || rec.Header().Get(apfhttp.PriorityLevelUIDHeader) != "" {
		t.Errorf("proxied with attributes: APF headers on the timeout %v", rec.Header())
	}
	if pod.User.Name != "carol" {
		t.Errorf("the attributes' user is %q: authentication did not fill in the attributes it was given", pod.User.Name)
	}
	// The upstream sees its request end when the gateway gives up on it.
	_ = waitFor(fallback, func() bool { return cancelled.Load() == 1 })
	if reached.Load() != 1 || cancelled.Load() != 1 || took >= fallback {
		t.Errorf("upstream reached %d times, cancelled %d, answer after %v: the deadline did not come from the attributes",
			reached.Load(), cancelled.Load(), took)
	}

	// apf's own endpoints, behind authorization: the attributes decide.
	// carol may not read /metrics...
	metrics := &request.Attributes{Info: request.Info{Path: "/metrics", Verb: "get"}}
	rec = send(own, metrics)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `cannot get path \"/metrics\"`) {
		t.Errorf("own path with /metrics attributes: %d %s, want the 403 for /metrics", rec.Code, rec.Body.String())
	}
	// ...but may read the flowcontrol resources: the request reaches the
	// API handler, which answers for the URL it got.
	list := &request.Attributes{Info: request.Info{
		IsResourceRequest: true, Path: "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", Verb: "list",
		APIPrefix: "apis", APIGroup: "flowcontrol.apiserver.k8s.io", APIVersion: "v1", Resource: "flowschemas",
	}}
	rec = send(own, list)
	if rec.Code == http.StatusInternalServerError || rec.Code == http.StatusForbidden || rec.Header().Get(apfhttp.FlowSchemaUIDHeader) == "" {
		t.Errorf("own path with flowschemas attributes: %d %s %v, want it authorized and admitted", rec.Code, rec.Body.String(), rec.Header())
	}
	for _, a := range []*request.Attributes{metrics, list} {
		if a.User.Name != "carol" {
			t.Errorf("%s: the attributes' user is %q", a.Info.Path, a.User.Name)
		}
	}

	// And a request that does parse: the server's chain, with the
	// authorization of apf's own endpoints, around a probe. The edge of
	// that chain stored the attributes the probe finds, authentication
	// put the user on them and the deadline came from their Timeout.
	var inner *request.Attributes
	var deadline time.Time
	probe := gw.server.chain(authz.Authorize(gw.server.authorizer)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner, _ = request.AttributesFrom(r.Context())
		deadline, _ = r.Context().Deadline()
	})))
	r := httptest.NewRequest(http.MethodGet, "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas?limit=3&timeout=5s", nil)
	r.Header.Set("Authorization", "Bearer token-carol")
	start = time.Now()
	rec = httptest.NewRecorder()
	probe.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK || inner == nil {
		t.Fatalf("through the chain: %d %s, attributes %v", rec.Code, rec.Body.String(), inner)
	}
	if inner.User.Name != "carol" || inner.Info.Verb != request.VerbList || inner.Info.List.Limit != 3 || inner.Info.Timeout != 5*time.Second {
		t.Errorf("through the chain: attributes %+v", inner)
	}
	// 5 s from when the filter ran, not the minute of the request timeout.
	if left := deadline.Sub(start); left < 5*time.Second || left > 30*time.Second {
		t.Errorf("through the chain: deadline %v after the start, want the asked 5 s", left)
	}
}
