package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/server"
	"github.com/apfproject/apf/internal/testing/testserve"
)

// getAs reads path from srv with token, failing the test unless it
// answers 200.
func getAs(t *testing.T, srv *testserve.Server, token, path string) []byte {
	t.Helper()
	pem, err := os.ReadFile(srv.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", path, resp.StatusCode, err, body)
	}
	return body
}

// serverNominalSeats is each level's nominal seats as apf serve shows
// them: the console's state and the metric, which must agree.
func serverNominalSeats(t *testing.T, srv *testserve.Server) map[string]int {
	t.Helper()
	var state struct {
		Levels []struct {
			Name         string
			NominalSeats int
		}
	}
	if err := json.Unmarshal(getAs(t, srv, testserve.AdminToken, "/debug/api_priority_and_fairness/console/state"), &state); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, l := range state.Levels {
		out[l.Name] = l.NominalSeats
	}
	metrics := string(getAs(t, srv, testserve.AdminToken, "/metrics"))
	for name, n := range out {
		line := `apiserver_flowcontrol_nominal_limit_seats{priority_level="` + name + `"} `
		if !strings.Contains(metrics, "\n"+line+itoa(n)+"\n") {
			t.Fatalf("the console shows %s at %d nominal seats; the metric does not say %q", name, n, line)
		}
	}
	return out
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// apf classify and apf sim against apf serve running with 40 + 20 seats
// use the server's limit, read from its /metrics: every level the sample
// requests reach has the nominal seats the server's console and metrics
// show, and the output says which limit and from where. A user who may
// not read /metrics is told why, with the server's answer and the
// permission that grants it, and what is assumed instead; the flags set
// the limit without reading it.
func TestToolsUseTheServersLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts apf serve")
	}
	srv := testserve.Start(t, func(o *server.Options) { o.MaxRequestsInflight, o.MaxMutatingRequestsInflight = 40, 20 })
	admin := srv.Kubeconfig(t, "small", testserve.AdminToken)
	want := serverNominalSeats(t, srv)

	type item struct {
		PriorityLevel struct {
			Name         string
			Type         string
			NominalSeats int
		}
		ServerConcurrencyLimit       int
		ServerConcurrencyLimitSource string
	}
	// sameSeats checks the samples' levels against the server's.
	sameSeats := func(t *testing.T, out string) []item {
		t.Helper()
		var items []item
		if err := json.Unmarshal([]byte(out), &items); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		reached := map[string]bool{}
		for _, it := range items {
			name := it.PriorityLevel.Name
			reached[name] = true
			if n, ok := want[name]; !ok || it.PriorityLevel.NominalSeats != n {
				t.Errorf("level %s: apf classify says %d nominal seats, the server %d (%v)", name, it.PriorityLevel.NominalSeats, n, ok)
			}
		}
		if len(reached) != len(want) {
			t.Errorf("the samples reach %v, the server has %v", reached, want)
		}
		return items
	}

	code, out, errOut := runCLI(t, "classify", "--kubeconfig", admin, "-o", "json")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, it := range sameSeats(t, out) {
		if it.ServerConcurrencyLimit != 60 || it.ServerConcurrencyLimitSource != "read from cluster small (apf_server_concurrency_limit_seats)" {
			t.Fatalf("limit %d, %q", it.ServerConcurrencyLimit, it.ServerConcurrencyLimitSource)
		}
	}
	code, out, _ = runCLI(t, "classify", "--kubeconfig", admin, "--as", "alice", "get", "/api/v1/pods")
	if code != 0 || !strings.Contains(out, "  Seats:               5 nominal\n  Server Limit:        60 seats, read from cluster small (apf_server_concurrency_limit_seats)\n") ||
		want["global-default"] != 5 {
		t.Errorf("exit %d, the server's global-default %d:\n%s", code, want["global-default"], out)
	}

	w := writeFile(t, "w.yaml", ciWorkload)
	code, out, errOut = runCLI(t, "sim", "--kubeconfig", admin, w)
	if code != 0 || !strings.Contains(out, "server concurrency limit 60 seats") ||
		!strings.Contains(out, "\nserver concurrency limit: 60 seats, read from cluster small (apf_server_concurrency_limit_seats)\n") {
		t.Errorf("sim: exit %d\n%s%s", code, out, errOut)
	}

	// The reader may read the flowcontrol API and not /metrics.
	reader := srv.Kubeconfig(t, "reader", testserve.ReaderToken)
	code, out, errOut = runCLI(t, "classify", "--kubeconfig", reader, "-o", "json")
	t.Logf("apf classify as the reader:\n%s", errOut)
	for _, wantErr := range []string{
		`apf classify: warning: the server concurrency limit of cluster reader could not be read: GET /metrics: 403 Forbidden: forbidden: User "reader" cannot get path "/metrics"`,
		"needs the verb get on the non-resource URL /metrics", "system:monitoring",
		"assuming kube-apiserver's default, 600 seats: --max-requests-inflight and --max-mutating-requests-inflight set it\n",
	} {
		if !strings.Contains(errOut, wantErr) {
			t.Errorf("reader: no %q in:\n%s", wantErr, errOut)
		}
	}
	var items []item
	if err := json.Unmarshal([]byte(out), &items); code != 0 || err != nil || len(items) == 0 ||
		items[0].ServerConcurrencyLimit != 600 || items[0].ServerConcurrencyLimitSource != "kube-apiserver's default (400 + 200), assumed: cluster reader's could not be read" {
		t.Errorf("reader: exit %d, %v, %+v", code, err, items)
	}
	code, _, errOut = runCLI(t, "sim", "--kubeconfig", reader, w)
	if code != 0 || !strings.Contains(errOut, "apf sim: warning: the server concurrency limit of cluster reader could not be read") {
		t.Errorf("sim as the reader: exit %d\n%s", code, errOut)
	}

	// The flags set the limit: nothing is read, nothing is said.
	code, out, errOut = runCLI(t, "classify", "--kubeconfig", reader, "-o", "json", "--max-requests-inflight", "40", "--max-mutating-requests-inflight", "20")
	if code != 0 || errOut != "" {
		t.Fatalf("reader with the flags: exit %d\n%s", code, errOut)
	}
	for _, it := range sameSeats(t, out) {
		if it.ServerConcurrencyLimit != 60 || it.ServerConcurrencyLimitSource != "--max-requests-inflight 40 + --max-mutating-requests-inflight 20" {
			t.Fatalf("limit %d, %q", it.ServerConcurrencyLimit, it.ServerConcurrencyLimitSource)
		}
	}
}

// A replica of apf serve --shared-concurrency-limit runs with the limit
// fitted to its share (alone on its etcd, the whole 60 seats: 56, the
// largest whose levels' nominal seats sum to at most 60): apf classify
// uses that, the limit the server it reaches runs with, and says the
// whole limit the replicas share.
func TestToolsUseASharedBudgetReplicasLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts apf serve")
	}
	srv := testserve.Start(t, func(o *server.Options) {
		o.MaxRequestsInflight, o.MaxMutatingRequestsInflight = 40, 20
		o.SharedBudget.Enabled = true
	})
	// The replica joins before its configuration is digested, and fits
	// its limit to the levels again at its next periodic round.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(string(getAs(t, srv, testserve.AdminToken, "/metrics")), "\napf_server_concurrency_limit_seats 56\n") {
		if time.Now().After(deadline) {
			t.Fatal("the replica's limit is not 56 after 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	want := serverNominalSeats(t, srv)
	code, out, errOut := runCLI(t, "classify", "--kubeconfig", srv.Kubeconfig(t, "replica", testserve.AdminToken), "-o", "json")
	var items []struct {
		PriorityLevel struct {
			Name         string
			NominalSeats int
		}
		ServerConcurrencyLimit       int
		ServerConcurrencyLimitSource string
	}
	if err := json.Unmarshal([]byte(out), &items); code != 0 || err != nil || len(items) == 0 {
		t.Fatalf("exit %d, %v\n%s%s", code, err, out, errOut)
	}
	for _, it := range items {
		if n := want[it.PriorityLevel.Name]; it.PriorityLevel.NominalSeats != n {
			t.Errorf("level %s: apf classify says %d nominal seats, the server %d", it.PriorityLevel.Name, it.PriorityLevel.NominalSeats, n)
		}
	}
	if it := items[0]; it.ServerConcurrencyLimit != 56 || it.ServerConcurrencyLimitSource != "read from cluster replica (apf_server_concurrency_limit_seats): "+
		"the limit fitted to this replica's share of the 60 seats its replicas divide (apf_shared_budget_limit_seats), which moves with their demand" {
		t.Errorf("limit %d, %q", it.ServerConcurrencyLimit, it.ServerConcurrencyLimitSource)
	}
}
