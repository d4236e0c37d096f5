package screen

import (
	"strings"
	"testing"
)

func TestWidthFromColumns(t *testing.T) {
	for env, want := range map[string]int{"": DefaultWidth, "120": 120, " 100 ": 100, "abc": DefaultWidth, "0": DefaultWidth, "-5": DefaultWidth, "10": minWidth} {
		t.Setenv("COLUMNS", env)
		if got := Width(&strings.Builder{}); got != want {
			t.Errorf("COLUMNS=%q: width %d, want %d", env, got, want)
		}
	}
}

func TestElide(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"abcdef", 6, "abcdef"}, {"abcdef", 5, "abcd…"}, {"abcdef", 1, "…"}, {"abcdef", 0, ""}, {"ΔΔΔΔ", 3, "ΔΔ…"},
	} {
		if got := Elide(tc.in, tc.n); got != tc.want {
			t.Errorf("Elide(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// Wrap keeps every word, in order, in lines no wider than the width, cuts
// only words wider than a line, and indents the further lines.
func TestWrap(t *testing.T) {
	text := "  the quick brown fox jumps over the lazy dog " + strings.Repeat("x", 50) + " and runs away"
	for _, width := range []int{12, 20, 33, 80} {
		lines := Wrap(text, width, "    ")
		for i, l := range lines {
			if Len(l) > width {
				t.Errorf("width %d: line %q is %d wide", width, l, Len(l))
			}
			if i > 0 && !strings.HasPrefix(l, "    ") {
				t.Errorf("width %d: line %q not indented", width, l)
			}
		}
		if !strings.HasPrefix(lines[0], "  the") {
			t.Errorf("width %d: first line %q lost its indentation", width, lines[0])
		}
		joined := strings.Join(strings.Fields(strings.Join(lines, " ")), "")
		if joined != strings.Join(strings.Fields(text), "") {
			t.Errorf("width %d: text changed: %q", width, lines)
		}
	}
	if got := Wrap("short", 0, ""); len(got) != 1 || got[0] != "short" {
		t.Errorf("width 0: %q", got)
	}
}

func TestHangAndFill(t *testing.T) {
	msg := "apf sim: audit log: 3147 lines read: 1565 requests replayed (169 rejected by the cluster's APF), 1582 lines skipped\n  stage-request-received   1568 (first: ../../examples/sim/audit-cluster.log.gz:1)"
	want := "apf sim: audit log: 3147 lines read: 1565 requests replayed (169 rejected by the\n" +
		"  cluster's APF), 1582 lines skipped\n" +
		"  stage-request-received   1568 (first:\n" +
		"    ../../examples/sim/audit-cluster.log.gz:1)"
	if got := Hang(msg, 80); got != want {
		t.Errorf("Hang:\n%s\nwant:\n%s", got, want)
	}
	text := "A line short enough.\n  - a list item long enough to be wrapped onto a second line of its own\n" +
		"  - another item\n\nA paragraph whose first line is rather long\nand second short.\n"
	want = "A line short enough.\n  - a list item long enough to be\n    wrapped onto a second line of its\n    own\n" +
		"  - another item\n\nA paragraph whose first line is rather\nlong and second short.\n"
	if got := Fill(text, 40); got != want {
		t.Errorf("Fill:\n%s\nwant:\n%s", got, want)
	}
}

// A table fits the width by leaving out its wide columns and narrowing its
// shrinkable ones, widest first, cutting or wrapping their cells; the wide
// form has every column and every cell whole.
func TestTable(t *testing.T) {
	tab := Table{Indent: "  ", Columns: []Column{
		{Header: "NAME", Min: 8},
		{Header: "N", Right: true},
		{Header: "EXTRA", Wide: true},
		{Header: "WHY", Min: 10, Wrap: true},
	}}
	tab.Row("a-rather-long-name-indeed", "7", "only in wide", "because the subject is none of the ones listed in the rule")
	tab.Row("short", "12", "x", "no")
	narrow := tab.Lines(40, false)
	want := []string{
		"  NAME               N  WHY",
		"  a-rather-long-n…   7  because the",
		"                        subject is none",
		"                        of the ones",
		"                        listed in the",
		"                        rule",
		"  short             12  no",
	}
	if strings.Join(narrow, "\n") != strings.Join(want, "\n") {
		t.Errorf("narrow:\n%s\nwant:\n%s", strings.Join(narrow, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range narrow {
		if Len(l) > 40 {
			t.Errorf("line %q wider than 40", l)
		}
	}
	wide := strings.Join(tab.Lines(40, true), "\n")
	for _, s := range []string{"EXTRA", "only in wide", "a-rather-long-name-indeed", "because the subject is none of the ones listed in the rule"} {
		if !strings.Contains(wide, s) {
			t.Errorf("wide form lacks %q:\n%s", s, wide)
		}
	}
	// No width: the narrow form's columns, whole.
	if got := strings.Join(tab.Lines(0, false), "\n"); strings.Contains(got, "EXTRA") || !strings.Contains(got, "a-rather-long-name-indeed") {
		t.Errorf("no width:\n%s", got)
	}
	// Tabs and line breaks in cells cannot forge a line.
	var b strings.Builder
	t2 := Table{Columns: []Column{{Header: "A"}, {Header: "B"}}}
	t2.Row("x\ny", "z\tw")
	if err := t2.Write(&b, 80, false); err != nil || strings.Count(b.String(), "\n") != 2 {
		t.Errorf("cells with line breaks: %q, %v", b.String(), err)
	}
}

// An optional column stays while the table fits whole, and goes first
// when it does not.
func TestTableOptionalColumn(t *testing.T) {
	tab := Table{Columns: []Column{{Header: "NAME"}, {Header: "PRECEDENCE", Optional: true}, {Header: "WHY", Min: 10, Wrap: true}}}
	tab.Row("exempt", "1", "subject: the user is none of [Group system:masters]")
	if got := tab.Lines(100, false)[0]; got != "NAME    PRECEDENCE  WHY" {
		t.Errorf("fits whole: header %q", got)
	}
	if got := tab.Lines(40, false)[0]; got != "NAME    WHY" {
		t.Errorf("does not fit: header %q", got)
	}
	if got := tab.Lines(40, true)[0]; got != "NAME    PRECEDENCE  WHY" {
		t.Errorf("wide: header %q", got)
	}
}
