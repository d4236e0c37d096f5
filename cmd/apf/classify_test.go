package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/engine"
)

// classifyGolden compares out with testdata/name; APF_UPDATE_GOLDEN=1
// rewrites it.
func classifyGolden(t *testing.T, name, out string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("APF_UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (APF_UPDATE_GOLDEN=1 writes it)", err)
	}
	if out != string(want) {
		t.Errorf("output differs from %s (APF_UPDATE_GOLDEN=1 accepts it):\n%s", path, out)
	}
}

// One request, as an admin asks about it: the whole explanation, as text.
func TestClassifyRequestText(t *testing.T) {
	code, out, errOut := runCLI(t, "classify", "--as", "alice", "--as-group", "devs", "get", "/api/v1/namespaces/shop/pods")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	classifyGolden(t, "classify-alice.txt", out)
}

// -o json is the explanation itself, as engine.Explanation encodes it.
func TestClassifyRequestJSON(t *testing.T) {
	code, out, errOut := runCLI(t, "classify", "--as", "system:serviceaccount:shop:ci", "-o", "json",
		"patch", "/apis/apps/v1/namespaces/shop/deployments/web")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var ex engine.Explanation
	if err := json.Unmarshal([]byte(out), &ex); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if ex.FlowSchema.Name != "service-accounts" || ex.PriorityLevel.Name != "workload-low" || ex.PriorityLevel.Type != engine.LevelQueue ||
		ex.Flow == nil || ex.Flow.Distinguisher != "system:serviceaccount:shop:ci" || len(ex.Flow.Hand) != 6 ||
		ex.Flow.Hash != classify.FlowHash("service-accounts", "system:serviceaccount:shop:ci") {
		t.Fatalf("explanation %+v %+v %+v", ex.FlowSchema, ex.PriorityLevel, ex.Flow)
	}
	if strings.Join(ex.User.Groups, ",") != "system:serviceaccounts,system:serviceaccounts:shop,system:authenticated" {
		t.Errorf("groups %q", ex.User.Groups)
	}
	if ex.Request.Verb != "patch" || len(ex.NotMatched) != 8 || ex.NotMatched[0].Name != "exempt" {
		t.Errorf("request %+v, %d not matched", ex.Request, len(ex.NotMatched))
	}
	if code, out, _ := runCLI(t, "classify", "-o", "yaml", "get", "/healthz"); code != 0 || !strings.Contains(out, "flowSchema:\n  matchingPrecedence: 2\n  name: probes\n") {
		t.Errorf("yaml: exit %d\n%s", code, out)
	}
}

// -f explains a file of requests, each headed by where it was read.
func TestClassifyFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "requests.txt")
	reqs := "# the usual suspects\n--as admin --as-group system:masters delete /api/v1/namespaces/shop/pods/web\nget /readyz\n"
	if err := os.WriteFile(file, []byte(reqs), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "classify", "-f", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Source:                " + file + ":2\n", "FlowSchema:            exempt\n",
		"Source:                " + file + ":3\n", "FlowSchema:            probes\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "classify", "-f", file, "-o", "json")
	var items []map[string]any
	if err := json.Unmarshal([]byte(out), &items); code != 0 || err != nil || len(items) != 2 || items[0]["source"] != file+":2" {
		t.Fatalf("json: exit %d %v %v", code, err, items)
	}

	if err := os.WriteFile(file, []byte("get /healthz\nfetch /x\n--as\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, "classify", "-f", file)
	if code != 1 || !strings.Contains(errOut, file+":2: unknown verb") || !strings.Contains(errOut, file+":3: flag --as needs a value") {
		t.Errorf("bad file: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "classify", "-f", filepath.Join(t.TempDir(), "missing.txt")); code != 1 || !strings.Contains(errOut, "missing.txt") {
		t.Errorf("missing file: exit %d: %s", code, errOut)
	}
}

// Object counts price lists, watches price writes, as the work estimator
// does with them.
func TestClassifySeatsFromFlags(t *testing.T) {
	explainJSON := func(args ...string) engine.Explanation {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"classify", "-o", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errOut)
		}
		var ex engine.Explanation
		if err := json.Unmarshal([]byte(out), &ex); err != nil {
			t.Fatal(err)
		}
		return ex
	}
	if ex := explainJSON("--as", "alice", "list", "/api/v1/pods"); ex.Seats.Initial != 1 {
		t.Errorf("list without counts: %+v", ex.Seats)
	}
	// 20,000 pods of 5 kB: 100 MB from storage, capped by global-default's
	// seats per request.
	if ex := explainJSON("--as", "alice", "--object-count", "pods=20000:5000", "list", "/api/v1/pods"); ex.Seats.Initial != ex.PriorityLevel.MaxSeats || ex.Seats.Initial < 2 {
		t.Errorf("list of 20000 pods: %+v, level %+v", ex.Seats, ex.PriorityLevel)
	}
	if ex := explainJSON("--as", "alice", "--watches", "25", "create", "/api/v1/namespaces/shop/pods"); ex.Seats.Final != 3 || ex.Seats.Watches != 25 || ex.Seats.AdditionalLatency.Duration.String() != "5ms" {
		t.Errorf("write seen by 25 watches: %+v", ex.Seats)
	}
	// A server of 60 seats gives global-default a tenth of the default's.
	if ex := explainJSON("--max-requests-inflight", "40", "--max-mutating-requests-inflight", "20", "get", "/version"); ex.PriorityLevel.NominalSeats != 5 {
		t.Errorf("60 seats: %+v", ex.PriorityLevel)
	}
}

func TestClassifyUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"get"}, 2, "want VERB PATH (two arguments), got 1"},
		{[]string{"fetch", "/api/v1/pods"}, 2, `unknown verb "fetch"`},
		{[]string{"list", "/api/v1/namespaces/shop/pods/web"}, 2, `verb "list" does not fit`},
		{[]string{"--as-group", "devs", "get", "/version"}, 2, "--as-group and --as-uid need --as"},
		{[]string{"--as", "alice"}, 2, "--as, --as-group and --as-uid are for a request"},
		{[]string{"-f", "x.txt", "get", "/version"}, 2, "either VERB PATH or -f FILE"},
		{[]string{"--object-count", "pods", "get", "/version"}, 2, "want RESOURCE=COUNT[:AVERAGE_BYTES]"},
		{[]string{"--object-count", "pods=-1", "get", "/version"}, 2, "the count must be a whole number"},
		{[]string{"--object-count", "pods=1:0", "get", "/version"}, 2, "the average size must be"},
		{[]string{"--watches", "-1", "get", "/version"}, 2, "--watches must not be negative"},
		{[]string{"--request-timeout", "0s", "get", "/version"}, 2, "--request-timeout must be positive"},
		{[]string{"-o", "xml", "get", "/version"}, 2, "xml"},
	} {
		code, out, errOut := runCLI(t, append([]string{"classify"}, c.args...)...)
		if code != c.code || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, out, errOut, c.code, c.want)
		}
	}
}

// A warning is printed and the run goes on; --strict, for CI, makes the
// same warning fail the run after its output.
func TestClassifyStrict(t *testing.T) {
	empty := t.TempDir()
	code, out, errOut := runCLI(t, "classify", "--config", empty, "get", "/version")
	if code != 0 || out == "" || !strings.Contains(errOut, "apf classify: warning: ") {
		t.Fatalf("without --strict: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "classify", "--strict", "--config", empty, "get", "/version")
	if code != 1 || out == "" || !strings.Contains(errOut, "apf classify: 1 warning above, and --strict fails on warnings") {
		t.Fatalf("with --strict: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "classify", "--strict", "get", "/version"); code != 0 {
		t.Fatalf("with --strict and no warning: exit %d, stderr %q", code, errOut)
	}
}

// Without a request: the sample table, as before with -o wide; narrower
// by default, the requests under who sends them; and with -o json the
// samples' explanations.
func TestClassifySamples(t *testing.T) {
	code, out, _ := runCLI(t, "classify")
	if code != 0 || !strings.HasPrefix(out, "Classifying sample requests against the mandatory and suggested configuration.\n\nWHO: REQUEST ") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{
		"\nkubelet:\n  PATCH /api/v1/nodes/node-1/status",
		"system-node-high              node-high",
		"\nuser in no group:\n  GET /api/v1/pods",
		"\n-o wide: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "classify", "-o", "wide")
	if code != 0 || !strings.HasPrefix(out, "Classifying sample requests against the mandatory and suggested configuration.\n\nWHO ") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{
		"kubelet                 PATCH /api/v1/nodes/node-1/status",
		"system-node-high              node-high",
		"user in no group        GET /api/v1/pods",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "classify", "-o", "json")
	var items []map[string]any
	if err := json.Unmarshal([]byte(out), &items); code != 0 || err != nil || len(items) != len(sampleRequests) || items[2]["source"] != "sample: kubelet" {
		t.Fatalf("samples as json: exit %d %v %d", code, err, len(items))
	}
}

func TestClassifyHelp(t *testing.T) {
	code, out, _ := runCLI(t, "classify", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, flag := range []string{"--as string", "--as-group stringArray", "--as-uid string", "-f, --filename string", "-o, --output string",
		"--object-count stringArray", "--watches int", "--max-requests-inflight int", "--request-timeout duration"} {
		if !strings.Contains(out, flag) {
			t.Errorf("help lacks %q", flag)
		}
	}
}

// With --config, the schemas ahead of the winner are the file's too, each
// said to miss for its own reason.
func TestClassifyWhyNotWithConfig(t *testing.T) {
	code, out, errOut := runCLI(t, "classify", "--config", "../../internal/debug/explain/testdata/custom.yaml",
		"--as", "alice", "--as-group", "devs", "-o", "json", "get", "/api/v1/namespaces/shop/pods")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var ex engine.Explanation
	if err := json.Unmarshal([]byte(out), &ex); err != nil {
		t.Fatal(err)
	}
	if ex.FlowSchema.Name != "dev-reads" || ex.FlowSchema.Rule != 1 || ex.PriorityLevel.Name != "team" {
		t.Fatalf("went to %+v %+v", ex.FlowSchema, ex.PriorityLevel)
	}
	failed := map[string]classify.Field{}
	for _, sm := range ex.NotMatched {
		failed[sm.Name] = sm.Rules[0].Failed[0]
	}
	for name, want := range map[string]classify.Field{
		"ops": classify.FieldSubject, "dev-writes": classify.FieldVerb, "dev-secrets": classify.FieldResource,
		"dev-kube-system": classify.FieldNamespace, "dev-metrics": classify.FieldResourceRules,
	} {
		if failed[name] != want {
			t.Errorf("%s failed on %q, want %q", name, failed[name], want)
		}
	}
}
