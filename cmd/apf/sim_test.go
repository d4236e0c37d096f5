package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const simWorkload = `duration: 5s
seed: 3
clients:
  - name: flood
    user: mallory
    groups: [system:authenticated]
    arrival: {process: poisson, rate: 300}
    requests:
      - {verb: list, resource: pods, share: 1, listSize: 2000}
  - name: alice
    user: alice
    groups: [system:authenticated]
    arrival: {process: constant, rate: 5}
    requests:
      - {verb: get, resource: pods, namespace: default, name: web, share: 1}
`

// simConfigB gives global-default a level of its own with more seats.
const simConfigB = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: roomy}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 100
    limitResponse: {type: Queue, queuing: {queues: 64, handSize: 6, queueLengthLimit: 50}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: FlowSchema
metadata: {name: everyone}
spec:
  priorityLevelConfiguration: {name: roomy}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: system:authenticated}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`

func simFiles(t *testing.T) (workload, configB string) {
	t.Helper()
	workload, configB = filepath.Join(t.TempDir(), "w.yaml"), filepath.Join(t.TempDir(), "b.yaml")
	if err := os.WriteFile(workload, []byte(simWorkload), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(configB, []byte(simConfigB), 0o600); err != nil {
		t.Fatal(err)
	}
	return workload, configB
}

func TestSimTable(t *testing.T) {
	w, _ := simFiles(t)
	// Flags after the workload are flags too.
	code, out, errOut := runCLI(t, "sim", w, "--max-requests-inflight", "20", "--max-mutating-requests-inflight", "10")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"bootstrap: ", "server concurrency limit 30 seats, seed 3", "Priority levels", "global-default", "mallory", "alice"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestSimJSONSeedAndReport(t *testing.T) {
	w, _ := simFiles(t)
	dir := filepath.Join(t.TempDir(), "report")
	code, out, errOut := runCLI(t, "sim", "-o", "json", "--seed", "9", "--report", dir, "--workload", w)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Name     string
		Seed     int64
		Requests int64
		Levels   []struct{ Name string } `json:"priorityLevels"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Name != "bootstrap" || r.Seed != 9 || r.Requests < 1000 || len(r.Levels) < 8 {
		t.Errorf("result: %+v", r)
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil || !strings.Contains(string(page), "<svg") || !strings.Contains(errOut, "report written to") {
		t.Errorf("report: %v, stderr %q", err, errOut)
	}
}

func TestSimCompare(t *testing.T) {
	w, b := simFiles(t)
	code, out, errOut := runCLI(t, "sim", "--compare", b, w)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"A  bootstrap:", "B  b.yaml:", "REJECTED B", "WAIT P99 B", "roomy", "everyone"} {
		if !strings.Contains(out, want) {
			t.Errorf("compare output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = runCLI(t, "sim", "-o", "wide", "--compare", b, w)
	if code != 0 {
		t.Fatalf("-o wide: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"A  bootstrap:", "DISPATCHED B", "SEAT UTIL B", "Δ", "roomy", "everyone"} {
		if !strings.Contains(out, want) {
			t.Errorf("-o wide compare output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = runCLI(t, "sim", "-o", "json", "--config", b, "--compare", filepath.Dir(b), w)
	var pair struct{ A, B struct{ Name string } }
	if code != 0 || json.Unmarshal([]byte(out), &pair) != nil || pair.A.Name != "b.yaml" || pair.B.Name != filepath.Base(filepath.Dir(b)) {
		t.Errorf("json compare: exit %d, %+v, %s", code, pair, errOut)
	}
}

func TestSimErrors(t *testing.T) {
	w, _ := simFiles(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("kind: Nope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	quiet := filepath.Join(t.TempDir(), "quiet.yaml")
	if err := os.WriteFile(quiet, []byte("duration: 1s\nclients:\n- name: late\n  user: late\n  arrival: {process: constant, rate: 1, start: 5s}\n  requests:\n  - {verb: list, resource: pods, namespace: a, share: 1, serviceTime: {constant: 10ms}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{}, 2, "a workload file or --audit FILE is required"},
		{[]string{w, w}, 2, "one workload file at most"},
		{[]string{"--audit", "x.jsonl", w}, 2, "not both"},
		{[]string{"-o", "xml", w}, 2, `"-o, --output" flag: must be one of: text, wide, json, yaml`},
		{[]string{"--speed", "0", "--audit", "x.jsonl"}, 2, "--speed"},
		{[]string{"--max-requests-inflight", "0", "--max-mutating-requests-inflight", "0", w}, 2, "must be positive"},
		{[]string{"--seed", "1", "--audit", "x.jsonl"}, 2, "workloads only"},
		{[]string{"--no-such-flag", w}, 2, "no-such-flag"},
		{[]string{filepath.Join(empty, "missing.yaml")}, 1, "missing.yaml"},
		{[]string{"--config", bad, w}, 1, "bad.yaml"},
		{[]string{"--config", empty, w}, 0, "apf sim: warning: " + empty + ": holds no .yaml, .yml or .json files"},
		// --strict, for CI: the same warning fails the run.
		{[]string{"--strict", "--config", empty, w}, 1, "apf sim: 1 warning above, and --strict fails on warnings"},
		{[]string{"--config", "-", "--compare", "-", w}, 2, "can be read once"},
		{[]string{"--compare", filepath.Join(empty, "nope"), w}, 1, "nope"},
		{[]string{"--audit", filepath.Join(empty, "missing.jsonl")}, 1, "apf sim: "},
		// A file that is not an audit log replays nothing: an error,
		// not tables of zeros.
		{[]string{"--audit", w}, 1, "no request replayed from the audit log"},
		{[]string{"--audit", w, "--compare", empty}, 1, "no request replayed from the audit log"},
		{[]string{quiet}, 1, "the workload sent no request"},
	} {
		code, _, errOut := runCLI(t, append([]string{"sim"}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, want %d with %q:\n%s", c.args, code, c.code, c.want, errOut)
		}
	}
	if code, _, _ := runCLI(t, "sim", "--help"); code != 0 {
		t.Errorf("--help: exit %d", code)
	}
}

func TestProgressBar(t *testing.T) {
	b := &progressBar{label: "A "}
	if got := b.render(50, 200); got != "A simulating [#######-----------------------]  25% 50/200 requests" {
		t.Errorf("render: %q", got)
	}
	if got := b.render(300, 200); !strings.Contains(got, "100%") {
		t.Errorf("overshoot: %q", got)
	}
	if got := b.render(7, 0); got != "A simulating: 7 requests" {
		t.Errorf("unknown total: %q", got)
	}
	var nilBar *progressBar
	nilBar.finish() // a run without a terminal has no bar
}

func TestSimAudit(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	event := func(i int, user string) string {
		ts := time.Date(2024, 1, 1, 0, 0, i, 0, time.UTC)
		return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"id-%d","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods","verb":"list","user":{"username":%q,"groups":["system:authenticated"]},"objectRef":{"resource":"pods","namespace":"default","apiVersion":"v1"},"requestReceivedTimestamp":%q,"stageTimestamp":%q}`,
			i, user, ts.Format(time.RFC3339Nano), ts.Add(20*time.Millisecond).Format(time.RFC3339Nano))
	}
	var lines []string
	for i := range 20 {
		lines = append(lines, event(i, "alice"))
	}
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "sim", "-o", "json", "--audit", log, "--speed", "2")
	var r struct{ Requests int64 }
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Requests != 20 {
		t.Fatalf("exit %d, %+v: %s", code, r, errOut)
	}
}
