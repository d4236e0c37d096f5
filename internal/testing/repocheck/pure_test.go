package repocheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pureRule names a package that is a pure state machine: every input
// takes the time it happens at and returns what happened, so that the
// blocking driver (on the wall clock) and the simulator (on a virtual
// one) run one copy of its logic, and a test drives it step by step.
type pureRule struct {
	dir, what string
	// noModule forbids imports of the module's own packages too.
	noModule bool
	// noInterface forbids interface types: the package returns what
	// happened instead of calling a driver that implements one.
	noInterface bool
}

var pureRules = []pureRule{
	{dir: "engine", what: "the engine", noInterface: true},
	{dir: "capacity", what: "the adaptive limit's law", noModule: true},
}

// The engine and the adaptive limit's law hold no lock, read no clock,
// start no timer and no goroutine.
func TestPurePackages(t *testing.T) {
	for _, rule := range pureRules {
		t.Run(rule.dir, func(t *testing.T) {
			files, err := filepath.Glob(filepath.Join(root(t), rule.dir, "*.go"))
			if err != nil || len(files) == 0 {
				t.Fatalf("%s's files: %v (%d found)", rule.dir, err, len(files))
			}
			for _, name := range files {
				if !strings.HasSuffix(name, "_test.go") {
					for _, v := range impurities(t, name, rule) {
						t.Error(v)
					}
				}
			}
		})
	}
}

// clockCalls are the functions of package time that read the clock or
// start a timer.
var clockCalls = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true,
}

// impurities lists what in the file name breaks rule.
func impurities(t *testing.T, name string, rule pureRule) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	timeName := ""
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		switch {
		case path == "sync" || path == "sync/atomic":
			out = append(out, fmt.Sprintf("%s imports %s: %s holds no lock; its driver does", fset.Position(imp.Pos()), path, rule.what))
		case rule.noModule && strings.HasPrefix(path, modulePath+"/"):
			out = append(out, fmt.Sprintf("%s imports %s: %s depends on nothing of the module", fset.Position(imp.Pos()), path, rule.what))
		case path == "time":
			timeName = "time"
			if imp.Name != nil {
				timeName = imp.Name.Name
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && id.Name == timeName && clockCalls[n.Sel.Name] {
				out = append(out, fmt.Sprintf("%s: time.%s: %s reads no clock; every input carries now", fset.Position(n.Pos()), n.Sel.Name, rule.what))
			}
		case *ast.GoStmt:
			out = append(out, fmt.Sprintf("%s: a goroutine: %s runs on its driver's calls only", fset.Position(n.Pos()), rule.what))
		case *ast.TypeSpec:
			if _, ok := n.Type.(*ast.InterfaceType); ok && rule.noInterface {
				out = append(out, fmt.Sprintf("%s: interface %s: %s returns what happened instead of calling its driver", fset.Position(n.Pos()), n.Name.Name, rule.what))
			}
		}
		return true
	})
	return out
}
