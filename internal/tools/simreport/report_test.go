package simreport

import (
	"bytes"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/sim"
)

// sample builds a small but complete Result: an exempt level, a busy
// level that borrows and rejects, an idle level that lends.
func sample(name string, scale int64) *sim.Result {
	n := 50
	seats, limit, waiting, rejected := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	idleLimit := make([]float64, n)
	for i := range n {
		seats[i] = float64(min(i, 30))
		limit[i] = 20 + float64(i/10)*3
		waiting[i] = math.Max(0, float64(i-20))
		if i > 30 {
			rejected[i] = float64(i % 4)
		}
		idleLimit[i] = 40 - float64(i/10)*3
	}
	cdf := []sim.CDFPoint{{Wait: 0, Share: 0.4}, {Wait: 2 * time.Millisecond, Share: 0.7}, {Wait: 15 * time.Millisecond, Share: 0.95}, {Wait: 250 * time.Millisecond, Share: 1}}
	return &sim.Result{
		Name: name, Seed: 7, Duration: 5 * time.Second, ServerConcurrencyLimit: 600, Requests: 1200 * scale,
		SampleInterval: 100 * time.Millisecond,
		Levels: []sim.LevelResult{
			{Name: "exempt", Exempt: true, Counts: sim.Counts{Arrived: 10, Dispatched: 10},
				Series: sim.LevelSeries{SeatsInUse: make([]float64, n), Waiting: make([]float64, n), Rejected: make([]float64, n)}},
			{Name: "global-default", Counts: sim.Counts{Arrived: 1000 * scale, Dispatched: 900 * scale,
				Rejected: map[string]int64{"queue-full": 60 * scale, "time-out": 40 * scale}},
				Wait:         sim.WaitStats{P50: 1500 * time.Microsecond, P99: 123 * time.Millisecond, Max: 2 * time.Second},
				NominalSeats: 20, SeatUtilization: 0.8123, MaxBorrowedSeats: 12,
				Series: sim.LevelSeries{SeatsInUse: seats, Limit: limit, Waiting: waiting, Rejected: rejected}},
			{Name: "workload-low", Counts: sim.Counts{Arrived: 190, Dispatched: 190},
				NominalSeats: 40, SeatUtilization: 0.1, MaxBorrowedSeats: -12,
				Series: sim.LevelSeries{SeatsInUse: make([]float64, n), Limit: idleLimit, Waiting: make([]float64, n), Rejected: make([]float64, n)}},
		},
		FlowSchemas: []sim.SchemaResult{
			{Name: "exempt", PriorityLevel: "exempt", Counts: sim.Counts{Arrived: 10, Dispatched: 10}},
			{Name: "global-default", PriorityLevel: "global-default", Counts: sim.Counts{Arrived: 1000 * scale, Dispatched: 900 * scale,
				Rejected: map[string]int64{"queue-full": 60 * scale, "time-out": 40 * scale}},
				Wait: sim.WaitStats{P50: 1500 * time.Microsecond, P99: 123 * time.Millisecond, Max: 2 * time.Second}},
			{Name: "service-accounts", PriorityLevel: "workload-low", Counts: sim.Counts{Arrived: 190, Dispatched: 190}},
		},
		Flows: []sim.FlowResult{
			{FlowSchema: "global-default", Distinguisher: "flood", PriorityLevel: "global-default", Clients: []string{"flood"},
				Counts: sim.Counts{Arrived: 800 * scale, Dispatched: 700 * scale, Rejected: map[string]int64{"queue-full": 100 * scale}},
				Wait:   sim.WaitStats{P50: 2 * time.Millisecond, P99: 200 * time.Millisecond, Max: 2 * time.Second, CDF: cdf}},
			{FlowSchema: "global-default", Distinguisher: "alice", PriorityLevel: "global-default", Clients: []string{"alice", "a2", "a3", "a4", "a5"},
				Counts: sim.Counts{Arrived: 200, Dispatched: 200}, Wait: sim.WaitStats{CDF: cdf[:2]}},
		},
	}
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	r := sample("bootstrap", 1)
	r.Problems = []string{`FlowSchema "x" names missing priority level "y"`}
	if err := Table(&b, "", r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"bootstrap: 1200 requests over 5s of virtual time, server concurrency limit 600 seats, seed 7",
		"Priority levels", "FlowSchemas", "Top flows",
		"QUEUE-FULL", "CONCURRENCY-LIMIT", "TIME-OUT",
		"exempt (exempt)", "1.5ms", "123ms", "2s", "81.2%", "+12", "-12",
		"alice,a2,a3,… (2 more)",
		`configuration: FlowSchema "x" names missing priority level "y"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// Alignment: in the levels table, every row's DISPATCHED column starts
	// where its header does.
	lines := strings.Split(out, "\n")
	var head int
	for i, l := range lines {
		if strings.HasPrefix(l, "NAME") && strings.Contains(l, "NOMINAL SEATS") {
			head = i
		}
	}
	col := strings.Index(lines[head], "DISPATCHED")
	for _, l := range lines[head+1 : head+4] {
		if col <= 0 || len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("column misaligned at %d: %q (header %q)", col, l, lines[head])
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r := sample("bootstrap", 1)
	var b bytes.Buffer
	if err := JSON(&b, "", r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\n  \"priorityLevels\": [") {
		t.Errorf("not indented with the Result's field names:\n%.300s", b.String())
	}
	var back sim.Result
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, r) {
		t.Errorf("JSON does not round-trip:\n%+v\n%+v", back, *r)
	}
}

func TestCompare(t *testing.T) {
	a, b := sample("a.yaml", 1), sample("b.yaml", 2)
	b.Levels = b.Levels[:2] // B has no workload-low
	b.FlowSchemas[2].PriorityLevel = "global-default"
	var out bytes.Buffer
	if err := Compare(&out, "", a, b); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"A  a.yaml: 1200 requests", "B  b.yaml: 2400 requests",
		"DISPATCHED A", "DISPATCHED B", "Δ",
		"+900", // dispatched 900 → 1800
		"+100", // rejected 100 → 200
		"0pt",  // the same utilization
		"workload-low → global-default",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("compare lacks %q:\n%s", want, s)
		}
	}
	// The level only A has: its B and Δ cells are dashes.
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "workload-low ") {
			f := strings.Fields(l)
			if f[1] != "190" || f[2] != "-" || f[5] != "-" {
				t.Errorf("one-sided row: %q", l)
			}
		}
	}
}

func TestNilAndWriteErrors(t *testing.T) {
	if err := Table(io.Discard, "", nil); err == nil {
		t.Error("Table(nil) succeeded")
	}
	if err := JSON(io.Discard, "", nil); err == nil {
		t.Error("JSON(nil) succeeded")
	}
	if err := Compare(io.Discard, "", sample("a", 1), nil); err == nil {
		t.Error("Compare(a, nil) succeeded")
	}
	if err := HTML(t.TempDir(), ""); err == nil {
		t.Error("HTML() succeeded")
	}
	if err := HTML(t.TempDir(), "", nil); err == nil {
		t.Error("HTML(nil) succeeded")
	}
	boom := errors.New("disk full")
	if err := Table(failWriter{boom}, "", sample("a", 1)); !errors.Is(err, boom) {
		t.Errorf("write error lost: %v", err)
	}
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

// TestEmptyResults renders results with nothing in them, or levels with
// empty or uneven series, nil maps and NaNs: no renderer may panic.
func TestEmptyResults(t *testing.T) {
	nan := math.NaN()
	odd := &sim.Result{Levels: []sim.LevelResult{
		{Name: "empty"},
		{Name: "uneven", Series: sim.LevelSeries{SeatsInUse: []float64{1, 2, 3}, Limit: []float64{nan}, Waiting: []float64{nan, nan}}},
		{Name: "flat", Series: sim.LevelSeries{SeatsInUse: []float64{0, 0}, Limit: []float64{0, 0}}},
	}, Flows: []sim.FlowResult{{FlowSchema: "x"}}}
	for _, r := range []*sim.Result{{}, odd} {
		for name, render := range map[string]func() error{
			"table":   func() error { return Table(io.Discard, "", r) },
			"json":    func() error { return JSON(io.Discard, "", r) },
			"compare": func() error { return Compare(io.Discard, "", r, &sim.Result{}) },
			"html":    func() error { return HTML(t.TempDir(), "", r, r) },
		} {
			if err := render(); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

func TestHTMLWritesDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "report")
	if err := HTML(dir, "", sample("bootstrap", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, IndexFile)); err != nil {
		t.Fatal(err)
	}
	// A file where the directory should be is a clear error.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := HTML(file, "", sample("bootstrap", 1)); err == nil {
		t.Error("HTML into a file succeeded")
	}
}

func TestJSONNonFinite(t *testing.T) {
	r := sample("bootstrap", 1)
	r.Levels[1].SeatUtilization = math.NaN()
	r.Levels[1].Series.Limit[3] = math.Inf(1)
	var b bytes.Buffer
	if err := JSON(&b, "", r); err != nil {
		t.Fatal(err)
	}
	var back sim.Result
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Levels[1].SeatUtilization != 0 || back.Levels[1].Series.Limit[3] != 0 || back.Levels[1].Series.Limit[4] != r.Levels[1].Series.Limit[4] {
		t.Errorf("non-finite figures not zeroed: %v %v", back.Levels[1].SeatUtilization, back.Levels[1].Series.Limit[:5])
	}
	if !math.IsNaN(r.Levels[1].SeatUtilization) || !math.IsInf(r.Levels[1].Series.Limit[3], 1) {
		t.Error("JSON modified its input")
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                        "0",
		750:                      "750ns",
		1500 * time.Nanosecond:   "1.5µs",
		850 * time.Microsecond:   "850µs",
		12345 * time.Microsecond: "12.3ms",
		1250 * time.Millisecond:  "1.25s",
		45 * time.Second:         "45s",
		125 * time.Second:        "2m5s",
		2 * time.Minute:          "2m",
		62 * time.Minute:         "1h2m",
		-3 * time.Millisecond:    "-3ms",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%d) = %q, want %q", d, got, want)
		}
	}
}

// Every report says where the run's server concurrency limit came from,
// when the caller says: the table and the comparison under the
// headlines, JSON as serverConcurrencyLimitSource, the HTML page under the
// runs.
func TestLimitSource(t *testing.T) {
	const src = "read from cluster prod (apf_server_concurrency_limit_seats)"
	const line = "server concurrency limit: 600 seats, " + src
	a, b := sample("a.yaml", 1), sample("b.yaml", 2)
	var out bytes.Buffer
	if err := Table(&out, src, a); err != nil || !strings.Contains(out.String(), "seed 7\n"+line+"\n") {
		t.Errorf("table: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := Compare(&out, src, a, b); err != nil || !strings.Contains(out.String(), "\n"+line+"\n") {
		t.Errorf("compare: %v\n%s", err, out.String())
	}
	out.Reset()
	var doc struct {
		ServerConcurrencyLimit       int
		ServerConcurrencyLimitSource string
	}
	if err := JSON(&out, src, a); err != nil || json.Unmarshal(out.Bytes(), &doc) != nil || doc.ServerConcurrencyLimit != 600 || doc.ServerConcurrencyLimitSource != src {
		t.Errorf("json: %v %+v", err, doc)
	}
	out.Reset()
	var pair struct {
		A, B struct{ ServerConcurrencyLimitSource string }
	}
	if err := CompareJSON(&out, src, a, b); err != nil || json.Unmarshal(out.Bytes(), &pair) != nil || pair.A.ServerConcurrencyLimitSource != src || pair.B.ServerConcurrencyLimitSource != src {
		t.Errorf("compare json: %v %+v", err, pair)
	}
	dir := t.TempDir()
	if err := HTML(dir, src, a); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil || !strings.Contains(string(page), `<p class="limit">`+template.HTMLEscapeString(line)+"</p>") {
		t.Errorf("html: %v", err)
	}
	// Without a source, nothing is said.
	out.Reset()
	if err := Table(&out, "", a); err != nil || strings.Contains(out.String(), "server concurrency limit:") {
		t.Errorf("table without a source:\n%s", out.String())
	}
}

// Figures that follow Kubernetes' rules but look like bugs are explained
// where they are shown: a seat utilization above 100% (a request wider
// than the level runs alone), more requests waiting than queueLengthLimit
// (it is per queue), and more than all the queues hold (it applies only
// while the level is saturated). Ordinary figures get no note.
func TestNotesExplainSurprisingFigures(t *testing.T) {
	r := sample("bootstrap", 1)
	wide := &r.Levels[1]
	wide.Name, wide.SeatUtilization = "wide", 7.395
	perQueue := &r.Levels[2]
	perQueue.Name, perQueue.Queues, perQueue.QueueLengthLimit = "per-queue", 64, 50
	perQueue.Series.Waiting = []float64{0, 3000, 20}
	saturated := sim.LevelResult{Name: "past-the-queues", Queues: 8, QueueLengthLimit: 50, SeatUtilization: 0.4,
		Series: sim.LevelSeries{Waiting: []float64{401}}}
	calm := sim.LevelResult{Name: "calm", Queues: 64, QueueLengthLimit: 50, SeatUtilization: 0.99,
		Series: sim.LevelSeries{Waiting: []float64{50}}}
	r.Levels = append(r.Levels, saturated, calm)

	want := []string{
		"wide: seat utilization 739.5% is above 100% because a request may need more seats than the level's limit",
		"per-queue: 3000 requests waited at once with queueLengthLimit 50, because the limit is per queue: 64 queues may hold 3200",
		"past-the-queues: 401 requests waited at once, more than its 8 queues of 50 hold, because queueLengthLimit turns requests away only while every seat of the level is in use",
	}
	var b bytes.Buffer
	if err := Table(&b, "", r); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(b.String(), "note: "+w) {
			t.Errorf("table lacks the note %q:\n%s", w, b.String())
		}
	}
	if n := strings.Count(b.String(), "note: "); n != len(want) {
		t.Errorf("%d notes, want %d (none for calm figures):\n%s", n, len(want), b.String())
	}
	dir := t.TempDir()
	if err := HTML(dir, "", r); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		// Once under the summary table, once in the level's section.
		if n := strings.Count(string(page), template.HTMLEscapeString(w)); n != 2 {
			t.Errorf("the page holds the note %q %d times, want 2", w, n)
		}
	}
}
