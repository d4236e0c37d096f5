package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// apf sim with the example upstream and the adaptive limit: the report
// shows the upstream's phases, the clients' response times by phase and
// what the adaptive limit did, and two runs write the same bytes.
func TestSimAdaptiveUpstream(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("single-threaded runs of 540,000 requests")
	}
	args := []string{"sim", "../../examples/sim/upstream.yaml", "--without-suggested",
		"--config", "../../examples/sim/upstream-config.yaml", "--adaptive-limit", "4:400", "-o", "wide"}
	code, out, errOut := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"adaptive server concurrency limit (4 to 400 seats)",
		"server concurrency limit: 4 seats, adaptive (--adaptive-limit 4:400)",
		"adaptive limit: between 4 and 400 seats",
		"Upstream phases (figures from 10s after each phase starts)",
		"0–1m   40        10s–1m",
		"1m–2m  10        1m10s–2m",
		"Response times by phase and client",
		"user-{i}",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	dir := t.TempDir()
	if code, _, errOut := runCLI(t, append(args, "--report", dir)...); code != 0 {
		t.Fatalf("--report: exit %d: %s", code, errOut)
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil || !strings.Contains(string(page), "Upstream phases") || !strings.Contains(string(page), "adaptive server concurrency limit") {
		t.Errorf("the HTML report lacks the upstream's phases or the adaptive limit (%v)", err)
	}
	json := append(args, "-o", "json")
	_, a, _ := runCLI(t, json...)
	_, b, _ := runCLI(t, json...)
	if a != b || !strings.Contains(a, `"adaptiveLimit"`) || !strings.Contains(a, `"capacityUsed"`) {
		t.Errorf("two runs of the same workload: outputs differ, or lack the adaptive limit and the upstream:\n%.2000s", a)
	}
}

func TestSimAdaptiveErrors(t *testing.T) {
	w, _ := simFiles(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--adaptive-limit", "4", w}, "--adaptive-limit \"4\": want FLOOR:CEILING"},
		{[]string{"--adaptive-limit", "a:b", w}, "want FLOOR:CEILING"},
		{[]string{"--adaptive-limit", "10:4", w}, "floor 10 and ceiling 4"},
		{[]string{"--adaptive-limit", "0:4", w}, "floor 0 and ceiling 4"},
		{[]string{"--adaptive-limit", "4:40", "--max-requests-inflight", "10", w}, "--adaptive-limit learns the server concurrency limit"},
	} {
		code, _, errOut := runCLI(t, append([]string{"sim"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, want 2 with %q:\n%s", c.args, code, c.want, errOut)
		}
	}
}
