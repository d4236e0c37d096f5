package repocheck

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

const modulePath = "github.com/apfproject/apf"

// specDir is where the specification notes live, relative to the root.
const specDir = "docs/spec"

var (
	// staleCitation is a citation of the former facts sheet, which lies
	// outside the repository: "facts" and a section sign, even with a line
	// break and a comment marker between them, or the sheet's file name.
	// The section sign is an escape, and the file name is split, so that
	// this file does not match.
	staleCitation = regexp.MustCompile(`(?i)facts(?:\s|//|#)*\x{00a7}|apf-(?:facts)`)
	// specCite is a citation of a note from anywhere in the repository.
	specCite = regexp.MustCompile(`docs/spec/([A-Za-z0-9._-]+\.md)(?:#([A-Za-z0-9_-]+))?`)
	// noteLink is a Markdown link from one note to a note beside it (or to
	// a heading of its own, when the file part is empty).
	noteLink = regexp.MustCompile(`\]\(([A-Za-z0-9._-]+\.md)?(?:#([A-Za-z0-9_-]+))?\)`)
	// atxHeading is a Markdown heading line.
	atxHeading = regexp.MustCompile(`^#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	// inlineLink is [text](target), whose text alone shows in a heading.
	inlineLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// root returns the module's root directory, found by walking up from the
// test's working directory to the go.mod that declares the module.
func root(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module "+modulePath+"\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod of module %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// sourceFile is one .go, .txt or .md file, its path relative to the root
// with forward slashes.
type sourceFile struct {
	rel  string
	data []byte
}

// sources returns every .go, .txt and .md file under root, the nested
// modules (bench/peer) included, but not hidden directories or bin.
func sources(t *testing.T, root string) []sourceFile {
	t.Helper()
	var out []sourceFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || rel == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(rel) {
		case ".go", ".txt", ".md":
		default:
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out = append(out, sourceFile{rel, data})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no source files under %s", root)
	}
	return out
}

// anchor is the fragment GitHub gives a heading: its text in lower case,
// without inline-code backticks and link targets, with every character
// other than a letter, a digit, '-' and '_' dropped and each space turned
// into '-'.
func anchor(heading string) string {
	h := inlineLink.ReplaceAllString(heading, "$1")
	h = strings.ToLower(strings.TrimSpace(h))
	var b strings.Builder
	for _, r := range h {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-', r == '_', unicode.IsLetter(r), unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a Markdown document's headings, fenced
// code blocks left out. A repeated anchor gets the suffix -1, -2, ... as
// on GitHub.
func anchors(doc []byte) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		m := atxHeading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a := anchor(m[1])
		if n, ok := seen[a]; ok {
			seen[a] = n + 1
			a = fmt.Sprintf("%s-%d", a, n+1)
		} else {
			seen[a] = 0
		}
		out[a] = true
	}
	return out
}

// notes reads the notes in docs/spec: file name to its anchors.
func notes(t *testing.T, root string) map[string]map[string]bool {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, specDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no notes in %s", specDir)
	}
	out := map[string]map[string]bool{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = anchors(data)
	}
	return out
}

// resolve says what is wrong with a citation of file#frag (frag may be
// empty), or "" when it resolves.
func resolve(notes map[string]map[string]bool, file, frag string) string {
	heads, ok := notes[file]
	switch {
	case !ok:
		return "no such note"
	case frag != "" && !heads[frag]:
		return "no such heading"
	}
	return ""
}

// lineOf returns the 1-based line of byte offset off in data.
func lineOf(data []byte, off int) int {
	return bytes.Count(data[:off], []byte("\n")) + 1
}

// TestNoFactsSheetCitations: comments, tests and test data cite the
// specification notes, never the numbered sections of the former facts
// sheet.
func TestNoFactsSheetCitations(t *testing.T) {
	var bad []string
	for _, f := range sources(t, root(t)) {
		if strings.HasPrefix(f.rel, specDir+"/") {
			continue
		}
		for _, m := range staleCitation.FindAllIndex(f.data, -1) {
			bad = append(bad, fmt.Sprintf("%s:%d: %q", f.rel, lineOf(f.data, m[0]), f.data[m[0]:m[1]]))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		t.Errorf("%d citations of the former facts sheet; cite docs/spec/<note>.md#<heading> or say the fact itself:\n%s",
			len(bad), strings.Join(bad, "\n"))
	}
}

// TestSpecCitationsResolve: every docs/spec/<note>.md#<heading> cited
// outside the notes names an existing note and one of its headings.
func TestSpecCitationsResolve(t *testing.T) {
	r := root(t)
	ns := notes(t, r)
	var bad []string
	n := 0
	for _, f := range sources(t, r) {
		if strings.HasPrefix(f.rel, specDir+"/") {
			continue
		}
		for _, m := range specCite.FindAllSubmatchIndex(f.data, -1) {
			n++
			file := string(f.data[m[2]:m[3]])
			var frag string
			if m[4] >= 0 {
				frag = string(f.data[m[4]:m[5]])
			}
			if why := resolve(ns, file, frag); why != "" {
				bad = append(bad, fmt.Sprintf("%s:%d: %s: %s", f.rel, lineOf(f.data, m[0]), f.data[m[0]:m[1]], why))
			}
		}
	}
	if n == 0 {
		t.Fatal("no citations of docs/spec found; is the walk reading the tree?")
	}
	if len(bad) > 0 {
		t.Errorf("%d of %d citations of the specification notes do not resolve:\n%s", len(bad), n, strings.Join(bad, "\n"))
	}
}

// TestSpecNoteLinksResolve: the notes' links to one another, and to their
// own headings, resolve too.
func TestSpecNoteLinksResolve(t *testing.T) {
	r := root(t)
	ns := notes(t, r)
	var bad []string
	for name := range ns {
		data, err := os.ReadFile(filepath.Join(r, specDir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range noteLink.FindAllSubmatchIndex(data, -1) {
			file, frag := name, ""
			if m[2] >= 0 {
				file = string(data[m[2]:m[3]])
			}
			if m[4] >= 0 {
				frag = string(data[m[4]:m[5]])
			}
			if m[2] < 0 && m[4] < 0 {
				continue
			}
			if why := resolve(ns, file, frag); why != "" {
				bad = append(bad, fmt.Sprintf("%s/%s:%d: %s: %s", specDir, name, lineOf(data, m[0]), data[m[0]:m[1]], why))
			}
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		t.Errorf("%d links between the notes do not resolve:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}

// TestAnchor pins the heading-to-anchor rule on headings of the kinds the
// notes use.
func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"Wait limit":                          "wait-limit",
		"Retry-After":                         "retry-after",
		"Waiting, cancellation and time-outs": "waiting-cancellation-and-time-outs",
		"Max-in-flight filter":                "max-in-flight-filter",
		"`matchingPrecedence` range":          "matchingprecedence-range",
		"See [the notes](README.md) here":     "see-the-notes-here",
		"Per-level max seats":                 "per-level-max-seats",
		"snake_case stays":                    "snake_case-stays",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
	got := anchors([]byte("# A\n## B\n```\n# not a heading\n```\n## B\n### B ###\n"))
	for _, want := range []string{"a", "b", "b-1", "b-2"} {
		if !got[want] {
			t.Errorf("anchors: %q missing from %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("anchors: a line inside a code fence was taken as a heading")
	}
}
