package kube

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kubeAuditPolicy is the kube-apiserver's audit policy: every stage of
// every request at the Metadata level, and configmap requests with their
// bodies (RequestResponse), so that its log holds what clusters' logs
// hold.
const kubeAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: RequestResponse
  resources:
  - group: ""
    resources: ["configmaps"]
- level: Metadata
`

// auditSimReport is the part of apf sim -o json the test reads.
type auditSimReport struct {
	Name        string `json:"name"`
	Requests    int64  `json:"requests"`
	FlowSchemas []struct {
		Name    string `json:"name"`
		Arrived int64  `json:"arrived"`
	} `json:"flowSchemas"`
	Audit *struct {
		Lines     int64 `json:"lines"`
		Requests  int64 `json:"requests"`
		BeforeLog int64 `json:"beforeLog"`
		Skipped   map[string]struct {
			Lines  int64  `json:"lines"`
			First  string `json:"first"`
			Detail string `json:"detail"`
		} `json:"skipped"`
	} `json:"audit"`
}

// sendAudited sends a request with extra headers to s and returns the
// status and the Audit-Id the server answered with.
func sendAudited(t *testing.T, s *server, token, method, path, body string, header http.Header) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	id := resp.Header.Get("Audit-Id")
	if id == "" {
		t.Fatalf("%s %s: no Audit-Id in the answer", method, path)
	}
	return resp.StatusCode, id
}

// TestSimReplaysKubeAPIServerAuditLog: the kube-apiserver's own audit
// log, every stage of every request, configmap bodies, impersonation, a
// watch, a refused impersonation and a failed authentication among its
// lines, replayed by bin/apf sim as a user runs it: each request once
// (its completion), every other line skipped for a reason that says why,
// none of them "not JSON" or "not an Event", and the impersonated
// requests classified as the service account they acted as. Then the
// loop of the README: the configuration read from the cluster through a
// kubeconfig, and the log replayed under it and under a candidate; and
// the same configuration saved with kubectl and given as a file.
func TestSimReplaysKubeAPIServerAuditLog(t *testing.T) {
	e := testEnv(t)
	const impersonated = 7
	as := http.Header{"Impersonate-User": {"system:serviceaccount:default:audit-deployer"}}
	var ids []string
	for range impersonated {
		// Forbidden by RBAC, after APF: it counts.
		code, id := sendAudited(t, e.kube, adminToken, http.MethodGet, "/api/v1/namespaces/default/pods?limit=10", "", as)
		if code != http.StatusForbidden {
			t.Fatalf("impersonated list: %d", code)
		}
		ids = append(ids, id)
	}
	code, id := sendAudited(t, e.kube, readerToken, http.MethodGet, "/api/v1/namespaces/default/configmaps", "", http.Header{"Impersonate-User": {"admin"}})
	if code != http.StatusForbidden {
		t.Fatalf("bob impersonating admin: %d", code)
	}
	ids = append(ids, id)
	code, _ = sendAudited(t, e.kube, "not-a-token", http.MethodGet, "/api/v1/namespaces/default/configmaps", "", nil)
	if code != http.StatusUnauthorized {
		t.Fatalf("a bad token: %d", code)
	}
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"audit-replay"},"data":{"a":"` + strings.Repeat("x", 64<<10) + `"}}`
	code, id = sendAudited(t, e.kube, adminToken, http.MethodPost, "/api/v1/namespaces/default/configmaps", cm, nil)
	if code != http.StatusCreated {
		t.Fatalf("configmap create: %d", code)
	}
	ids = append(ids, id)
	code, id = sendAudited(t, e.kube, adminToken, http.MethodGet, "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1", "", nil)
	if code != http.StatusOK {
		t.Fatalf("watch: %d", code)
	}
	ids = append(ids, id)
	code, id = sendAudited(t, e.kube, adminToken, http.MethodDelete, "/api/v1/namespaces/default/configmaps/audit-replay", "", nil)
	if code != http.StatusOK {
		t.Fatalf("configmap delete: %d", code)
	}
	ids = append(ids, id)

	// The log is written as requests end: wait for the last of ours,
	// then replay what was written up to there (a copy, gzip-compressed
	// as archives keep it, cut at a line's end: the server writes on).
	var data []byte
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		if data, err = os.ReadFile(e.auditLog); err != nil {
			t.Fatal(err)
		}
		done := true
		for _, id := range ids {
			if !bytes.Contains(data, []byte(`"auditID":"`+id+`","stage":"ResponseComplete"`)) {
				done = false
			}
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the audit log %s lacks the completion of some of %q", e.auditLog, ids)
		}
		time.Sleep(200 * time.Millisecond)
	}
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	for _, stage := range []string{"RequestReceived", "ResponseStarted", "ResponseComplete"} {
		if !bytes.Contains(data, []byte(`"stage":"`+stage+`"`)) {
			t.Fatalf("the audit log has no %s stage", stage)
		}
	}
	if !bytes.Contains(data, []byte(`"level":"RequestResponse"`)) || !bytes.Contains(data, []byte(`"requestObject":{`)) {
		t.Fatal("the audit log has no bodies")
	}
	log := filepath.Join(t.TempDir(), "audit-2026-01-01T00-00-00.000.log.gz")
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, z.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	// An independent count: the requests that completed, one per auditID.
	completed := map[string]bool{}
	lines := int64(0)
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		lines++
		var ev struct{ AuditID, Stage string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("the log has a line that is not JSON: %.200s", line)
		}
		if ev.Stage == "ResponseComplete" || ev.Stage == "Panic" {
			completed[ev.AuditID] = true
		}
	}

	r, errOut := runSimAudit(t, e, "--audit", log, "--speed", "2", "-o", "json")
	t.Logf("bin/apf sim --audit (%d lines, %d KiB):\n%s", lines, len(data)>>10, errOut)
	if r.Audit == nil {
		t.Fatal("bin/apf sim -o json: no audit figures")
	}
	st := r.Audit
	var skipped int64
	for reason, s := range st.Skipped {
		skipped += s.Lines
		switch reason {
		case "stage-request-received", "stage-response-started", "impersonation-denied", "long-running":
		default:
			t.Errorf("%d lines skipped for %s (first at %s: %s)", s.Lines, reason, s.First, s.Detail)
		}
	}
	if st.Lines != lines || st.Lines != st.Requests+skipped || st.Requests != r.Requests {
		t.Errorf("%d lines in the log; apf sim read %d: %d requests (%d replayed), %d skipped", lines, st.Lines, st.Requests, r.Requests, skipped)
	}
	// Every completion is a request replayed but the refused
	// impersonation and the long-running ones outside APF.
	if got, want := st.Requests, int64(len(completed))-st.Skipped["impersonation-denied"].Lines-st.Skipped["long-running"].Lines; got != want {
		t.Errorf("%d requests replayed, want %d of %d completed", got, want, len(completed))
	}
	if st.Skipped["stage-request-received"].Lines < int64(len(ids)) || st.Skipped["impersonation-denied"].Lines < 1 ||
		st.Skipped["stage-response-started"].Lines < 2 || st.Skipped["stage-request-received"].First != log+":1" {
		t.Errorf("skipped %+v", st.Skipped)
	}
	arrived := map[string]int64{}
	for _, s := range r.FlowSchemas {
		arrived[s.Name] = s.Arrived
	}
	// Nothing else in this environment acts as a service account: the
	// schema of service accounts saw exactly the impersonated requests
	// (as the admin, they would be exempt).
	if arrived["service-accounts"] != impersonated || arrived["exempt"] == 0 {
		t.Errorf("arrivals per FlowSchema %v, want %d in service-accounts", arrived, impersonated)
	}

	// The whole loop: the configuration read from the cluster through a
	// kubeconfig (where the deployer has a schema of its own), the same
	// log replayed under it and under a candidate that gives the deployer
	// another schema and a level of its own.
	clusterSchema := testPrefix + "audit-deployer"
	created := e.kube.mustSend(t, create(flowschemas, fsObject(clusterSchema, `{"matchingPrecedence":800,"priorityLevelConfiguration":{"name":"workload-low"},"distinguisherMethod":{"type":"ByUser"},`+
		`"rules":[{"subjects":[{"kind":"ServiceAccount","serviceAccount":{"namespace":"default","name":"audit-deployer"}}],"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"clusterScope":true,"namespaces":["*"]}]}]}`)))
	if created.code != http.StatusCreated {
		t.Fatalf("creating %s: %d %s", clusterSchema, created.code, created.raw)
	}
	t.Cleanup(func() { e.kube.mustSend(t, del(flowschemas+"/"+clusterSchema)) })
	candidate := filepath.Join(t.TempDir(), "candidate.yaml")
	if err := os.WriteFile(candidate, []byte(auditCandidate), 0o600); err != nil {
		t.Fatal(err)
	}
	var both struct{ A, B auditSimReport }
	raw, _ := runSim(t, e, "--audit", log, "--speed", "2", "--kubeconfig", e.kube.kubeconfig(t, adminToken), "--compare", candidate, "-o", "json")
	if err := json.Unmarshal(raw, &both); err != nil {
		t.Fatalf("bin/apf sim --compare -o json: %v\n%.2000s", err, raw)
	}
	schemas := func(r auditSimReport) map[string]int64 {
		m := map[string]int64{}
		for _, s := range r.FlowSchemas {
			m[s.Name] = s.Arrived
		}
		return m
	}
	a, b := schemas(both.A), schemas(both.B)
	if a[clusterSchema] != impersonated || a["service-accounts"] != 0 || b["audit-deployer"] != impersonated || b[clusterSchema] != 0 ||
		both.A.Requests != both.B.Requests || both.A.Audit == nil || both.B.Audit == nil {
		t.Errorf("the cluster's configuration (%s): %v; with the candidate (%s): %v", both.A.Name, a, both.B.Name, b)
	}

	// The same offline: the cluster's configuration saved with kubectl
	// get -o yaml, and given with --config, classifies as the live one.
	saved, ok := e.kube.kubectl(t, "", "get", "flowschemas,prioritylevelconfigurations", "-o", "yaml")
	if !ok {
		t.Fatalf("kubectl get: %s", saved)
	}
	clusterYAML := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(clusterYAML, []byte(saved), 0o600); err != nil {
		t.Fatal(err)
	}
	offline, _ := runSimAudit(t, e, "--audit", log, "--speed", "2", "--config", clusterYAML, "-o", "json")
	if got := schemas(offline); fmt.Sprint(got) != fmt.Sprint(a) {
		t.Errorf("with the saved configuration: %v; read live: %v", got, a)
	}
}

// auditCandidate is a candidate configuration: the deployer's own schema
// and level.
const auditCandidate = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: audit-deployer
spec:
  matchingPrecedence: 700
  priorityLevelConfiguration:
    name: audit-deployer
  distinguisherMethod:
    type: ByUser
  rules:
  - subjects:
    - kind: ServiceAccount
      serviceAccount:
        namespace: default
        name: audit-deployer
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
  name: audit-deployer
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 5
    limitResponse:
      type: Reject
`

// runSim runs bin/apf sim and returns its standard output and error; it
// fails the test unless it exits 0.
func runSim(t *testing.T, e *env, args ...string) ([]byte, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(e.binDir, "apf"), append([]string{"sim"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG=", "COLUMNS=1000") // lines whole
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("bin/apf sim %q: exit %d\n%s", args, ee.ExitCode(), errOut.String())
		}
		t.Fatal(err)
	}
	return out.Bytes(), errOut.String()
}

// runSimAudit runs bin/apf sim -o json and decodes its report.
func runSimAudit(t *testing.T, e *env, args ...string) (auditSimReport, string) {
	t.Helper()
	raw, errOut := runSim(t, e, args...)
	var r auditSimReport
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("bin/apf sim -o json: %v\n%.2000s", err, raw)
	}
	return r, errOut
}
