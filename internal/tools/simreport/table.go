package simreport

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/apfproject/apf/sim"
)

// errNilResult is what every renderer answers for a missing Result.
var errNilResult = errors.New("report: no result to render")

// Table writes a terminal summary of r: a headline, where the server
// concurrency limit came from (limitSource, see LimitLine), then one
// aligned table per priority level, per FlowSchema and per top flow.
// Waits are queue waits of dispatched requests; seat utilization is the
// time-average of seats in use over that of the level's (moving) limit.
func Table(w io.Writer, limitSource string, r *sim.Result) error {
	if r == nil {
		return errNilResult
	}
	reasonCols := reasons(allCounts(r)...)
	tw := newTableWriter(w)
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

// tableWriter aligns rows with text/tabwriter and remembers the first
// write error, so that rendering code reads as a list of rows.
type tableWriter struct {
	w   io.Writer
	tw  *tabwriter.Writer
	err error
}

func newTableWriter(w io.Writer) *tableWriter {
	return &tableWriter{w: w, tw: tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)}
}

// row adds one aligned row; cells must not hold tabs or newlines (they are
// replaced by spaces, names from audit logs being arbitrary).
func (t *tableWriter) row(cells ...string) {
	if t.err != nil {
		return
	}
	for i, c := range cells {
		cells[i] = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(c)
	}
	_, t.err = io.WriteString(t.tw, strings.Join(cells, "\t")+"\n")
}

// line writes an unaligned line, after flushing the rows above it.
func (t *tableWriter) line(s string) {
	t.flush()
	if t.err != nil {
		return
	}
	_, t.err = io.WriteString(t.w, s+"\n")
}

// grid writes a titled, aligned table.
func (t *tableWriter) grid(g grid) {
	t.line(g.title)
	t.row(g.head...)
	for _, r := range g.rows {
		t.row(r...)
	}
	t.flush()
}

func (t *tableWriter) flush() {
	if t.err != nil {
		return
	}
	t.err = t.tw.Flush()
}
