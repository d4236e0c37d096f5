package flowapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/testing/testkubectl"
)

// discoveryStub answers the discovery requests kubectl makes before it
// touches a resource, with plain (unaggregated) documents; everything else
// goes to the handler under test.
func discoveryStub(api http.Handler) http.Handler {
	docs := map[string]string{
		"/api":    `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}`,
		"/api/v1": `{"kind":"APIResourceList","groupVersion":"v1","resources":[]}`,
		"/apis": `{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"flowcontrol.apiserver.k8s.io",
		  "versions":[{"groupVersion":"flowcontrol.apiserver.k8s.io/v1","version":"v1"}],
		  "preferredVersion":{"groupVersion":"flowcontrol.apiserver.k8s.io/v1","version":"v1"}}]}`,
		"/apis/flowcontrol.apiserver.k8s.io/v1": `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"flowcontrol.apiserver.k8s.io/v1","resources":[
		  {"name":"flowschemas","singularName":"flowschema","namespaced":false,"kind":"FlowSchema","verbs":["create","delete","get","list","patch","update","watch"]},
		  {"name":"flowschemas/status","singularName":"","namespaced":false,"kind":"FlowSchema","verbs":["get","patch","update"]},
		  {"name":"prioritylevelconfigurations","singularName":"prioritylevelconfiguration","namespaced":false,"kind":"PriorityLevelConfiguration","verbs":["create","delete","get","list","patch","update","watch"]},
		  {"name":"prioritylevelconfigurations/status","singularName":"","namespaced":false,"kind":"PriorityLevelConfiguration","verbs":["get","patch","update"]}]}`,
		"/version": `{"major":"1","minor":"32","gitVersion":"v1.32.0"}`,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if doc, ok := docs[strings.TrimSuffix(r.URL.Path, "/")]; ok {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(doc))
			return
		}
		api.ServeHTTP(w, r)
	})
}

func TestKubectl(t *testing.T) {
	if testing.Short() {
		t.Skip("runs kubectl")
	}
	kubectl := testkubectl.Path(t)
	e := newEnv(t)
	e.loadBootstrap()
	srv := httptest.NewServer(discoveryStub(New(e.reg, Options{})))
	defer srv.Close()
	run := kubectlRunner(t, kubectl, srv.URL)

	out := run("get", "flowschemas")
	if w := run("get", "prioritylevelconfigurations", "-w", "--request-timeout=1s"); !strings.Contains(w, "NOMINALCONCURRENCYSHARES") || !strings.Contains(w, "workload-low") {
		t.Errorf("get -w:\n%s", w)
	}
	if !strings.Contains(out, "NAME") || !strings.Contains(out, "PRIORITYLEVEL") || !strings.Contains(out, "MISSINGPL") ||
		!strings.Contains(out, "global-default") {
		t.Errorf("get flowschemas:\n%s", out)
	}
	out = run("get", "prioritylevelconfigurations", "exempt", "-o", "yaml")
	if !strings.Contains(out, "kind: PriorityLevelConfiguration") || !strings.Contains(out, "type: Exempt") {
		t.Errorf("-o yaml:\n%s", out)
	}
	manifest := filepath.Join(t.TempDir(), "fs.yaml")
	write := func(prec string) {
		m := "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: mine\nspec:\n  priorityLevelConfiguration:\n    name: global-default\n  matchingPrecedence: " + prec +
			"\n  rules:\n  - subjects:\n    - kind: User\n      user:\n        name: alice\n    nonResourceRules:\n    - verbs: [\"get\"]\n      nonResourceURLs: [\"/healthz\"]\n"
		if err := os.WriteFile(manifest, []byte(m), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("700")
	out = run("apply", "--validate=false", "-f", manifest)
	if !strings.Contains(out, "created") {
		t.Errorf("first apply: %s", out)
	}
	write("800")
	out = run("apply", "--validate=false", "-f", manifest)
	if !strings.Contains(out, "configured") {
		t.Errorf("second apply: %s", out)
	}
	out = run("get", "flowschema", "mine", "-o", "jsonpath={.spec.matchingPrecedence} {.metadata.generation}")
	if out != "800 2" {
		t.Errorf("after apply: %q", out)
	}
	out = run("delete", "flowschema", "mine")
	if !strings.Contains(out, `deleted`) {
		t.Errorf("delete: %s", out)
	}
}

// kubectlRunner returns a function that runs kubectl against the server
// at url, without credentials, in a home of its own, and returns its
// output; a failure fails the test.
func kubectlRunner(t *testing.T, kubectl, url string) func(args ...string) string {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + url +
		"\nusers:\n- name: u\n  user: {}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(dir, "cache")}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir, "KUBECTL_KUBERC=false")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}
