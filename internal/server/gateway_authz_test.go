package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apfproject/apf/apfhttp"
	"github.com/apfproject/apf/internal/api/discovery"
	"github.com/apfproject/apf/internal/auth/authz"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// proxiedPolicy is the ABAC policy of the --authorization-proxied tests:
// bob may read pods in the namespace "allowed" and paths under
// /allowed/, anonymous callers /public, and noxu pods in "noxu".
const proxiedPolicy = `{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user": "bob", "namespace": "allowed", "resource": "pods", "apiGroup": "", "readonly": true}}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user": "bob", "nonResourcePath": "/allowed/*", "readonly": true}}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"group": "system:unauthenticated", "nonResourcePath": "/public", "readonly": true}}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user": "noxu", "namespace": "noxu", "resource": "pods", "apiGroup": "", "readonly": true}}
`

// recordingUpstream answers 200 to everything and records each request's
// method and path and the user the gateway named in Impersonate-User.
type recordingUpstream struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // "METHOD PATH [as USER]"
}

func newRecordingUpstream(t *testing.T) *recordingUpstream {
	u := &recordingUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := r.Method + " " + r.URL.Path
		if as := r.Header.Get("Impersonate-User"); as != "" {
			s += " as " + as
		}
		u.mu.Lock()
		u.seen = append(u.seen, s)
		u.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("from the upstream"))
	}))
	t.Cleanup(u.Close)
	return u
}

// saw returns the recorded requests whose path is path.
func (u *recordingUpstream) saw(path string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for _, s := range u.seen {
		if f := strings.Fields(s); len(f) > 1 && f[1] == path {
			out = append(out, s)
		}
	}
	return out
}

// writePolicy writes an ABAC policy file.
func writePolicy(t *testing.T, policy string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "policy.jsonl")
	if err := os.WriteFile(f, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// doAs sends a request to the gateway with token (none if empty) and,
// if as is set, Impersonate-User: as.
func doAs(t *testing.T, s *e2eServer, method, path, token, as string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if as != "" {
		req.Header.Set("Impersonate-User", as)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header, b.Bytes()
}

// TestGatewayAuthorizesProxied: with --authorization-proxied, a request
// the chain (Builtin, then an ABAC policy) does not allow gets
// kube-apiserver's 403 Status, resource and non-resource alike and for
// anonymous callers too, and the upstream sees nothing of it; an allowed
// one reaches the upstream. An admin impersonating noxu is authorized as
// noxu, not as the admin. The refusal comes after APF, as kube-apiserver
// authorizes: it carries APF's headers. Without the flag everything
// reaches the upstream, as before. The same holds with --admin-listen,
// where the main address proxies everything.
func TestGatewayAuthorizesProxied(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	policy := writePolicy(t, proxiedPolicy)
	type step struct {
		method, path, token, as string
		// code is the status; message, for a 403, its Status's
		// message, and details its details.
		code    int
		message string
		details metav1.StatusDetails
		// reaches says whether the upstream must see the request (once);
		// otherwise it must see nothing of its path.
		reaches bool
	}
	const noPolicy = ": abac: No policy matched."
	steps := []step{
		{method: "GET", path: "/api/v1/namespaces/allowed/pods", token: readerToken, code: 200,
			reaches: true},
		{method: "GET", path: "/api/v1/namespaces/denied/pods", token: readerToken, code: 403,
			message: `pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "denied"` + noPolicy,
			details: metav1.StatusDetails{Kind: "pods"}},
		{method: "DELETE", path: "/api/v1/namespaces/allowed/pods/p1", token: readerToken, code: 403,
			message: `pods "p1" is forbidden: User "bob" cannot delete resource "pods" in API group "" in the namespace "allowed"` + noPolicy,
			details: metav1.StatusDetails{Name: "p1", Kind: "pods"}},
		{method: "GET", path: "/apis/apps/v1/deployments", token: readerToken, code: 403,
			message: `deployments.apps is forbidden: User "bob" cannot list resource "deployments" in API group "apps" at the cluster scope` + noPolicy,
			details: metav1.StatusDetails{Group: "apps", Kind: "deployments"}},
		{method: "GET", path: "/allowed/x", token: readerToken, code: 200, reaches: true},
		{method: "GET", path: "/secret", token: readerToken, code: 403,
			message: `forbidden: User "bob" cannot get path "/secret"` + noPolicy},
		{method: "POST", path: "/allowed/x/y", token: readerToken, code: 403,
			message: `forbidden: User "bob" cannot post path "/allowed/x/y"` + noPolicy},
		// Anonymous callers: /public only.
		{method: "GET", path: "/public", code: 200, reaches: true},
		{method: "GET", path: "/api/v1/pods", code: 403,
			message: `pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" at the cluster scope` + noPolicy,
			details: metav1.StatusDetails{Kind: "pods"}},
		{method: "GET", path: "/private", code: 403,
			message: `forbidden: User "system:anonymous" cannot get path "/private"` + noPolicy},
		// An admin (system:masters) may do everything.
		{method: "DELETE", path: "/api/v1/namespaces/x/pods/admins", token: adminToken, code: 200,
			reaches: true},
	}
	// In the impersonate mode apf's chain grants the impersonation (the
	// admin may), and then judges noxu: noxu's namespace is open, the
	// others closed, although the admin could read them all.
	impersonated := []step{
		{method: "GET", path: "/api/v1/namespaces/noxu/pods", token: adminToken, as: "noxu", code: 200,
			reaches: true},
		{method: "GET", path: "/api/v1/namespaces/kube-system/pods", token: adminToken, as: "noxu", code: 403,
			message: `pods is forbidden: User "noxu" cannot list resource "pods" in API group "" in the namespace "kube-system"` + noPolicy,
			details: metav1.StatusDetails{Kind: "pods"}},
	}
	for _, tc := range []struct {
		name     string
		identity string
		proxied  bool
		// admin puts apf's own endpoints on an address of their own,
		// so that the main one proxies everything.
		admin bool
		steps []step
	}{
		{"passthrough", "passthrough", true, false, steps},
		{"impersonate", "impersonate", true, false, append(append([]step(nil), steps...), impersonated...)},
		{"admin-listen", "passthrough", true, true, steps},
		{"off", "passthrough", false, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newRecordingUpstream(t)
			gw := startGateway(t, up.URL, gatewayTokens(t), func(o *Options) {
				o.UpstreamIdentity = tc.identity
				o.AuthorizeProxied = tc.proxied
				o.Authz.Modes = []string{authz.ModeBuiltin, authz.ModeABAC}
				o.Authz.PolicyFile = policy
				if tc.admin {
					o.AdminListen = "127.0.0.1:0"
				}
			})
			defer gw.stop()
			if !tc.proxied {
				// Everything goes through, refused or not by the
				// policy: the upstream alone decides.
				for _, s := range steps {
					if s.as != "" {
						continue
					}
					if code, _, body := doAs(t, gw, s.method, s.path, s.token, ""); code != 200 || string(body) != "from the upstream" {
						t.Errorf("%s %s: %d %s, want the upstream's 200", s.method, s.path, code, body)
					}
				}
				return
			}
			for _, s := range tc.steps {
				code, h, body := doAs(t, gw, s.method, s.path, s.token, s.as)
				what := s.method + " " + s.path
				if s.as != "" {
					what += " as " + s.as
				}
				if code != s.code {
					t.Errorf("%s: %d %s, want %d", what, code, body, s.code)
					continue
				}
				switch got := up.saw(s.path); {
				case !s.reaches && len(got) != 0:
					t.Errorf("%s: refused, but the upstream saw %q", what, got)
				case s.reaches && len(got) != 1:
					t.Errorf("%s: the upstream saw %q, want the request once", what, got)
				case s.reaches && s.as != "" && !strings.HasSuffix(got[0], " as "+s.as):
					t.Errorf("%s: the upstream saw %q, not as %s", what, got, s.as)
				}
				if h.Get(apfhttp.FlowSchemaUIDHeader) == "" || h.Get(apfhttp.PriorityLevelUIDHeader) == "" {
					t.Errorf("%s: no APF headers: APF did not see the request", what)
				}
				if code != http.StatusForbidden {
					continue
				}
				var st metav1.Status
				if err := json.Unmarshal(body, &st); err != nil {
					t.Errorf("%s: 403 body %q: %v", what, body, err)
					continue
				}
				want := metav1.Status{
					TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
					Status:   metav1.StatusFailure, Message: s.message, Reason: metav1.StatusReasonForbidden,
					Details: &s.details, Code: http.StatusForbidden,
				}
				gotJSON, _ := json.Marshal(st)
				wantJSON, _ := json.Marshal(want)
				if !bytes.Equal(gotJSON, wantJSON) {
					t.Errorf("%s: 403 Status\n got %s\nwant %s", what, gotJSON, wantJSON)
				}
				for k, v := range map[string]string{"Content-Type": "application/json", "X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache, private"} {
					if h.Get(k) != v {
						t.Errorf("%s: %s %q, want %q", what, k, h.Get(k), v)
					}
				}
			}
		})
	}
}

// readyzPolicy lets anyone read /readyz, which the tests poll before they
// start, when ABAC is the only mode.
const readyzPolicy = `{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"group": "system:unauthenticated", "nonResourcePath": "/readyz", "readonly": true}}
`

// TestGatewayProbeIsNotAuthorized: the discovery gateway's probe of the
// upstream is apf's own request, not a caller's: with
// --authorization-proxied and a chain that refuses anonymous callers
// everything, the probe still reaches an upstream that is not a
// Kubernetes API server and finds it is not (were it refused, apf's 403
// Statuses would look like a Kubernetes API server's).
func TestGatewayProbeIsNotAuthorized(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	up := newRecordingUpstream(t)
	gw := startGateway(t, up.URL, gatewayTokens(t), func(o *Options) {
		o.AuthorizeProxied = true
		o.Authz.Modes = []string{authz.ModeABAC}
		o.Authz.PolicyFile = writePolicy(t, proxiedPolicy+readyzPolicy)
	})
	defer gw.stop()
	deadline := time.Now().Add(30 * time.Second)
	for gw.server.discovery.Kind() == discovery.UpstreamUnknown && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if k := gw.server.discovery.Kind(); k != discovery.UpstreamOther {
		t.Errorf("the probe found %v, want %v (the upstream saw %q)", k, discovery.UpstreamOther, up.saw("/version"))
	}
	// A caller's /version is still authorized.
	if code, _, body := doAs(t, gw, "GET", "/api/v1/pods", "", ""); code != http.StatusForbidden {
		t.Errorf("anonymous list of pods: %d %s", code, body)
	}
}

// TestWarnsOfAnonymousProxying: a gateway with anonymous requests on that
// does not authorize what it proxies says so once at start-up, naming the
// two flags that close it; with either flag given it does not. With
// --authorization-proxied and the Builtin mode alone it says that only
// admins reach the upstream's resources.
func TestWarnsOfAnonymousProxying(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	tokens := gatewayTokens(t)
	policy := writePolicy(t, proxiedPolicy)
	for _, tc := range []struct {
		name string
		set  func(o *Options)
		want []string // the warnings' distinctive words, one per warning
	}{
		{"default", func(o *Options) {}, []string{"anonymous requests are on and apf does not authorize what it proxies"}},
		{"impersonate", func(o *Options) { o.UpstreamIdentity = "impersonate" }, []string{"as system:anonymous in group system:unauthenticated"}},
		{"anonymous off", func(o *Options) { o.Auth.AnonymousAuth = false }, nil},
		{"authorized by Builtin alone", func(o *Options) { o.AuthorizeProxied = true }, []string{"--authorization-proxied with --authorization-mode Builtin alone"}},
		{"authorized by ABAC", func(o *Options) {
			o.AuthorizeProxied = true
			o.Authz.Modes = []string{authz.ModeBuiltin, authz.ModeABAC}
			o.Authz.PolicyFile = policy
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &lockedBuffer{}
			opts := DefaultOptions()
			opts.DataDir = filepath.Join(t.TempDir(), "data")
			opts.Upstream = "http://127.0.0.1:1"
			opts.Auth.TokenAuthFile = tokens
			opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
			tc.set(&opts)
			srv, err := New(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Close(); err != nil {
				t.Error(err)
			}
			var warnings []string
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "level=WARN") && (strings.Contains(l, "proxies") || strings.Contains(l, "--authorization-proxied")) {
					warnings = append(warnings, l)
				}
			}
			if len(warnings) != len(tc.want) {
				t.Fatalf("%d warnings, want %d:\n%s", len(warnings), len(tc.want), logs.String())
			}
			for i, w := range tc.want {
				if !strings.Contains(warnings[i], w) {
					t.Errorf("warning %q does not say %q", warnings[i], w)
				}
			}
			if tc.name == "default" {
				for _, w := range []string{"with no credentials", "--anonymous-auth=false", "--authorization-proxied"} {
					if !strings.Contains(warnings[0], w) {
						t.Errorf("warning %q does not say %q", warnings[0], w)
					}
				}
			}
		})
	}
}

// TestAuthorizeProxiedNeedsUpstream: the flag without a gateway is
// refused at start-up rather than ignored.
func TestAuthorizeProxiedNeedsUpstream(t *testing.T) {
	opts := DefaultOptions()
	opts.AuthorizeProxied = true
	if err := opts.check(); err == nil || !strings.Contains(err.Error(), "--authorization-proxied") {
		t.Errorf("check: %v", err)
	}
}
