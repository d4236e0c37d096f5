package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/tools/top"
)

// The view itself is tested in package top, a flood included; these
// tests run the command line against `apf serve` running as its own
// process, as an admin would, and its usage errors.

// topTokens: an admin, and bob who may read neither /metrics nor the
// dumps.
const topTokens = "top-cli-admin,admin,uid-admin,\"system:masters\"\ntop-cli-bob,bob,uid-bob,devs\n"

// serveForTop starts apf serve and returns a kubeconfig with two
// contexts, admin (current) and bob.
func serveForTop(t *testing.T) (kubeconfig, url string) {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(topTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	p := startServe(t, "--data-dir", data, "--listen", "127.0.0.1:0", "--token-auth-file", tokens, "--shutdown-timeout", "2s")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr := regexp.MustCompile(`msg=serving .*address=(127\.0\.0\.1:\d+)`)
	for {
		if m := addr.FindStringSubmatch(p.stderr.String()); m != nil {
			url = "https://" + m[1]
			break
		}
		select {
		case <-p.done:
			t.Fatalf("apf serve ended before serving; stderr:\n%s", p.stderr)
		case <-ctx.Done():
			t.Fatalf("apf serve not serving after a minute; stderr:\n%s", p.stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: apf
  cluster: {server: %q, certificate-authority: %q}
users:
- name: admin
  user: {token: top-cli-admin}
- name: bob
  user: {token: top-cli-bob}
contexts:
- name: admin
  context: {cluster: apf, user: admin}
- name: bob
  context: {cluster: apf, user: bob}
current-context: admin
`, url, filepath.Join(data, "pki", "ca.crt"))
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, url
}

func TestTopJSONAgainstServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts apf serve")
	}
	kc, url := serveForTop(t)
	// The server may still be creating the suggested objects: wait until
	// every bootstrap level is in /metrics with its limits (a level just
	// created may be listed a scrape before its gauges are set).
	var r top.Report
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, out, errOut := runCLI(t, "top", "-o", "json", "--kubeconfig", kc, "--interval", "300ms", "--flows", "3")
		if code != 0 || errOut != "" {
			t.Fatalf("apf top -o json: exit %d, stderr:\n%s", code, errOut)
		}
		r = top.Report{}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		if len(r.Levels) == 8 && everyLevelMeasured(r) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(r.Levels) != 8 || len(r.Missing) != 0 || r.Server != url || r.IntervalSeconds <= 0 {
		t.Errorf("levels %d, missing %+v, server %q, interval %v", len(r.Levels), r.Missing, r.Server, r.IntervalSeconds)
	}
	// apf top's own requests execute in exempt while the dump is taken.
	if len(r.Flows) == 0 || r.Flows[0].PriorityLevel != "exempt" || r.Flows[0].ExecutingRequests == 0 {
		t.Errorf("flows %+v", r.Flows)
	}
	for _, l := range r.Levels {
		if l.NominalSeats == nil || l.DispatchedPerSecond == nil {
			t.Errorf("level %s: %+v", l.Name, l)
		}
	}

	// bob may read nothing: the document says why, and the exit status
	// is 1.
	code, out, errOut := runCLI(t, "top", "-o", "json", "--kubeconfig", kc, "--context", "bob", "--interval", "100ms")
	if code != 1 || !strings.Contains(errOut, "apf top: nothing could be read from the server (the document says why)") {
		t.Errorf("bob: exit %d, stderr %q", code, errOut)
	}
	r = top.Report{}
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Missing) != 4 {
		t.Fatalf("bob: %v:\n%s", err, out)
	}
	for _, m := range r.Missing {
		if m.Status != 403 || !strings.Contains(m.Error, `forbidden: User "bob" cannot get path "`+m.Path+`"`) || !strings.Contains(m.Fix, "non-resource URL") {
			t.Errorf("bob: %+v", m)
		}
	}
}

func TestTopUsageErrors(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:1\"}\ncontexts:\n- name: c\n  context: {cluster: c}\ncurrent-context: c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--interval", "0s"}, 2, "--interval must be positive"},
		{[]string{"--flows", "0"}, 2, "--flows must be at least 1"},
		{[]string{"-o", "xml"}, 2, "text, wide, json, yaml"},
		{[]string{"now"}, 2, "unexpected arguments"},
		{[]string{"--kubeconfig", filepath.Join(t.TempDir(), "missing")}, 1, "kubeconfig"},
		{[]string{"--kubeconfig", kc, "--context", "elsewhere"}, 1, `context "elsewhere"`},
	} {
		code, _, errOut := runCLI(t, append([]string{"top"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("top %v: exit %d, want %d with %q in:\n%s", tc.args, code, tc.code, tc.want, errOut)
		}
	}
}

// everyLevelMeasured says whether every level of r has its nominal seats
// and its dispatch rate.
func everyLevelMeasured(r top.Report) bool {
	for _, l := range r.Levels {
		if l.NominalSeats == nil || l.DispatchedPerSecond == nil {
			return false
		}
	}
	return true
}
