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

// The engine is a pure state machine: every input takes the time as an
// argument and returns what happened. It holds no lock, reads no clock,
// starts no timer and defines no interface for its drivers to implement,
// so that one copy of a request's life serves the blocking driver
// (controller) and the virtual-time one (engine/stepper) alike.
func TestEngineIsPure(t *testing.T) {
	clockCalls := map[string]bool{
		"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
		"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true,
	}
	files, err := filepath.Glob(filepath.Join(root(t), "engine", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the engine's files: %v (%d found)", err, len(files))
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
			if path == "sync" || path == "sync/atomic" {
				t.Errorf("%s imports %s: the engine holds no lock; its driver does", fset.Position(imp.Pos()), path)
			}
			if path == "time" {
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
					t.Errorf("%s: time.%s: the engine reads no clock; every input carries now", fset.Position(n.Pos()), n.Sel.Name)
				}
			case *ast.TypeSpec:
				if _, ok := n.Type.(*ast.InterfaceType); ok {
					t.Errorf("%s: interface %s: the engine returns what happened instead of calling its driver", fset.Position(n.Pos()), n.Name.Name)
				}
			}
			return true
		})
	}
}
