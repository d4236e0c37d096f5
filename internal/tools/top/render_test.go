package top

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// busyReport is a report with rates, many flows, a missing part and a
// note.
func busyReport(t *testing.T) *Report {
	t.Helper()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var reqs []RequestRow
	for i := range 30 {
		for range 30 - i {
			reqs = append(reqs, RequestRow{Level: "global-default", Schema: "global-default", Distinguisher: fmt.Sprintf("user-%02d", i), Queue: i, IndexInQueue: 0, InitialSeats: 1})
		}
	}
	before := &Sample{Server: "https://kube:6443", At: t0, Metrics: mustMetrics(t, "metrics-before.txt"), MetricsAt: t0}
	after := &Sample{Server: "https://kube:6443", At: t0.Add(2 * time.Second), Metrics: mustMetrics(t, "metrics-after.txt"), MetricsAt: t0.Add(2 * time.Second),
		Requests: reqs, Queues: []QueueRow{{Level: "global-default", Index: 0, Pending: 30, Executing: 1}},
		Missing:  []Missing{{Part: PartPriorityLevels, Path: PathPriorityLevels, Status: 403, Error: "403 Forbidden: no", Without: "no active queues per level", Fix: "grant it"}},
		Problems: []string{"queues: line 3: bad (skipped)"}}
	return NewReport(before, after, 25)
}

func TestRenderText(t *testing.T) {
	r := busyReport(t)
	var b bytes.Buffer
	if err := Render(&b, r, Screen{Interval: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		"apf top  https://kube:6443  03:04:07Z  every 2s  rates over 2.0s",
		"PRIORITY LEVEL  SEATS  BORROW  EXEC   WAIT   QUEUES  DISP/S  P99 WAIT  REJ/S",
		"global-default  20/29  +9      12/14  20/24  -       60.0    800ms     21.0 (queue-full 20.0, time-out 1.0)",
		"workload-low    35/26  -9      0/0    0/0    -       125.0   -         3.0 (concurrency-limit 3.0)",
		"BORROWING global-default +9 (29 of 20 nominal)",
		"BUSIEST FLOWS 25 of 30",
		"global-default  global-default  user-00        0/0   30/30  0:30/0(30/1)",
		"NOT READ /debug/api_priority_and_fairness/dump_priority_levels: 403 Forbidden: no. grant it (no active queues per level)",
		"NOTE queues: line 3: bad (skipped)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1b") {
		t.Error("escape sequences in plain text")
	}
}

// On a screen, every line fits the width, and the flows are cut so that
// the whole fits the height, what could not be read included.
func TestRenderFitsTheScreen(t *testing.T) {
	r := busyReport(t)
	for _, scr := range []Screen{{Width: 60, Height: 30}, {Width: 200, Height: 24}, {Width: 20, Height: 5}} {
		var b bytes.Buffer
		if err := Render(&b, r, scr); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		if len(lines) > scr.Height {
			t.Errorf("%+v: %d lines", scr, len(lines))
		}
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n > scr.Width {
				t.Errorf("%+v: %d columns: %q", scr, n, l)
			}
		}
		if scr.Height == 30 && !strings.Contains(strings.Join(strings.Fields(b.String()), " "),
			"NOT READ /debug/api_priority_and_fairness/dump_priority_levels: 403 Forbidden: no. grant it (no active queues per level)") {
			t.Errorf("%+v: what could not be read was cut:\n%s", scr, b.String())
		}
	}
	// Without a screen nothing is cut.
	var b bytes.Buffer
	_ = Render(&b, r, Screen{})
	if !strings.Contains(b.String(), "user-24") || strings.Contains(b.String(), "…") {
		t.Errorf("plain output cut:\n%s", b.String())
	}
}

func TestFrameRedrawsInPlace(t *testing.T) {
	f := Frame(busyReport(t), Screen{Width: 80, Height: 24})
	if !strings.HasPrefix(f, "\x1b[H") || !strings.HasSuffix(f, "\x1b[K\x1b[J") {
		t.Errorf("frame %q", f)
	}
	if strings.Contains(strings.ReplaceAll(f, "\r\n", ""), "\n") {
		t.Error("a bare line feed in a frame: raw mode would not return the cursor")
	}
	if n := strings.Count(f, "\r\n"); n != 23 {
		t.Errorf("%d line ends, want 23 on a 24-line screen", n)
	}
}

// sequence is a Sampler that gives its samples in turn, and cancels the
// watch after the last.
type sequence struct {
	samples []*Sample
	next    int
	cancel  func()
}

func (s *sequence) Sample(context.Context) *Sample {
	x := s.samples[min(s.next, len(s.samples)-1)]
	s.next++
	if s.next >= len(s.samples) {
		s.cancel()
	}
	return x
}

type recorder struct{ reports []*Report }

func (r *recorder) Show(rep *Report, _ time.Duration) error {
	r.reports = append(r.reports, rep)
	return nil
}

// The live loop: the first screen has no rates and says so, the next
// ones have rates over the time between their samples.
func TestWatchFirstScreenHasNoRates(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mk := func(name string, at time.Time) *Sample {
		return &Sample{Server: "s", At: at, Metrics: mustMetrics(t, name), MetricsAt: at}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seq := &sequence{samples: []*Sample{mk("metrics-before.txt", t0), mk("metrics-after.txt", t0.Add(2*time.Second)), mk("metrics-after.txt", t0.Add(4*time.Second))}, cancel: func() {}}
	seq.cancel = func() {
		if seq.next == len(seq.samples)+1 {
			cancel()
		}
	}
	var rec recorder
	done := make(chan error, 1)
	go func() { done <- Watch(ctx, seq, time.Millisecond, 0, &rec) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the loop did not end with its context")
	}
	if len(rec.reports) < 3 {
		t.Fatalf("%d reports", len(rec.reports))
	}
	first, second, third := rec.reports[0], rec.reports[1], rec.reports[2]
	if first.IntervalSeconds != 0 || !strings.Contains(strings.Join(first.Notes, "\n"), "rates need two samples") {
		t.Errorf("first report: interval %v notes %v", first.IntervalSeconds, first.Notes)
	}
	var b bytes.Buffer
	_ = Render(&b, first, Screen{})
	if !strings.Contains(b.String(), "NOTE rates need two samples") {
		t.Errorf("first screen:\n%s", b.String())
	}
	if second.IntervalSeconds != 2 || len(second.Notes) != 0 {
		t.Errorf("second report: interval %v notes %v", second.IntervalSeconds, second.Notes)
	}
	// The third compares with the second: nothing moved.
	for _, l := range third.Levels {
		if l.DispatchedPerSecond == nil || *l.DispatchedPerSecond != 0 {
			t.Errorf("third report, %s: dispatched/s %v", l.Name, l.DispatchedPerSecond)
		}
	}
}

func TestPlainViewPrintsSnapshots(t *testing.T) {
	var b bytes.Buffer
	v := plainView{w: &b}
	r := busyReport(t)
	_ = v.Show(r, time.Second)
	_ = v.Show(r, time.Second)
	if n := strings.Count(b.String(), "apf top  https://kube:6443"); n != 2 {
		t.Errorf("%d snapshots", n)
	}
	if strings.Contains(b.String(), "\x1b") {
		t.Error("escape sequences in plain output")
	}
}

func TestJSONDocument(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, busyReport(t)); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"server", "time", "intervalSeconds", "levels", "flows", "flowsTotal", "borrowing", "missing"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("no %q in %s", k, b.String())
		}
	}
	levels := doc["levels"].([]any)
	ca := levels[0].(map[string]any)
	if ca["name"] != "catch-all" || ca["waitP99Seconds"] != nil || ca["activeQueues"] != nil {
		t.Errorf("catch-all %v: figures not read are null", ca)
	}
}

func TestOptionsCheck(t *testing.T) {
	good := Options{Interval: time.Second, Flows: 1}
	if err := good.Check(); err != nil {
		t.Error(err)
	}
	for _, o := range []Options{{Interval: 0, Flows: 1}, {Interval: time.Second, Output: "yaml", Flows: 1}, {Interval: time.Second, Flows: 0}} {
		if err := o.Check(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if !isQuitKey('q') || !isQuitKey(0x03) || isQuitKey('x') {
		t.Error("quit keys")
	}
}
