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

func TestValidInputs(t *testing.T) {
	r := Paths([]string{"testdata/valid"}, Options{})
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
		{"not YAML", "{{{", Error, "document 1"},
		{"wrong kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", Error, "Pod"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "in.yaml")
			if err := os.WriteFile(file, []byte(c.manifest), 0o600); err != nil {
				t.Fatal(err)
			}
			r := Paths([]string{file}, Options{})
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
	r := Paths([]string{file}, Options{})
	var got []string
	for _, f := range r.Findings {
		got = append(got, f.String())
	}
	if len(got) != 2 ||
		!strings.Contains(got[0], `FlowSchema "narrow": can never match: FlowSchema "broad", earlier`) ||
		!strings.Contains(got[1], `FlowSchema "broad": defined again; first defined at `+file+": document 1") {
		t.Fatalf("findings:\n%s", strings.Join(got, "\n"))
	}
}

func TestUnreadablePaths(t *testing.T) {
	dir := t.TempDir()
	r := Paths([]string{filepath.Join(dir, "missing.yaml"), dir}, Options{})
	if r.Count(Error) != 2 {
		t.Fatalf("findings: %v", r.Findings)
	}
}
