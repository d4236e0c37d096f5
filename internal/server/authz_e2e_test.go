package server

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/auth/authz"
	"github.com/apfproject/apf/internal/testing/fakekube"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// The authorization tests run kubectl auth can-i, as an operator would,
// against apf serve with each kind of authorizer chain: the Builtin mode
// alone, Builtin with an ABAC policy file, and a gateway in front of an
// upstream stand-in, with and without the Upstream mode.

// canI runs kubectl auth can-i and checks its answer: the last line of
// its output ("yes" or "no") and its exit status (0 for yes).
func canI(t *testing.T, k *kubectl, want string, args ...string) {
	t.Helper()
	out, ok := k.run("", append([]string{"auth", "can-i"}, args...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got := lines[len(lines)-1]; got != want || ok != strings.HasPrefix(want, "yes") {
		t.Errorf("kubectl auth can-i %s: %q (exit ok %v), want %q", strings.Join(args, " "), out, ok, want)
	}
}

func TestKubectlAuthCanIBuiltin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and runs kubectl")
	}
	opts := DefaultOptions()
	opts.DataDir = filepath.Join(t.TempDir(), "data")
	srv := startServer(t, opts)
	defer srv.stop()
	admin := newKubectl(t, srv, adminToken)
	reader := newKubectl(t, srv, readerToken)

	canI(t, admin, "yes", "create", "flowschemas")
	canI(t, reader, "no", "create", "flowschemas")
	canI(t, reader, "yes", "list", "flowschemas")
	canI(t, reader, "yes", "get", "prioritylevelconfigurations", "--subresource", "status")
	canI(t, reader, "no", "delete", "prioritylevelconfigurations")
	canI(t, admin, "yes", "get", "/metrics")
	canI(t, reader, "no", "get", "/metrics")
	canI(t, reader, "yes", "get", "/healthz")
	canI(t, reader, "no", "get", "/debug/api_priority_and_fairness/dump_queues")

	// The reader's whole list, from the Builtin table.
	out := reader.must("", "auth", "can-i", "--list")
	for _, row := range []string{
		"flowschemas.flowcontrol.apiserver.k8s.io ", "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io/status",
		"selfsubjectaccessreviews.authorization.k8s.io ", "[/healthz/*]",
	} {
		if !strings.Contains(out, row) {
			t.Errorf("kubectl auth can-i --list lacks %q:\n%s", row, out)
		}
	}
	if strings.Contains(out, "/metrics") {
		t.Errorf("the reader's list has /metrics:\n%s", out)
	}
	// An anonymous caller may not ask at all, as in kube-apiserver.
	code, _, body := srv.do("POST", authz.SelfSubjectAccessReviewPath, "", []byte(`{"spec":{"nonResourceAttributes":{"path":"/healthz","verb":"get"}}}`))
	if code != http.StatusForbidden || !strings.Contains(string(body), `User \"system:anonymous\" cannot create resource \"selfsubjectaccessreviews\"`) {
		t.Errorf("anonymous review: %d %s", code, body)
	}
}

// abacWriterPolicy grants the reader, bob, every verb on FlowSchemas.
const abacWriterPolicy = `# bob edits FlowSchemas
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user": "bob", "namespace": "*", "resource": "flowschemas", "apiGroup": "flowcontrol.apiserver.k8s.io"}}
`

func TestKubectlAuthCanIABAC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and runs kubectl")
	}
	policy := filepath.Join(t.TempDir(), "policy.jsonl")
	if err := os.WriteFile(policy, []byte(abacWriterPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := DefaultOptions()
	opts.DataDir = filepath.Join(t.TempDir(), "data")
	opts.Authz.Modes = []string{authz.ModeBuiltin, authz.ModeABAC}
	opts.Authz.PolicyFile = policy
	srv := startServer(t, opts)
	defer srv.stop()
	reader := newKubectl(t, srv, readerToken)
	carol := newKubectl(t, srv, carolToken)

	canI(t, reader, "yes", "create", "flowschemas")
	canI(t, reader, "yes", "delete", "flowschemas")
	// kubectl prints the chain's reason after a no.
	canI(t, reader, "no - abac: No policy matched.", "create", "prioritylevelconfigurations")
	canI(t, reader, "no - abac: No policy matched.", "get", "/metrics")
	canI(t, carol, "no - abac: No policy matched.", "create", "flowschemas")

	// And the grant holds for the request itself.
	reader.must(`apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: bobs-schema
spec:
  priorityLevelConfiguration: {name: workload-low}
  matchingPrecedence: 900
  rules:
  - subjects:
    - kind: User
      user: {name: bob}
    nonResourceRules:
    - verbs: [get]
      nonResourceURLs: ["/bob/*"]
`, "create", "-f", "-")
	out, ok := carol.run("", "delete", "flowschema", "bobs-schema")
	if ok || !strings.Contains(out, `User "carol" cannot delete resource "flowschemas" in API group "flowcontrol.apiserver.k8s.io" at the cluster scope: abac: No policy matched.`) {
		t.Errorf("carol's delete: %s", out)
	}
	reader.must("", "delete", "flowschema", "bobs-schema")
}

// authzUpstream is an upstream API server stand-in: fakekube's discovery
// and authentication, plus the review resources, which it answers and
// records. It lets anyone list and get pods, and lets bob create
// FlowSchemas when asked by a SubjectAccessReview.
type authzUpstream struct {
	*httptest.Server
	kube *fakekube.Server

	mu      sync.Mutex
	reviews []upstreamReview
}

// upstreamReview is one review the stand-in answered.
type upstreamReview struct {
	path, auth, user string
	spec             map[string]any
}

func newAuthzUpstream(t *testing.T) *authzUpstream {
	u := &authzUpstream{kube: fakekube.New(fakekube.Options{
		Tokens:        map[string]string{adminToken: "admin", readerToken: "bob", carolToken: "carol", "apf-token": "apf"},
		Impersonators: []string{"apf"},
	})}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

func (u *authzUpstream) serve(w http.ResponseWriter, r *http.Request) {
	const group = "/apis/authorization.k8s.io/v1/"
	kind, ok := map[string]string{
		group + "selfsubjectaccessreviews": "SelfSubjectAccessReview",
		group + "selfsubjectrulesreviews":  "SelfSubjectRulesReview",
		group + "subjectaccessreviews":     "SubjectAccessReview",
	}[r.URL.Path]
	if !ok || r.Method != http.MethodPost {
		u.kube.ServeHTTP(w, r)
		return
	}
	// kubectl sends protobuf, apf JSON: both decode to the typed review.
	data, _ := io.ReadAll(r.Body)
	var body struct {
		Spec map[string]any `json:"spec"`
	}
	if obj, _, err := reviewCodecs.UniversalDeserializer().Decode(data, nil, nil); err == nil {
		j, _ := json.Marshal(obj)
		_ = json.Unmarshal(j, &body)
	}
	user := r.Header.Get("Impersonate-User")
	if user == "" {
		user = map[string]string{"Bearer " + adminToken: "admin", "Bearer " + readerToken: "bob", "Bearer apf-token": "apf"}[r.Header.Get("Authorization")]
	}
	u.mu.Lock()
	u.reviews = append(u.reviews, upstreamReview{path: r.URL.Path, auth: r.Header.Get("Authorization"), user: user, spec: body.Spec})
	u.mu.Unlock()

	ra, _ := body.Spec["resourceAttributes"].(map[string]any)
	var status string
	switch kind {
	case "SelfSubjectRulesReview":
		status = `{"resourceRules":[{"verbs":["get","list"],"apiGroups":[""],"resources":["pods"]}],"nonResourceRules":[],"incomplete":false}`
	case "SelfSubjectAccessReview":
		status = `{"allowed":false}`
		if ra["resource"] == "pods" && (ra["verb"] == "get" || ra["verb"] == "list") {
			status = `{"allowed":true,"reason":"the stand-in lets everyone read pods"}`
		}
	case "SubjectAccessReview":
		status = `{"allowed":false}`
		if body.Spec["user"] == "bob" && ra["resource"] == "flowschemas" {
			status = `{"allowed":true,"reason":"the stand-in lets bob write FlowSchemas"}`
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, `{"kind":"`+kind+`","apiVersion":"authorization.k8s.io/v1","metadata":{},"spec":`+string(mustJSON(body.Spec))+`,"status":`+status+`}`)
}

// reviewCodecs decode the reviews the stand-in gets.
var reviewCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	if err := authorizationv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(s)
}()

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	if v == nil {
		return []byte("{}")
	}
	return b
}

func (u *authzUpstream) seen() []upstreamReview {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]upstreamReview(nil), u.reviews...)
}

// TestKubectlAuthCanIGateway: on an address shared with the upstream, a
// review about apf's own things is answered by apf, anything else by the
// upstream, which sees only those.
func TestKubectlAuthCanIGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and runs kubectl")
	}
	up := newAuthzUpstream(t)
	gw := startGateway(t, up.URL, gatewayTokens(t), nil)
	defer gw.stop()
	admin := newKubectl(t, gw, adminToken)
	reader := newKubectl(t, gw, readerToken)

	canI(t, admin, "yes", "create", "flowschemas")
	canI(t, reader, "no", "create", "flowschemas")
	canI(t, admin, "yes", "get", "/metrics")
	canI(t, reader, "no", "get", "/metrics")
	canI(t, reader, "yes", "get", "/healthz")
	for _, r := range up.seen() {
		t.Errorf("the upstream was asked a review apf answers: %+v", r)
	}

	canI(t, reader, "yes", "list", "pods")
	canI(t, reader, "no", "create", "pods")
	canI(t, reader, "no", "get", "/version")
	seen := up.seen()
	if len(seen) != 3 {
		t.Fatalf("the upstream answered %d reviews, want 3: %+v", len(seen), seen)
	}
	for _, r := range seen {
		// Passed through as the caller sent it: bob's own token.
		if r.path != "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" || r.auth != "Bearer "+readerToken {
			t.Errorf("review %+v", r)
		}
	}
	// The rules list is the upstream's.
	out := reader.must("", "auth", "can-i", "--list")
	if !strings.Contains(out, "pods ") || strings.Contains(out, "flowschemas") {
		t.Errorf("kubectl auth can-i --list:\n%s", out)
	}
	if n := len(up.seen()); n != 4 {
		t.Errorf("the upstream answered %d reviews, want 4", n)
	}
}

// TestKubectlAuthCanIUpstreamMode: with --authorization-mode
// Builtin,Upstream apf asks the upstream, with its own token, what the
// Builtin table does not grant, and the upstream's answer holds for the
// request itself.
func TestKubectlAuthCanIUpstreamMode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and runs kubectl")
	}
	up := newAuthzUpstream(t)
	token := filepath.Join(t.TempDir(), "apf-token")
	if err := os.WriteFile(token, []byte("apf-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gw := startGateway(t, up.URL, gatewayTokens(t), func(o *Options) {
		o.UpstreamIdentity = "impersonate"
		o.UpstreamTokenFile = token
		o.Authz.Modes = []string{authz.ModeBuiltin, authz.ModeUpstream}
		o.Authz.WebhookCacheAuthorizedTTL = time.Minute
	})
	defer gw.stop()
	admin := newKubectl(t, gw, adminToken)
	reader := newKubectl(t, gw, readerToken)
	carol := newKubectl(t, gw, carolToken)

	canI(t, admin, "yes", "create", "flowschemas")
	canI(t, reader, "yes", "list", "flowschemas")
	for _, r := range up.seen() {
		t.Errorf("asked the upstream what system:masters or the Builtin table decide: %+v", r)
	}
	canI(t, reader, "yes", "create", "flowschemas")
	canI(t, carol, "no", "create", "flowschemas")
	reader.must(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"delegated"},
"spec":{"priorityLevelConfiguration":{"name":"workload-low"},"matchingPrecedence":900}}`, "create", "-f", "-")

	var sars int
	for _, r := range up.seen() {
		if r.path != "/apis/authorization.k8s.io/v1/subjectaccessreviews" {
			continue
		}
		sars++
		// apf's own credentials, and the caller in the review.
		if r.auth != "Bearer apf-token" || r.user != "apf" {
			t.Errorf("review sent as %q (%s), want apf's token", r.user, r.auth)
		}
		if u := r.spec["user"]; u != "bob" && u != "carol" {
			t.Errorf("review for %v", u)
		}
	}
	// bob's can-i, carol's, and bob's create (the can-i answer, though
	// allowed, is another review: it names namespace "default").
	if sars != 3 {
		t.Errorf("%d SubjectAccessReviews, want 3: %+v", sars, up.seen())
	}
}

// TestUpstreamModeAsksThroughThePool: with a pool of upstreams whose
// first member is down, the Upstream mode's reviews go to a member that
// takes traffic, as the proxied requests do, rather than failing with the
// first member.
func TestUpstreamModeAsksThroughThePool(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and runs kubectl")
	}
	up := newAuthzUpstream(t)
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String()
	dead.Close()
	token := filepath.Join(t.TempDir(), "apf-token")
	if err := os.WriteFile(token, []byte("apf-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gw := startGateway(t, deadURL+","+up.URL, gatewayTokens(t), func(o *Options) {
		o.UpstreamIdentity = "impersonate"
		o.UpstreamTokenFile = token
		o.Authz.Modes = []string{authz.ModeBuiltin, authz.ModeUpstream}
	})
	defer gw.stop()
	reader := newKubectl(t, gw, readerToken)
	canI(t, reader, "yes", "create", "flowschemas")
	var sars int
	for _, r := range up.seen() {
		if r.path == "/apis/authorization.k8s.io/v1/subjectaccessreviews" && r.auth == "Bearer apf-token" {
			sars++
		}
	}
	if sars == 0 {
		t.Errorf("no review reached the live member: %+v", up.seen())
	}
}
