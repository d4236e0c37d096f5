package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Flag help wraps at the width whatever its words:
// a line is longer only when it holds a single word that does not fit
// beside the flag names; no word is lost or moved, and every line of a
// description starts in the description column.
func TestFlagUsagesWrap(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	long := "flowcontrol.apiserver.k8s.io/v1alpha1=true,"
	fs.String("a-rather-long-flag-name-for-the-column", "", "short")
	fs.Bool("limit", false, "divide the limit (--max-requests-inflight plus --max-mutating-requests-inflight) among the replicas "+
		long+" and then some more words to wrap "+strings.Repeat("word ", 30))
	fs.String("multi", "", "first line\nsecond line with "+strings.Repeat("more ", 20))
	const width = 100 // room for the descriptions beside the names
	got := wrapFlagUsages(fs.FlagUsagesWrapped(0), width)
	col := descriptionColumn(strings.Split(got, "\n")[0])
	if col < 0 {
		t.Fatalf("no description column:\n%s", got)
	}
	for _, line := range strings.Split(strings.TrimRight(got, "\n"), "\n") {
		if len(line) > width && len(strings.Fields(line[col:])) > 1 {
			t.Errorf("line of %d columns with more than one word:\n%s", len(line), line)
		}
		if c := descriptionColumn(line); c != col {
			t.Errorf("description at column %d, want %d:\n%s", c, col, line)
		}
	}
	if w, g := strings.Fields(fs.FlagUsagesWrapped(0)), strings.Fields(got); strings.Join(w, " ") != strings.Join(g, " ") {
		t.Errorf("words changed:\n%s", got)
	}
}

// With too little room beside the flag names, each description goes
// under its names, wrapped at the width, no word lost.
func TestFlagUsagesStack(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("a-rather-long-flag-name-for-the-column", "", "short")
	fs.Bool("limit", false, "divide the limit (--max-requests-inflight plus --max-mutating-requests-inflight) among the replicas "+strings.Repeat("word ", 30))
	fs.String("multi", "", "first line\nsecond line with "+strings.Repeat("more ", 20))
	const width = 60
	got := wrapFlagUsages(fs.FlagUsagesWrapped(0), width)
	for _, line := range strings.Split(got, "\n") {
		if len(line) > width {
			t.Errorf("line of %d columns:\n%s", len(line), line)
		}
		if line != "" && !strings.HasPrefix(strings.TrimLeft(line, " "), "-") && !strings.HasPrefix(line, stackedIndent) {
			t.Errorf("description not under its flag:\n%s", line)
		}
	}
	if !strings.Contains(got, "      --limit\n"+stackedIndent+"divide the limit") {
		t.Errorf("no description under --limit:\n%s", got)
	}
	if w, g := strings.Fields(fs.FlagUsagesWrapped(0)), strings.Fields(got); strings.Join(w, " ") != strings.Join(g, " ") {
		t.Errorf("words changed:\n%s", got)
	}
}
