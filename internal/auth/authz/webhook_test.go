package authz

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apfproject/apf/clock/fakeclock"
	"github.com/apfproject/apf/request"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
)

// fakeWebhook is a remote authorization service on 127.0.0.1: it records
// every request and answers with respond.
type fakeWebhook struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []seenReview
	// respond answers one review, given its body.
	respond func(w http.ResponseWriter, body map[string]any)
}

// seenReview is one request the fake received.
type seenReview struct {
	method, path, query, auth, contentType string
	body                                   map[string]any
}

func newFakeWebhook(t *testing.T, tls bool) *fakeWebhook {
	// By default it allows, in the version it was asked in.
	f := &fakeWebhook{respond: func(w http.ResponseWriter, body map[string]any) {
		v, _ := body["apiVersion"].(string)
		answerIn(w, v, `{"allowed":true}`)
	}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(data, &body)
		f.mu.Lock()
		f.got = append(f.got, seenReview{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), body})
		respond := f.respond
		f.mu.Unlock()
		respond(w, body)
	})
	if tls {
		f.srv = httptest.NewTLSServer(h)
	} else {
		f.srv = httptest.NewServer(h)
	}
	t.Cleanup(f.srv.Close)
	return f
}

// answer writes a review whose status is the given JSON, in v1.
func answer(w http.ResponseWriter, status string) { answerIn(w, "authorization.k8s.io/v1", status) }

// answerIn writes a review in apiVersion whose status is the given JSON.
func answerIn(w http.ResponseWriter, apiVersion, status string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"apiVersion":%q,"kind":"SubjectAccessReview","status":%s}`, apiVersion, status)
}

func (f *fakeWebhook) calls() []seenReview {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenReview(nil), f.got...)
}

func (f *fakeWebhook) setRespond(r func(w http.ResponseWriter, body map[string]any)) {
	f.mu.Lock()
	f.respond = r
	f.mu.Unlock()
}

// kubeconfig writes a kubeconfig naming the fake at path /authorize, with
// its CA and a bearer token.
func (f *fakeWebhook) kubeconfig(t *testing.T) string {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: authz
  cluster:
    server: %s/authorize
    certificate-authority-data: %s
users:
- name: apf
  user:
    token: webhook-token
contexts:
- name: authz
  context: {cluster: authz, user: apf}
current-context: authz
`, f.srv.URL, base64.StdEncoding.EncodeToString(ca))
	p := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// testWebhook is the Webhook mode for the fake, with a fake clock for its
// cache and a quick retry schedule; log collects what it logs.
func testWebhook(t *testing.T, f *fakeWebhook, version string, ttl cacheConfig) (*webhook, *fakeclock.Clock, *bytes.Buffer) {
	t.Helper()
	var log bytes.Buffer
	w, err := newWebhookFromFile(f.kubeconfig(t), version, ttl, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.New(time.Unix(1_700_000_000, 0))
	w.cache = cache.NewLRUExpireCacheWithClock(webhookCacheSize, clk)
	w.backoff = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 3}
	return w, clk, &log
}

var defaultTTL = cacheConfig{authorized: 5 * time.Minute, unauthorized: 30 * time.Second}

func TestWebhookSendsTheRequestsAttributes(t *testing.T) {
	f := newFakeWebhook(t, true)
	user := request.User{Name: "alice", UID: "uid-1", Groups: []string{"dev", request.AllAuthenticatedGroup},
		Extra: map[string][]string{"scopes.example.com": {"a", "b"}}}
	list := &request.Attributes{User: user, Info: request.Info{
		IsResourceRequest: true, Verb: "list", APIGroup: FlowcontrolGroup, APIVersion: "v1", Namespace: "ns",
		Resource: "flowschemas", Subresource: "status", Name: "x",
		FieldSelector: "metadata.name=x,spec.y!=z", LabelSelector: "app in (a,b),!tier,env=prod",
	}}
	metrics := &request.Attributes{User: user, Info: request.Info{Verb: "get", Path: "/metrics"}}
	for _, version := range []string{"v1", "v1beta1"} {
		t.Run(version, func(t *testing.T) {
			w, _, _ := testWebhook(t, f, version, defaultTTL)
			before := len(f.calls())
			for _, a := range []*request.Attributes{list, metrics} {
				if d, _, err := w.Authorize(context.Background(), a); d != Allow || err != nil {
					t.Fatalf("%v %v", d, err)
				}
			}
			calls := f.calls()[before:]
			if len(calls) != 2 {
				t.Fatalf("%d calls", len(calls))
			}
			c := calls[0]
			if c.method != "POST" || c.path != "/authorize" || c.query != "timeout=30s" || c.auth != "Bearer webhook-token" || c.contentType != "application/json" {
				t.Errorf("request %+v", c)
			}
			groupsField := "groups"
			if version == "v1beta1" {
				groupsField = "group" // v1beta1's spelling
			}
			wantSpec := `{"extra":{"scopes.example.com":["a","b"]},"` + groupsField + `":["dev","system:authenticated"],` +
				`"resourceAttributes":{"fieldSelector":{"requirements":[{"key":"metadata.name","operator":"In","values":["x"]},{"key":"spec.y","operator":"NotIn","values":["z"]}]},` +
				`"group":"flowcontrol.apiserver.k8s.io",` +
				`"labelSelector":{"requirements":[{"key":"app","operator":"In","values":["a","b"]},{"key":"env","operator":"In","values":["prod"]},{"key":"tier","operator":"DoesNotExist"}]},` +
				`"name":"x","namespace":"ns","resource":"flowschemas","subresource":"status","verb":"list","version":"v1"},` +
				`"uid":"uid-1","user":"alice"}`
			if got := canonical(t, c.body["spec"]); got != wantSpec {
				t.Errorf("spec\n%s\nwant\n%s", got, wantSpec)
			}
			if c.body["apiVersion"] != "authorization.k8s.io/"+version || c.body["kind"] != "SubjectAccessReview" {
				t.Errorf("type %v %v", c.body["apiVersion"], c.body["kind"])
			}
			wantSpec = `{"extra":{"scopes.example.com":["a","b"]},"` + groupsField + `":["dev","system:authenticated"],"nonResourceAttributes":{"path":"/metrics","verb":"get"},"uid":"uid-1","user":"alice"}`
			if got := canonical(t, calls[1].body["spec"]); got != wantSpec {
				t.Errorf("spec\n%s\nwant\n%s", got, wantSpec)
			}
		})
	}
}

// canonical is v as JSON with sorted keys.
func canonical(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWebhookDecisions(t *testing.T) {
	f := newFakeWebhook(t, true)
	w, _, _ := testWebhook(t, f, "v1", cacheConfig{})
	a := &request.Attributes{User: aliceUser, Info: request.Info{Verb: "get", Path: "/metrics"}}
	for _, tc := range []struct {
		status string
		want   Decision
		reason string
		err    string
	}{
		{`{"allowed":true,"reason":"ok by policy"}`, Allow, "ok by policy", ""},
		{`{"allowed":false,"denied":true,"reason":"never"}`, Deny, "never", ""},
		{`{"allowed":false,"reason":"not mine"}`, NoOpinion, "not mine", ""},
		{`{"allowed":false}`, NoOpinion, "", ""},
		{`{"allowed":true,"denied":true,"reason":"confused"}`, Deny, "confused", "webhook subject access review returned both allow and deny response"},
	} {
		f.setRespond(func(w http.ResponseWriter, _ map[string]any) { answer(w, tc.status) })
		d, reason, err := w.Authorize(context.Background(), a)
		if d != tc.want || reason != tc.reason || errString(err) != tc.err {
			t.Errorf("%s: %v %q %v, want %v %q %q", tc.status, d, reason, err, tc.want, tc.reason, tc.err)
		}
	}

	// An answer in another version than asked, or of another kind, is a
	// failure, not an empty status.
	f.setRespond(func(w http.ResponseWriter, _ map[string]any) {
		answerIn(w, "authorization.k8s.io/v1beta1", `{"allowed":true}`)
	})
	if d, _, err := w.Authorize(context.Background(), a); d != NoOpinion || err == nil || !strings.Contains(err.Error(), "not the authorization.k8s.io/v1 SubjectAccessReview asked") {
		t.Errorf("v1beta1 answer to v1: %v %v", d, err)
	}
	f.setRespond(func(w http.ResponseWriter, _ map[string]any) { fmt.Fprint(w, `{"apiVersion":"v1","kind":"ConfigMap"}`) })
	if d, _, err := w.Authorize(context.Background(), a); d != NoOpinion || err == nil {
		t.Errorf("a ConfigMap: %v %v", d, err)
	}

	// Through a chain and the filter, as kube-apiserver names the
	// webhook: "default".
	o := DefaultOptions()
	o.Modes = []string{ModeWebhook}
	o.WebhookConfigFile = f.kubeconfig(t)
	o.WebhookVersion = "v1"
	c, err := New(o, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	f.setRespond(func(w http.ResponseWriter, _ map[string]any) { answer(w, `{"allowed":false,"reason":"ask ops"}`) })
	rec := serve(t, c, aliceUser, "GET", "/metrics")
	if rec.Code != 403 || !strings.Contains(rec.Body.String(), `cannot get path \"/metrics\": default: ask ops"`) {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
}

func TestWebhookCachesByTTL(t *testing.T) {
	f := newFakeWebhook(t, true)
	w, clk, _ := testWebhook(t, f, "v1", defaultTTL)
	allowed := &request.Attributes{User: aliceUser, Info: request.Info{Verb: "get", Path: "/allowed"}}
	refused := &request.Attributes{User: aliceUser, Info: request.Info{Verb: "get", Path: "/refused"}}
	f.setRespond(func(w http.ResponseWriter, body map[string]any) {
		spec, _ := body["spec"].(map[string]any)
		nra, _ := spec["nonResourceAttributes"].(map[string]any)
		if p, _ := nra["path"].(string); strings.HasPrefix(p, "/allowed") {
			answer(w, `{"allowed":true}`)
			return
		}
		answer(w, `{"allowed":false,"reason":"no"}`)
	})
	calls := func() int { return len(f.calls()) }
	ask := func(a *request.Attributes, want Decision) {
		t.Helper()
		if d, _, err := w.Authorize(context.Background(), a); d != want || err != nil {
			t.Fatalf("%.20s (%d bytes): %v %v, want %v", a.Info.Path, len(a.Info.Path), d, err, want)
		}
	}
	ask(allowed, Allow)
	ask(refused, NoOpinion)
	ask(allowed, Allow)
	ask(refused, NoOpinion)
	if n := calls(); n != 2 {
		t.Fatalf("%d calls for two questions asked twice, want 2", n)
	}
	clk.Advance(30*time.Second - time.Millisecond)
	ask(refused, NoOpinion)
	if n := calls(); n != 2 {
		t.Fatalf("unauthorized answer not reused within its TTL: %d calls", n)
	}
	clk.Advance(2 * time.Millisecond)
	ask(refused, NoOpinion)
	ask(allowed, Allow)
	if n := calls(); n != 3 {
		t.Fatalf("after 30 s: %d calls, want the refused one asked again (3)", n)
	}
	clk.Advance(5*time.Minute - 30*time.Second)
	ask(allowed, Allow)
	if n := calls(); n != 4 {
		t.Fatalf("after 5 min: %d calls, want the allowed one asked again (4)", n)
	}

	// Another user is another question.
	bob := *allowed
	bob.User = request.User{Name: "bob"}
	ask(&bob, Allow)
	if n := calls(); n != 5 {
		t.Fatalf("another user: %d calls, want 5", n)
	}
	// Attributes a caller made huge are never cached.
	huge := &request.Attributes{User: aliceUser, Info: request.Info{Verb: "get", Path: "/allowed" + strings.Repeat("x", maxCachedAttrs)}}
	ask(huge, Allow)
	ask(huge, Allow)
	if n := calls(); n != 7 {
		t.Fatalf("huge attributes: %d calls, want 7", n)
	}

	// A TTL of 0 caches nothing.
	w0, _, _ := testWebhook(t, f, "v1", cacheConfig{})
	before := calls()
	for range 3 {
		if d, _, _ := w0.Authorize(context.Background(), allowed); d != Allow {
			t.Fatal(d)
		}
	}
	if n := calls() - before; n != 3 {
		t.Errorf("TTL 0: %d calls, want 3", n)
	}
}

func TestWebhookFailures(t *testing.T) {
	f := newFakeWebhook(t, true)
	w, _, log := testWebhook(t, f, "v1", defaultTTL)
	a := &request.Attributes{User: aliceUser, Info: request.Info{Verb: "get", Path: "/metrics"}}

	// A 500 is worth retrying: every attempt of the schedule is made,
	// then the webhook has no opinion and says why.
	f.setRespond(func(w http.ResponseWriter, _ map[string]any) { http.Error(w, "overloaded", 500) })
	d, reason, err := w.Authorize(context.Background(), a)
	if d != NoOpinion || reason != "" || err == nil || !strings.Contains(err.Error(), "overloaded") {
		t.Fatalf("500: %v %q %v", d, reason, err)
	}
	if n := len(f.calls()); n != 3 {
		t.Errorf("500: %d attempts, want 3", n)
	}
	if !strings.Contains(log.String(), "level=ERROR") || !strings.Contains(log.String(), "overloaded") {
		t.Errorf("not logged: %s", log)
	}
	// A failure is not cached: the next question is asked again.
	f.setRespond(func(w http.ResponseWriter, _ map[string]any) { answer(w, `{"allowed":true}`) })
	if d, _, err := w.Authorize(context.Background(), a); d != Allow || err != nil {
		t.Fatalf("after the failure: %v %v", d, err)
	}

	// A 403 is not: one attempt.
	b := &request.Attributes{User: aliceUser, Info: request.Info{Verb: "get", Path: "/other"}}
	f.setRespond(func(w http.ResponseWriter, _ map[string]any) { http.Error(w, "who are you", http.StatusForbidden) })
	before := len(f.calls())
	if d, _, err := w.Authorize(context.Background(), b); d != NoOpinion || err == nil {
		t.Fatalf("403: %v %v", d, err)
	}
	if n := len(f.calls()) - before; n != 1 {
		t.Errorf("403: %d attempts, want 1", n)
	}

	// A webhook that does not answer in time: no opinion, with the
	// request's deadline as the error.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	f.setRespond(func(w http.ResponseWriter, _ map[string]any) { <-release })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	c := &request.Attributes{User: aliceUser, Info: request.Info{Verb: "get", Path: "/slow"}}
	if d, _, err := w.Authorize(ctx, c); d != NoOpinion || err == nil || !strings.Contains(err.Error(), "context deadline exceeded") {
		t.Fatalf("timeout: %v %v", d, err)
	}

	// An unreachable webhook, through the filter: kube-apiserver's 500.
	dead := newFakeWebhook(t, true)
	kc := dead.kubeconfig(t)
	dead.srv.Close()
	wd, err := newWebhookFromFile(kc, "v1", defaultTTL, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	wd.backoff = wait.Backoff{Duration: time.Millisecond, Steps: 1}
	chain := NewChain(Named{"system:masters", privileged{"system:masters"}}, Named{"default", wd})
	rec := serve(t, chain, aliceUser, "GET", "/metrics")
	if rec.Code != 500 || !strings.HasPrefix(rec.Body.String(), `Internal Server Error: "/metrics": Post "https://127.0.0.1:`) {
		t.Errorf("unreachable: %d %s", rec.Code, rec.Body)
	}
	// system:masters is decided before the webhook is asked.
	if rec := serve(t, chain, masterUser, "GET", "/metrics"); rec.Code != http.StatusTeapot {
		t.Errorf("master: %d", rec.Code)
	}
}

func TestWebhookConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "missing"), bad} {
		o := DefaultOptions()
		o.Modes, o.WebhookConfigFile = []string{ModeWebhook}, p
		if _, err := New(o, nil, nil); err == nil || !strings.Contains(err.Error(), "--authorization-webhook-config-file") {
			t.Errorf("%s: %v", p, err)
		}
	}
}
