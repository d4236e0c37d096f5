package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimAuditClusterLog runs apf sim on the cluster log of examples/sim
// (kube-apiserver's format, gzip-compressed, every stage) as a user
// would: what was replayed and what was skipped, and why, is said on
// stderr and is in -o json; --compare replays it twice and says it once.
func TestSimAuditClusterLog(t *testing.T) {
	const log = "../../examples/sim/audit-cluster.log.gz"
	code, out, errOut := runCLI(t, "sim", "--audit", log, "--speed", "2", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Requests int64
		Audit    struct {
			Files    []string
			Lines    int64
			Requests int64
			Skipped  map[string]struct {
				Lines int64
				First string
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	skipped := r.Audit.Skipped["stage-request-received"]
	if r.Requests == 0 || r.Audit.Requests != r.Requests || skipped.Lines == 0 || skipped.First != log+":1" ||
		r.Audit.Skipped["long-running"].Lines != 2 || r.Audit.Skipped["impersonation-denied"].Lines != 1 || len(r.Audit.Files) != 1 {
		t.Errorf("requests %d, audit %+v", r.Requests, r.Audit)
	}
	for _, want := range []string{"apf sim: audit log: ", " requests replayed", "stage-request-received", "long-running", "(first: " + log + ":"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}

	// A candidate configuration that gives the flooding user a schema and
	// a small level of their own: the same log replayed under both,
	// summarized once.
	candidate := filepath.Join(t.TempDir(), "candidate.yaml")
	if err := os.WriteFile(candidate, []byte(`apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: mallory
spec:
  matchingPrecedence: 500
  priorityLevelConfiguration:
    name: flood
  distinguisherMethod:
    type: ByUser
  rules:
  - subjects:
    - kind: User
      user:
        name: mallory
    resourceRules:
    - verbs: ["*"]
      apiGroups: ["*"]
      resources: ["*"]
      clusterScope: true
      namespaces: ["*"]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: flood
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse:
      type: Reject
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, "sim", "--audit", log, "--speed", "2", "--compare", candidate, "-o", "json")
	var both struct {
		A, B struct {
			Requests    int64
			FlowSchemas []struct {
				Name    string
				Arrived int64
			}
			Audit  *struct{ Requests int64 }
			Levels []struct {
				Name     string
				Rejected map[string]int64
			} `json:"priorityLevels"`
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &both) != nil {
		t.Fatalf("--compare: exit %d: %s", code, errOut)
	}
	arrived := func(schemas []struct {
		Name    string
		Arrived int64
	}, name string) int64 {
		for _, s := range schemas {
			if s.Name == name {
				return s.Arrived
			}
		}
		return -1
	}
	if both.A.Audit == nil || both.B.Audit == nil || both.A.Requests != both.B.Requests ||
		arrived(both.A.FlowSchemas, "mallory") != -1 || arrived(both.B.FlowSchemas, "mallory") < 100 {
		t.Errorf("compare: A %d requests, B %d, mallory's schema in B %d", both.A.Requests, both.B.Requests, arrived(both.B.FlowSchemas, "mallory"))
	}
	for _, l := range both.B.Levels {
		if l.Name == "flood" && l.Rejected["concurrency-limit"] == 0 {
			t.Errorf("the flood's level rejected %v", l.Rejected)
		}
	}
	if n := strings.Count(errOut, "apf sim: audit log: "); n != 1 {
		t.Errorf("the summary said %d times:\n%s", n, errOut)
	}
}

// TestSimAuditRotated: several --audit files, or a pattern, replay as
// one log, the current file last; --audit - cannot be replayed twice.
func TestSimAuditRotated(t *testing.T) {
	dir := t.TempDir()
	ev := func(id, at string) string {
		return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"` + id + `","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods","verb":"list","user":{"username":"alice","groups":["system:authenticated"]},"requestReceivedTimestamp":"2024-05-01T12:00:` + at + `Z","stageTimestamp":"2024-05-01T12:00:` + at + `.02Z"}` + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "audit-2024-05-01T12-00-10.000.log"), []byte(ev("a", "01")+ev("b", "05")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "audit.log"), []byte(ev("b", "05")+ev("c", "11")+"junk\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--audit", filepath.Join(dir, "audit-2024-05-01T12-00-10.000.log"), "--audit", filepath.Join(dir, "audit.log")},
		{"--audit", filepath.Join(dir, "audit*.log*")},
	} {
		code, out, errOut := runCLI(t, append([]string{"sim", "-o", "json"}, args...)...)
		var r struct {
			Requests int64
			Audit    struct{ Lines int64 }
		}
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Requests != 3 || r.Audit.Lines != 5 {
			t.Errorf("%q: exit %d, %+v: %s", args, code, r, errOut)
		}
		if !strings.Contains(errOut, "5 lines read: 3 requests replayed") || !strings.Contains(errOut, "duplicate") || !strings.Contains(errOut, "not-json") {
			t.Errorf("%q: stderr %s", args, errOut)
		}
	}
	code, _, errOut := runCLI(t, "sim", "--audit", "-", "--compare", filepath.Join(dir, "audit.log"))
	if code != 2 || !strings.Contains(errOut, "--audit - reads the standard input once") {
		t.Errorf("--audit - with --compare: exit %d: %s", code, errOut)
	}
	code, _, errOut = runCLI(t, "sim", "--audit", filepath.Join(dir, "nothing*.log"))
	if code != 1 || !strings.Contains(errOut, "no file matches") {
		t.Errorf("a pattern that matches nothing: exit %d: %s", code, errOut)
	}
}

// TestSimAuditStdin: --audit - reads the log from the standard input,
// gzip-compressed as it comes from an archive (ssh node cat audit.log.gz |
// apf sim --audit -).
func TestSimAuditStdin(t *testing.T) {
	gz, err := os.ReadFile("../../examples/sim/audit-cluster.log.gz")
	if err != nil {
		t.Fatal(err)
	}
	var code int
	var out, errOut string
	withStdin(t, string(gz), func() {
		code, out, errOut = runCLI(t, "sim", "--audit", "-", "-o", "json")
	})
	var r struct {
		Requests int64
		Audit    struct {
			Files   []string
			Skipped map[string]struct{ First string }
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Requests < 1000 ||
		strings.Join(r.Audit.Files, ",") != "-" || r.Audit.Skipped["stage-request-received"].First != "-:1" {
		t.Errorf("exit %d, %+v: %s", code, r, errOut)
	}
}
