package explain

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/engine"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

// now is any time: no object counts are given, so nothing is judged
// against it.
var now = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// bootstrapObjects are the mandatory and suggested objects as config
// objects.
func bootstrapObjects() []config.Object {
	var objs []config.Object
	for _, pl := range bootstrap.PriorityLevels() {
		objs = append(objs, config.Object{PriorityLevel: pl, Version: config.V1})
	}
	for _, fs := range bootstrap.FlowSchemas() {
		objs = append(objs, config.Object{FlowSchema: fs, Version: config.V1})
	}
	return objs
}

// explainer compiles the bootstrap objects and, when file is given, the
// objects of testdata/file after them.
func explainer(t *testing.T, file string) *engine.Explainer {
	t.Helper()
	objs := bootstrapObjects()
	if file != "" {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		more, err := config.Decode(data, file)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, more...)
	}
	c := engine.Compile(objs)
	if len(c.Invalid) > 0 || len(c.Matcher().Problems()) > 0 {
		t.Fatalf("configuration: %v %v", c.Invalid, c.Matcher().Problems())
	}
	x, err := engine.NewExplainer(c, engine.ExplainConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// explainLines explains a requests file given inline.
func explainLines(t *testing.T, x *engine.Explainer, lines string) []Item {
	t.Helper()
	reqs, err := ReadRequests(strings.NewReader(lines), "requests.txt", Identity{})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]Item, len(reqs))
	for i, r := range reqs {
		items[i] = Item{Source: r.Source, Explanation: x.Explain(now, r.Attributes)}
	}
	return items
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update to accept it):\n%s", path, got)
	}
}

// The explanation of the requests a cluster admin asks about most,
// against the bootstrap configuration: a kubelet, a service account, an
// anonymous user, a health check, a user in system:masters (exempt), a
// user in no group (catch-all by default).
func TestTextBootstrap(t *testing.T) {
	items := explainLines(t, explainer(t, ""), `
--as system:node:node-1 --as-group system:nodes patch /api/v1/nodes/node-1/status
--as system:serviceaccount:shop:ci list /apis/apps/v1/namespaces/shop/deployments
get /api/v1/namespaces/shop/configmaps
get /readyz
--as admin --as-group system:masters delete /api/v1/namespaces/shop/pods/web
--as mystery --as-group system:unauthenticated get /version
`)
	var buf bytes.Buffer
	if err := Write(&buf, FormatText, items, false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"FlowSchema:            system-node-high\n", "Priority Level:        node-high\n",
		"FlowSchema:            service-accounts\n", "Flow:                  system:serviceaccount:shop:ci\n",
		"User:                  system:anonymous\n", "FlowSchema:            global-default\n",
		"FlowSchema:            probes\n", "When Busy:             never queued nor rejected: exempt from APF\n",
		"Not Matched:  none (no FlowSchema comes before it)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, " \n") {
		t.Error("a line ends with a blank")
	}
	golden(t, "bootstrap.txt", out)
}

// A custom configuration where the schemas ahead of the winner each fail
// for their own reason: subject, verb, resource, namespace, the kind of
// request; and, for a non-resource request, the URL.
func TestTextWhyNot(t *testing.T) {
	items := explainLines(t, explainer(t, "custom.yaml"), `
--as alice --as-group devs get /api/v1/namespaces/shop/pods
--as alice --as-group devs get /version
`)
	ex := items[0].Explanation
	if ex.FlowSchema.Name != "dev-reads" || ex.FlowSchema.Rule != 1 || ex.PriorityLevel.Type != engine.LevelQueue || ex.Flow.Distinguisher != "shop" {
		t.Fatalf("winner %+v %+v", ex.FlowSchema, ex.Flow)
	}
	why := map[string]string{}
	for _, sm := range ex.NotMatched {
		why[sm.Name] = sm.Rules[0].Detail
	}
	for name, want := range map[string]string{
		"ops":             "subject: the user is none of [Group ops]",
		"dev-writes":      "verb list not in [create, update, patch, delete]",
		"dev-secrets":     "resource pods not in [secrets, configmaps]",
		"dev-kube-system": "namespace shop not in [kube-system]",
		"dev-metrics":     "a resource request, and the rule has only nonResourceRules",
	} {
		if why[name] != want {
			t.Errorf("%s: %q, want %q", name, why[name], want)
		}
	}
	for _, sm := range items[1].NotMatched {
		if sm.Name == "dev-metrics" && sm.Rules[0].Detail != "path /version not in nor under [/metrics, /debug/*]" {
			t.Errorf("dev-metrics for /version: %q", sm.Rules[0].Detail)
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, FormatText, items, false); err != nil {
		t.Fatal(err)
	}
	golden(t, "whynot.txt", buf.String())
}

// JSON and YAML: one request is one object, as engine.Explanation encodes
// it; a file of requests is a list, each with its source.
func TestMachineFormats(t *testing.T) {
	x := explainer(t, "")
	items := explainLines(t, x, "--as alice get /api/v1/namespaces/shop/pods\nget /healthz\n")
	var one, many, yml bytes.Buffer
	if err := Write(&one, FormatJSON, items[:1], true); err != nil {
		t.Fatal(err)
	}
	direct, err := json.MarshalIndent(items[0].Explanation, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	if one.String() != string(direct)+"\n" {
		t.Errorf("one request is not the explanation itself:\n%s", one.String())
	}
	if err := Write(&many, FormatJSON, items, false); err != nil {
		t.Fatal(err)
	}
	var list []map[string]any
	if err := json.Unmarshal(many.Bytes(), &list); err != nil || len(list) != 2 || list[1]["source"] != "requests.txt:2" {
		t.Fatalf("list: %v %v", err, list)
	}
	if fs := list[1]["flowSchema"].(map[string]any); fs["name"] != "probes" {
		t.Errorf("second item: %v", fs)
	}
	if err := Write(&yml, FormatYAML, items[:1], true); err != nil {
		t.Fatal(err)
	}
	var back engine.Explanation
	if err := yaml.Unmarshal(yml.Bytes(), &back); err != nil || back.FlowSchema.Name != "global-default" || back.Flow.Hash != items[0].Flow.Hash {
		t.Errorf("YAML: %v %+v", err, back.FlowSchema)
	}
	if err := Write(&yml, "xml", items, true); err == nil {
		t.Error("unknown format accepted")
	}
	if !ValidFormat("json") || !ValidFormat("") || ValidFormat("xml") {
		t.Error("ValidFormat")
	}
}

// Names from the request are quoted when they hold blanks or control
// characters, so that no value can forge a line of the output.
func TestTextQuotesOddValues(t *testing.T) {
	x := explainer(t, "")
	a, err := ParseRequest([]string{"get", "/api/v1/namespaces/shop/pods/a%0Ab"}, Identity{As: "evil\nFlowSchema: exempt"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, FormatText, []Item{{Explanation: x.Explain(now, a)}}, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `User:                  "evil\nFlowSchema: exempt"`) || strings.Count(buf.String(), "\nFlowSchema:") != 1 {
		t.Errorf("odd user not quoted:\n%s", buf.String())
	}
}
