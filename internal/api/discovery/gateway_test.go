package discovery

import (
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/proxy"
	"github.com/apfproject/apf/internal/testing/fakekube"
	"github.com/apfproject/apf/request"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

// The gateway tests put a Gateway, with the real proxy, in front of an
// upstream on 127.0.0.1: the fakekube stand-in for a kube-apiserver, or
// something else. Requests are served in process, as an authenticated
// caller the server in front would have named.

// kubectlAccept is the Accept header kubectl 1.32 sends for /api and /apis.
const kubectlAccept = acceptAggregated

// Callers of the gateway tests and their bearer tokens; the stand-in
// refuses carol.
var callerTokens = map[string]string{"admin": "token-admin", "bob": "token-bob", "carol": "token-carol"}

func standIn(o fakekube.Options) *fakekube.Server {
	if o.Tokens == nil {
		o.Tokens = map[string]string{}
		for u, tok := range callerTokens {
			o.Tokens[tok] = u
		}
	}
	return fakekube.New(o)
}

// lockedBuffer collects log output from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// gwEnv is a Gateway over an upstream.
type gwEnv struct {
	t    *testing.T
	h    *Handler
	g    *Gateway
	logs *lockedBuffer
}

// newGatewayEnv starts upstream on 127.0.0.1 and a Gateway in front of it
// with the proxy in mode id (impersonate: apf's token "token-apf"), and
// runs the Gateway's probe until the test ends. tune adjusts the
// Gateway before Run starts.
func newGatewayEnv(t *testing.T, upstream http.Handler, id proxy.Identity, tune func(*Gateway)) *gwEnv {
	t.Helper()
	srv := httptest.NewServer(upstream)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	po := proxy.Options{Upstream: u, Identity: id, Logger: log, User: func(r *http.Request) (request.User, bool) { return request.UserFrom(r.Context()) }}
	if id == proxy.Impersonate {
		po.TokenFile = filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(po.TokenFile, []byte("token-apf\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	px, err := proxy.New(po)
	if err != nil {
		t.Fatal(err)
	}
	h := New(Options{})
	g := NewGateway(GatewayOptions{
		Handler:  h,
		Own:      h,
		Upstream: px,
		MayRead: func(r *http.Request) bool {
			u, ok := request.UserFrom(r.Context())
			return ok && u.Name != request.AnonymousUser
		},
		Logger: log,
	})
	if tune != nil {
		tune(g)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("the probe did not stop")
		}
	})
	return &gwEnv{t: t, h: h, g: g, logs: logs}
}

// kind waits for the first probe and returns what it found.
func (e *gwEnv) kind() UpstreamKind { return e.g.upstreamKind(context.Background()) }

// serve sends one request as user ("" for none) with header pairs.
func (e *gwEnv) serve(method, path, user string, header ...string) (*http.Response, []byte) {
	e.t.Helper()
	r := httptest.NewRequest(method, path, nil)
	if tok := callerTokens[user]; tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	if user != "" {
		groups := []string{"system:authenticated"}
		if user == request.AnonymousUser {
			groups = []string{request.AllUnauthenticatedGroup}
		}
		r = r.WithContext(request.WithUser(r.Context(), &request.User{Name: user, Groups: groups}))
	}
	w := httptest.NewRecorder()
	e.g.ServeHTTP(w, r)
	resp := w.Result()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// upstreamGet fetches a document from the stand-in directly.
func upstreamGet(t *testing.T, kube *fakekube.Server, path string, header ...string) (*http.Response, []byte) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.Header.Set("Authorization", "Bearer token-admin")
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	kube.ServeHTTP(w, r)
	resp := w.Result()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

func etagOf(body []byte) string { return fmt.Sprintf(`"%X"`, sha512.Sum512(body)) }

// rawItems splits a list member of a JSON object into its raw elements.
func rawItems(t *testing.T, body []byte, member string) []json.RawMessage {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(doc[member], &items); err != nil {
		t.Fatalf("%s: %v", member, err)
	}
	return items
}

func compact(t *testing.T, b []byte) string {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestGatewayMergesKubernetesDiscovery: in front of a Kubernetes API
// server, /apis in both forms and the OpenAPI 3 index are the upstream's
// with apf's flowcontrol group in place of its own, everything else of the
// upstream's comes through as it is, and apf's group is apf's.
func TestGatewayMergesKubernetesDiscovery(t *testing.T) {
	kube := standIn(fakekube.Options{})
	e := newGatewayEnv(t, kube, proxy.PassThrough, nil)
	if k := e.kind(); k != UpstreamKubernetes {
		t.Fatalf("upstream found to be %v; log:\n%s", k, e.logs.String())
	}
	if !strings.Contains(e.logs.String(), "the upstream is a Kubernetes API server") || !strings.Contains(e.logs.String(), fakekube.GitVersion) {
		t.Errorf("the log does not say what was found:\n%s", e.logs.String())
	}
	// The probe asked as nobody in particular.
	for _, r := range kube.RequestsTo("/version") {
		if r.Authorization != "" {
			t.Errorf("the probe sent credentials: %+v", r)
		}
	}

	t.Run("legacy /apis", func(t *testing.T) {
		_, up := upstreamGet(t, kube, "/apis", "Accept", "application/json")
		resp, body := e.serve(http.MethodGet, "/apis", "bob", "Accept", "application/json, */*")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		got, want := rawItems(t, body, "groups"), rawItems(t, up, "groups")
		if len(got) != len(want) {
			t.Fatalf("%d groups, upstream has %d:\n%s", len(got), len(want), body)
		}
		for i := range got {
			var g metav1.APIGroup
			if err := json.Unmarshal(got[i], &g); err != nil {
				t.Fatal(err)
			}
			if g.Name != config.Group {
				if compact(t, got[i]) != compact(t, want[i]) {
					t.Errorf("group %d changed:\n%s\nupstream:\n%s", i, got[i], want[i])
				}
				continue
			}
			wantG := e.h.apiGroup()
			wantG.ServerAddressByClientCIDRs = []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: fakekube.ServerAddress}}
			wb, _ := json.Marshal(&wantG)
			if string(got[i]) != string(wb) {
				t.Errorf("flowcontrol group:\n%s\nwant apf's:\n%s", got[i], wb)
			}
		}
		if !strings.HasPrefix(string(body), `{"kind":"APIGroupList","apiVersion":"v1","groups":[`) {
			t.Errorf("member order changed: %.80s", body)
		}
		if et := resp.Header.Get("Etag"); et != etagOf(body) {
			t.Errorf("ETag %q, want the hash of the answer %q", et, etagOf(body))
		}
		if resp.Header.Get("Audit-Id") != "fakekube-audit-id" || !headerHasToken(resp.Header, "Vary", "Accept") {
			t.Errorf("headers %v", resp.Header)
		}
		resp, body = e.serve(http.MethodGet, "/apis", "bob", "Accept", "application/json", "If-None-Match", etagOf(body))
		if resp.StatusCode != http.StatusNotModified || len(body) != 0 || resp.Header.Get("Content-Type") != "" {
			t.Errorf("If-None-Match: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	})

	t.Run("aggregated /apis", func(t *testing.T) {
		_, up := upstreamGet(t, kube, "/apis", "Accept", kubectlAccept)
		resp, body := e.serve(http.MethodGet, "/apis", "bob", "Accept", kubectlAccept)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != aggregatedContentType {
			t.Fatalf("%d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		got, want := rawItems(t, body, "items"), rawItems(t, up, "items")
		if len(got) != len(want) {
			t.Fatalf("%d items, upstream has %d", len(got), len(want))
		}
		at := -1
		for i := range got {
			var g apidiscoveryv2.APIGroupDiscovery
			if err := json.Unmarshal(got[i], &g); err != nil {
				t.Fatal(err)
			}
			var w apidiscoveryv2.APIGroupDiscovery
			_ = json.Unmarshal(want[i], &w)
			if g.Name != w.Name {
				t.Errorf("item %d is %q, upstream's is %q", i, g.Name, w.Name)
			}
			if g.Name != config.Group {
				if compact(t, got[i]) != compact(t, want[i]) {
					t.Errorf("group %s changed", g.Name)
				}
				continue
			}
			at = i
			fc := e.h.aggregatedFlowcontrol()
			fb, _ := json.Marshal(&fc)
			if string(got[i]) != string(fb) {
				t.Errorf("flowcontrol entry:\n%s\nwant apf's:\n%s", got[i], fb)
			}
		}
		if at != 3 {
			t.Errorf("flowcontrol is item %d, the upstream has it at 3", at)
		}
		// The upstream's authorization group is kept as it is: four
		// reviews, not apf's two.
		if !strings.Contains(string(body), `"localsubjectaccessreviews"`) {
			t.Errorf("the upstream's authorization.k8s.io was not kept")
		}
		etag := resp.Header.Get("Etag")
		if etag != etagOf(body) || resp.Header.Get("Cache-Control") != "public" || !headerHasToken(resp.Header, "Vary", "Accept") {
			t.Errorf("headers %v", resp.Header)
		}
		// The fetch went as the caller.
		reqs := kube.RequestsTo("/apis")
		if last := reqs[len(reqs)-1]; last.Authorization != "Bearer token-bob" || last.User != "bob" {
			t.Errorf("the upstream was asked %+v, want bob's own credentials", last)
		}
		resp, body2 := e.serve(http.MethodGet, "/apis", "admin", "Accept", kubectlAccept, "If-None-Match", etag)
		if resp.StatusCode != http.StatusNotModified || len(body2) != 0 || resp.Header.Get("Etag") != etag {
			t.Errorf("If-None-Match: %d %v", resp.StatusCode, resp.Header)
		}
		// That was revalidated upstream with the upstream's own ETag, as
		// admin, who the upstream let read it (a 304).
		_, upResp := upstreamGet(t, kube, "/apis", "Accept", kubectlAccept)
		reqs = kube.RequestsTo("/apis")
		last := reqs[len(reqs)-2]
		if last.IfNoneMatch != etagOf(upResp) || last.Status != http.StatusNotModified || last.User != "admin" {
			t.Errorf("revalidation upstream: %+v", last)
		}
		// A changed upstream document changes the answer and its ETag.
		kube.AddCRDVersion("v2")
		resp, body3 := e.serve(http.MethodGet, "/apis", "bob", "Accept", kubectlAccept, "If-None-Match", etag)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Etag") == etag || !strings.Contains(string(body3), `"stable.example.com"`) ||
			!strings.Contains(string(body3), `{"version":"v2"`) {
			t.Errorf("after the upstream changed: %d %v\n%s", resp.StatusCode, resp.Header, body3)
		}
		if resp.Header.Get("Etag") != etagOf(body3) {
			t.Errorf("ETag %q is not the hash of the new answer", resp.Header.Get("Etag"))
		}
	})

	t.Run("negotiation", func(t *testing.T) {
		for _, c := range []struct {
			accept string
			code   int
			ct     string
		}{
			{"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer", http.StatusOK, aggregatedContentType},
			{"application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", http.StatusNotAcceptable, "application/json"},
			{"application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json", http.StatusOK, "application/json"},
			{"application/vnd.kubernetes.protobuf", http.StatusNotAcceptable, "application/json"},
			{"application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", http.StatusNotAcceptable, "application/json"},
		} {
			resp, body := e.serve(http.MethodGet, "/apis", "bob", "Accept", c.accept)
			if resp.StatusCode != c.code || resp.Header.Get("Content-Type") != c.ct {
				t.Errorf("Accept %q: %d %q, want %d %q: %s", c.accept, resp.StatusCode, resp.Header.Get("Content-Type"), c.code, c.ct, body)
			}
			if c.code == http.StatusNotAcceptable && !strings.Contains(string(body), notAcceptableMessage) {
				t.Errorf("Accept %q: %s", c.accept, body)
			}
		}
		reqs := kube.RequestsTo("/apis")
		var nopeer bool
		for _, r := range reqs {
			nopeer = nopeer || strings.Contains(r.Accept, "profile=nopeer")
		}
		if !nopeer {
			t.Error("profile=nopeer did not reach the upstream")
		}
	})

	t.Run("OpenAPI 3 index", func(t *testing.T) {
		_, up := upstreamGet(t, kube, "/openapi/v3")
		resp, body := e.serve(http.MethodGet, "/openapi/v3", "bob", "Accept", "application/json")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
		}
		var got, want v3Index
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(up, &want)
		for k, v := range want.Paths {
			if strings.HasPrefix(k, "apis/"+config.Group+"/") {
				continue
			}
			if got.Paths[k] != v {
				t.Errorf("%s: %+v, upstream's %+v", k, got.Paths[k], v)
			}
		}
		for _, v := range config.DefaultServedVersions {
			k := "apis/" + config.Group + "/" + string(v)
			e.h.once.Do(e.h.build)
			if got.Paths[k] != e.h.docs.v3Paths[k] || !strings.Contains(got.Paths[k].ServerRelativeURL, e.h.docs.v3[v].hash) {
				t.Errorf("%s: %+v, want apf's %+v", k, got.Paths[k], e.h.docs.v3Paths[k])
			}
		}
		if len(got.Paths) != len(want.Paths)-1+len(config.DefaultServedVersions) {
			t.Errorf("%d entries, upstream's %d", len(got.Paths), len(want.Paths))
		}
		// The entry of the group's own endpoint stays the upstream's: it
		// describes /apis/flowcontrol.apiserver.k8s.io, which answers an
		// APIGroup whoever serves it.
		if g := got.Paths["apis/"+config.Group]; g.ServerRelativeURL == "" || g != want.Paths["apis/"+config.Group] {
			t.Errorf("the group's entry: %+v", g)
		}
		etag := resp.Header.Get("Etag")
		if etag != etagOf(body) {
			t.Errorf("ETag %q", etag)
		}
		if resp, _ := e.serve(http.MethodGet, "/openapi/v3", "bob", "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
			t.Errorf("If-None-Match: %d", resp.StatusCode)
		}
		// The flowcontrol documents are apf's, at the URL the index gives.
		resp, body = e.serve(http.MethodGet, got.Paths["apis/"+config.Group+"/v1"].ServerRelativeURL, "bob")
		if resp.StatusCode != http.StatusOK || strings.Contains(string(body), fakekube.UpstreamTitle) || !strings.Contains(string(body), "io.k8s.api.flowcontrol.v1.FlowSchemaSpec") {
			t.Errorf("flowcontrol OpenAPI document: %d %.200s", resp.StatusCode, body)
		}
		// Another group's is the upstream's.
		resp, body = e.serve(http.MethodGet, got.Paths["apis/apps/v1"].ServerRelativeURL, "bob")
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), fakekube.UpstreamTitle) {
			t.Errorf("apps OpenAPI document: %d %.200s", resp.StatusCode, body)
		}
	})

	t.Run("passed through", func(t *testing.T) {
		for _, c := range []struct{ path, accept string }{
			{"/api", kubectlAccept}, {"/api", "application/json"}, {"/api/v1", ""}, {"/version", ""},
			{"/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"},
			{"/apis/apps/v1", ""}, {"/apis/authorization.k8s.io", ""}, {"/apis/authorization.k8s.io/v1", ""},
		} {
			_, up := upstreamGet(t, kube, c.path, "Accept", c.accept)
			resp, body := e.serve(http.MethodGet, c.path, "bob", "Accept", c.accept)
			if resp.StatusCode != http.StatusOK || !bytes.Equal(body, up) {
				t.Errorf("%s: %d %.200s\nupstream's: %.200s", c.path, resp.StatusCode, body, up)
			}
		}
		// apf's own group, also without the trailing slash.
		var g metav1.APIGroup
		resp, body := e.serve(http.MethodGet, "/apis/flowcontrol.apiserver.k8s.io", "bob")
		if err := json.Unmarshal(body, &g); err != nil || resp.StatusCode != http.StatusOK || len(g.Versions) != len(config.DefaultServedVersions) {
			t.Errorf("the flowcontrol group: %d %s", resp.StatusCode, body)
		}
	})
}

// TestGatewayUpstreamAuthorization: the upstream's authorization of
// discovery applies to what the gateway merges (the refusal comes through
// as the upstream worded it, also once a document is cached), and a
// caller apf itself does not let read discovery gets the upstream's
// document with nothing of apf's.
func TestGatewayUpstreamAuthorization(t *testing.T) {
	kube := standIn(fakekube.Options{Refused: []string{"carol"}})
	e := newGatewayEnv(t, kube, proxy.PassThrough, nil)
	if k := e.kind(); k != UpstreamKubernetes {
		t.Fatalf("upstream found to be %v", k)
	}
	// admin fills the cache.
	for _, p := range []string{"/apis", "/openapi/v3"} {
		if resp, _ := e.serve(http.MethodGet, p, "admin", "Accept", kubectlAccept); resp.StatusCode != http.StatusOK {
			t.Fatalf("admin %s: %d", p, resp.StatusCode)
		}
	}
	for _, p := range []string{"/apis", "/openapi/v3"} {
		for _, accept := range []string{kubectlAccept, "application/json", "application/vnd.kubernetes.protobuf"} {
			resp, body := e.serve(http.MethodGet, p, "carol", "Accept", accept)
			var st metav1.Status
			if resp.StatusCode != http.StatusForbidden || json.Unmarshal(body, &st) != nil ||
				st.Message != fmt.Sprintf("forbidden: User \"carol\" cannot get path %q", p) || resp.Header.Get("Audit-Id") != "fakekube-audit-id" {
				t.Errorf("carol %s Accept %q: %d %s", p, accept, resp.StatusCode, body)
			}
		}
	}
	// An unknown token: the upstream's 401.
	r := httptest.NewRequest(http.MethodGet, "/apis", nil)
	r.Header.Set("Authorization", "Bearer nobody-knows")
	r.Header.Set("Accept", kubectlAccept)
	r = r.WithContext(request.WithUser(r.Context(), &request.User{Name: "dave", Groups: []string{"system:authenticated"}}))
	w := httptest.NewRecorder()
	e.g.ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), `"reason":"Unauthorized"`) {
		t.Errorf("unknown token: %d %s", w.Code, w.Body.String())
	}
	// A caller apf does not let read discovery: the upstream's answer
	// alone (here the upstream's refusal of anonymous callers).
	resp, body := e.serve(http.MethodGet, "/apis", request.AnonymousUser, "Accept", kubectlAccept)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `cannot get path \"/apis\"`) {
		t.Errorf("anonymous: %d %s", resp.StatusCode, body)
	}
}

// TestGatewayMayReadOrUpstreamAlone: a caller apf's authorization refuses,
// whom the upstream lets read discovery, gets the upstream's documents
// with the upstream's own flowcontrol group.
func TestGatewayMayReadOrUpstreamAlone(t *testing.T) {
	kube := standIn(fakekube.Options{})
	e := newGatewayEnv(t, kube, proxy.PassThrough, nil)
	if k := e.kind(); k != UpstreamKubernetes {
		t.Fatalf("upstream found to be %v", k)
	}
	e.g.o.MayRead = func(*http.Request) bool { return false }
	for _, p := range []string{"/apis", "/openapi/v3"} {
		_, up := upstreamGet(t, kube, p, "Accept", kubectlAccept)
		resp, body := e.serve(http.MethodGet, p, "bob", "Accept", kubectlAccept)
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, up) {
			t.Errorf("%s: %d, not the upstream's document", p, resp.StatusCode)
		}
	}
}

// TestGatewayImpersonates: in impersonate mode the documents are fetched
// with apf's credentials naming the caller, as every proxied request is.
func TestGatewayImpersonates(t *testing.T) {
	kube := standIn(fakekube.Options{
		Tokens:        map[string]string{"token-apf": "apf"},
		Impersonators: []string{"apf"},
		Refused:       []string{"carol"},
	})
	e := newGatewayEnv(t, kube, proxy.Impersonate, nil)
	if k := e.kind(); k != UpstreamKubernetes {
		t.Fatalf("upstream found to be %v; log:\n%s", k, e.logs.String())
	}
	resp, body := e.serve(http.MethodGet, "/apis", "bob", "Accept", kubectlAccept)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"v1beta3"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	reqs := kube.RequestsTo("/apis")
	if last := reqs[len(reqs)-1]; last.Authorization != "Bearer token-apf" || last.ImpersonateUser != "bob" || last.User != "bob" {
		t.Errorf("the upstream was asked %+v, want apf's token naming bob", last)
	}
	if resp, _ := e.serve(http.MethodGet, "/apis", "carol", "Accept", kubectlAccept); resp.StatusCode != http.StatusForbidden {
		t.Errorf("carol impersonated: %d", resp.StatusCode)
	}
	// The probe named the anonymous user.
	if r := kube.RequestsTo("/version"); len(r) == 0 || r[0].ImpersonateUser != request.AnonymousUser {
		t.Errorf("probe: %+v", r)
	}
}

// notKube answers every request with an HTML page, as a web application
// would.
var notKube = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprintf(w, "<html><body>hello from %s</body></html>", r.URL.Path)
})

// TestGatewayNonKubernetesUpstream: in front of anything else, apf
// answers every discovery path itself and proxies the rest.
func TestGatewayNonKubernetesUpstream(t *testing.T) {
	for name, upstream := range map[string]http.Handler{
		"html everywhere": notKube,
		"404 everywhere":  http.NotFoundHandler(),
		"JSON that is not Kubernetes": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"kind":"Thing","version":"1.0"}`)
		}),
	} {
		t.Run(name, func(t *testing.T) {
			e := newGatewayEnv(t, upstream, proxy.PassThrough, nil)
			if k := e.kind(); k != UpstreamOther {
				t.Fatalf("upstream found to be %v; log:\n%s", k, e.logs.String())
			}
			if !strings.Contains(e.logs.String(), "the upstream is not a Kubernetes API server") {
				t.Errorf("log:\n%s", e.logs.String())
			}
			for _, c := range []struct{ path, accept string }{
				{"/api", kubectlAccept}, {"/api", "application/json"}, {"/api/v1", ""},
				{"/apis", kubectlAccept}, {"/apis", "application/json"}, {"/version", ""},
				{"/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"},
				{"/openapi/v3", ""}, {"/apis/authorization.k8s.io", ""}, {"/apis/authorization.k8s.io/v1", ""},
				{"/apis/flowcontrol.apiserver.k8s.io", ""},
			} {
				resp, body := e.serve(http.MethodGet, c.path, "bob", "Accept", c.accept)
				own := get(t, e.h, c.path, "Accept", c.accept)
				ownBody, _ := io.ReadAll(own.Body)
				if resp.StatusCode != http.StatusOK || !bytes.Equal(body, ownBody) {
					t.Errorf("%s Accept %q: %d %.200s, want apf's own", c.path, c.accept, resp.StatusCode, body)
				}
			}
			var info version.Info
			_, body := e.serve(http.MethodGet, "/version", "bob")
			if json.Unmarshal(body, &info) != nil || info.GitVersion != DefaultGitVersion {
				t.Errorf("/version: %s", body)
			}
			// Not discovery: the upstream's.
			if name == "html everywhere" {
				resp, body := e.serve(http.MethodGet, "/api/v1/pods", "bob")
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "hello from /api/v1/pods") {
					t.Errorf("/api/v1/pods: %d %s", resp.StatusCode, body)
				}
			}
		})
	}
}

// TestProbeRule: what each pair of answers to /version and /apis makes of
// the upstream.
func TestProbeRule(t *testing.T) {
	status := func(code int) string {
		b, _ := json.Marshal(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Code: int32(code)})
		return string(b)
	}
	info := `{"major":"1","minor":"37","gitVersion":"v1.37.2","goVersion":"go1.26","platform":"linux/amd64"}`
	groups := `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`
	type answer struct {
		code int
		body string
	}
	for _, c := range []struct {
		name           string
		version, apis  answer
		want           UpstreamKind
		wantInEvidence string
	}{
		{"readable", answer{200, info}, answer{200, groups}, UpstreamKubernetes, "/version: v1.37.2"},
		{"anonymous refused discovery", answer{200, info}, answer{403, status(403)}, UpstreamKubernetes, "/apis: 403 with a Kubernetes Status"},
		{"anonymous disabled", answer{401, status(401)}, answer{401, status(401)}, UpstreamKubernetes, "/version: 401 with a Kubernetes Status"},
		{"not found", answer{404, "404 page not found"}, answer{404, "404 page not found"}, UpstreamOther, "/version: 404"},
		{"html", answer{200, "<html></html>"}, answer{200, "<html></html>"}, UpstreamOther, "/version: 200 without a Kubernetes version"},
		{"version without apis", answer{200, info}, answer{404, ""}, UpstreamOther, "/apis: 404"},
		{"401 of another kind", answer{401, "Unauthorized"}, answer{401, "Unauthorized"}, UpstreamOther, "/version: 401 without a Kubernetes Status"},
		{"Status with another code", answer{403, status(401)}, answer{403, status(401)}, UpstreamOther, "without a Kubernetes Status"},
		{"unavailable", answer{503, ""}, answer{503, ""}, UpstreamUnknown, "/version: 503"},
		{"overloaded", answer{429, status(429)}, answer{200, groups}, UpstreamUnknown, "/version: 429"},
		{"half unavailable", answer{200, info}, answer{500, ""}, UpstreamUnknown, "/apis: 500"},
		{"unavailable, and not Kubernetes", answer{503, ""}, answer{404, ""}, UpstreamOther, "/apis: 404"},
		{"a redirect", answer{302, ""}, answer{302, ""}, UpstreamOther, "/version: 302"},
	} {
		t.Run(c.name, func(t *testing.T) {
			upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				a := c.apis
				if r.URL.Path == "/version" {
					a = c.version
				}
				if a.code == 302 {
					w.Header().Set("Location", "/login")
				}
				w.WriteHeader(a.code)
				fmt.Fprint(w, a.body)
			})
			srv := httptest.NewServer(upstream)
			defer srv.Close()
			u, _ := url.Parse(srv.URL)
			px, err := proxy.New(proxy.Options{Upstream: u, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			got, why := probeUpstream(ctx, px)
			if got != c.want || !strings.Contains(why, c.wantInEvidence) {
				t.Errorf("%v (%s), want %v (%s)", got, why, c.want, c.wantInEvidence)
			}
		})
	}
	// No answer at all: the proxy's 502.
	px, err := proxy.New(proxy.Options{Upstream: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if got, why := probeUpstream(context.Background(), px); got != UpstreamUnknown || !strings.Contains(why, "502") {
		t.Errorf("unreachable upstream: %v (%s)", got, why)
	}
}

// TestGatewayProbeRetries: while the upstream cannot say what it is,
// discovery is proxied as the upstream answers it and the probe is
// repeated; once a probe is conclusive, the gateway acts on it.
func TestGatewayProbeRetries(t *testing.T) {
	kube := standIn(fakekube.Options{})
	var unavailable atomic.Bool
	unavailable.Store(true)
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if unavailable.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		kube.ServeHTTP(w, r)
	})
	e := newGatewayEnv(t, upstream, proxy.PassThrough, func(g *Gateway) { g.firstRetry, g.maxRetry = time.Millisecond, 10*time.Millisecond })
	if k := e.kind(); k != UpstreamUnknown {
		t.Fatalf("upstream found to be %v", k)
	}
	resp, body := e.serve(http.MethodGet, "/apis", "bob", "Accept", kubectlAccept)
	if resp.StatusCode != http.StatusServiceUnavailable || string(body) != "starting\n" {
		t.Errorf("while unknown: %d %q, want the upstream's answer", resp.StatusCode, body)
	}
	unavailable.Store(false)
	deadline := time.Now().Add(30 * time.Second)
	for e.g.Kind() != UpstreamKubernetes {
		if time.Now().After(deadline) {
			t.Fatalf("the probe was not repeated; log:\n%s", e.logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.Contains(e.logs.String(), "could not tell whether the upstream is a Kubernetes API server") {
		t.Errorf("log:\n%s", e.logs.String())
	}
	resp, body = e.serve(http.MethodGet, "/apis", "bob", "Accept", kubectlAccept)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"v1beta3"`) {
		t.Errorf("once known: %d %.200s", resp.StatusCode, body)
	}
}

// TestGatewayBoundsUpstreamDocuments: an upstream document past the limit
// is refused with a 502, not held.
func TestGatewayBoundsUpstreamDocuments(t *testing.T) {
	kube := standIn(fakekube.Options{})
	huge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/apis" && strings.Contains(r.Header.Get("Accept"), "as=APIGroupDiscoveryList") {
			w.Header().Set("Content-Type", aggregatedContentType)
			chunk := bytes.Repeat([]byte(" "), 64<<10)
			for range 64 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			return
		}
		kube.ServeHTTP(w, r)
	})
	e := newGatewayEnv(t, huge, proxy.PassThrough, nil)
	if k := e.kind(); k != UpstreamKubernetes {
		t.Fatalf("upstream found to be %v", k)
	}
	e.g.maxDocument = 1 << 20
	resp, body := e.serve(http.MethodGet, "/apis", "bob", "Accept", kubectlAccept)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "is larger than 1048576 bytes") {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
}

// TestGatewayPassesOnWhatItCannotMerge: a document that is not what its
// content type says comes through as the upstream sent it.
func TestGatewayPassesOnWhatItCannotMerge(t *testing.T) {
	kube := standIn(fakekube.Options{})
	odd := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/openapi/v3" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `["not","an","index"]`)
			return
		}
		kube.ServeHTTP(w, r)
	})
	e := newGatewayEnv(t, odd, proxy.PassThrough, nil)
	if k := e.kind(); k != UpstreamKubernetes {
		t.Fatalf("upstream found to be %v", k)
	}
	resp, body := e.serve(http.MethodGet, "/openapi/v3", "bob")
	if resp.StatusCode != http.StatusOK || string(body) != `["not","an","index"]` {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	if !strings.Contains(e.logs.String(), "could not be merged") {
		t.Errorf("log:\n%s", e.logs.String())
	}
}

// TestGatewayHead: HEAD gets the merged answer's headers and no body.
func TestGatewayHead(t *testing.T) {
	e := newGatewayEnv(t, standIn(fakekube.Options{}), proxy.PassThrough, nil)
	if k := e.kind(); k != UpstreamKubernetes {
		t.Fatalf("upstream found to be %v", k)
	}
	_, full := e.serve(http.MethodGet, "/apis", "bob", "Accept", kubectlAccept)
	resp, body := e.serve(http.MethodHead, "/apis", "bob", "Accept", kubectlAccept)
	if resp.StatusCode != http.StatusOK || len(body) != 0 || resp.Header.Get("Etag") != etagOf(full) ||
		resp.Header.Get("Content-Length") != fmt.Sprint(len(full)) {
		t.Errorf("HEAD: %d %v", resp.StatusCode, resp.Header)
	}
	if !slices.Contains([]string{"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}, resp.Header.Get("Content-Type")) {
		t.Errorf("HEAD content type %q", resp.Header.Get("Content-Type"))
	}
}
