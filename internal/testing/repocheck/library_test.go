package repocheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// libraryExample is an example docs/library.md names: `pkg.ExampleName`,
// the package by its path in the module.
var libraryExample = regexp.MustCompile("`([a-z][a-z/]*)\\.(Example[A-Za-z0-9_]*)`")

// TestLibraryExamplesExist: every example docs/library.md names is an
// Example function of that package with an Output comment, so that go test
// runs it and checks what it prints.
func TestLibraryExamplesExist(t *testing.T) {
	dir := root(t)
	page, err := os.ReadFile(filepath.Join(dir, "docs", "library.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := libraryExample.FindAllStringSubmatch(string(page), -1)
	if len(named) == 0 {
		t.Fatal("docs/library.md names no examples")
	}
	for _, m := range named {
		pkg, name := m[1], m[2]
		tests, _ := filepath.Glob(filepath.Join(dir, filepath.FromSlash(pkg), "*_test.go"))
		found := false
		for _, f := range tests {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			s := string(src)
			i := strings.Index(s, "\nfunc "+name+"() {\n")
			if i < 0 {
				continue
			}
			found = true
			body := s[i:]
			if end := strings.Index(body, "\n}\n"); end >= 0 {
				body = body[:end]
			}
			if !strings.Contains(body, "// Output:") {
				t.Errorf("docs/library.md names %s.%s, which has no Output comment: go test does not check it", pkg, name)
			}
		}
		if !found {
			t.Errorf("docs/library.md names %s.%s, which package %s does not define", pkg, name, pkg)
		}
	}
}
