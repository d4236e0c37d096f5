package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/apfproject/apf/internal/tools/cliflag"
)

// commandPaths lists every command a user can run, as the arguments that
// reach it (the root is the empty path), walking the tree itself so that a
// command added later is covered without changing the tests.
func commandPaths(t *testing.T) (map[string]*cobra.Command, [][]string) {
	t.Helper()
	byPath := map[string]*cobra.Command{}
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Hidden {
			return
		}
		byPath[strings.Join(path, " ")] = c
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(slices.Clone(path), sub.Name()))
		}
	}
	walk(newRootCmd(), nil)
	if len(paths) < 9 {
		t.Fatalf("only %d commands: %q", len(paths), paths)
	}
	return byPath, paths
}

// documentedFlags lists the flags a command's help must show, from its
// flag sets: "--name", or "-x, --name" for a flag with a shorthand.
func documentedFlags(c *cobra.Command) []string {
	var out []string
	add := func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		name := "--" + f.Name
		if f.Shorthand != "" {
			name = "-" + f.Shorthand + ", " + name
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	c.InitDefaultHelpFlag()
	c.LocalFlags().VisitAll(add)
	c.InheritedFlags().VisitAll(add)
	return out
}

// Every command's --help (and -h) goes to stdout with exit status 0 and
// nothing on stderr, and shows the command's texts, every one of its
// flags and its examples.
func TestEveryCommandHelp(t *testing.T) {
	byPath, paths := commandPaths(t)
	for _, path := range paths {
		name := strings.TrimSpace("apf " + strings.Join(path, " "))
		c := byPath[strings.Join(path, " ")]
		if c.Short == "" || c.Long == "" || c.Example == "" {
			t.Errorf("%s: Short, Long and Example must all be written", name)
		}
		flags := documentedFlags(c)
		if !slices.Contains(flags, "-h, --help") {
			t.Errorf("%s: no -h, --help in %q", name, flags)
		}
		for _, helpFlag := range []string{"--help", "-h"} {
			code, out, errOut := runCLI(t, append(slices.Clone(path), helpFlag)...)
			if code != 0 || errOut != "" {
				t.Errorf("%s %s: exit %d, stderr %q", name, helpFlag, code, errOut)
				continue
			}
			if !strings.HasPrefix(out, strings.TrimSpace(c.Long)) {
				t.Errorf("%s %s: does not start with the long description:\n%s", name, helpFlag, out)
			}
			if !strings.Contains(out, "\nExamples:\n"+c.Example+"\n") {
				t.Errorf("%s %s: no examples:\n%s", name, helpFlag, out)
			}
			for _, f := range flags {
				if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(f) + `\b`).MatchString(out) {
					t.Errorf("%s %s: flag %s not documented:\n%s", name, helpFlag, f, out)
				}
			}
		}
	}
	// "apf help COMMAND" is the same help.
	code, out, _ := runCLI(t, "help", "sim")
	if _, want, _ := runCLI(t, "sim", "--help"); code != 0 || out != want {
		t.Errorf("apf help sim: exit %d, differs from apf sim --help:\n%s", code, out)
	}
}

// The help of the binary itself reaches the process's stdout.
func TestHelpOfTheBinary(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--help"}, {"sim", "--help"}, {"serve", "-h"}} {
		var out, errOut bytes.Buffer
		cmd := exec.Command(self, args...)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil || errOut.Len() != 0 || !strings.Contains(out.String(), "Usage:\n  apf ") {
			t.Errorf("apf %q: %v, stderr %q, stdout:\n%s", args, err, errOut.String(), out.String())
		}
	}
}

// Usage errors go to stderr, with a pointer to the help, and exit 2;
// nothing is printed on stdout.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"nonsense"}, `apf: unknown command "nonsense" for "apf"`},
		{[]string{"sim", "--no-such-flag"}, "apf sim: unknown flag: --no-such-flag\nSee 'apf sim --help' for usage.\n"},
		{[]string{"shuffle", "-x"}, "apf shuffle: unknown shorthand flag: 'x' in -x\nSee 'apf shuffle --help' for usage.\n"},
		{[]string{"demo", "extra"}, `apf demo: unexpected arguments ["extra"]`},
		{[]string{"version", "--output"}, "flag needs an argument"},
		{[]string{"check"}, "apf check: give the FILEs or DIRs to check (- for the standard input), a cluster (--kubeconfig, --context, --from-cluster), or --print-bootstrap\nSee 'apf check --help' for usage.\n"},
		{[]string{"completion"}, "give one shell: bash, zsh or fish"},
		{[]string{"completion", "tcsh"}, `unsupported shell "tcsh": must be one of: bash, zsh, fish`},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "--help' for usage.") {
			t.Errorf("apf %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	// apf alone shows its help, as kubectl does.
	if code, out, errOut := runCLI(t); code != 0 || errOut != "" || !strings.Contains(out, "Available") && !strings.Contains(out, "Tools for an APF configuration:") {
		t.Errorf("apf: exit %d, stderr %q\n%s", code, errOut, out)
	}
}

// Every flag that takes one of a set of values refuses any other, with the
// choices, while the command line is parsed.
func TestEnumeratedFlagsRefuseUnknownValues(t *testing.T) {
	byPath, paths := commandPaths(t)
	seen := map[string]bool{}
	for _, path := range paths {
		c := byPath[strings.Join(path, " ")]
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			choice, ok := f.Value.(*cliflag.Choice)
			if !ok {
				return
			}
			seen[f.Name] = true
			choices := choice.Choices()
			if len(choices) < 2 || !slices.Contains(choices, f.DefValue) && f.DefValue != "" {
				t.Errorf("apf %s --%s: choices %q, default %q", c.Name(), f.Name, choices, f.DefValue)
			}
			if !strings.Contains(f.Usage, "One of: "+strings.Join(choices, ", ")+".") {
				t.Errorf("apf %s --%s: the help does not list the choices: %q", c.Name(), f.Name, f.Usage)
			}
			code, out, errOut := runCLI(t, append(slices.Clone(path), "--"+f.Name+"=bogus")...)
			if code != 2 || out != "" || !strings.Contains(errOut, `invalid argument "bogus"`) ||
				!strings.Contains(errOut, "must be one of: "+strings.Join(choices, ", ")+"\n") {
				t.Errorf("apf %q --%s=bogus: exit %d, stdout %q, stderr %q", path, f.Name, code, out, errOut)
			}
		})
	}
	for _, name := range []string{"output", "log-level", "log-format", "upstream-identity", "api-version"} {
		if !seen[name] {
			t.Errorf("--%s is not an enumerated flag", name)
		}
	}
	code, _, errOut := runCLI(t, "serve", "--log-level", "verbose")
	if code != 2 || !strings.Contains(errOut, `invalid argument "verbose" for "--log-level" flag: must be one of: debug, info, warn, error`) {
		t.Errorf("serve --log-level verbose: exit %d, %q", code, errOut)
	}
}

// apf completion writes cobra's script for each shell; bash sources it
// without error when bash is installed.
func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "complete -o default -F __start_apf apf",
		"zsh":  "#compdef apf",
		"fish": "complete -c apf",
	} {
		code, out, errOut := runCLI(t, "completion", shell)
		if code != 0 || errOut != "" || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, stderr %q, %d bytes without %q", shell, code, errOut, len(out), want)
		}
		if shell != "bash" {
			continue
		}
		bash, err := exec.LookPath("bash")
		if err != nil {
			t.Log("no bash: the script is not sourced")
			continue
		}
		script := filepath.Join(t.TempDir(), "apf.bash")
		if err := os.WriteFile(script, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		res, err := exec.Command(bash, "--norc", "--noprofile", "-c", `set -e; source "$1"; complete -p apf`, "bash", script).CombinedOutput()
		if err != nil || !strings.Contains(string(res), "__start_apf apf") {
			t.Errorf("bash could not source the script: %v\n%s", err, res)
		}
	}
}

// Shell completion offers the values of enumerated flags and of
// --runtime-config, through cobra's __complete command that the scripts
// call.
func TestValueCompletion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"serve", "--log-level", ""}, []string{"debug", "info", "warn", "error"}, nil},
		{[]string{"serve", "--log-format", ""}, []string{"text", "json"}, nil},
		{[]string{"serve", "--upstream-identity", ""}, []string{"passthrough", "impersonate", "front-proxy"}, nil},
		{[]string{"sim", "-o", ""}, []string{"text", "wide", "json", "yaml"}, []string{"table"}},
		{[]string{"check", "--api-version", ""}, []string{"v1", "v1beta3", "v1beta2", "v1beta1", "v1alpha1"}, nil},
		{[]string{"version", "--output", ""}, []string{"text", "wide", "json", "yaml"}, nil},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}, nil},
		{[]string{"serve", "--runtime-config", "api/beta=false,flowcontrol.apiserver.k8s.io/v1b"},
			[]string{"api/beta=false,flowcontrol.apiserver.k8s.io/v1beta3=false", "api/beta=false,flowcontrol.apiserver.k8s.io/v1beta1=true"},
			[]string{"api/beta=false,api/all=true", "api/beta=false,flowcontrol.apiserver.k8s.io/v1=true"}},
		{[]string{"serve", "--authorization-mode", "Builtin,"}, []string{"Builtin,ABAC", "Builtin,Webhook"}, nil},
	} {
		code, out, errOut := runCLI(t, append([]string{cobra.ShellCompRequestCmd}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) < 2 || !strings.HasPrefix(lines[len(lines)-1], ":") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", tc.args, code, out, errOut)
			continue
		}
		for _, w := range tc.want {
			if !slices.Contains(lines, w) {
				t.Errorf("%q: %q not offered in %q", tc.args, w, lines)
			}
		}
		for _, w := range tc.not {
			if slices.Contains(lines, w) {
				t.Errorf("%q: %q offered", tc.args, w)
			}
		}
	}
}

// apf version and apf --version print the same; -o json has every field.
func TestVersionCommand(t *testing.T) {
	code, out, errOut := runCLI(t, "version")
	code2, out2, _ := runCLI(t, "--version")
	if code != 0 || code2 != 0 || errOut != "" || out != out2 {
		t.Fatalf("version: exit %d/%d, stderr %q, outputs differ:\n%s\n%s", code, code2, errOut, out, out2)
	}
	for _, want := range []string{"Version:", "Commit:", "Go version:         " + runtime.Version(), "Kubernetes version: " + goModKubernetes(t)} {
		if !strings.Contains(out, want) {
			t.Errorf("version lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "version", "-o", "json")
	var v map[string]string
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 {
		t.Fatalf("version -o json: exit %d, %v\n%s", code, err, out)
	}
	if v["version"] == "" || v["commit"] == "" || v["goVersion"] != runtime.Version() ||
		v["platform"] != runtime.GOOS+"/"+runtime.GOARCH || v["kubernetesVersion"] != goModKubernetes(t) {
		t.Errorf("version -o json: %v", v)
	}
	code, out, _ = runCLI(t, "version", "-o", "yaml")
	if code != 0 || !strings.Contains(out, "kubernetesVersion: "+goModKubernetes(t)+"\n") {
		t.Errorf("version -o yaml: exit %d\n%s", code, out)
	}
}

// goModKubernetes is the Kubernetes release of the k8s.io/api version in
// go.mod.
func goModKubernetes(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s+k8s\.io/api (v0\.\S+)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/api")
	}
	v, ok := kubernetesVersion(string(m[1]))
	if !ok {
		t.Fatalf("k8s.io/api %s", m[1])
	}
	return v
}

// What the build stamped wins; otherwise the toolchain's build
// information says.
func TestVersionFrom(t *testing.T) {
	bi := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/apfproject/apf", Version: "v0.4.0"},
		Deps: []*debug.Module{
			{Path: "k8s.io/apimachinery", Version: "v0.36.0"},
			{Path: "k8s.io/api", Version: "v0.37.2"},
		},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}},
	}
	if v := versionFrom("v0.5.0-3-gdef4567-dirty", "def4567890", bi); v.Version != "v0.5.0-3-gdef4567-dirty" || v.Commit != "def4567890" || v.KubernetesVersion != "v1.37.2" {
		t.Errorf("stamped: %+v", v)
	}
	if v := versionFrom("", "", bi); v.Version != "v0.4.0" || v.Commit != "abc123-dirty" || v.KubernetesVersion != "v1.37.2" {
		t.Errorf("from build info: %+v", v)
	}
	bi.Main.Version = "(devel)"
	bi.Settings = bi.Settings[:1]
	bi.Deps[1] = &debug.Module{Path: "k8s.io/api", Version: "v0.30.0", Replace: &debug.Module{Path: "k8s.io/api", Version: "v0.38.0-rc.1"}}
	if v := versionFrom("", "", bi); v.Version != "dev" || v.Commit != "abc123" || v.KubernetesVersion != "v1.38.0-rc.1" {
		t.Errorf("devel, replaced: %+v", v)
	}
	if v := versionFrom("", "", nil); v.Version != "dev" || v.Commit != "unknown" || v.KubernetesVersion != "unknown" || v.GoVersion != runtime.Version() {
		t.Errorf("no build info: %+v", v)
	}
	for in, want := range map[string]string{"v0.37.2": "v1.37.2", "v0.9.0": "v1.9.0", "v1.0.0": "", "v0.": "", "": ""} {
		if got, ok := kubernetesVersion(in); got != want || ok != (want != "") {
			t.Errorf("kubernetesVersion(%q) = %q, %v", in, got, ok)
		}
	}
}

// Every command with --context completes the contexts of the kubeconfig
// that --kubeconfig names.
func TestContextCompletion(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts:
- {name: prod, context: {cluster: c, user: u}}
- {name: staging, context: {cluster: c, user: u}}
- {name: dev, context: {cluster: c, user: u}}
current-context: dev
`), 0o600); err != nil {
		t.Fatal(err)
	}
	byPath, paths := commandPaths(t)
	var with []string
	for _, path := range paths {
		if len(path) == 0 || byPath[strings.Join(path, " ")].Flags().Lookup("context") == nil {
			continue
		}
		with = append(with, path[0])
		args := append([]string{cobra.ShellCompRequestCmd}, path...)
		code, out, _ := runCLI(t, append(args, "--kubeconfig", kubeconfig, "--context", "")...)
		if want := "dev\nprod\nstaging\n:4\n"; code != 0 || out != want {
			t.Errorf("apf %q --context: exit %d, %q, want %q", path, code, out, want)
		}
		_, out, _ = runCLI(t, append(args, "--kubeconfig="+kubeconfig, "--context=st")...)
		if !strings.HasPrefix(out, "staging\n:") {
			t.Errorf("apf %q --context=st: %q", path, out)
		}
	}
	if !slices.Contains(with, "top") {
		t.Errorf("no --context on apf top (commands with it: %q)", with)
	}
}
