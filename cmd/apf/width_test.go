package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/apfproject/apf/internal/screen"
)

// fitWidth is the terminal width the tests of this file ask for with
// $COLUMNS.
const fitWidth = 80

// overWide lists the lines of out wider than width, numbered.
func overWide(out string, width int) []string {
	var bad []string
	for i, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > width {
			bad = append(bad, fmt.Sprintf("%d (%d columns): %s", i+1, n, line))
		}
	}
	return bad
}

// helpCommands lists the command line of every command's and
// subcommand's help: "apf", "apf help", and CMD --help for every command.
func helpCommands() [][]string {
	out := [][]string{{}, {"help"}}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.Fields(c.CommandPath())[1:]
		out = append(out, append(slices.Clone(path), "--help"))
		if len(path) > 0 {
			out = append(out, append([]string{"help"}, path...))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	return out
}

// isWide says whether a command line asks for -o wide, whose lines are as
// long as their content.
func isWide(args []string) bool {
	for i, a := range args {
		if a == "-owide" || a == "--output=wide" || a == "-o=wide" || (a == "-o" || a == "--output") && i+1 < len(args) && args[i+1] == "wide" {
			return true
		}
	}
	return false
}

// Every command's and subcommand's help, and every command's usual
// outputs (the samples and explanations of classify, shuffle's tables,
// sim's runs of every example and a comparison, check's report on a
// directory of many objects and on mistakes, its bootstrap objects,
// version), fit a terminal of $COLUMNS=80, on stdout and on stderr; -o
// wide alone may be wider. apf completion's scripts are for a shell, not
// a person, and apf serve and apf demo run servers: their help is
// checked.
func TestOutputFitsTheTerminal(t *testing.T) {
	t.Setenv("COLUMNS", strconv.Itoa(fitWidth))
	dir := t.TempDir()
	// A directory whose objects replace every built-in one: the list of
	// what they replace is long.
	_, boot, _ := runCLI(t, "check", "--print-bootstrap")
	many := filepath.Join(dir, "many")
	if err := os.Mkdir(many, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFileAt(t, filepath.Join(many, "bootstrap.yaml"), boot)
	// Mistakes: a schema naming a missing level, an invalid field, a
	// level nobody names.
	mistakes := filepath.Join(dir, "mistakes.yaml")
	writeFileAt(t, mistakes, `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: a-schema-with-a-rather-long-name-for-the-report-of-its-findings}
spec:
  priorityLevelConfiguration: {name: a-priority-level-that-nobody-has-ever-created}
  matchingPrecedence: 1000
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: alice}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: a-level-that-no-flowschema-names-at-all-in-this-configuration}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 5
    limitResponse: {type: Queue, queuing: {queues: 64, handSize: 90, queueLengthLimit: 50}}
`)
	requests := filepath.Join(dir, "requests.txt")
	writeFileAt(t, requests, `--as alice --as-group devs get /api/v1/namespaces/shop/pods?labelSelector=app%3Dweb
--as system:serviceaccount:kube-system:deployment-controller put /apis/apps/v1/namespaces/shop/deployments/web/status
--as system:node:node-1 patch /api/v1/nodes/node-1/status
get /readyz
`)
	examples, err := filepath.Glob("../../examples/sim/*.yaml")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no example workloads: %v", err)
	}
	runs := helpCommands()
	runs = append(runs,
		[]string{"classify"},
		[]string{"classify", "-o", "wide"},
		[]string{"classify", "get", "/api/v1/pods"},
		[]string{"classify", "--as", "system:serviceaccount:ci:deployer", "patch", "/apis/apps/v1/namespaces/shop/deployments/web"},
		[]string{"classify", "--as", "alice", "--config", mistakes, "get", "/api/v1/pods"},
		[]string{"classify", "-f", requests, "--object-count", "pods=20000:5000"},
		[]string{"classify", "-o", "wide", "get", "/api/v1/pods"},
		[]string{"shuffle"},
		[]string{"shuffle", "-o", "wide"},
		[]string{"shuffle", "--hand-size", "6,8,10,11", "--queues", "64,128,1024", "--elephants", "1,2,3,4,5,8,16,32,64"},
		[]string{"check", many},
		[]string{"check", "-o", "wide", many},
		[]string{"check", mistakes},
		[]string{"check", "--strict", many, mistakes},
		[]string{"check", "--print-bootstrap"},
		[]string{"version"},
		[]string{"sim", "examples/sim/no-such-workload.yaml"},
	)
	if !raceEnabled {
		for _, ex := range examples {
			if strings.HasSuffix(ex, "-config.yaml") || strings.HasPrefix(filepath.Base(ex), "audit-") {
				continue // a configuration or an audit policy, not a workload
			}
			runs = append(runs, []string{"sim", ex})
		}
		runs = append(runs,
			[]string{"sim", "../../examples/sim/flood.yaml", "--compare", "../../examples/sim/upstream-config.yaml"},
			[]string{"sim", "-o", "wide", "../../examples/sim/flood.yaml", "--compare", "../../examples/sim/upstream-config.yaml"},
			[]string{"sim", "--audit", "../../examples/sim/audit-sample.jsonl"},
			[]string{"sim", "--audit", "../../examples/sim/audit-cluster.log.gz", "--speed", "4"},
		)
	}
	for _, args := range runs {
		_, out, errOut := runCLI(t, args...)
		if out == "" && errOut == "" {
			t.Errorf("apf %s: no output", strings.Join(args, " "))
		}
		name := "apf " + strings.Join(args, " ")
		if isWide(args) {
			continue
		}
		for _, stream := range []struct{ name, text string }{{"stdout", out}, {"stderr", errOut}} {
			if bad := overWide(stream.text, fitWidth); len(bad) > 0 {
				t.Errorf("%s: %d lines of %s wider than %d:\n%s", name, len(bad), stream.name, fitWidth, strings.Join(bad, "\n"))
			}
		}
	}
}

// apf top's plain view, run as a command against apf serve, fits the
// width too.
func TestTopFitsTheTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts apf serve")
	}
	kc, _ := serveForTop(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "top", "--kubeconfig", kc, "--interval", "200ms", "--flows", "40")
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "COLUMNS="+strconv.Itoa(fitWidth))
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Two snapshots: the second has rates.
	for strings.Count(out.String(), "apf top ") < 2 && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	text := out.String()
	if strings.Count(text, "apf top ") < 2 {
		t.Fatalf("no two snapshots within a minute:\n%s", text)
	}
	if bad := overWide(text, fitWidth); len(bad) > 0 {
		t.Errorf("%d lines wider than %d:\n%s", len(bad), fitWidth, strings.Join(bad, "\n"))
	}
}

// The width is $COLUMNS, else 80 when the output is no terminal; -o
// table is still taken, for text.
func TestWidthAndOutputValues(t *testing.T) {
	t.Setenv("COLUMNS", "")
	if w := screen.Width(new(bytes.Buffer)); w != screen.DefaultWidth {
		t.Errorf("width of a buffer: %d", w)
	}
	t.Setenv("COLUMNS", "120")
	if w := screen.Width(new(bytes.Buffer)); w != 120 {
		t.Errorf("width with COLUMNS=120: %d", w)
	}
	t.Setenv("COLUMNS", "80")
	for _, c := range []string{"classify", "check", "shuffle", "sim", "top", "version"} {
		cmd, _, err := newRootCmd().Find([]string{c})
		if err != nil {
			t.Fatal(err)
		}
		f := cmd.Flags().Lookup("output")
		if f == nil {
			t.Errorf("%s: no -o", c)
			continue
		}
		comp, _ := cmd.GetFlagCompletionFunc("output")
		if comp == nil {
			t.Errorf("%s: no completion of -o", c)
			continue
		}
		got, _ := comp(cmd, nil, "")
		if strings.Join(got, " ") != "text wide json yaml" {
			t.Errorf("%s: -o completes %q", c, got)
		}
		if err := f.Value.Set("table"); err != nil || f.Value.String() != "text" {
			t.Errorf("%s: -o table: %v, %q", c, err, f.Value.String())
		}
	}
}

// -o yaml is the document of -o json, for every command that prints one.
func TestYAMLIsTheJSONDocument(t *testing.T) {
	dir := t.TempDir()
	_, boot, _ := runCLI(t, "check", "--print-bootstrap")
	writeFileAt(t, filepath.Join(dir, "bootstrap.yaml"), boot)
	for _, args := range [][]string{
		{"version"},
		{"check", dir},
		{"classify", "--as", "alice", "get", "/api/v1/pods"},
		{"shuffle", "--hand-size", "6", "--queues", "64"},
		{"sim", "../../examples/sim/flood.yaml", "--seed", "3"},
	} {
		if raceEnabled && args[0] == "sim" {
			continue
		}
		_, js, errOut := runCLI(t, append(slices.Clone(args), "-o", "json")...)
		_, ym, _ := runCLI(t, append(slices.Clone(args), "-o", "yaml")...)
		var a, b any
		if err := json.Unmarshal([]byte(js), &a); err != nil {
			t.Fatalf("apf %v -o json: %v\n%s%s", args, err, js, errOut)
		}
		if err := yaml.Unmarshal([]byte(ym), &b); err != nil {
			t.Fatalf("apf %v -o yaml: %v\n%s", args, err, ym)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("apf %v: -o yaml is not the document of -o json:\n%.2000s", args, ym)
		}
	}
}

func writeFileAt(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
