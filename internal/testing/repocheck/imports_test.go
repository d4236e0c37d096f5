package repocheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The library's layering, read from the imports of the module's packages
// (their non-test files, as `go list` reports them): what a library user
// imports must not pull in the server's faces or the tools.

// listedPackage is one package of the module as `go list` reports it.
type listedPackage struct {
	ImportPath string
	Name       string
	Imports    []string
	Error      *struct{ Err string }
}

// importRule forbids the packages of from to depend on those of not,
// directly or through other packages of the module. Paths are relative to
// the module.
type importRule struct {
	from, not []string
	why       string
}

// libraryPackages are the library's packages that a program embedding APF
// imports: the request model, the core, its composition and driver, the
// middleware, the metrics and the dumps.
var libraryPackages = []string{
	"request", "config", "config/bootstrap", "classify", "shuffle", "fairqueue", "borrow",
	"workestimate", "engine", "controller", "metrics", "clock", "apfhttp", "apfdebug",
}

// importRules are the layering the tests below keep.
var importRules = []importRule{
	{
		from: libraryPackages,
		not:  []string{"internal/debug/console", "internal/debug/shadow", "sim"},
		why:  "the library imports nothing of the console, the shadow configuration or the tools: the server composes them",
	},
	{
		from: []string{"apfhttp"},
		not:  []string{"apfdebug"},
		why:  "the middleware serves no debug endpoint: a program mounts the dumps (apfdebug.Handler) beside it, and apf serve composes them in internal/debug/debugmux",
	},
}

// configRule keeps config the layer between bytes and the model.
var configRule = importRule{
	from: []string{"config"},
	not:  []string{"fairqueue", "borrow", "shuffle"},
	why:  "config reads, validates and writes the API objects; turning them into the core's inputs is the engine's",
}

// listModule returns the module's packages, keyed by their path relative
// to the module ("" for the root package, were there one).
func listModule(t *testing.T) map[string]listedPackage {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, which lists the packages: %v", err)
	}
	cmd := exec.Command(goCmd, "list", "-e", "-json=ImportPath,Name,Imports,Error", "./...")
	cmd.Dir = root(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	pkgs := map[string]listedPackage{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading go list's answer: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		rel, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		pkgs[rel] = p
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no package of the module")
	}
	return pkgs
}

// relative returns path relative to the module, and whether it is in it.
func relative(path string) (string, bool) {
	if path == modulePath {
		return "", true
	}
	return strings.CutPrefix(path, modulePath+"/")
}

// isInternal reports whether a path relative to the module is under an
// internal directory, which only the module's commands and server may
// import.
func isInternal(rel string) bool {
	return slices.Contains(strings.Split(rel, "/"), "internal")
}

// moduleImports returns the imports of p that are packages of the module,
// relative to it.
func moduleImports(p listedPackage) []string {
	var out []string
	for _, imp := range p.Imports {
		if rel, ok := relative(imp); ok {
			out = append(out, rel)
		}
	}
	return out
}

// internalImports lists the imports of internal packages by packages of
// the library: every package of the module outside internal/ that is not
// a command. A command (cmd/apf, the examples, the benchmarks' programs)
// wires the server and may import what it likes.
func internalImports(pkgs map[string]listedPackage) []string {
	var out []string
	for _, rel := range sortedKeys(pkgs) {
		p := pkgs[rel]
		if isInternal(rel) || p.Name == "main" {
			continue
		}
		for _, imp := range moduleImports(p) {
			if isInternal(imp) {
				out = append(out, fmt.Sprintf("%s imports %s: no public package imports internal/ (a helper the library needs is public, or lives in the package that owns it)", rel, imp))
			}
		}
	}
	return out
}

// violations lists how the packages break rule: for each forbidden
// package a package of rule.from depends on, the chain of imports that
// brings it in.
func violations(pkgs map[string]listedPackage, rule importRule) []string {
	var out []string
	for _, from := range rule.from {
		if _, ok := pkgs[from]; !ok {
			out = append(out, fmt.Sprintf("%s: no such package in the module (the rule names it)", from))
			continue
		}
		chains := importChains(pkgs, from)
		for _, not := range rule.not {
			if chain, ok := chains[not]; ok {
				out = append(out, fmt.Sprintf("%s imports %s (%s): %s", from, not, strings.Join(chain, " → "), rule.why))
			}
		}
	}
	return out
}

// importChains returns, for every package of the module that from depends
// on, one shortest chain of imports from from to it.
func importChains(pkgs map[string]listedPackage, from string) map[string][]string {
	chains := map[string][]string{from: {from}}
	queue := []string{from}
	for len(queue) > 0 {
		at := queue[0]
		queue = queue[1:]
		for _, imp := range moduleImports(pkgs[at]) {
			if _, seen := chains[imp]; seen {
				continue
			}
			chains[imp] = append(slices.Clip(chains[at]), imp)
			queue = append(queue, imp)
		}
	}
	delete(chains, from)
	return chains
}

func sortedKeys(m map[string]listedPackage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// No package of the library imports internal/.
func TestLibraryImportsNoInternal(t *testing.T) {
	for _, v := range internalImports(listModule(t)) {
		t.Error(v)
	}
}

// The library, the middleware above all, imports nothing of the server's
// faces.
func TestLibraryLayering(t *testing.T) {
	pkgs := listModule(t)
	for _, rule := range importRules {
		for _, v := range violations(pkgs, rule) {
			t.Error(v)
		}
	}
}

// config converts into none of the core's types.
func TestConfigImportsNoCore(t *testing.T) {
	for _, v := range violations(listModule(t), configRule) {
		t.Error(v)
	}
}

// The checks themselves, on a made-up module: each names the offending
// import and the chain that brings it in.
func TestImportChecks(t *testing.T) {
	pkg := func(rel, name string, imports ...string) listedPackage {
		p := listedPackage{ImportPath: modulePath + "/" + rel, Name: name}
		for _, imp := range imports {
			p.Imports = append(p.Imports, modulePath+"/"+imp)
		}
		p.Imports = append(p.Imports, "net/http")
		return p
	}
	pkgs := map[string]listedPackage{}
	for _, p := range []listedPackage{
		pkg("apfhttp", "apfhttp", "controller", "console"),
		pkg("console", "console", "shadow"),
		pkg("shadow", "shadow", "controller"),
		pkg("controller", "controller"),
		pkg("config", "config", "internal/fieldpos"),
		pkg("apfhttp/internal/scan", "scan"),
		pkg("internal/fieldpos", "fieldpos"),
		pkg("internal/server", "server", "internal/fieldpos", "apfhttp"),
		pkg("cmd/apf", "main", "internal/server"),
	} {
		rel, _ := relative(p.ImportPath)
		pkgs[rel] = p
	}
	got := internalImports(pkgs)
	if len(got) != 1 || !strings.HasPrefix(got[0], "config imports internal/fieldpos: ") {
		t.Errorf("internal imports: %q", got)
	}
	pkgs["apfhttp"] = pkg("apfhttp", "apfhttp", "controller", "console", "apfhttp/internal/scan")
	if got := internalImports(pkgs); len(got) != 2 || !strings.HasPrefix(got[0], "apfhttp imports apfhttp/internal/scan: ") {
		t.Errorf("a nested internal package: %q", got)
	}
	rule := importRule{from: []string{"apfhttp", "controller"}, not: []string{"console", "shadow", "apfdebug"}, why: "because"}
	want := []string{
		"apfhttp imports console (apfhttp → console): because",
		"apfhttp imports shadow (apfhttp → console → shadow): because",
	}
	if got := violations(pkgs, rule); !slices.Equal(got, want) {
		t.Errorf("violations:\n got %q\nwant %q", got, want)
	}
	if got := violations(pkgs, importRule{from: []string{"nowhere"}}); len(got) != 1 || !strings.Contains(got[0], "no such package") {
		t.Errorf("a rule naming no package: %q", got)
	}
}
