package simreport

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/apfproject/apf/internal/screen"
	"github.com/apfproject/apf/sim"
)

// errNilResult is what every renderer answers for a missing Result.
var errNilResult = errors.New("report: no result to render")

// Layout is how wide the text reports are: Width columns (0: no limit),
// in the narrow form, which leaves out the secondary columns of each table
// and shortens its long names with an ellipsis (the REJECTED column then
// sums the rejections of every reason), or in the Wide form, with every
// column and every cell whole, as the HTML report shows them.
type Layout struct {
	Width int
	Wide  bool
}

// Table writes r in the wide form (Layout.Table).
func Table(w io.Writer, limitSource string, r *sim.Result) error {
	return Layout{Wide: true}.Table(w, limitSource, r)
}

// Compare writes a and b in the wide form (Layout.Compare).
func Compare(w io.Writer, limitSource string, a, b *sim.Result) error {
	return Layout{Wide: true}.Compare(w, limitSource, a, b)
}

// Table writes a terminal summary of r: a headline, where the server
// concurrency limit came from (limitSource, see LimitLine), then one
// aligned table per priority level, per FlowSchema and per top flow, each
// under a line that says what it is. Waits are queue waits of dispatched
// requests; seat utilization is the time-average of seats in use over that
// of the level's (moving) limit.
func (lay Layout) Table(w io.Writer, limitSource string, r *sim.Result) error {
	if r == nil {
		return errNilResult
	}
	reasonCols := reasons(allCounts(r)...)
	tw := newTableWriter(w, lay)
	tw.line(headline(r))
	if limitSource != "" {
		tw.line(LimitLine(r.ServerConcurrencyLimit, limitSource))
	}
	if l := adaptiveLine(r); l != "" {
		tw.line(l)
	}
	for _, p := range r.Problems {
		tw.line("configuration: " + p)
	}

	for i, g := range append([]grid{levelGrid(r, reasonCols), schemaGrid(r, reasonCols), flowGrid(r)}, upstreamGrids(r)...) {
		tw.line("")
		tw.grid(g)
		if i == 0 {
			for _, n := range notes(r) {
				tw.line("note: " + n)
			}
		}
	}
	if !lay.Wide {
		tw.line("")
		tw.line("-o wide: every column (rejections by reason, every wait, seats and borrowing, clients).")
	}
	return tw.err
}

// headline is the first line of a summary: what was simulated and how
// much.
func headline(r *sim.Result) string {
	name := r.Name
	if name == "" {
		name = "(unnamed configuration)"
	}
	limit := fmt.Sprintf("server concurrency limit %d seats", r.ServerConcurrencyLimit)
	if a := r.Adaptive; a != nil {
		limit = fmt.Sprintf("adaptive server concurrency limit (%d to %d seats)", a.Floor, a.Ceiling)
	}
	return fmt.Sprintf("%s: %d requests over %s of virtual time, %s, seed %d",
		name, r.Requests, formatDuration(r.Duration), limit, r.Seed)
}

// LimitLine says which server concurrency limit a run had and where it
// came from: limitSource is the caller's words ("read from cluster prod
// (apf_server_concurrency_limit_seats)", "--max-requests-inflight 40 +
// --max-mutating-requests-inflight 20"); the reports print it under the
// headline, and JSON gives it as serverConcurrencyLimitSource.
func LimitLine(seats int, limitSource string) string {
	return fmt.Sprintf("server concurrency limit: %d seats, %s", seats, limitSource)
}

func reasonCells(c sim.Counts, cols []string) []string {
	out := make([]string, len(cols))
	for i, reason := range cols {
		out[i] = itoa(c.Rejected[reason])
	}
	return out
}

func waitCells(ws sim.WaitStats) []string {
	return []string{formatDuration(ws.P50), formatDuration(ws.P99), formatDuration(ws.Max)}
}

func upper(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToUpper(s)
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// tableWriter lays out lines and tables in a Layout, and remembers the
// first write error, so that rendering code reads as a list of rows.
type tableWriter struct {
	w   io.Writer
	lay Layout
	err error
}

func newTableWriter(w io.Writer, lay Layout) *tableWriter {
	return &tableWriter{w: w, lay: lay}
}

// line writes a line of text, wrapped at the width in the narrow form
// (its further lines indented by two).
func (t *tableWriter) line(s string) {
	if t.err != nil {
		return
	}
	width := t.lay.Width
	if t.lay.Wide {
		width = 0
	}
	_, t.err = io.WriteString(t.w, strings.Join(screen.Wrap(s, width, "  "), "\n")+"\n")
}

// shrinkable are the headers of the columns of names, which the narrow
// form may shorten with an ellipsis to fit the width.
var shrinkable = []string{"NAME", "FLOWSCHEMA", "DISTINGUISHER", "PRIORITY LEVEL", "CLIENT", "CLIENTS"}

// grid writes a titled, aligned table. Cells must not hold tabs or line
// breaks (they are printed as spaces, names from audit logs being
// arbitrary).
func (t *tableWriter) grid(g grid) {
	g = g.form(t.lay.Wide)
	t.line(g.title)
	if t.err != nil {
		return
	}
	tab := screen.Table{Columns: make([]screen.Column, len(g.head))}
	for i, h := range g.head {
		tab.Columns[i].Header = h
		if slices.Contains(shrinkable, h) {
			tab.Columns[i].Min = 12
		}
	}
	for _, r := range g.rows {
		tab.Row(r...)
	}
	t.err = tab.Write(t.w, t.lay.Width, t.lay.Wide)
}
