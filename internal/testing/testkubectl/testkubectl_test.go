package testkubectl

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeRepo makes a directory tree with the apf go.mod at its root, a
// package directory two levels down, and PATH holding only an empty
// directory; it returns the root and enters the package directory.
func fakeRepo(t *testing.T) string {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte(module+"\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(root, "internal", "x")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(pkg)
	t.Setenv("PATH", t.TempDir())
	return root
}

func writeExecutable(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestPrefersRepositoryKubectl(t *testing.T) {
	root := fakeRepo(t)
	onPath := t.TempDir()
	writeExecutable(t, filepath.Join(onPath, "kubectl"))
	t.Setenv("PATH", onPath)
	want := filepath.Join(root, "bin", "kubectl")
	writeExecutable(t, want)
	if got := Path(t); got != want {
		t.Errorf("Path = %q, want the repository's %q", got, want)
	}
}

func TestFallsBackToPath(t *testing.T) {
	fakeRepo(t)
	onPath := t.TempDir()
	want := filepath.Join(onPath, "kubectl")
	writeExecutable(t, want)
	t.Setenv("PATH", onPath)
	if got := Path(t); got != want {
		t.Errorf("Path = %q, want kubectl on PATH %q", got, want)
	}
}

// recorder is a testing.TB that records how a test ended.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(string, ...any) { r.skipped = true; panic(r) }

func (r *recorder) Fatalf(string, ...any) { r.failed = true; panic(r) }

// outcome runs Path on a recorder and reports whether it skipped or failed.
func outcome(t *testing.T) (skipped, failed bool) {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if v := recover(); v != nil && v != r {
				panic(v)
			}
		}()
		Path(r)
	}()
	return r.skipped, r.failed
}

func TestNoKubectl(t *testing.T) {
	fakeRepo(t)
	t.Setenv("CI", "")
	if skipped, failed := outcome(t); !skipped || failed {
		t.Errorf("without kubectl and CI: skipped %v, failed %v; want a skip", skipped, failed)
	}
	t.Setenv("CI", "true")
	if skipped, failed := outcome(t); skipped || !failed {
		t.Errorf("without kubectl under CI: skipped %v, failed %v; want a failure", skipped, failed)
	}
}

func TestNonExecutableIsIgnored(t *testing.T) {
	root := fakeRepo(t)
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "kubectl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CI", "")
	if skipped, _ := outcome(t); !skipped {
		t.Error("a bin/kubectl that cannot be executed was taken")
	}
}
