package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	flowcontrolclientv1 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/internal/testing/testserve"
	"github.com/apfproject/apf/internal/tools/source"
)

// The cluster the configuration tests read: apf serve with a level and
// a schema of its own for the user ci, a schema the suggested
// system-nodes shadows, and the suggested service-accounts deleted.
const (
	clusterObjects = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: batch}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 5
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: batch}
spec:
  matchingPrecedence: 500
  priorityLevelConfiguration: {name: batch}
  rules:
  - subjects: [{kind: User, user: {name: ci}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: nodes-too}
spec:
  matchingPrecedence: 600
  priorityLevelConfiguration: {name: workload-low}
  rules:
  - subjects: [{kind: Group, group: {name: system:nodes}}]
    resourceRules: [{verbs: [get], apiGroups: [""], resources: [pods], namespaces: ["*"]}]
`
	// nodesFixed is nodes-too ahead of system-nodes.
	nodesFixed = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: nodes-too}
spec:
  matchingPrecedence: 400
  priorityLevelConfiguration: {name: workload-low}
  rules:
  - subjects: [{kind: Group, group: {name: system:nodes}}]
    resourceRules: [{verbs: [get], apiGroups: [""], resources: [pods], namespaces: ["*"]}]
`
	// ciWorkload is the user ci reading pods, more than batch's seats
	// can take.
	ciWorkload = `duration: 2s
seed: 1
clients:
- name: ci
  user: ci
  groups: [system:authenticated]
  arrival: {process: constant, rate: 400}
  requests:
  - {verb: list, resource: pods, namespace: shop, share: 1}
`
	// toGlobalDefault sends ci's schema to global-default.
	toGlobalDefault = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: batch}
spec:
  matchingPrecedence: 500
  priorityLevelConfiguration: {name: global-default}
  rules:
  - subjects: [{kind: User, user: {name: ci}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`
)

// startCluster runs apf serve with clusterObjects created and the
// suggested service-accounts deleted, and returns a kubeconfig for it
// whose context is "apf".
func startCluster(t *testing.T) (*testserve.Server, string) {
	t.Helper()
	srv := testserve.Start(t, nil)
	kc := srv.Kubeconfig(t, "apf", testserve.AdminToken)
	rc, _, err := source.Connect(source.ClusterOptions{Kubeconfig: kc})
	if err != nil {
		t.Fatal(err)
	}
	c, err := flowcontrolclientv1.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	objs, err := config.Decode([]byte(clusterObjects), "cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.PriorityLevel != nil {
			_, err = c.PriorityLevelConfigurations().Create(ctx, o.PriorityLevel, metav1.CreateOptions{})
		} else {
			_, err = c.FlowSchemas().Create(ctx, o.FlowSchema, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := c.FlowSchemas().Delete(ctx, "service-accounts", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	return srv, kc
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// withStdin runs f with content as the standard input.
func withStdin(t *testing.T, content string, f func()) {
	t.Helper()
	in := writeFile(t, "stdin", content)
	fh, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	saved := os.Stdin
	os.Stdin = fh
	defer func() { os.Stdin = saved }()
	f()
}

// check, classify and sim read a cluster's configuration through a
// kubeconfig and nothing else, as an admin runs them; files go over it.
func TestCommandsReadACluster(t *testing.T) {
	srv, kc := startCluster(t)
	clusterCount := len(bootstrap.FlowSchemas()) + len(bootstrap.PriorityLevels()) + 3 - 1
	readLine := fmt.Sprintf("read cluster apf (%s, flowcontrol.apiserver.k8s.io/v1): %d FlowSchemas, %d PriorityLevelConfigurations\n",
		srv.URL, len(bootstrap.FlowSchemas())+2-1, len(bootstrap.PriorityLevels())+1)

	t.Run("check", func(t *testing.T) {
		code, out, errOut := runCLI(t, "check", "--kubeconfig", kc)
		want := readLine +
			`warning: cluster apf: FlowSchema "nodes-too": can never match: FlowSchema "system-nodes", earlier in the matching order (precedence 500 vs 600), matches every request it matches; ` +
			`for example, apf classify --as alice --as-group system:nodes get /api/v1/namespaces/default/pods/example goes to "system-nodes"` + "\n" +
			fmt.Sprintf("%d objects checked: 0 errors, 1 warning\n", clusterCount)
		if code != 0 || out != want {
			t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr:\n%s", code, out, want, errOut)
		}
		if code, _, _ := runCLI(t, "check", "--strict", "--kubeconfig", kc); code != 1 {
			t.Errorf("--strict: exit %d", code)
		}

		// A file over the cluster is what is checked.
		fixed := writeFile(t, "nodes.yaml", nodesFixed)
		code, out, errOut = runCLI(t, "check", "--kubeconfig", kc, "-o", "json", "-f", fixed)
		var doc struct {
			Objects, Errors, Warnings int
			Sources                   []source.Layer
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 || doc.Objects != 1 || doc.Warnings != 0 || len(doc.Sources) != 3 ||
			doc.Sources[1].Kind != source.Cluster || doc.Sources[1].APIVersion != "v1" ||
			strings.Join(doc.Sources[2].Replaced, ",") != "FlowSchema nodes-too (cluster apf)" {
			t.Errorf("check of a file over the cluster: exit %d, %+v\n%s%s", code, doc, out, errOut)
		}
	})

	t.Run("check empty", func(t *testing.T) {
		withStdin(t, "# nothing yet\n", func() {
			code, out, _ := runCLI(t, "check", "-")
			want := "read <stdin>: 0 FlowSchemas, 0 PriorityLevelConfigurations\n" +
				"warning: <stdin>: holds no FlowSchema or PriorityLevelConfiguration\n" +
				"0 objects checked: 0 errors, 1 warning\n"
			// Nothing read, nothing checked: exit 1, with --strict or not.
			if code != 1 || out != want {
				t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", code, out, want)
			}
		})
	})

	t.Run("classify", func(t *testing.T) {
		code, out, errOut := runCLI(t, "classify", "--kubeconfig", kc, "--as", "ci", "get", "/api/v1/namespaces/shop/pods", "-o", "json")
		var ex struct {
			FlowSchema    struct{ Name string }
			PriorityLevel struct{ Name string }
		}
		if err := json.Unmarshal([]byte(out), &ex); err != nil || code != 0 || ex.FlowSchema.Name != "batch" || ex.PriorityLevel.Name != "batch" {
			t.Errorf("exit %d, %+v, %v\n%s%s", code, ex, err, out, errOut)
		}
		// The samples: the CI pipeline's service account goes to
		// global-default, service-accounts being gone.
		code, out, _ = runCLI(t, "classify", "--kubeconfig", kc, "-o", "wide")
		if code != 0 || !strings.Contains(out, "Classifying sample requests against cluster apf over the mandatory configuration.") {
			t.Fatalf("samples: exit %d\n%s", code, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "CI pipeline") && !strings.Contains(line, " global-default ") {
				t.Errorf("CI pipeline: %s", line)
			}
		}
		// A file over the cluster sends ci elsewhere.
		code, out, _ = runCLI(t, "classify", "--kubeconfig", kc, "--config", writeFile(t, "gd.yaml", toGlobalDefault), "--as", "ci", "get", "/api/v1/pods", "-o", "json")
		if err := json.Unmarshal([]byte(out), &ex); err != nil || code != 0 || ex.FlowSchema.Name != "batch" || ex.PriorityLevel.Name != "global-default" {
			t.Errorf("with --config: exit %d, %+v\n%s", code, ex, out)
		}
	})

	t.Run("sim", func(t *testing.T) {
		w := writeFile(t, "ci.yaml", ciWorkload)
		candidate := writeFile(t, "candidate.yaml", toGlobalDefault)
		code, out, errOut := runCLI(t, "sim", "--kubeconfig", kc, "--compare", candidate, "-o", "json", w)
		var pair struct {
			A, B struct {
				Name        string
				FlowSchemas []struct {
					Name, PriorityLevel string
					Arrived             int64
				}
				PriorityLevels []struct {
					Name     string
					Rejected map[string]int64
				}
			}
		}
		if err := json.Unmarshal([]byte(out), &pair); err != nil || code != 0 {
			t.Fatalf("exit %d, %v\n%s", code, err, errOut)
		}
		if pair.A.Name != "apf" || pair.B.Name != "apf+candidate.yaml" {
			t.Errorf("names %q and %q", pair.A.Name, pair.B.Name)
		}
		schemaLevel := func(r struct {
			Name, PriorityLevel string
			Arrived             int64
		}) string {
			return fmt.Sprintf("%s->%s:%d", r.Name, r.PriorityLevel, r.Arrived)
		}
		var a, b []string
		for _, s := range pair.A.FlowSchemas {
			if s.Arrived > 0 {
				a = append(a, schemaLevel(s))
			}
		}
		for _, s := range pair.B.FlowSchemas {
			if s.Arrived > 0 {
				b = append(b, schemaLevel(s))
			}
		}
		if len(a) != 1 || !strings.HasPrefix(a[0], "batch->batch:") || len(b) != 1 || !strings.HasPrefix(b[0], "batch->global-default:") {
			t.Errorf("schemas with arrivals: A %v, B %v", a, b)
		}
		rejected := func(levels []struct {
			Name     string
			Rejected map[string]int64
		}, name string) int64 {
			for _, l := range levels {
				if l.Name == name {
					return l.Rejected["concurrency-limit"]
				}
			}
			return -1
		}
		if r := rejected(pair.A.PriorityLevels, "batch"); r <= 0 {
			t.Errorf("the cluster's Reject level rejected %d", r)
		}
	})
}

// Every problem of a manifest and of a workload is reported, each at its
// file:line and field.
func TestErrorsNameFileAndLine(t *testing.T) {
	manifest := writeFile(t, "bad.yaml", `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: p}
spec:
  type: Limited
  limited:
    lendablePercent: 101
    limitResponse:
      type: Queue
      queuing: {queues: 8, handSize: 70}
`)
	code, out, _ := runCLI(t, "check", manifest)
	for _, want := range []string{
		manifest + `:7: PriorityLevelConfiguration "p": spec.limited.lendablePercent: Invalid value: 101`,
		manifest + `:10: PriorityLevelConfiguration "p": spec.limited.limitResponse.queuing.handSize: Invalid value: 70`,
	} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("check: exit %d, no %q in:\n%s", code, want, out)
		}
	}
	w := writeFile(t, "w.yaml", "duration: 5s\nclients:\n- name: a\n  user: alice\n  arrival: {process: poisson, rate: -1}\n  requests:\n  - {verb: fetch, resource: pods, share: 1}\n")
	code, _, errOut := runCLI(t, "sim", "--config", manifest, w)
	if code != 1 || !strings.Contains(errOut, manifest+`:7: PriorityLevelConfiguration "p": spec.limited.lendablePercent`) || !strings.Contains(errOut, manifest+":10:") {
		t.Errorf("sim --config: exit %d\n%s", code, errOut)
	}
	code, _, errOut = runCLI(t, "sim", w)
	if code != 1 || !strings.Contains(errOut, w+":5: clients[0].arrival.rate: must be positive") || !strings.Contains(errOut, w+`:7: clients[0].requests[0].verb: unknown verb "fetch"`) {
		t.Errorf("sim workload: exit %d\n%s", code, errOut)
	}
}
