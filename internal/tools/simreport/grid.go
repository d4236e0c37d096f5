package simreport

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apfproject/apf/sim"
)

// grid is one table of figures, independent of how it is drawn: the
// terminal writes it with text/tabwriter, the HTML page as a <table>. Both
// outputs therefore show the very same cells.
type grid struct {
	title string
	head  []string
	rows  [][]string
	// show says in which forms each column is printed (nil: every
	// column in both); the HTML page has the wide form.
	show []form
}

// deltaNote ends the title of a comparison's table with differences.
const deltaNote = "(Δ = B − A)"

// form is where a column of a grid is shown.
type form uint8

const (
	bothForms  form = iota
	wideOnly        // in the wide text form and the HTML page
	narrowOnly      // in the narrow text form only (a total of wide columns)
)

// only marks the columns whose headers are among headers as shown in form
// f only.
func (g *grid) only(f form, headers ...string) {
	if g.show == nil {
		g.show = make([]form, len(g.head))
	}
	for i, h := range g.head {
		if slices.Contains(headers, h) {
			g.show[i] = f
		}
	}
}

// form is g with the columns of one form: the wide one, or the narrow one.
func (g grid) form(wide bool) grid {
	if g.show == nil {
		return g
	}
	drop := narrowOnly
	if !wide {
		drop = wideOnly
	}
	keep := func(cells []string) []string {
		var out []string
		for i, c := range cells {
			if g.show[i] != drop {
				out = append(out, c)
			}
		}
		return out
	}
	out := grid{title: g.title, head: keep(g.head)}
	if !slices.Contains(out.head, "Δ") {
		out.title = strings.Replace(out.title, " "+deltaNote, "", 1)
	}
	for _, r := range g.rows {
		out.rows = append(out.rows, keep(r))
	}
	return out
}

func levelGrid(r *sim.Result, reasonCols []string) grid {
	g := grid{title: "Priority levels"}
	g.head = append([]string{"NAME", "ARRIVED", "DISPATCHED"}, upper(reasonCols)...)
	g.head = append(g.head, "REJECTED", "WAIT P50", "WAIT P99", "WAIT MAX", "SEAT UTIL", "NOMINAL SEATS", "MAX BORROWED")
	for _, l := range r.Levels {
		name, util := l.Name, formatPercent(l.SeatUtilization)
		if l.Exempt {
			name, util = name+" (exempt)", "-"
		}
		cells := []string{name, itoa(l.Arrived), itoa(l.Dispatched)}
		cells = append(cells, reasonCells(l.Counts, reasonCols)...)
		cells = append(cells, itoa(rejectedTotal(l.Counts)))
		cells = append(cells, waitCells(l.Wait)...)
		cells = append(cells, util, strconv.Itoa(l.NominalSeats), signed(int64(l.MaxBorrowedSeats)))
		g.rows = append(g.rows, cells)
	}
	g.only(wideOnly, append(upper(reasonCols), "WAIT P50", "WAIT MAX", "NOMINAL SEATS", "MAX BORROWED")...)
	g.only(narrowOnly, "REJECTED")
	return g
}

func schemaGrid(r *sim.Result, reasonCols []string) grid {
	g := grid{title: "FlowSchemas"}
	g.head = append([]string{"NAME", "PRIORITY LEVEL", "ARRIVED", "DISPATCHED"}, upper(reasonCols)...)
	g.head = append(g.head, "REJECTED", "WAIT P50", "WAIT P99", "WAIT MAX")
	for _, s := range r.FlowSchemas {
		cells := []string{s.Name, s.PriorityLevel, itoa(s.Arrived), itoa(s.Dispatched)}
		cells = append(cells, reasonCells(s.Counts, reasonCols)...)
		cells = append(cells, itoa(rejectedTotal(s.Counts)))
		cells = append(cells, waitCells(s.Wait)...)
		g.rows = append(g.rows, cells)
	}
	g.only(wideOnly, append(upper(reasonCols), "ARRIVED", "WAIT P50", "WAIT MAX")...)
	g.only(narrowOnly, "REJECTED")
	return g
}

func flowGrid(r *sim.Result) grid {
	g := grid{
		title: fmt.Sprintf("Top flows (by arrivals, at most %d)", sim.TopFlows),
		head:  []string{"FLOWSCHEMA", "DISTINGUISHER", "PRIORITY LEVEL", "CLIENTS", "ARRIVED", "DISPATCHED", "REJECTED", "WAIT P50", "WAIT P99", "WAIT MAX"},
	}
	for _, f := range r.Flows {
		cells := []string{f.FlowSchema, orDash(f.Distinguisher), f.PriorityLevel, orDash(clientList(f.Clients, 3)),
			itoa(f.Arrived), itoa(f.Dispatched), itoa(rejectedTotal(f.Counts))}
		cells = append(cells, waitCells(f.Wait)...)
		g.rows = append(g.rows, cells)
	}
	g.only(wideOnly, "PRIORITY LEVEL", "CLIENTS", "ARRIVED", "WAIT P50", "WAIT MAX")
	return g
}

func compareLevelGrid(a, b *sim.Result) grid {
	g := grid{title: "Priority levels " + deltaNote, head: []string{"NAME",
		"ARRIVED A", "ARRIVED B",
		"DISPATCHED A", "DISPATCHED B", "Δ",
		"REJECTED A", "REJECTED B", "Δ",
		"WAIT P50 A", "WAIT P50 B", "Δ",
		"WAIT P99 A", "WAIT P99 B", "Δ",
		"SEAT UTIL A", "SEAT UTIL B", "Δ",
		"NOMINAL A", "NOMINAL B", "MAX BORROWED A", "MAX BORROWED B"}}
	key := func(l sim.LevelResult) string { return l.Name }
	la, lb := index(a.Levels, key), index(b.Levels, key)
	for _, name := range unionNames(a.Levels, b.Levels, key) {
		x, okA := lookup(la, name)
		y, okB := lookup(lb, name)
		cells := []string{name}
		cells = append(cells, pair(okA, okB, func(l *sim.LevelResult) string { return itoa(l.Arrived) }, x, y)...)
		cells = append(cells, countDiff(okA, okB, x.Dispatched, y.Dispatched)...)
		cells = append(cells, countDiff(okA, okB, rejectedTotal(x.Counts), rejectedTotal(y.Counts))...)
		cells = append(cells, durationDiff(okA, okB, x.Wait.P50, y.Wait.P50)...)
		cells = append(cells, durationDiff(okA, okB, x.Wait.P99, y.Wait.P99)...)
		cells = append(cells, utilDiff(okA, okB, x, y)...)
		cells = append(cells, pair(okA, okB, func(l *sim.LevelResult) string { return strconv.Itoa(l.NominalSeats) }, x, y)...)
		cells = append(cells, pair(okA, okB, func(l *sim.LevelResult) string { return signed(int64(l.MaxBorrowedSeats)) }, x, y)...)
		g.rows = append(g.rows, cells)
	}
	g.only(wideOnly, "ARRIVED A", "ARRIVED B", "DISPATCHED A", "DISPATCHED B", "Δ", "WAIT P50 A", "WAIT P50 B",
		"SEAT UTIL A", "SEAT UTIL B", "NOMINAL A", "NOMINAL B", "MAX BORROWED A", "MAX BORROWED B")
	return g
}

func compareSchemaGrid(a, b *sim.Result) grid {
	g := grid{title: "FlowSchemas " + deltaNote, head: []string{"NAME", "PRIORITY LEVEL",
		"ARRIVED A", "ARRIVED B",
		"DISPATCHED A", "DISPATCHED B", "Δ",
		"REJECTED A", "REJECTED B", "Δ",
		"WAIT P50 A", "WAIT P50 B", "Δ",
		"WAIT P99 A", "WAIT P99 B", "Δ"}}
	key := func(s sim.SchemaResult) string { return s.Name }
	sa, sb := index(a.FlowSchemas, key), index(b.FlowSchemas, key)
	for _, name := range unionNames(a.FlowSchemas, b.FlowSchemas, key) {
		x, okA := lookup(sa, name)
		y, okB := lookup(sb, name)
		level := x.PriorityLevel
		switch {
		case !okA:
			level = y.PriorityLevel
		case okB && x.PriorityLevel != y.PriorityLevel:
			level = x.PriorityLevel + " → " + y.PriorityLevel
		}
		cells := []string{name, level}
		cells = append(cells, pair(okA, okB, func(s *sim.SchemaResult) string { return itoa(s.Arrived) }, x, y)...)
		cells = append(cells, countDiff(okA, okB, x.Dispatched, y.Dispatched)...)
		cells = append(cells, countDiff(okA, okB, rejectedTotal(x.Counts), rejectedTotal(y.Counts))...)
		cells = append(cells, durationDiff(okA, okB, x.Wait.P50, y.Wait.P50)...)
		cells = append(cells, durationDiff(okA, okB, x.Wait.P99, y.Wait.P99)...)
		g.rows = append(g.rows, cells)
	}
	g.only(wideOnly, "PRIORITY LEVEL", "ARRIVED A", "ARRIVED B", "DISPATCHED A", "DISPATCHED B", "Δ", "WAIT P50 A", "WAIT P50 B")
	return g
}
