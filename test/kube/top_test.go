package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// apf top reads any APF server the same way: these tests run bin/apf top
// -o json through a kubeconfig against the real kube-apiserver, and
// against apf serve and the gateway beside it.

// topReport is the part of apf top's JSON document the tests read.
type topReport struct {
	Server          string  `json:"server"`
	IntervalSeconds float64 `json:"intervalSeconds"`
	Levels          []struct {
		Name                string   `json:"name"`
		NominalSeats        *float64 `json:"nominalSeats"`
		CurrentSeats        *float64 `json:"currentSeats"`
		ExecutingRequests   *float64 `json:"executingRequests"`
		ActiveQueues        *int     `json:"activeQueues"`
		DispatchedPerSecond *float64 `json:"dispatchedPerSecond"`
	} `json:"levels"`
	Flows []struct {
		PriorityLevel     string `json:"priorityLevel"`
		FlowSchema        string `json:"flowSchema"`
		ExecutingRequests int    `json:"executingRequests"`
	} `json:"flows"`
	Missing []struct {
		Part   string `json:"part"`
		Path   string `json:"path"`
		Status int    `json:"status"`
		Error  string `json:"error"`
		Fix    string `json:"fix"`
	} `json:"missing"`
	Notes []string `json:"notes"`
}

// topKubeconfig writes a kubeconfig for s with a context per user of the
// token file, admin's current.
func topKubeconfig(t *testing.T, s *server) string {
	t.Helper()
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q, certificate-authority: %q}
users:
- name: admin
  user: {token: %s}
- name: bob
  user: {token: %s}
contexts:
- name: admin
  context: {cluster: c, user: admin}
- name: bob
  context: {cluster: c, user: bob}
current-context: admin
`, s.url, s.caFile, adminToken, readerToken)
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runTop runs bin/apf top -o json and returns its document and exit
// status.
func runTop(t *testing.T, e *env, kubeconfig string, args ...string) (topReport, int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(e.binDir, "apf"), append([]string{"top", "-o", "json", "--kubeconfig", kubeconfig, "--interval", "1s"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("bin/apf top: %v", err)
	}
	t.Logf("bin/apf top %v: exit %d\n%s", args, code, out.String())
	var r topReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("bin/apf top %v: exit %d, %v; stdout:\n%s\nstderr:\n%s", args, code, err, out.String(), errOut.String())
	}
	return r, code, errOut.String()
}

// bootstrapLevels are the levels every server has from its first start.
var bootstrapLevels = []string{"catch-all", "exempt", "global-default", "leader-election", "node-high", "system", "workload-high", "workload-low"}

// The admin reads everything of each server: every bootstrap level with
// its seats and rates, and the flows (at least apf top's own requests,
// executing in exempt when the dump is taken), with no line of a dump
// skipped.
func TestTopReadsEveryServer(t *testing.T) {
	e := testEnv(t)
	for _, s := range []*server{e.kube, e.apf, e.gateway} {
		t.Run(s.name, func(t *testing.T) {
			r, code, errOut := runTop(t, e, topKubeconfig(t, s))
			if code != 0 || len(r.Missing) != 0 || len(r.Notes) != 0 {
				t.Fatalf("exit %d, missing %+v, notes %v, stderr %s", code, r.Missing, r.Notes, errOut)
			}
			if r.Server != s.url || r.IntervalSeconds <= 0 {
				t.Errorf("server %q, interval %v", r.Server, r.IntervalSeconds)
			}
			names := map[string]bool{}
			for _, l := range r.Levels {
				names[l.Name] = true
				// Levels other tests of the package created come and go
				// (a deleted one may linger in the metrics and not in the
				// dump); the bootstrap levels are there throughout.
				if slices.Contains(bootstrapLevels, l.Name) &&
					(l.NominalSeats == nil || l.CurrentSeats == nil || l.ExecutingRequests == nil || l.ActiveQueues == nil || l.DispatchedPerSecond == nil) {
					t.Errorf("level %s lacks a figure: %+v", l.Name, l)
				}
			}
			for _, want := range bootstrapLevels {
				if !names[want] {
					t.Errorf("no level %s in %v", want, names)
				}
			}
			found := false
			for _, f := range r.Flows {
				found = found || (f.PriorityLevel == "exempt" && f.FlowSchema == "exempt" && f.ExecutingRequests > 0)
			}
			if !found {
				t.Errorf("apf top's own requests are not among the flows: %+v", r.Flows)
			}
		})
	}
}

// On the kube-apiserver, bob may read neither /metrics nor the dumps
// (RBAC): apf top names each with the kube-apiserver's message and the
// permission it needs, and fails. Bound to the ClusterRole
// system:monitoring, as apf top's advice says, bob reads /metrics and
// sees the levels, the dumps still named as missing.
func TestTopForbiddenOnKubeAPIServer(t *testing.T) {
	e := testEnv(t)
	kc := topKubeconfig(t, e.kube)
	r, code, errOut := runTop(t, e, kc, "--context", "bob")
	if code != 1 || !strings.Contains(errOut, "nothing could be read") || len(r.Missing) != 4 {
		t.Fatalf("bob: exit %d, stderr %q, missing %+v", code, errOut, r.Missing)
	}
	for _, m := range r.Missing {
		if m.Status != http.StatusForbidden || !strings.Contains(m.Error, fmt.Sprintf(`forbidden: User "bob" cannot get path %q`, m.Path)) ||
			!strings.Contains(m.Fix, "non-resource URL") {
			t.Errorf("bob: %+v", m)
		}
	}

	binding := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"kube-test-top-monitoring"},
"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"system:monitoring"},
"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"bob"}]}`
	const bindings = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
	if a, err := e.kube.send(request{method: http.MethodPost, path: bindings, body: binding}); err != nil || a.code != http.StatusCreated {
		t.Fatalf("bind bob to system:monitoring: %v %d %s", err, a.code, a.raw)
	}
	t.Cleanup(func() {
		if a, err := e.kube.send(request{method: http.MethodDelete, path: bindings + "/kube-test-top-monitoring"}); err != nil || a.code != http.StatusOK {
			t.Errorf("delete the binding: %v %d %s", err, a.code, a.raw)
		}
	})
	// RBAC decisions come from an informer cache.
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, err := e.kube.send(request{method: http.MethodGet, path: "/metrics", token: readerToken})
		if err == nil && a.code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob still cannot read /metrics after the binding (last answer %d)", a.code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r, code, errOut = runTop(t, e, kc, "--context", "bob")
	if code != 0 || len(r.Missing) != 3 || len(r.Levels) < len(bootstrapLevels) || len(r.Flows) != 0 {
		t.Fatalf("bob with system:monitoring: exit %d, stderr %q, missing %+v, %d levels, %d flows", code, errOut, r.Missing, len(r.Levels), len(r.Flows))
	}
	for _, m := range r.Missing {
		if m.Status != http.StatusForbidden || !strings.HasPrefix(m.Path, "/debug/api_priority_and_fairness/") ||
			!strings.Contains(m.Fix, `nonResourceURLs: ["/debug/api_priority_and_fairness/*"]`) {
			t.Errorf("bob with system:monitoring: %+v", m)
		}
	}
}
