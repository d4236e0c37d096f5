package top

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// WriteJSON writes the report as one indented JSON document.
func WriteJSON(w io.Writer, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Screen is where a text report goes: width and height in cells, 0 for
// no bound (a pipe, a file).
type Screen struct {
	Width, Height int
	// Interval is how often the view is refreshed, for the title; 0 for
	// a single report.
	Interval time.Duration
}

// minFlowRows is how many flow rows a screen keeps however short it is:
// a view without the busiest flow would miss the point.
const minFlowRows = 3

// Render writes the report as text for scr: a title, the priority
// levels, the borrowing levels, the busiest flows, what could not be read
// and the notes. On a bounded screen the flows are cut to fit the height
// and every line to the width.
func Render(w io.Writer, r *Report, scr Screen) error {
	var head, tail []string
	title := fmt.Sprintf("apf top  %s  %s", r.Server, r.Time.Format("15:04:05Z07:00"))
	if scr.Interval > 0 {
		title += "  every " + scr.Interval.String()
	}
	if r.IntervalSeconds > 0 {
		title += fmt.Sprintf("  rates over %.1fs", r.IntervalSeconds)
	}
	head = append(head, title, "")
	if line := sharedBudgetLine(r); line != "" {
		head = append(head, wrap(line, scr.Width)...)
	}
	if line := adaptiveLine(r); line != "" {
		head = append(head, wrap(line, scr.Width)...)
	}
	if line := pacedLine(r); line != "" {
		head = append(head, wrap(line, scr.Width)...)
	}
	head = append(head, levelTable(r.Levels)...)
	if lines := upstreamLines(r); lines != nil {
		head = append(head, "")
		head = append(head, lines...)
	}
	head = append(head, "")
	head = append(head, wrap(borrowingLine(r), scr.Width)...)
	if len(r.Missing) > 0 || len(r.Notes) > 0 {
		tail = append(tail, "")
	}
	// What could not be read is wrapped rather than cut: the reason and
	// the fix are the point of those lines.
	for _, m := range r.Missing {
		tail = append(tail, wrap("NOT READ "+m.String(), scr.Width)...)
	}
	for _, n := range r.Notes {
		tail = append(tail, wrap("NOTE "+n, scr.Width)...)
	}
	flows := r.Flows
	if scr.Height > 0 {
		// head, a blank line, the flows' title and header, the flows,
		// tail.
		room := scr.Height - len(head) - 3 - len(tail)
		flows = flows[:min(len(flows), max(room, minFlowRows))]
	}
	lines := append(head, "")
	lines = append(lines, flowTable(flows, r.FlowsTotal)...)
	lines = append(lines, tail...)
	if scr.Height > 0 && len(lines) > scr.Height {
		lines = lines[:scr.Height]
	}
	var b strings.Builder
	for _, l := range lines {
		if scr.Width > 0 {
			l = fit(l, scr.Width)
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// levelTable is the priority levels' table, narrow enough for 80
// columns but for the rejections' reasons at the end of the line.
func levelTable(levels []Level) []string {
	rows := [][]string{{"PRIORITY LEVEL", "SEATS", "BORROW", "EXEC", "WAIT", "QUEUES", "DISP/S", "P99 WAIT", "REJ/S"}}
	for _, l := range levels {
		borrowed := "-"
		if l.BorrowedSeats != nil {
			borrowed = number(*l.BorrowedSeats)
			if *l.BorrowedSeats > 0 {
				borrowed = "+" + borrowed
			}
		}
		rows = append(rows, []string{
			l.Name,
			pair(l.NominalSeats, l.CurrentSeats),
			borrowed,
			pair(l.ExecutingRequests, l.ExecutingSeats),
			pair(l.WaitingRequests, l.WaitingSeats),
			optInt(l.ActiveQueues),
			optRate(l.DispatchedPerSecond),
			optSeconds(l.WaitP99Seconds),
			rejected(l),
		})
	}
	return append(align(rows),
		"  SEATS nominal/current; EXEC, WAIT requests/seats; QUEUES active (non-empty);",
		"  DISP/S, REJ/S dispatched, rejected per second; P99 WAIT of the requests queued")
}

// borrowingLine names the levels that borrow.
func borrowingLine(r *Report) string {
	if len(r.Borrowing) == 0 {
		for _, l := range r.Levels {
			if l.BorrowedSeats != nil {
				return "BORROWING none"
			}
		}
		return "BORROWING not known (no seats without /metrics)"
	}
	byName := map[string]Level{}
	for _, l := range r.Levels {
		byName[l.Name] = l
	}
	parts := make([]string, 0, len(r.Borrowing))
	for _, name := range r.Borrowing {
		l := byName[name]
		parts = append(parts, fmt.Sprintf("%s +%s (%s of %s nominal)", name, number(*l.BorrowedSeats), number(*l.CurrentSeats), number(*l.NominalSeats)))
	}
	return "BORROWING " + strings.Join(parts, ", ")
}

// flowTable is the busiest flows' table.
func flowTable(flows []Flow, total int) []string {
	if total == 0 {
		return []string{"BUSIEST FLOWS none: no request waiting or executing"}
	}
	title := fmt.Sprintf("BUSIEST FLOWS %d of %d", len(flows), total)
	rows := [][]string{{"PRIORITY LEVEL", "FLOWSCHEMA", "DISTINGUISHER", "EXEC", "WAIT", "QUEUES"}}
	for _, f := range flows {
		var qs []string
		for _, q := range f.Queues {
			s := fmt.Sprintf("%d:%d/%d", q.Index, q.Waiting, q.Executing)
			if q.QueueWaiting != nil {
				s += fmt.Sprintf("(%d/%d)", *q.QueueWaiting, *q.QueueExecuting)
			}
			qs = append(qs, s)
		}
		dist := f.Distinguisher
		if dist == "" {
			dist = "-"
		}
		rows = append(rows, []string{
			f.PriorityLevel, f.FlowSchema, dist,
			fmt.Sprintf("%d/%d", f.ExecutingRequests, f.ExecutingSeats),
			fmt.Sprintf("%d/%d", f.WaitingRequests, f.WaitingSeats),
			strings.Join(qs, " "),
		})
	}
	return append(append([]string{title}, align(rows)...),
		"  EXEC, WAIT requests/seats; QUEUES index:waiting/executing, flow's (all flows')")
}

// align aligns rows in columns two spaces apart.
func align(rows [][]string) []string {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			// A tab or a newline in a cell (a user name can hold one)
			// would break the table.
			cells[i] = strings.Map(func(r rune) rune {
				if r < ' ' || r == 0x7f {
					return '?'
				}
				return r
			}, c)
		}
		_, _ = io.WriteString(tw, strings.Join(cells, "\t")+"\n")
	}
	_ = tw.Flush()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return lines
}

// wrap breaks s into lines of at most width columns at spaces, the
// lines after the first indented; width 0 leaves s whole.
func wrap(s string, width int) []string {
	const indent = "    "
	if width <= len(indent)+10 || utf8.RuneCountInString(s) <= width {
		return []string{s}
	}
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = indent + word
		}
	}
	return append(lines, line)
}

// fit cuts a line to width columns (one per rune, which holds for what
// the view prints), marking the cut.
func fit(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	if width <= 1 {
		return string([]rune(s)[:width])
	}
	return string([]rune(s)[:width-1]) + "…"
}

func rejected(l Level) string {
	if l.RejectedPerSecond == nil {
		return "-"
	}
	s := rate(*l.RejectedPerSecond)
	if len(l.RejectedByReason) > 0 {
		reasons := make([]string, 0, len(l.RejectedByReason))
		for reason := range l.RejectedByReason {
			reasons = append(reasons, reason)
		}
		sort.Strings(reasons)
		for i, reason := range reasons {
			reasons[i] = reason + " " + rate(l.RejectedByReason[reason])
		}
		s += " (" + strings.Join(reasons, ", ") + ")"
	}
	return s
}

// number prints a count or a seat number: an integer as one, anything
// else with one decimal.
func number(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func optNumber(v *float64) string {
	if v == nil {
		return "-"
	}
	return number(*v)
}

func optInt(v *int) string {
	if v == nil {
		return "-"
	}
	return strconv.Itoa(*v)
}

func pair(a, b *float64) string {
	return optNumber(a) + "/" + optNumber(b)
}

func rate(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func optRate(v *float64) string {
	if v == nil {
		return "-"
	}
	return rate(*v)
}

func optSeconds(v *float64) string {
	if v == nil {
		return "-"
	}
	d := time.Duration(*v * float64(time.Second))
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}
