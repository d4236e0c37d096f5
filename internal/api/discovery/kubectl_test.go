package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/api/apistatus"
	"github.com/apfproject/apf/internal/testing/testkubectl"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// seen is one request the test server received.
type seen struct {
	method, path, query, accept, contentType string
	status                                   int
}

// recorder wraps the server's handler and remembers every request.
type recorder struct {
	mu   sync.Mutex
	reqs []seen
}

func (rec *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Accept"), sw.Header().Get("Content-Type"), sw.status})
		rec.mu.Unlock()
	})
}

func (rec *recorder) find(method, path string) []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []seen
	for _, s := range rec.reqs {
		if s.method == method && s.path == path {
			out = append(out, s)
		}
	}
	return out
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// fakeResources stands in for the flowcontrol resource handlers: a list
// (or Table) with one FlowSchema, 404 for any single object, and an echo of
// any created object.
func fakeResources(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const list = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
		fs := flowcontrolv1.FlowSchema{
			TypeMeta:   metav1.TypeMeta{Kind: "FlowSchema", APIVersion: "flowcontrol.apiserver.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "fixed-schema", ResourceVersion: "7", CreationTimestamp: metav1.Now()},
			Spec: flowcontrolv1.FlowSchemaSpec{
				PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "global-default"},
				MatchingPrecedence:         1000,
			},
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == list:
			if strings.Contains(r.Header.Get("Accept"), "as=Table") {
				meta, _ := json.Marshal(metav1.PartialObjectMetadata{
					TypeMeta:   metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
					ObjectMeta: fs.ObjectMeta,
				})
				_ = json.NewEncoder(w).Encode(metav1.Table{
					TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
					ListMeta: metav1.ListMeta{ResourceVersion: "7"},
					ColumnDefinitions: []metav1.TableColumnDefinition{
						{Name: "Name", Type: "string", Format: "name"},
						{Name: "PriorityLevel", Type: "string"},
					},
					Rows: []metav1.TableRow{{Cells: []any{"fixed-schema", "global-default"}, Object: runtime.RawExtension{Raw: meta}}},
				})
				return
			}
			_ = json.NewEncoder(w).Encode(flowcontrolv1.FlowSchemaList{
				TypeMeta: metav1.TypeMeta{Kind: "FlowSchemaList", APIVersion: "flowcontrol.apiserver.k8s.io/v1"},
				ListMeta: metav1.ListMeta{ResourceVersion: "7"},
				Items:    []flowcontrolv1.FlowSchema{fs},
			})
		case r.Method == http.MethodPost && r.URL.Path == list:
			body, _ := io.ReadAll(r.Body)
			var obj flowcontrolv1.FlowSchema
			if err := json.Unmarshal(body, &obj); err != nil {
				apistatus.Write(w, apistatus.New(http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error()))
				return
			}
			obj.ResourceVersion = "8"
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(obj)
		default:
			apistatus.Write(w, apistatus.New(http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("%s %s not found", r.Method, r.URL.Path)))
		}
	})
}

// kubectlEnv is a test server made of a Handler and fakeResources, and a
// private kubeconfig and cache for kubectl.
type kubectlEnv struct {
	t   *testing.T
	bin string // the kubectl to run
	dir string
	rec *recorder
}

func newKubectlEnv(t *testing.T) *kubectlEnv {
	t.Helper()
	bin := testkubectl.Path(t)
	disc := New(Options{})
	res := fakeResources(t)
	rec := &recorder{}
	srv := httptest.NewTLSServer(rec.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer test-token" {
			apistatus.Write(w, apistatus.New(http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "missing token"))
			return
		}
		if disc.Handles(r.URL.Path) {
			disc.ServeHTTP(w, r)
			return
		}
		res.ServeHTTP(w, r)
	})))
	t.Cleanup(func() {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, s := range rec.reqs {
			t.Logf("%s %s?%s accept=%q -> %d %s", s.method, s.path, s.query, s.accept, s.status, s.contentType)
		}
	})
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: apf
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: tester
  user:
    token: test-token
contexts:
- name: apf
  context: {cluster: apf, user: tester}
current-context: apf
`, srv.URL)
	if err := os.WriteFile(filepath.Join(dir, "kubeconfig"), []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return &kubectlEnv{t: t, bin: bin, dir: dir, rec: rec}
}

// run runs kubectl with args and returns its output; it fails the test
// when kubectl fails.
func (e *kubectlEnv) run(args ...string) string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args = append([]string{"--kubeconfig", filepath.Join(e.dir, "kubeconfig"), "--cache-dir", filepath.Join(e.dir, "cache"), "--request-timeout", "20s"}, args...)
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Env = []string{"HOME=" + e.dir, "KUBECONFIG=" + filepath.Join(e.dir, "kubeconfig"), "PATH=/usr/bin:/bin"}
	cmd.Dir = e.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args[6:], " "), err, out)
	}
	e.t.Logf("kubectl %s:\n%s", strings.Join(args[6:], " "), out)
	return string(out)
}

func TestKubectl(t *testing.T) {
	e := newKubectlEnv(t)

	t.Run("api-resources", func(t *testing.T) {
		e.t = t
		out := e.run("api-resources", "--api-group", "flowcontrol.apiserver.k8s.io", "-o", "wide")
		for _, res := range []string{"flowschemas", "prioritylevelconfigurations"} {
			var line string
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, res+" ") {
					line = l
				}
			}
			if line == "" {
				t.Fatalf("%s missing from:\n%s", res, out)
			}
			for _, want := range []string{"flowcontrol.apiserver.k8s.io/v1 ", "false", "create,delete,deletecollection,get,list,patch,update,watch"} {
				if !strings.Contains(line+" ", want) {
					t.Errorf("%s: %q lacks %q", res, line, want)
				}
			}
		}
		apis := e.rec.find(http.MethodGet, "/apis")
		if len(apis) == 0 || apis[0].contentType != aggregatedContentType {
			t.Errorf("/apis was not answered with aggregated discovery: %+v", apis)
		}
	})

	t.Run("api-versions", func(t *testing.T) {
		e.t = t
		out := e.run("api-versions")
		for _, want := range []string{"flowcontrol.apiserver.k8s.io/v1\n", "flowcontrol.apiserver.k8s.io/v1beta3\n", "flowcontrol.apiserver.k8s.io/v1beta2\n", "flowcontrol.apiserver.k8s.io/v1beta1\n", "v1\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("api-versions lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "v1alpha1") {
			t.Errorf("v1alpha1 served without being asked for:\n%s", out)
		}
	})

	t.Run("explain", func(t *testing.T) {
		e.t = t
		out := e.run("explain", "flowschemas.spec")
		for _, want := range []string{"GROUP:      flowcontrol.apiserver.k8s.io", "FlowSchemaSpec", "priorityLevelConfiguration", "matchingPrecedence", "distinguisherMethod", "rules", "-required-"} {
			if !strings.Contains(out, want) {
				t.Errorf("explain lacks %q:\n%s", want, out)
			}
		}
		out = e.run("explain", "prioritylevelconfigurations.spec.limited", "--api-version", "flowcontrol.apiserver.k8s.io/v1beta2")
		if !strings.Contains(out, "assuredConcurrencyShares") {
			t.Errorf("explain of v1beta2 lacks assuredConcurrencyShares:\n%s", out)
		}
	})

	t.Run("explain descriptions", func(t *testing.T) {
		e.t = t
		const fs = "io.k8s.api.flowcontrol.v1.FlowSchemaSpec"
		const limited = "io.k8s.api.flowcontrol.v1.LimitedPriorityLevelConfiguration"
		const plcSpec = "io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationSpec"
		for _, c := range []struct {
			args []string
			want []string
		}{
			// A scalar field, read from the OpenAPI 3 document.
			{[]string{"explain", "flowschemas.spec.matchingPrecedence"},
				[]string{propertyDescription(fs, "matchingPrecedence")}},
			// A field of a priority level.
			{[]string{"explain", "prioritylevelconfigurations.spec.limited.nominalConcurrencyShares"},
				[]string{propertyDescription(limited, "nominalConcurrencyShares")}},
			// A field that is a reference (allOf in OpenAPI 3), and the
			// fields listed under it.
			{[]string{"explain", "prioritylevelconfigurations.spec.limited"},
				[]string{propertyDescription(plcSpec, "limited"), propertyDescription(limited, "lendablePercent")}},
			{[]string{"explain", "flowschemas.spec"},
				[]string{propertyDescription("io.k8s.api.flowcontrol.v1.FlowSchema", "spec"), propertyDescription(fs, "distinguisherMethod")}},
			// An older version, whose shares field has its own text.
			{[]string{"explain", "prioritylevelconfigurations.spec.limited.assuredConcurrencyShares", "--api-version", "flowcontrol.apiserver.k8s.io/v1beta2"},
				[]string{propertyDescription("io.k8s.api.flowcontrol.v1beta2.LimitedPriorityLevelConfiguration", "assuredConcurrencyShares")}},
		} {
			for _, w := range c.want {
				if w == "" {
					t.Fatalf("%v: no description in the tables", c.args)
				}
			}
			if err := explainHas(e.run(c.args...), c.want...); err != nil {
				t.Errorf("kubectl %s: %v", strings.Join(c.args, " "), err)
			}
		}
	})

	t.Run("apply dry-run", func(t *testing.T) {
		e.t = t
		manifest := filepath.Join(e.dir, "fs.yaml")
		err := os.WriteFile(manifest, []byte(`apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: applied-schema
spec:
  priorityLevelConfiguration:
    name: workload-low
  matchingPrecedence: 4000
  distinguisherMethod:
    type: ByUser
  rules:
  - subjects:
    - kind: Group
      group:
        name: system:authenticated
    resourceRules:
    - verbs: ["get"]
      apiGroups: ["*"]
      resources: ["*"]
      clusterScope: true
`), 0o600)
		if err != nil {
			t.Fatal(err)
		}
		out := e.run("apply", "--dry-run=server", "-f", manifest)
		if !strings.Contains(out, "applied-schema") {
			t.Errorf("apply output: %s", out)
		}
		posts := e.rec.find(http.MethodPost, "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas")
		if len(posts) != 1 {
			t.Fatalf("want one create, got %+v", posts)
		}
		if !strings.Contains(posts[0].query, "fieldValidation=Strict") || !strings.Contains(posts[0].query, "dryRun=All") {
			t.Errorf("create query %q lacks fieldValidation=Strict and dryRun=All", posts[0].query)
		}
	})

	t.Run("get", func(t *testing.T) {
		e.t = t
		out := e.run("get", "flowschemas")
		if !strings.Contains(out, "fixed-schema") || !strings.Contains(out, "global-default") {
			t.Errorf("get output:\n%s", out)
		}
		if len(e.rec.find(http.MethodGet, "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas")) == 0 {
			t.Errorf("the list endpoint was not called")
		}
	})
}
