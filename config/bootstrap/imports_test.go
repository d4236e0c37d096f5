package bootstrap

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The package may depend only on the API types: config imports it, so any
// apf import here would risk a cycle, and the data must stay usable on its
// own (the peer benchmark compares it with upstream).
func TestImportsOnlyAPITypes(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(path, "k8s.io/api/") && !strings.HasPrefix(path, "k8s.io/apimachinery/") {
				t.Errorf("%s imports %q; only k8s.io/api and k8s.io/apimachinery are allowed", name, path)
			}
		}
	}
}
