package server

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const ssaFlowSchema = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: ssa-fs
  labels: {owner: platform}
spec:
  priorityLevelConfiguration: {name: workload-low}
  matchingPrecedence: 800
  rules:
  - subjects:
    - kind: Group
      group: {name: batch}
    nonResourceRules:
    - verbs: [get]
      nonResourceURLs: ["/batch/*"]
`

// managedBy returns the managed-fields entries of an object, read with
// kubectl, by manager name.
func managedBy(t *testing.T, k *kubectl, resource, name string) map[string]metav1.ManagedFieldsEntry {
	t.Helper()
	out := k.must("", "get", resource, name, "-o", "json", "--show-managed-fields")
	if i := strings.IndexByte(out, '{'); i > 0 {
		out = out[i:] // after the warnings of a deprecated version
	}
	var obj struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("kubectl get %s %s: %v\n%s", resource, name, err, out)
	}
	m := map[string]metav1.ManagedFieldsEntry{}
	for _, mf := range obj.Metadata.ManagedFields {
		m[mf.Manager+"/"+string(mf.Operation)+"/"+mf.Subresource] = mf
	}
	return m
}

// TestKubectlServerSideApply drives server-side apply as a GitOps tool or
// an administrator does, with kubectl, against apf serve on its own and
// as a gateway in front of a Kubernetes API server and of another API:
// create and update by apply, a second manager's conflict and
// --force-conflicts, managed fields kept by every other write, the
// maintenance writers' own entries, and older versions. Each mode also
// checks what else kubectl shows of the API as kube-apiserver would: the
// deprecation warning of an older version, FlowSchemas listed in matching
// order, and validation messages.
func TestKubectlServerSideApply(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and runs kubectl")
	}
	for _, mode := range []string{"standalone", "gateway to a Kubernetes API", "gateway to another API"} {
		t.Run(mode, func(t *testing.T) {
			opts := DefaultOptions()
			opts.DataDir = filepath.Join(t.TempDir(), "data")
			switch mode {
			case "gateway to a Kubernetes API":
				_, opts.Upstream = kubeStandIn(t)
			case "gateway to another API":
				opts.Upstream = htmlEverywhere(t)
			}
			checkKubectlServerSideApply(t, startServer(t, opts))
		})
	}
}

func checkKubectlServerSideApply(t *testing.T, srv *e2eServer) {
	k := newKubectl(t, srv, adminToken)

	// Apply creates, then updates.
	if out := k.must(ssaFlowSchema, "apply", "--server-side", "-f", "-"); !strings.Contains(out, "flowschema.flowcontrol.apiserver.k8s.io/ssa-fs serverside-applied") {
		t.Errorf("apply: %s", out)
	}
	k.must(strings.Replace(ssaFlowSchema, "800", "810", 1), "apply", "--server-side", "-f", "-")
	if out := k.must("", "get", "flowschema", "ssa-fs", "-o", "jsonpath={.spec.matchingPrecedence} {.metadata.generation}"); out != "810 2" {
		t.Errorf("precedence and generation %q, want \"810 2\"", out)
	}
	mf := managedBy(t, k, "flowschema", "ssa-fs")
	if e, ok := mf["kubectl/Apply/"]; !ok || e.APIVersion != "flowcontrol.apiserver.k8s.io/v1" || !strings.Contains(string(e.FieldsV1.GetRawBytes()), `"f:matchingPrecedence"`) {
		t.Errorf("kubectl's apply entry: %+v", mf)
	}

	// A second manager wanting another value conflicts; kubectl shows
	// the API server's message and its advice.
	other := strings.Replace(ssaFlowSchema, "800", "900", 1)
	out, ok := k.run(other, "apply", "--server-side", "--field-manager=gitops", "-f", "-")
	if ok || !strings.Contains(out, `Apply failed with 1 conflict: conflict with "kubectl": .spec.matchingPrecedence`) {
		t.Errorf("conflicting apply: ok=%v\n%s", ok, out)
	}
	k.must(other, "apply", "--server-side", "--field-manager=gitops", "--force-conflicts", "-f", "-")
	if out := k.must("", "get", "flowschema", "ssa-fs", "-o", "jsonpath={.spec.matchingPrecedence}"); out != "900" {
		t.Errorf("after --force-conflicts: precedence %q", out)
	}
	mf = managedBy(t, k, "flowschema", "ssa-fs")
	if !strings.Contains(string(mf["gitops/Apply/"].FieldsV1.GetRawBytes()), `"f:matchingPrecedence"`) ||
		strings.Contains(string(mf["kubectl/Apply/"].FieldsV1.GetRawBytes()), `"f:matchingPrecedence"`) {
		t.Errorf("ownership after the forced apply: %+v", mf)
	}
	// A dry run changes nothing.
	k.must(strings.Replace(other, "900", "901", 1), "apply", "--server-side", "--field-manager=gitops", "--dry-run=server", "-f", "-")
	if out := k.must("", "get", "flowschema", "ssa-fs", "-o", "jsonpath={.spec.matchingPrecedence}"); out != "900" {
		t.Errorf("after a dry run: precedence %q", out)
	}

	// Other writes keep the managed fields, each under its own manager.
	k.must("", "label", "flowschema", "ssa-fs", "tier=2")
	k.must("", "patch", "flowschema", "ssa-fs", "--type=merge", "-p", `{"spec":{"matchingPrecedence":950}}`)
	mf = managedBy(t, k, "flowschema", "ssa-fs")
	for _, want := range []string{"kubectl/Apply/", "gitops/Apply/", "kubectl-label/Update/", "kubectl-patch/Update/"} {
		if _, ok := mf[want]; !ok {
			t.Errorf("no managed-fields entry %s: %v", want, keys(mf))
		}
	}
	if strings.Contains(string(mf["gitops/Apply/"].FieldsV1.GetRawBytes()), `"f:matchingPrecedence"`) {
		t.Errorf("a patch took the field, but gitops still owns it: %s", mf["gitops/Apply/"].FieldsV1.GetRawBytes())
	}

	// An older version: the entry names the version it was written in.
	v1beta3 := strings.Replace(strings.Replace(ssaFlowSchema, "/v1\n", "/v1beta3\n", 1), "ssa-fs", "ssa-old", 1)
	k.must(v1beta3, "apply", "--server-side", "-f", "-")
	if e := managedBy(t, k, "flowschemas.v1beta3.flowcontrol.apiserver.k8s.io", "ssa-old")["kubectl/Apply/"]; e.APIVersion != "flowcontrol.apiserver.k8s.io/v1beta3" {
		t.Errorf("v1beta3 apply entry: %+v", e)
	}

	// The maintenance writers' entries, named as kube-apiserver names
	// them: the producer's updates of the bootstrap objects, and the
	// consumer's apply of each FlowSchema's Dangling condition.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mf = managedBy(t, k, "flowschema", "ssa-fs")
		if _, ok := mf["api-priority-and-fairness-config-consumer-v1/Apply/status"]; ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if e, ok := mf["api-priority-and-fairness-config-consumer-v1/Apply/status"]; !ok || !strings.Contains(string(e.FieldsV1.GetRawBytes()), `k:{\"type\":\"Dangling\"}`) {
		t.Errorf("no consumer entry for the Dangling condition: %v", keys(mf))
	}
	if _, ok := managedBy(t, k, "prioritylevelconfiguration", "workload-low")["api-priority-and-fairness-config-producer-v1/Update/"]; !ok {
		t.Errorf("no producer entry on a suggested level")
	}

	// An older version carries kube-apiserver's deprecation warning, which
	// kubectl prints.
	if out := k.must("", "get", "flowschemas.v1beta3.flowcontrol.apiserver.k8s.io", "ssa-old", "-o", "name"); !strings.Contains(out,
		"Warning: flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema is deprecated in v1.29+, unavailable in v1.32+; use flowcontrol.apiserver.k8s.io/v1 FlowSchema") {
		t.Errorf("no deprecation warning: %s", out)
	}
	// kubectl get lists FlowSchemas in matching order: precedence, then name.
	var last int
	for i, row := range fields(k.must("", "get", "flowschemas", "--no-headers")) {
		p, err := strconv.Atoi(row[2])
		if err != nil || p < last {
			t.Errorf("row %d %v is out of matching order (after precedence %d)", i, row, last)
		}
		last = p
	}
	// A validation message, as kube-apiserver words it.
	bad := strings.Replace(strings.Replace(ssaFlowSchema, "ssa-fs", "ssa-bad", 1), "matchingPrecedence: 800", "matchingPrecedence: 20000", 1)
	if out, ok := k.run(bad, "apply", "--server-side", "-f", "-"); ok || !strings.Contains(out, `The FlowSchema "ssa-bad" is invalid: spec.matchingPrecedence: Invalid value: 20000: must not be greater than 10000`) {
		t.Errorf("invalid apply: ok=%v\n%s", ok, out)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
