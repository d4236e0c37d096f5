package server

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apfproject/apf/internal/testing/fakekube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The discovery tests of the gateway run kubectl through `apf serve
// --upstream` in front of two kinds of upstream on 127.0.0.1: the fakekube
// stand-in for a kube-apiserver (v1.37: flowcontrol v1 only), and a web
// application that answers every path with a page of HTML.

// syncBuffer collects a server's log.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// kubeStandIn runs the stand-in with the e2e tokens; it refuses carol.
func kubeStandIn(t *testing.T) (*fakekube.Server, string) {
	t.Helper()
	kube := fakekube.New(fakekube.Options{
		Tokens:  map[string]string{adminToken: "admin", readerToken: "bob", carolToken: "carol"},
		Refused: []string{"carol"},
	})
	srv := httptest.NewServer(kube)
	t.Cleanup(srv.Close)
	return kube, srv.URL
}

// htmlEverywhere is an upstream that is no Kubernetes API server.
func htmlEverywhere(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><body>shop front: %s</body></html>", r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// apfFlowcontrolVersions are the flowcontrol versions apf serves by
// default, as kubectl api-versions prints them.
var apfFlowcontrolVersions = []string{
	"flowcontrol.apiserver.k8s.io/v1", "flowcontrol.apiserver.k8s.io/v1beta1",
	"flowcontrol.apiserver.k8s.io/v1beta2", "flowcontrol.apiserver.k8s.io/v1beta3",
}

// checkKubectlDiscovery runs what an operator runs through the gateway
// and checks apf's group is there: api-versions (want, sorted),
// api-resources of the group, explain, and apply of a FlowSchema.
func checkKubectlDiscovery(t *testing.T, gw *e2eServer, want []string) {
	t.Helper()
	admin := newKubectl(t, gw, adminToken)
	got := strings.Fields(admin.must("", "api-versions"))
	if !slices.Equal(got, want) {
		t.Errorf("kubectl api-versions:\n%q\nwant\n%q", got, want)
	}
	out := admin.must("", "api-resources", "--api-group=flowcontrol.apiserver.k8s.io", "--no-headers")
	rows := fields(out)
	if len(rows) != 2 || rows[0][0] != "flowschemas" || rows[1][0] != "prioritylevelconfigurations" ||
		!slices.Contains(rows[0], "flowcontrol.apiserver.k8s.io/v1") || !slices.Contains(rows[0], "FlowSchema") {
		t.Errorf("kubectl api-resources --api-group=flowcontrol.apiserver.k8s.io:\n%s", out)
	}
	out = admin.must("", "explain", "flowschemas.spec")
	for _, w := range []string{"GROUP:      flowcontrol.apiserver.k8s.io", "VERSION:    v1", "FIELD: spec <FlowSchemaSpec>", "matchingPrecedence", "priorityLevelConfiguration"} {
		if !strings.Contains(out, w) {
			t.Errorf("kubectl explain flowschemas.spec lacks %q:\n%s", w, out)
		}
	}
	out = admin.must("", "explain", "prioritylevelconfigurations.spec.limited", "--api-version=flowcontrol.apiserver.k8s.io/v1beta2")
	if !strings.Contains(out, "assuredConcurrencyShares") {
		t.Errorf("kubectl explain of v1beta2:\n%s", out)
	}
	manifest := filepath.Join(t.TempDir(), "fs.yaml")
	if err := os.WriteFile(manifest, []byte(userFlowSchemaV1), 0o600); err != nil {
		t.Fatal(err)
	}
	out = admin.must("", "apply", "-f", manifest)
	if !strings.Contains(out, "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/e2e-level created") ||
		!strings.Contains(out, "flowschema.flowcontrol.apiserver.k8s.io/e2e-carol created") {
		t.Errorf("kubectl apply -f: %s", out)
	}
	if err := os.WriteFile(manifest, []byte(userFlowSchemaV1Beta1), 0o600); err != nil {
		t.Fatal(err)
	}
	if out = admin.must("", "apply", "-f", manifest); !strings.Contains(out, "flowschema.flowcontrol.apiserver.k8s.io/e2e-old-style created") {
		t.Errorf("kubectl apply -f of a v1beta1 manifest: %s", out)
	}
	if out = admin.must("", "get", "flowschema", "e2e-carol", "-o", "jsonpath={.spec.matchingPrecedence}"); out != "500" {
		t.Errorf("the applied FlowSchema: %q", out)
	}
}

// TestGatewayDiscoveryKubernetesUpstream: in front of a Kubernetes API
// server, kubectl sees the upstream's groups with apf's flowcontrol
// versions, explains and applies apf's objects, and a caller the
// upstream refuses discovery gets the upstream's refusal.
func TestGatewayDiscoveryKubernetesUpstream(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and runs kubectl")
	}
	kube, url := kubeStandIn(t)
	logs := &syncBuffer{}
	gw := startGateway(t, url, gatewayTokens(t), func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	defer gw.stop()

	want := append([]string{"apps/v1", "authorization.k8s.io/v1"}, apfFlowcontrolVersions...)
	want = append(want, "stable.example.com/v1", "storage.k8s.io/v1", "v1")
	checkKubectlDiscovery(t, gw, want)
	if !strings.Contains(logs.String(), "the upstream is a Kubernetes API server") {
		t.Errorf("the log does not say what the upstream is:\n%s", logs.String())
	}
	// kubectl's discovery went upstream as the caller.
	var asAdmin bool
	for _, r := range kube.RequestsTo("/apis") {
		asAdmin = asAdmin || (r.User == "admin" && r.Authorization == "Bearer "+adminToken && r.Status == http.StatusOK)
	}
	if !asAdmin {
		t.Errorf("/apis was not fetched upstream as the caller: %+v", kube.RequestsTo("/apis"))
	}
	// The upstream's authorization group is the upstream's.
	code, _, body := gw.do(http.MethodGet, "/apis/authorization.k8s.io/v1", adminToken, nil)
	if code != http.StatusOK || !strings.Contains(string(body), "localsubjectaccessreviews") {
		t.Errorf("/apis/authorization.k8s.io/v1: %d %s", code, body)
	}

	// carol: apf lets her read discovery, the upstream does not. kubectl
	// fails (saying "unknown", as it does when a kube-apiserver refuses
	// it discovery); the answers are the upstream's 403s.
	carol := newKubectl(t, gw, carolToken)
	if out, ok := carol.run("", "api-versions"); ok {
		t.Errorf("kubectl api-versions as carol succeeded:\n%s", out)
	}
	for _, p := range []string{"/apis", "/openapi/v3"} {
		code, _, body := gw.do(http.MethodGet, p, carolToken, nil)
		var st metav1.Status
		if code != http.StatusForbidden || json.Unmarshal(body, &st) != nil || st.Message != fmt.Sprintf("forbidden: User \"carol\" cannot get path %q", p) {
			t.Errorf("%s as carol: %d %s", p, code, body)
		}
	}
	// A token apf does not know is apf's 401, before anything goes
	// upstream.
	if code, _, _ := gw.do(http.MethodGet, "/apis", "no-such-token", nil); code != http.StatusUnauthorized {
		t.Errorf("/apis with an unknown token: %d", code)
	}
}

// TestGatewayDiscoveryOtherUpstream: in front of something that is no
// Kubernetes API server, apf answers discovery itself, so kubectl lists,
// explains and applies apf's objects; the rest is the upstream's.
func TestGatewayDiscoveryOtherUpstream(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and runs kubectl")
	}
	logs := &syncBuffer{}
	gw := startGateway(t, htmlEverywhere(t), gatewayTokens(t), func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	defer gw.stop()

	want := append([]string{"authorization.k8s.io/v1"}, apfFlowcontrolVersions...)
	checkKubectlDiscovery(t, gw, append(want, "v1"))
	if !strings.Contains(logs.String(), "the upstream is not a Kubernetes API server") {
		t.Errorf("the log does not say what the upstream is:\n%s", logs.String())
	}
	code, _, body := gw.do(http.MethodGet, "/version", readerToken, nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"gitVersion":"v1.37.2-apf"`) {
		t.Errorf("/version: %d %s", code, body)
	}
	code, _, body = gw.do(http.MethodGet, "/shop/items", readerToken, nil)
	if code != http.StatusOK || string(body) != "<html><body>shop front: /shop/items</body></html>" {
		t.Errorf("a proxied path: %d %s", code, body)
	}
}

// TestGatewayDiscoveryAdminListen: with --admin-listen, the main address
// proxies discovery as the upstream answers it, and the admin address
// serves apf's own.
func TestGatewayDiscoveryAdminListen(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	_, url := kubeStandIn(t)
	gw := startGateway(t, url, gatewayTokens(t), func(o *Options) { o.AdminListen = "127.0.0.1:0" })
	defer gw.stop()
	var groups metav1.APIGroupList
	code, _, body := gw.do(http.MethodGet, "/apis", adminToken, nil)
	if code != http.StatusOK || json.Unmarshal(body, &groups) != nil || len(groups.Groups) != 5 || !strings.Contains(string(body), `"versions":[{"groupVersion":"flowcontrol.apiserver.k8s.io/v1","version":"v1"}],"preferredVersion"`) {
		t.Errorf("main /apis: %d %s, want the upstream's", code, body)
	}
	code, _, body = gw.doAt(gw.adminURL, http.MethodGet, "/apis", adminToken, nil)
	if code != http.StatusOK || json.Unmarshal(body, &groups) != nil || len(groups.Groups) != 2 ||
		groups.Groups[0].Name != "authorization.k8s.io" || len(groups.Groups[1].Versions) != len(apfFlowcontrolVersions) {
		t.Errorf("admin /apis: %d %s, want apf's own", code, body)
	}
}
