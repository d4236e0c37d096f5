package observability

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The rules as a prometheus-operator PrometheusRule, for clusters whose
// Prometheus loads its rules from such objects: generated from the rules
// file, text and comments kept, so that the two never differ.

var update = flag.Bool("update", false, "rewrite the generated files under deploy/observability")

var prometheusRuleFile = filepath.Join("..", "..", "deploy", "observability", "prometheus", "prometheusrule.yaml")

const prometheusRuleHeader = `# Generated from apf-rules.yaml by ` + "`go test -run TestPrometheusRule -update`" + ` in
# test/observability: do not edit, edit apf-rules.yaml and regenerate.
#
# The rules of apf-rules.yaml as a prometheus-operator PrometheusRule. A
# Prometheus run by the operator loads only the PrometheusRules its
# ruleSelector matches: add the label it wants (kube-prometheus-stack's
# default is release: <its Helm release name>) when you apply this.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: apf
  labels:
    app.kubernetes.io/name: apf
    app.kubernetes.io/component: monitoring
spec:
`

// prometheusRule returns the PrometheusRule made of the rules file: the
// header, then the file from its "groups:" line on, indented under spec.
func prometheusRule(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("\ngroups:\n"))
	if i < 0 {
		t.Fatalf("%s: no top-level groups: line", rulesFile)
	}
	var out bytes.Buffer
	out.WriteString(prometheusRuleHeader)
	for line := range strings.Lines(string(b[i+1:])) {
		if strings.TrimSpace(line) != "" {
			out.WriteString("  ")
		}
		out.WriteString(line)
	}
	return out.Bytes()
}

// TestPrometheusRule: prometheusrule.yaml is the rules file, as generated;
// its spec.groups decode to exactly the rules file's groups.
func TestPrometheusRule(t *testing.T) {
	want := prometheusRule(t)
	if *update {
		if err := os.WriteFile(prometheusRuleFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(prometheusRuleFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what apf-rules.yaml gives: run `go test -run TestPrometheusRule -update` in test/observability", prometheusRuleFile)
	}

	var rules struct {
		Groups any `yaml:"groups"`
	}
	var pr struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Spec       struct {
			Groups any `yaml:"groups"`
		} `yaml:"spec"`
	}
	rb, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(rb, &rules); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(got, &pr); err != nil {
		t.Fatal(err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Errorf("apiVersion %q kind %q", pr.APIVersion, pr.Kind)
	}
	if rules.Groups == nil || !reflect.DeepEqual(pr.Spec.Groups, rules.Groups) {
		t.Error("spec.groups differ from the rules file's groups")
	}
}
