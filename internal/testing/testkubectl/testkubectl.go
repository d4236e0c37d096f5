// Package testkubectl finds the kubectl that tests run.
//
// The repository's bin/kubectl comes first: `make kube-bins` builds it
// (v1.37.2, the version apf follows) from test/kube's module, and the
// Makefile's unit target builds it before the tests run. A kubectl on PATH
// is the fallback for a plain `go test` on a machine without it. When
// there is none, a test is skipped, except under CI (the environment
// variable CI set), where a missing kubectl is a failure: the tests that
// need it must not pass there by not running.
//
// It is for tests only and depends on nothing of the project.
package testkubectl

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// module is the go.mod line that marks the repository's root.
const module = "module github.com/apfproject/apf\n"

// Path returns the kubectl to run: bin/kubectl of the repository when it
// exists, else kubectl on PATH. With neither it skips t, or fails it when
// CI is set.
func Path(t testing.TB) string {
	t.Helper()
	p, err := find()
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("no kubectl (bin/kubectl, built by make kube-bins, or kubectl on PATH) and CI is set: %v", err)
	}
	t.Skipf("no kubectl: run make kube-bins, or put kubectl on PATH (with CI set this fails instead): %v", err)
	return ""
}

// find looks for bin/kubectl in the repository that holds the working
// directory, then for kubectl on PATH.
func find() (string, error) {
	if root, ok := repoRoot(); ok {
		p := filepath.Join(root, "bin", "kubectl")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return exec.LookPath("kubectl")
}

// repoRoot walks up from the working directory (a test's package
// directory) to the directory whose go.mod declares the apf module.
func repoRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte(module)) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
