package main

import (
	"strings"
	"testing"
)

// apf classify, sim and check take apf serve's --profile and
// --concurrency-limit: the service profile's levels, the limit as given;
// the limit flag and kube-apiserver's two exclude each other.
func TestToolsServiceProfileAndConcurrencyLimit(t *testing.T) {
	code, out, errOut := runCLI(t, "classify", "--profile", "service", "--concurrency-limit", "20", "--as", "alice", "get", "/work")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, want := range []string{
		"FlowSchema:            service-default\n",
		"Priority Level:        service-default\n",
		"  Seats:               20 nominal\n  Server Limit:        20 seats, --concurrency-limit 20\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "classify", "--profile", "service", "--concurrency-limit", "100", "get", "/readyz")
	if code != 0 || !strings.Contains(out, "Priority Level:        service-health\n") || !strings.Contains(out, "  Seats:               1 nominal\n") {
		t.Errorf("a health check: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "classify", "--profile", "service", "--concurrency-limit", "100", "--as", "alice", "get", "/work")
	if code != 0 || !strings.Contains(out, "  Seats:               97 nominal\n") {
		t.Errorf("limit 100: exit %d\n%s", code, out)
	}

	for _, args := range [][]string{
		{"classify", "--concurrency-limit", "20", "--max-requests-inflight", "20", "get", "/work"},
		{"classify", "--concurrency-limit", "20", "--max-mutating-requests-inflight", "0", "get", "/work"},
	} {
		code, _, errOut := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "--concurrency-limit is the whole server concurrency limit: it cannot be combined with --max-requests-inflight or --max-mutating-requests-inflight") {
			t.Errorf("%q: exit %d\n%s", args, code, errOut)
		}
	}
	if code, _, errOut := runCLI(t, "classify", "--concurrency-limit", "0", "get", "/work"); code != exitUsage || !strings.Contains(errOut, "--concurrency-limit must be positive") {
		t.Errorf("--concurrency-limit 0: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "classify", "--profile", "nginx", "get", "/work"); code != exitUsage || !strings.Contains(errOut, "kubernetes, service") {
		t.Errorf("--profile nginx: exit %d\n%s", code, errOut)
	}

	// A schema naming the service profile's level is checked over that
	// profile's objects, where the level exists.
	fs := writeFile(t, "fs.yaml", `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: batch
spec:
  priorityLevelConfiguration:
    name: service-default
  matchingPrecedence: 500
  distinguisherMethod:
    type: ByUser
  rules:
  - subjects:
    - kind: Group
      group:
        name: batch
    nonResourceRules:
    - verbs: ["*"]
      nonResourceURLs: ["/batch/*"]
`)
	if code, out, errOut := runCLI(t, "check", "--profile", "service", fs); code != 0 {
		t.Errorf("check --profile service: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "check", fs); code == 0 || !strings.Contains(out, `priority level "service-default" does not exist`) {
		t.Errorf("check over kube-apiserver's objects: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "check", "--print-bootstrap", "--profile", "service")
	if code != 0 || !strings.Contains(out, "name: service-default\n") || strings.Contains(out, "name: global-default\n") {
		t.Errorf("check --print-bootstrap --profile service: exit %d\n%s", code, out)
	}
}
