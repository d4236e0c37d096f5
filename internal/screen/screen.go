// Package screen fits the tools' text output to the width of the terminal
// that shows it: how wide that is, lines wrapped at spaces or cut with a
// marker, and tables that drop their secondary columns and shorten their
// long cells to fit.
//
// The width is $COLUMNS when it holds a positive number (shells set it,
// and a script or test can), else the terminal's when the output is one,
// else DefaultWidth, 80 columns, the size of a terminal nobody resized:
// output piped to a file or to another program is laid out for it, and
// reads the same there as on the screen. A command's "-o wide" prints
// every column and every cell whole instead, whatever the width.
//
// Widths are counted in runes, one column each, which holds for what the
// tools print (ASCII, arrows, Greek letters, the ellipsis).
package screen

import (
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// DefaultWidth is the width of output that goes to no terminal.
const DefaultWidth = 80

// minWidth is the narrowest width honoured: below it lines are laid out
// for minWidth columns, as no useful table fits in fewer.
const minWidth = 40

// Ellipsis marks where a cell or a line was cut.
const Ellipsis = "…"

// Width is the number of columns output written to w should fit in:
// $COLUMNS, else the terminal's width when w is a terminal, else
// DefaultWidth.
func Width(w io.Writer) int {
	if n, err := strconv.Atoi(strings.TrimSpace(os.Getenv("COLUMNS"))); err == nil && n > 0 {
		return max(n, minWidth)
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if n, _, err := term.GetSize(int(f.Fd())); err == nil && n > 0 {
			return max(n, minWidth)
		}
	}
	return DefaultWidth
}

// Len is the number of columns s takes.
func Len(s string) int { return utf8.RuneCountInString(s) }

// Elide cuts s to at most n columns, its last one then being Ellipsis.
func Elide(s string, n int) string {
	if Len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	return string([]rune(s)[:n-1]) + Ellipsis
}

// Wrap breaks s into lines of at most width columns at blanks, the lines
// after the first starting with indent (at most half the width of it); the
// first keeps the leading blanks of s, and the blanks between words are
// kept where no line breaks. A word longer than a line is cut into pieces.
// Width 0 or less leaves s whole.
func Wrap(s string, width int, indent string) []string {
	if width <= 0 || Len(s) <= width {
		return []string{s}
	}
	if Len(indent) > width/2 {
		indent = string([]rune(indent)[:width/2])
	}
	var lines []string
	rest := strings.TrimLeft(s, " ")
	cur, words := s[:len(s)-len(rest)], 0
	if Len(cur) > width/2 {
		cur = indent
	}
	flush := func() {
		lines = append(lines, strings.TrimRight(cur, " "))
		cur, words = indent, 0
	}
	for rest != "" {
		// The next word and the blanks before it.
		n := strings.IndexByte(rest, ' ')
		if n < 0 {
			n = len(rest)
		}
		word := rest[:n]
		after := strings.TrimLeft(rest[n:], " ")
		sep := rest[n : len(rest)-len(after)]
		rest = after
		for word != "" {
			if Len(cur)+Len(word) <= width {
				cur += word
				words++
				break
			}
			if words > 0 {
				flush()
				continue
			}
			// A word wider than a whole line: cut it.
			r := []rune(word)
			room := max(width-Len(cur), 1)
			cur += string(r[:room])
			words++
			word = string(r[room:])
			flush()
		}
		if rest != "" && words > 0 {
			if Len(cur)+Len(sep) < width {
				cur += sep
			} else {
				flush()
			}
		}
	}
	if words > 0 {
		lines = append(lines, strings.TrimRight(cur, " "))
	}
	return lines
}

// Fill fits text to width as help texts are: a paragraph (lines of the
// same indentation, a list item's "- " starting a new one) with a line
// wider than width is refilled, its further lines indented as its first,
// two more after a list item's "- "; paragraphs that fit, and blank lines,
// are left as they are. Width 0 or less leaves text whole.
func Fill(text string, width int) string {
	if width <= 0 {
		return text
	}
	lines := strings.Split(text, "\n")
	var out []string
	for i := 0; i < len(lines); {
		indent := leading(lines[i])
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[i]) != "" && strings.TrimSpace(lines[j]) != "" &&
			leading(lines[j]) == indent+continuation(lines[i]) && !strings.HasPrefix(lines[j][len(leading(lines[j])):], "- ") {
			j++
		}
		para := lines[i:j]
		fits := true
		for _, l := range para {
			fits = fits && Len(l) <= width
		}
		if fits {
			out = append(out, para...)
		} else {
			words := make([]string, 0, len(para))
			for _, l := range para {
				words = append(words, strings.TrimSpace(l))
			}
			out = append(out, Wrap(indent+strings.Join(words, " "), width, indent+continuation(lines[i]))...)
		}
		i = j
	}
	return strings.Join(out, "\n")
}

// leading is the run of blanks that starts s.
func leading(s string) string { return s[:len(s)-len(strings.TrimLeft(s, " "))] }

// continuation is what a paragraph's further lines are indented by beyond
// its first line's indentation: two for a list item.
func continuation(first string) string {
	if strings.HasPrefix(strings.TrimLeft(first, " "), "- ") {
		return "  "
	}
	return ""
}

// Column is a column of a Table.
type Column struct {
	// Header is the column's title, in capitals as kubectl's.
	Header string
	// Wide columns are shown only in the wide form (-o wide).
	Wide bool
	// Optional columns are left out of the narrow form when the table
	// does not fit the width with every cell whole.
	Optional bool
	// Min is the narrowest a column may be made to fit the table in the
	// width, its longer cells then cut with Ellipsis (or, with Wrap,
	// wrapped onto further lines of the row); 0 keeps the column whole.
	Min int
	// Wrap wraps the column's long cells at spaces instead of cutting
	// them.
	Wrap bool
	// Right aligns the column's cells to the right (figures).
	Right bool
}

// Table is a table of text cells, printed aligned as kubectl prints its
// tables: columns two spaces apart, headers first.
type Table struct {
	// Indent is written before every line.
	Indent  string
	Columns []Column
	rows    [][]string
}

// Row adds a row; missing cells are empty, extra ones dropped. Tabs and
// line breaks in cells are printed as spaces.
func (t *Table) Row(cells ...string) {
	row := make([]string, len(t.Columns))
	for i := range row {
		if i < len(cells) {
			row[i] = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(cells[i])
		}
	}
	t.rows = append(t.rows, row)
}

// Lines lays the table out: in the narrow form (wide false) without its
// Wide columns, and with its shrinkable columns narrowed, widest first,
// until the table fits width (0: no limit); in the wide form every column
// and every cell whole.
func (t *Table) Lines(width int, wide bool) []string {
	natural := func(i int) int {
		n := Len(t.Columns[i].Header)
		for _, r := range t.rows {
			n = max(n, Len(r[i]))
		}
		return n
	}
	var cols []int
	for i, c := range t.Columns {
		if wide || !c.Wide {
			cols = append(cols, i)
		}
	}
	total := func(w []int) int {
		n := Len(t.Indent) + 2*max(len(w)-1, 0)
		for _, x := range w {
			n += x
		}
		return n
	}
	w := make([]int, len(cols))
	for j, i := range cols {
		w[j] = natural(i)
	}
	if !wide && width > 0 && total(w) > width {
		var kept []int
		for _, i := range cols {
			if !t.Columns[i].Optional {
				kept = append(kept, i)
			}
		}
		cols, w = kept, w[:0]
		for _, i := range cols {
			w = append(w, natural(i))
		}
	}
	if !wide && width > 0 {
		for over := total(w) - width; over > 0; over-- {
			best := -1
			for j, i := range cols {
				if m := t.Columns[i].Min; m > 0 && w[j] > max(m, Len(t.Columns[i].Header)) && (best < 0 || w[j] > w[best]) {
					best = j
				}
			}
			if best < 0 {
				break
			}
			w[best]--
		}
	}
	var out []string
	emit := func(cells []string) {
		// Each cell as one or more lines of its column's width.
		parts := make([][]string, len(cols))
		height := 1
		for j, i := range cols {
			c := cells[i]
			switch {
			case Len(c) <= w[j]:
				parts[j] = []string{c}
			case t.Columns[i].Wrap:
				parts[j] = Wrap(c, w[j], "")
			default:
				parts[j] = []string{Elide(c, w[j])}
			}
			height = max(height, len(parts[j]))
		}
		for k := 0; k < height; k++ {
			var b strings.Builder
			b.WriteString(t.Indent)
			for j, i := range cols {
				c := ""
				if k < len(parts[j]) {
					c = parts[j][k]
				}
				pad := strings.Repeat(" ", max(w[j]-Len(c), 0))
				if j > 0 {
					b.WriteString("  ")
				}
				if t.Columns[i].Right {
					b.WriteString(pad + c)
				} else {
					b.WriteString(c)
					if j < len(cols)-1 {
						b.WriteString(pad)
					}
				}
			}
			out = append(out, strings.TrimRight(b.String(), " "))
		}
	}
	head := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		head[i] = c.Header
	}
	emit(head)
	for _, r := range t.rows {
		emit(r)
	}
	return out
}

// Write prints the table's Lines to w.
func (t *Table) Write(w io.Writer, width int, wide bool) error {
	lines := t.Lines(width, wide)
	if len(lines) == 0 {
		return nil
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n")+"\n")
	return err
}

// Hang wraps every line of text at width (Wrap), a further line indented
// two columns more than the line it continues, as messages on standard
// error are. Width 0 or less leaves text whole.
func Hang(text string, width int) string {
	if width <= 0 {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
		lines[i] = strings.Join(Wrap(line, width, indent+"  "), "\n")
	}
	return strings.Join(lines, "\n")
}
