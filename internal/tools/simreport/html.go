package simreport

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/apfproject/apf/sim"
)

// IndexFile is the name of the page HTML writes into its directory.
const IndexFile = "index.html"

// HTML writes a self-contained report of one or more results into
// dir/index.html, creating dir if needed: the summary tables, then per
// priority level its seats in use against its limit (which moves with
// borrowing and lending), its queue length and its rejections over time,
// then a wait-time CDF per top flow. With several results (several
// configurations, the same traffic) every plot overlays them, told apart
// by dash pattern, and two results also get the side-by-side tables of
// Compare. limitSource says where the runs' server concurrency limit came
// from (LimitLine). The page is written only once it is fully rendered.
func HTML(dir, limitSource string, results ...*sim.Result) error {
	if len(results) == 0 {
		return errors.New("report: no result to render")
	}
	for _, r := range results {
		if r == nil {
			return errNilResult
		}
	}
	page, err := buildPage(results)
	if err != nil {
		return err
	}
	if limitSource != "" {
		page.Limit = LimitLine(results[0].ServerConcurrencyLimit, limitSource)
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, page); err != nil {
		return fmt.Errorf("report: rendering the HTML report: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, IndexFile), b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

type htmlRun struct {
	Letter   string
	Headline string
	Problems []string
	Tables   []htmlTable
	// Notes explain surprising figures of the levels' table.
	Notes []string
}

type htmlTable struct {
	Title string
	Head  []string
	Rows  [][]string
	// Every is the same table with every column, shown on demand under
	// a table that has only the columns that matter.
	Every *htmlTable
}

type htmlLevel struct {
	Name    string
	Summary string
	Notes   []string
	Plots   []template.HTML
}

type htmlPage struct {
	Title   string
	Limit   string
	Runs    []htmlRun
	Compare []htmlTable
	Levels  []htmlLevel
	Flows   []template.HTML
}

func toHTMLTable(g grid) htmlTable {
	g = g.form(true)
	return htmlTable{Title: g.title, Head: g.head, Rows: g.rows}
}

// toNarrowHTMLTable is g with the columns of the narrow text form, and
// every column on demand: the side-by-side tables of a comparison, whose
// every column would make a page scroll sideways.
func toNarrowHTMLTable(g grid) htmlTable {
	every := toHTMLTable(g)
	n := g.form(false)
	return htmlTable{Title: n.title, Head: n.head, Rows: n.rows, Every: &every}
}

// letters name the results of a comparison: A, B, C…
func letter(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return "R" + strconv.Itoa(i+1)
}

func buildPage(results []*sim.Result) (htmlPage, error) {
	multi := len(results) > 1
	var p htmlPage
	p.Title = "APF simulation: " + results[0].Name
	if multi {
		p.Title = "APF simulation: comparison"
	}
	reasonCols := reasons(allCounts(results...)...)
	for i, r := range results {
		run := htmlRun{Headline: headline(r), Problems: r.Problems, Notes: notes(r)}
		if multi {
			run.Letter = letter(i)
		}
		for _, g := range append([]grid{levelGrid(r, reasonCols), schemaGrid(r, reasonCols), flowGrid(r)}, upstreamGrids(r)...) {
			run.Tables = append(run.Tables, toHTMLTable(g))
		}
		p.Runs = append(p.Runs, run)
	}
	if len(results) == 2 {
		p.Compare = []htmlTable{toNarrowHTMLTable(compareLevelGrid(results[0], results[1])), toNarrowHTMLTable(compareSchemaGrid(results[0], results[1]))}
	}

	// prefix names a series of result i in a legend.
	prefix := func(i int, what string) string {
		if !multi {
			return what
		}
		return letter(i) + " " + what
	}
	dash := func(i int) string { return dashes[i%len(dashes)] }

	levelNames := []string{}
	seen := map[string]bool{}
	for _, r := range results {
		for _, l := range r.Levels {
			if !seen[l.Name] {
				seen[l.Name] = true
				levelNames = append(levelNames, l.Name)
			}
		}
	}
	for _, name := range levelNames {
		seats := plot{Title: "seats in use and limit", XLabel: "time", YLabel: "seats", XTick: secondsTick, Width: 440}
		waiting := plot{Title: "requests waiting in queues", XLabel: "time", YLabel: "requests", XTick: secondsTick, Width: 440}
		rejected := plot{Title: "rejections per sample interval", XLabel: "time", YLabel: "requests", XTick: secondsTick, Width: 440}
		lv := htmlLevel{Name: name}
		for i, r := range results {
			l := findLevel(r, name)
			if l == nil {
				continue
			}
			if lv.Summary != "" {
				lv.Summary += "; "
			}
			lv.Summary += levelSummary(prefix(i, ""), l)
			for _, n := range levelNotes(l) {
				lv.Notes = append(lv.Notes, prefix(i, n))
			}
			ts := sampleTimes(r, len(l.Series.SeatsInUse), len(l.Series.Limit), len(l.Series.Waiting), len(l.Series.Rejected))
			seats.Series = append(seats.Series, series{Name: prefix(i, "seats in use"), X: ts, Y: l.Series.SeatsInUse, Step: true, Color: palette[0], Dash: dash(i)})
			if !l.Exempt {
				seats.Series = append(seats.Series, series{Name: prefix(i, "limit"), X: ts, Y: l.Series.Limit, Step: true, Color: palette[1], Dash: dash(i)})
			}
			waiting.Series = append(waiting.Series, series{Name: prefix(i, "waiting"), X: ts, Y: l.Series.Waiting, Step: true, Color: palette[4], Dash: dash(i)})
			rejected.Series = append(rejected.Series, series{Name: prefix(i, "rejected"), X: ts, Y: l.Series.Rejected, Step: true, Color: palette[3], Dash: dash(i)})
		}
		for _, pl := range []plot{seats, waiting, rejected} {
			svg, err := pl.svg()
			if err != nil {
				return p, err
			}
			lv.Plots = append(lv.Plots, svg)
		}
		p.Levels = append(p.Levels, lv)
	}

	type flowKey struct{ schema, distinguisher string }
	var keys []flowKey
	seenFlow := map[flowKey]bool{}
	for _, r := range results {
		for _, f := range r.Flows {
			k := flowKey{f.FlowSchema, f.Distinguisher}
			if !seenFlow[k] {
				seenFlow[k] = true
				keys = append(keys, k)
			}
		}
	}
	for _, k := range keys {
		pl := plot{XLabel: "queue wait", YLabel: "share of requests", XTick: secondsTick, YTick: percentTick, YMin: 1, Width: 360}
		for i, r := range results {
			for _, f := range r.Flows {
				if f.FlowSchema != k.schema || f.Distinguisher != k.distinguisher {
					continue
				}
				pl.Title = flowLabel(f)
				x, y := make([]float64, len(f.Wait.CDF)), make([]float64, len(f.Wait.CDF))
				for j, pt := range f.Wait.CDF {
					x[j], y[j] = pt.Wait.Seconds(), pt.Share
				}
				pl.Series = append(pl.Series, series{Name: prefix(i, "CDF of waits"), X: x, Y: y, Step: true, Color: palette[0], Dash: dash(i)})
				break
			}
		}
		svg, err := pl.svg()
		if err != nil {
			return p, err
		}
		p.Flows = append(p.Flows, svg)
	}
	return p, nil
}

func findLevel(r *sim.Result, name string) *sim.LevelResult {
	for i := range r.Levels {
		if r.Levels[i].Name == name {
			return &r.Levels[i]
		}
	}
	return nil
}

// levelSummary is the line of figures above a level's plots.
func levelSummary(prefix string, l *sim.LevelResult) string {
	s := prefix
	if l.Exempt {
		s += "exempt, "
	} else {
		s += fmt.Sprintf("nominal %d seats, max borrowed %s, seat utilization %s, ", l.NominalSeats, signed(int64(l.MaxBorrowedSeats)), formatPercent(l.SeatUtilization))
	}
	return s + fmt.Sprintf("%d arrived, %d dispatched, %d rejected, wait p99 %s", l.Arrived, l.Dispatched, rejectedTotal(l.Counts), formatDuration(l.Wait.P99))
}

// sampleTimes returns the virtual time, in seconds, of sample i for the
// longest of the series lengths given: i × SampleInterval. A Result
// without an interval spreads the samples over its duration.
func sampleTimes(r *sim.Result, lengths ...int) []float64 {
	n := 0
	for _, l := range lengths {
		n = max(n, l)
	}
	step := r.SampleInterval
	if step <= 0 {
		step = time.Second
		if n > 1 && r.Duration > 0 {
			step = r.Duration / time.Duration(n-1)
		}
	}
	ts := make([]float64, n)
	for i := range ts {
		ts[i] = (time.Duration(i) * step).Seconds()
	}
	return ts
}

func secondsTick(v float64) string {
	return formatDuration(time.Duration(v * float64(time.Second)))
}

func percentTick(v float64) string {
	return strconv.FormatFloat(v*100, 'f', -1, 64) + "%"
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; margin: 1.5em 2em; color: #222; background: #fff; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; }
h3 { font-size: 1.05em; margin: 1.4em 0 0.3em; }
p.run { margin: 0.2em 0; }
p.run b { display: inline-block; min-width: 1.5em; }
p.summary { margin: 0.2em 0 0.5em; color: #555; font-size: 0.9em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.4em 0 1em; }
caption { text-align: left; font-weight: 600; padding: 0.3em 0; }
th, td { padding: 0.2em 0.6em; border-bottom: 1px solid #e4e4e4; white-space: nowrap; }
th { text-align: left; background: #f4f4f4; font-weight: 600; }
td { text-align: right; font-variant-numeric: tabular-nums; }
td:first-child { text-align: left; }
tbody tr:hover { background: #f8f8ff; }
.plots { display: flex; flex-wrap: wrap; gap: 0.8em; }
svg.plot { background: #fff; border: 1px solid #e4e4e4; }
svg.plot text { font-family: inherit; font-size: 11px; fill: #333; }
svg.plot .ptitle { font-size: 12px; font-weight: 600; }
svg.plot .label { fill: #555; }
svg.plot .empty { fill: #999; font-style: italic; }
svg.plot .area { fill: #fcfcfc; }
svg.plot .grid { stroke: #e8e8e8; stroke-width: 1; }
svg.plot .axis { stroke: #666; stroke-width: 1; }
.scroll { overflow-x: auto; }
ul.problems { margin: 0.2em 0 0.6em; color: #8a4b00; font-size: 0.9em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{range .Runs}}<p class="run">{{if .Letter}}<b>{{.Letter}}</b> {{end}}{{.Headline}}</p>
{{if .Problems}}<ul class="problems">{{range .Problems}}<li>configuration: {{.}}</li>{{end}}</ul>
{{end}}{{end}}
{{- if .Limit}}<p class="limit">{{.Limit}}</p>
{{end}}
{{- if .Compare}}
<h2>Side by side</h2>
{{range .Compare}}{{template "table" .}}{{end}}
{{- end}}
<h2>Summary</h2>
{{range $run := .Runs}}{{if $run.Letter}}<h3>{{$run.Letter}}: {{$run.Headline}}</h3>
{{end}}{{range $i, $t := $run.Tables}}{{template "table" $t}}{{if and (eq $i 0) $run.Notes}}<ul class="notes">{{range $run.Notes}}<li>{{.}}</li>{{end}}</ul>
{{end}}{{end}}{{end}}
<h2>Priority levels over time</h2>
{{range .Levels}}<section>
<h3>{{.Name}}</h3>
<p class="summary">{{.Summary}}</p>
{{if .Notes}}<ul class="notes">{{range .Notes}}<li>{{.}}</li>{{end}}</ul>
{{end}}
<div class="plots">
{{range .Plots}}{{.}}
{{end}}</div>
</section>
{{end}}
<h2>Queue-wait distribution per top flow</h2>
{{if .Flows}}<div class="plots">
{{range .Flows}}{{.}}
{{end}}</div>{{else}}<p>No flows.</p>{{end}}
</body>
</html>
{{define "table"}}<div class="scroll"><table>
<caption>{{.Title}}</caption>
<thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody>
</table></div>
{{with .Every}}<details><summary>Every column: {{.Title}}</summary>
{{template "table" .}}</details>
{{end}}{{end}}`))
