package check

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
)

// files checks the manifests of files, as apf check does.
func files(t *testing.T, names ...string) *Report {
	t.Helper()
	var objs []config.Object
	var errs []error
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := config.Decode(data, name)
		objs = append(objs, got...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return Inputs(objs, errs, Options{})
}

func TestValidInputs(t *testing.T) {
	r := files(t, "testdata/valid/health-for-strangers.yaml", "testdata/valid/tenants.yaml")
	if r.Count(Error) != 0 || r.Count(Warning) != 0 {
		t.Fatalf("findings: %v", r.Findings)
	}
	if len(r.Objects) != 5 {
		t.Fatalf("decoded %d objects, want 5", len(r.Objects))
	}
}

func TestBootstrapIsValid(t *testing.T) {
	var objs []config.Object
	for _, pl := range bootstrap.PriorityLevels() {
		objs = append(objs, config.Object{PriorityLevel: pl, Version: config.V1})
	}
	for _, fs := range bootstrap.FlowSchemas() {
		objs = append(objs, config.Object{FlowSchema: fs, Version: config.V1})
	}
	for _, opts := range []Options{{}, {WithoutSuggested: true}} {
		if r := Inputs(objs, nil, opts); len(r.Findings) != 0 {
			t.Fatalf("%+v: findings on the bootstrap configuration: %v", opts, r.Findings)
		}
	}
}

const plHead = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: p
spec:
  type: Limited
  limited:
`

const fsHead = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: f
spec:
  priorityLevelConfiguration:
    name: global-default
`

func queue(queues, hand int) string {
	return plHead + "    limitResponse:\n      type: Queue\n      queuing:\n        queues: " +
		strconv.Itoa(queues) + "\n        handSize: " + strconv.Itoa(hand) + "\n"
}

func TestInvalidInputs(t *testing.T) {
	cases := []struct {
		name, manifest string
		severity       Severity
		want           string // substring of the single expected finding
	}{
		{"hand larger than deck", queue(8, 70), Error,
			`PriorityLevelConfiguration "p": spec.limited.limitResponse.queuing.handSize: Invalid value: 70`},
		{"entropy bound", queue(128, 9), Error,
			`spec.limited.limitResponse.queuing.handSize: Invalid value: 9`},
		{"lendable over 100", plHead + "    lendablePercent: 101\n    limitResponse:\n      type: Reject\n", Error,
			`spec.limited.lendablePercent: Invalid value: 101`},
		{"no subjects", fsHead + "  rules:\n  - nonResourceRules:\n    - verbs: [get]\n      nonResourceURLs: [/x]\n", Error,
			`FlowSchema "f": spec.rules[0].subjects: Required value`},
		{"unknown distinguisher", fsHead + "  distinguisherMethod:\n    type: ByColour\n", Error,
			`spec.distinguisherMethod.type: Unsupported value: {"Type":"ByColour"}`},
		{"URL without slash", fsHead + "  rules:\n  - subjects:\n    - kind: Group\n      group: {name: g}\n    nonResourceRules:\n    - verbs: [get]\n      nonResourceURLs: [healthz]\n", Error,
			`spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: "healthz"`},
		{"dangling", strings.Replace(fsHead, "global-default", "nowhere", 1) + "  rules:\n  - subjects:\n    - kind: Group\n      group: {name: g}\n    nonResourceRules:\n    - verbs: [get]\n      nonResourceURLs: [/x]\n", Error,
			`FlowSchema "f": spec.priorityLevelConfiguration.name: priority level "nowhere" does not exist`},
		{"shadowed by bootstrap", strings.Replace(fsHead, "name: f\n", "name: f\n", 1) + "  matchingPrecedence: 9950\n  rules:\n  - subjects:\n    - kind: Group\n      group: {name: system:authenticated}\n    nonResourceRules:\n    - verbs: [get]\n      nonResourceURLs: [/metrics]\n", Warning,
			`FlowSchema "f": can never match: FlowSchema "global-default" (bootstrap), earlier in the matching order (precedence 9900 vs 9950)`},
		{"exempt level without its section", "apiVersion: flowcontrol.apiserver.k8s.io/v1alpha1\nkind: PriorityLevelConfiguration\nmetadata: {name: exempt}\nspec: {type: Exempt}\n", Warning,
			`PriorityLevelConfiguration "exempt": a server accepts it but ignores it (the built-in definition stands in for it, and schemas naming it dangle): spec.exempt must be set`},
		{"unknown field", fsHead + "  colour: blue\n", Error, `unknown field "spec.colour"`},
		{"not YAML", "{{{", Error, "in.yaml:1: yaml: line 1:"},
		{"wrong kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", Error, "Pod"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "in.yaml")
			if err := os.WriteFile(file, []byte(c.manifest), 0o600); err != nil {
				t.Fatal(err)
			}
			r := files(t, file)
			if len(r.Findings) != 1 {
				t.Fatalf("want one finding, got %d: %v", len(r.Findings), r.Findings)
			}
			f := r.Findings[0]
			if f.Severity != c.severity || !strings.Contains(f.String(), c.want) || !strings.Contains(f.String(), file) {
				t.Fatalf("finding %q (%v)\nwant %v containing %q and the file name", f, f.Severity, c.severity, c.want)
			}
		})
	}
}

func TestShadowedWithinFiles(t *testing.T) {
	const manifest = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: broad}
spec:
  matchingPrecedence: 100
  priorityLevelConfiguration: {name: workload-low}
  rules:
  - subjects: [{kind: ServiceAccount, serviceAccount: {namespace: ci, name: "*"}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: narrow}
spec:
  matchingPrecedence: 200
  priorityLevelConfiguration: {name: workload-high}
  rules:
  - subjects: [{kind: ServiceAccount, serviceAccount: {namespace: ci, name: deployer}}]
    resourceRules: [{verbs: [patch], apiGroups: [apps], resources: [deployments], namespaces: [prod]}]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: different-namespace}
spec:
  matchingPrecedence: 200
  priorityLevelConfiguration: {name: workload-high}
  rules:
  - subjects: [{kind: ServiceAccount, serviceAccount: {namespace: cd, name: deployer}}]
    resourceRules: [{verbs: [patch], apiGroups: [apps], resources: [deployments], namespaces: [prod]}]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: broad}
spec:
  priorityLevelConfiguration: {name: workload-high}
`
	file := filepath.Join(t.TempDir(), "shadow.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	r := files(t, file)
	var got []string
	for _, f := range r.Findings {
		got = append(got, f.String())
	}
	if len(got) != 2 ||
		!strings.Contains(got[0], `FlowSchema "narrow": can never match: FlowSchema "broad", earlier`) ||
		!strings.Contains(got[1], `FlowSchema "broad": defined again; first defined at `+file+":1") {
		t.Fatalf("findings:\n%s", strings.Join(got, "\n"))
	}
}

// Every problem of a file is reported, each at the line of its field; an
// object refused for an unknown field still has its validation errors
// reported.
func TestEveryErrorAtItsLine(t *testing.T) {
	const manifest = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: p}
spec:
  type: Limited
  limited:
    lendablePercent: 101
    colour: blue
    limitResponse:
      type: Queue
      queuing: {queues: 8, handSize: 70}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: f}
spec:
  priorityLevelConfiguration: {name: global-default}
  rules:
  - subjects:
    - kind: Group
      group: {name: g}
    nonResourceRules:
    - verbs: [get]
      nonResourceURLs: [healthz]
`
	file := filepath.Join(t.TempDir(), "two.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	r := files(t, file)
	var got []string
	for _, f := range r.Findings {
		got = append(got, strings.TrimPrefix(f.Where, file)+" "+f.Field+" "+f.Severity.String())
	}
	want := []string{
		":7 spec.limited.lendablePercent error",
		":8  error", // the unknown field: its path is in the message
		":11 spec.limited.limitResponse.queuing.handSize error",
		":24 spec.rules[0].nonResourceRules[0].nonResourceURLs[0] error",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("findings at:\n%s\nwant:\n%s\n(%v)", strings.Join(got, "\n"), strings.Join(want, "\n"), r.Findings)
	}
	if f := r.Findings[1]; f.Line != 8 || f.File != file || !strings.Contains(f.Message, `unknown field "spec.limited.colour"`) {
		t.Errorf("unknown field finding: %+v", f)
	}
}

// A schema refused for other errors (invalid, or an unknown field) still
// has its level checked: a missing level is reported with the rest, not
// only once they are fixed. One that names a refused level of the input
// is not: that level's own errors say why.
func TestRefusedSchemaNamesMissingLevel(t *testing.T) {
	const manifest = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: invalid}
spec:
  matchingPrecedence: 20000
  priorityLevelConfiguration: {name: no-such-level}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: unknown-field}
spec:
  colour: blue
  priorityLevelConfiguration: {name: nor-this-one}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: names-a-refused-level}
spec:
  matchingPrecedence: 20000
  priorityLevelConfiguration: {name: broken}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: broken}
spec:
  type: Limited
  limited: {lendablePercent: 101}
`
	file := filepath.Join(t.TempDir(), "refused.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	r := files(t, file)
	var got []string
	for _, f := range r.Findings {
		got = append(got, strings.TrimPrefix(f.Where, file)+" "+f.Name+" "+f.Field)
	}
	want := []string{
		":5 invalid spec.matchingPrecedence",
		":6 invalid spec.priorityLevelConfiguration.name",
		":12  ", // the unknown field: its path is in the message
		":13 unknown-field spec.priorityLevelConfiguration.name",
		":19 names-a-refused-level spec.matchingPrecedence",
		":27 broken spec.limited.limitResponse.type",
		":27 broken spec.limited.lendablePercent",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("findings at:\n%s\nwant:\n%s\n(%v)", strings.Join(got, "\n"), strings.Join(want, "\n"), r.Findings)
	}
	for _, f := range r.Findings {
		if f.Field == "spec.priorityLevelConfiguration.name" && (f.Severity != Error || !strings.Contains(f.Message, "does not exist")) {
			t.Errorf("dangling finding: %+v", f)
		}
	}
}

// An input with nothing in it is a warning, not a clean bill of health;
// a notice about it stands in for that warning.
func TestEmptyInput(t *testing.T) {
	r := Inputs(nil, nil, Options{})
	if len(r.Findings) != 1 || r.Findings[0].Severity != Warning || !strings.Contains(r.Findings[0].Message, "nothing to check") {
		t.Fatalf("findings: %v", r.Findings)
	}
	r = Inputs(nil, nil, Options{Notices: []Notice{{Where: "empty.yaml", Message: "holds no FlowSchema or PriorityLevelConfiguration"}}})
	if len(r.Findings) != 1 || r.Findings[0].String() != "warning: empty.yaml: holds no FlowSchema or PriorityLevelConfiguration" {
		t.Fatalf("findings: %v", r.Findings)
	}
}

// Base stands for the configuration under the input: its objects are
// replaced by name, referenced, and named as the origin of a shadowing
// schema, without being linted themselves.
func TestBase(t *testing.T) {
	base, err := config.Decode([]byte(`apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: everyone}
spec:
  matchingPrecedence: 10
  priorityLevelConfiguration: {name: nowhere}
  rules:
  - subjects: [{kind: Group, group: {name: "*"}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: mine}
spec:
  type: Limited
  limited: {limitResponse: {type: Reject}}
`), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	for i := range base {
		base[i].Source = config.Source{File: "cluster", Doc: -1}
	}
	input, err := config.Decode([]byte(`apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: probes}
spec:
  matchingPrecedence: 20
  priorityLevelConfiguration: {name: mine}
  rules:
  - subjects: [{kind: Group, group: {name: "*"}}]
    nonResourceRules: [{verbs: [get], nonResourceURLs: [/healthz]}]
`), "new.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base = append(base, bootstrapObjects(bootstrap.ProfileKubernetes, false)...)
	r := Inputs(input, nil, Options{Base: base})
	// The base's dangling schema is not reported (it is not the input's),
	// and does not match: so nothing shadows probes.
	if len(r.Findings) != 0 {
		t.Fatalf("findings: %v", r.Findings)
	}
	base[0].FlowSchema.Spec.PriorityLevelConfiguration.Name = "mine"
	r = Inputs(input, nil, Options{Base: base})
	if len(r.Findings) != 1 || !strings.Contains(r.Findings[0].String(), `FlowSchema "probes": can never match: FlowSchema "everyone" (cluster), earlier`) {
		t.Fatalf("findings: %v", r.Findings)
	}
	// A suggested schema the base does not hold is not there.
	r = Inputs(input[:0:0], nil, Options{Base: base})
	if len(r.Findings) != 1 || !strings.Contains(r.Findings[0].Message, "nothing to check") {
		t.Fatalf("findings: %v", r.Findings)
	}
}
