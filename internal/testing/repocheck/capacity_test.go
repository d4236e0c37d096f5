package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The adaptive limit's law is pure, like the engine: every input takes
// the time it happens at, so that the controller (on the wall clock) and
// the simulator (on a virtual one) run the same code, and a test drives
// it step by step. It holds no lock, reads no clock, starts no timer and
// no goroutine.
func TestCapacityIsPure(t *testing.T) {
	clockCalls := map[string]bool{
		"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
		"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true,
	}
	files, err := filepath.Glob(filepath.Join(root(t), "capacity", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the capacity package's files: %v (%d found)", err, len(files))
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		timeName := ""
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case path == "sync" || path == "sync/atomic":
				t.Errorf("%s imports %s: the law holds no lock; its driver does", fset.Position(imp.Pos()), path)
			case strings.HasPrefix(path, modulePath+"/"):
				t.Errorf("%s imports %s: the law depends on nothing of the module", fset.Position(imp.Pos()), path)
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
					t.Errorf("%s: time.%s: the law reads no clock; every input carries now", fset.Position(n.Pos()), n.Sel.Name)
				}
			case *ast.GoStmt:
				t.Errorf("%s: a goroutine: the law runs on its driver's calls only", fset.Position(n.Pos()))
			}
			return true
		})
	}
}
