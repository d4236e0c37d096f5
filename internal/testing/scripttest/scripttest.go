// Package scripttest runs scenario scripts: text files of commands, each
// followed by the output it must give, which read like the documentation
// of what they test. A case is a command line, a "----" line and the
// expected output up to a blank line; blank lines and lines starting with
// "#" between cases are comments. With -update the files are rewritten
// with the actual output.
//
// It is test support for the core packages' scripts (fairqueue, engine);
// the commands themselves are each package's own.
package scripttest

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the scenario scripts with the actual output")

// Run runs every file matching pattern as a subtest. For each file it
// asks newRunner for a fresh interpreter and feeds it the commands in
// order; run returns a command's output lines, or an error that stops the
// file (an invariant the command broke, say).
func Run(t *testing.T, pattern string, newRunner func(t *testing.T) func(cmd string) ([]string, error)) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts match %s: %v", pattern, err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)), func(t *testing.T) {
			runFile(t, file, newRunner(t))
		})
	}
}

func runFile(t *testing.T, file string, run func(string) ([]string, error)) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []string // the file as -update rewrites it
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			out = append(out, line)
			continue
		}
		cmd, at := line, i+1
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s:%d: command without ----", file, at)
		}
		i += 2
		var want []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		got, err := run(cmd)
		if err != nil {
			t.Fatalf("%s:%d: %s: %v", file, at, cmd, err)
		}
		if !*update && !slices.Equal(got, want) {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", file, at, cmd, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		out = append(out, cmd, "----")
		out = append(out, got...)
		if i < len(lines) {
			out = append(out, "")
		}
	}
	if *update {
		if err := os.WriteFile(file, []byte(strings.Join(out, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
