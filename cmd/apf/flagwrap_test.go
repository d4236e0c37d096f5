package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Every command's flag help wraps at flagUsageWidth whatever its words:
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
	got := wrapFlagUsages(fs.FlagUsagesWrapped(0), flagUsageWidth)
	col := descriptionColumn(strings.Split(got, "\n")[0])
	if col < 0 {
		t.Fatalf("no description column:\n%s", got)
	}
	for _, line := range strings.Split(strings.TrimRight(got, "\n"), "\n") {
		if len(line) > flagUsageWidth && len(strings.Fields(line[col:])) > 1 {
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
