package top

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/apfdebug"
)

func readFile(t *testing.T, path ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(path...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustMetrics(t *testing.T, name string) *Metrics {
	t.Helper()
	m, err := ParseMetrics(bytes.NewReader(readFile(t, "testdata", name)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func val(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// The exposition in testdata is kube-apiserver's text format: HELP with
// the stability level, families of other subsystems, histograms with
// every bucket. Gauges sum over flow schemas; the seat gauges are per
// level.
func TestParseMetricsExposition(t *testing.T) {
	m := mustMetrics(t, "metrics-after.txt")
	if m.Families != 9 {
		t.Errorf("read %d apiserver_flowcontrol families, want the 9 of the file", m.Families)
	}
	gd := m.Levels["global-default"]
	if gd == nil {
		t.Fatal("no global-default")
	}
	if val(gd.NominalSeats) != 20 || val(gd.CurrentSeats) != 29 {
		t.Errorf("global-default seats nominal %v current %v, want 20 and 29", val(gd.NominalSeats), val(gd.CurrentSeats))
	}
	if gd.ExecutingRequests != 12 || gd.ExecutingSeats != 14 || gd.WaitingRequests != 20 || gd.WaitingSeats != 24 {
		t.Errorf("global-default executing %v/%v waiting %v/%v, want 12/14 and 20/24", gd.ExecutingRequests, gd.ExecutingSeats, gd.WaitingRequests, gd.WaitingSeats)
	}
	if gd.Dispatched["service-accounts"] != 520 || gd.Rejected[schemaReason{"global-default", "queue-full"}] != 90 {
		t.Errorf("global-default counters %v %v", gd.Dispatched, gd.Rejected)
	}
	if h, ok := gd.Wait["global-default"]; !ok || len(h.Bounds) != 14 || !math.IsInf(h.Bounds[13], 1) || h.Counts[13] != 610 {
		t.Errorf("global-default wait histogram %+v", h)
	}
	if len(gd.Wait) != 2 {
		t.Errorf("wait series %v: the execute=\"false\" one must be left out", gd.Wait)
	}
	if c := m.Levels["catch-all"]; c == nil || val(c.NominalSeats) != 13 || c.ExecutingRequests != 0 {
		t.Errorf("catch-all %+v", c)
	}
}

func TestParseMetricsRefusesGarbage(t *testing.T) {
	_, err := ParseMetrics(strings.NewReader("apiserver_flowcontrol_nominal_limit_seats{priority_level=\"x\" 3\n"))
	if err == nil || !strings.Contains(err.Error(), "reading the metrics") {
		t.Fatalf("err %v", err)
	}
	m, err := ParseMetrics(strings.NewReader("# an exposition without APF\nprocess_cpu_seconds_total 3\n"))
	if err != nil || m.Families != 0 {
		t.Fatalf("families %d, err %v", m.Families, err)
	}
}

func TestQuantile(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		name   string
		h      Histogram
		want   float64
		wantOK bool
	}{
		{"empty", Histogram{Bounds: []float64{0, 1, inf}, Counts: []float64{0, 0, 0}}, 0, false},
		{"all at zero", Histogram{Bounds: []float64{0, 1, inf}, Counts: []float64{5, 5, 5}}, 0, true},
		{"interpolated", Histogram{Bounds: []float64{0, 1, 2, inf}, Counts: []float64{0, 50, 100, 100}}, 1.98, true},
		{"first bucket from zero", Histogram{Bounds: []float64{10, inf}, Counts: []float64{100, 100}}, 9.9, true},
		{"above the last bound", Histogram{Bounds: []float64{0, 1, inf}, Counts: []float64{0, 0, 7}}, 1, true},
	} {
		got, ok := quantile(0.99, tc.h)
		if ok != tc.wantOK || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %v %v, want %v %v", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}
}

// Two scrapes two seconds apart: rates are each series' increase over
// the interval (a series that went down was reset and counts from zero,
// a new one from zero), the p99 is taken over the bucket increases of
// every flow schema's execute="true" series, and the seat gauges say who
// borrows and who lends.
func TestReportRatesAndP99FromTwoSamples(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	before := &Sample{Server: "https://k", At: t0, Metrics: mustMetrics(t, "metrics-before.txt"), MetricsAt: t0}
	after := &Sample{Server: "https://k", At: t0.Add(2 * time.Second), Metrics: mustMetrics(t, "metrics-after.txt"), MetricsAt: t0.Add(2 * time.Second)}
	r := NewReport(before, after, 0)
	if r.IntervalSeconds != 2 {
		t.Errorf("interval %v", r.IntervalSeconds)
	}
	levels := map[string]Level{}
	for _, l := range r.Levels {
		levels[l.Name] = l
	}
	gd, wl, ca := levels["global-default"], levels["workload-low"], levels["catch-all"]
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"global-default dispatched/s", val(gd.DispatchedPerSecond), 60},
		{"global-default rejected/s", val(gd.RejectedPerSecond), 21},
		{"global-default queue-full/s", gd.RejectedByReason["queue-full"], 20},
		{"global-default time-out/s", gd.RejectedByReason["time-out"], 1},
		{"global-default wait p99", val(gd.WaitP99Seconds), 0.8},
		{"global-default borrowed", val(gd.BorrowedSeats), 9},
		{"global-default executing", val(gd.ExecutingRequests), 12},
		{"global-default waiting seats", val(gd.WaitingSeats), 24},
		{"workload-low dispatched/s (reset)", val(wl.DispatchedPerSecond), 125},
		{"workload-low concurrency-limit/s (new series)", wl.RejectedByReason["concurrency-limit"], 3},
		{"workload-low borrowed", val(wl.BorrowedSeats), -9},
		{"catch-all dispatched/s (new series)", val(ca.DispatchedPerSecond), 2},
		{"catch-all rejected/s", val(ca.RejectedPerSecond), 0},
	} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	if gd.State != "borrowing" || wl.State != "lending" || ca.State != "" {
		t.Errorf("states %q %q %q", gd.State, wl.State, ca.State)
	}
	if len(r.Borrowing) != 1 || r.Borrowing[0] != "global-default" {
		t.Errorf("borrowing %v", r.Borrowing)
	}
	if ca.WaitP99Seconds != nil {
		t.Errorf("catch-all p99 %v with no request queued", *ca.WaitP99Seconds)
	}
	if len(gd.RejectedByReason) != 2 {
		t.Errorf("reasons %v: a reason with no rejection in the interval is left out", gd.RejectedByReason)
	}

	// One sample: no rates, and the report says why.
	first := NewReport(nil, before, 0)
	for _, l := range first.Levels {
		if l.DispatchedPerSecond != nil || l.RejectedPerSecond != nil || l.WaitP99Seconds != nil {
			t.Errorf("%s has rates from one sample", l.Name)
		}
	}
	if len(first.Notes) == 0 || !strings.Contains(first.Notes[0], "rates need two samples") {
		t.Errorf("notes %v", first.Notes)
	}
}

// Without /metrics, dump_priority_levels' counters give dispatched and
// rejected rates, and its counts the executing and waiting requests.
func TestReportRatesFromTheDumpAlone(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	miss := []Missing{{Part: PartMetrics, Path: PathMetrics, Status: 403, Error: "403 Forbidden"}}
	before := &Sample{At: t0, LevelsAt: t0, Missing: miss, Levels: []LevelRow{{Name: "a", Dispatched: 10, Rejected: 4, HasCounters: true}}}
	after := &Sample{At: t0.Add(4 * time.Second), LevelsAt: t0.Add(4 * time.Second), Missing: miss,
		Levels: []LevelRow{{Name: "a", Dispatched: 30, Rejected: 12, Waiting: 7, Executing: 3, ActiveQueues: 2, HasCounters: true}}}
	r := NewReport(before, after, 0)
	if len(r.Levels) != 1 {
		t.Fatalf("levels %+v", r.Levels)
	}
	l := r.Levels[0]
	if val(l.DispatchedPerSecond) != 5 || val(l.RejectedPerSecond) != 2 || val(l.WaitingRequests) != 7 || val(l.ExecutingRequests) != 3 || *l.ActiveQueues != 2 {
		t.Errorf("level %+v", l)
	}
	if l.NominalSeats != nil || l.ExecutingSeats != nil || l.WaitP99Seconds != nil || l.RejectedByReason != nil {
		t.Errorf("figures only /metrics has: %+v", l)
	}
	if len(r.Missing) != 1 || r.Missing[0].Part != PartMetrics {
		t.Errorf("missing %+v", r.Missing)
	}
}

// specBlock returns the first fenced block after heading in
// docs/spec/observability.md.
func specBlock(t *testing.T, heading string) string {
	t.Helper()
	doc := string(readFile(t, "..", "..", "..", "docs", "spec", "observability.md"))
	_, after, ok := strings.Cut(doc, heading)
	if !ok {
		t.Fatalf("no %q in observability.md", heading)
	}
	_, after, _ = strings.Cut(after, "```\n")
	block, _, _ := strings.Cut(after, "```")
	return block
}

// The dumps as the specification shows them and as package apfdebug
// writes them (its golden files are kube-apiserver's format, byte for
// byte).
func TestParseDumpsInKubeAPIServerFormat(t *testing.T) {
	levels, read, err := ParsePriorityLevels(strings.NewReader(specBlock(t, "### Priority levels dump")))
	if err != nil || len(read.Problems) != 0 {
		t.Fatalf("spec example: %v %v", err, read)
	}
	if len(levels) != 3 || levels[0].Name != "catch-all" || !levels[2].IsIdle || levels[2].Name != "global-default" || !levels[0].HasCounters {
		t.Errorf("spec example: %+v", levels)
	}

	levels, read, err = ParsePriorityLevels(bytes.NewReader(readFile(t, "..", "..", "..", "apfdebug", "testdata", "priority_levels_busy.golden")))
	if err != nil || len(read.Problems) != 0 || len(levels) != 3 {
		t.Fatalf("busy levels: %v %v %+v", err, read, levels)
	}
	ks := levels[1]
	if ks.Name != "kube-system-service-accounts" || ks.ActiveQueues != 12 || !ks.IsQuiescing || ks.Waiting != 1234567 ||
		ks.Executing != 8 || ks.Dispatched != 99 || ks.Rejected != 5 || ks.Cancelled != 3 {
		t.Errorf("busy level %+v", ks)
	}

	queues, read, err := ParseQueues(bytes.NewReader(readFile(t, "..", "..", "..", "apfdebug", "testdata", "queues.golden")))
	if err != nil || len(read.Problems) != 0 || len(queues) != 3 {
		t.Fatalf("queues: %v %v %+v", err, read, queues)
	}
	if q := queues[1]; q != (QueueRow{Level: "workload-low", Index: 1, Pending: 2, Executing: 1, SeatsInUse: 3}) {
		t.Errorf("queue %+v", q)
	}

	for _, golden := range []string{"requests.golden", "requests_details.golden"} {
		reqs, read, err := ParseRequests(bytes.NewReader(readFile(t, "..", "..", "..", "apfdebug", "testdata", golden)))
		if err != nil || len(read.Problems) != 0 || len(reqs) != 3 {
			t.Fatalf("%s: %v %v %+v", golden, err, read, reqs)
		}
		want := []RequestRow{
			{Level: "workload-low", Schema: "service-accounts", Distinguisher: "alice", Queue: 3, IndexInQueue: 0, InitialSeats: 1},
			{Level: "workload-low", Schema: "service-accounts", Distinguisher: "bob", Queue: 3, IndexInQueue: -1, InitialSeats: 10, FinalSeats: 5},
			{Level: "exempt", Schema: "exempt", Queue: -1, IndexInQueue: -1, InitialSeats: 1},
		}
		for i := range want {
			if reqs[i] != want[i] {
				t.Errorf("%s row %d: %+v, want %+v", golden, i, reqs[i], want[i])
			}
		}
	}
}

// A distinguisher is a user name, which may hold commas: the surplus
// cells of its row are its own.
func TestParseRequestsDistinguisherWithCommas(t *testing.T) {
	var b bytes.Buffer
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	err := apfdebug.WriteRequests(&b, []apfdebug.Request{
		{PriorityLevel: "workload-low", FlowSchema: "service-accounts", QueueIndex: 7, IndexInQueue: 2, FlowDistinguisher: "CN=carol,O=devs,O=ops", ArriveTime: at, InitialSeats: 3},
		{PriorityLevel: "workload-low", FlowSchema: "service-accounts", QueueIndex: 7, IndexInQueue: -1, FlowDistinguisher: "dave", ArriveTime: at, StartTime: at, InitialSeats: 1, AdditionalLatency: 5 * time.Millisecond},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	reqs, read, err := ParseRequests(&b)
	if err != nil || len(read.Problems) != 0 || len(reqs) != 2 {
		t.Fatalf("%v %v %+v", err, read, reqs)
	}
	if reqs[0].Distinguisher != "CN=carol,O=devs,O=ops" || reqs[0].InitialSeats != 3 || reqs[0].Queue != 7 || reqs[0].IndexInQueue != 2 {
		t.Errorf("row %+v", reqs[0])
	}
	if reqs[1].Distinguisher != "dave" || !reqs[1].Executing() {
		t.Errorf("row %+v", reqs[1])
	}
}

// Bad rows are skipped and reported, the good ones kept; a dump without
// the columns the view needs is refused whole.
func TestParseDumpProblems(t *testing.T) {
	text := "PriorityLevelName, Index, PendingRequests, ExecutingRequests, SeatsInUse\n" +
		"a,                 0,     1,               0,                 0\n" +
		"a,                 x,     1,               0,                 0\n" +
		"a,                 2\n" +
		"b,                 3,     4,               5,                 6\n"
	queues, read, err := ParseQueues(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(queues) != 2 || queues[1].Level != "b" || queues[1].SeatsInUse != 6 {
		t.Errorf("queues %+v", queues)
	}
	if len(read.Problems) != 2 || read.Problems[0].Line != 3 || !strings.Contains(read.Problems[0].Reason, `Index "x"`) ||
		read.Problems[1].Line != 4 || !strings.Contains(read.Problems[1].Reason, "2 cells, the header has 5") {
		t.Errorf("problems %+v", read.Problems)
	}
	if _, _, err := ParseQueues(strings.NewReader("Name, Count\nx, 1\n")); err == nil || !strings.Contains(err.Error(), "no column PriorityLevelName") {
		t.Errorf("foreign table: %v", err)
	}
	if _, _, err := ParseRequests(strings.NewReader("")); err == nil || !strings.Contains(err.Error(), "no header") {
		t.Errorf("empty dump: %v", err)
	}
	var many strings.Builder
	many.WriteString("PriorityLevelName, Index, PendingRequests, ExecutingRequests, SeatsInUse\n")
	for range 20 {
		many.WriteString("a, 1\n")
	}
	if _, read, _ := ParseQueues(strings.NewReader(many.String())); len(read.Problems) != maxProblems || read.More != 20-maxProblems {
		t.Errorf("problems kept %d, more %d", len(read.Problems), read.More)
	}
}

// The busiest flows: requests gathered by flow, queues with their
// lengths, ordered by seats then requests.
func TestBusiestFlows(t *testing.T) {
	reqs := []RequestRow{
		{Level: "l", Schema: "s", Distinguisher: "mouse", Queue: 1, IndexInQueue: -1, InitialSeats: 1},
		{Level: "l", Schema: "s", Distinguisher: "flood", Queue: 4, IndexInQueue: 0, InitialSeats: 1},
		{Level: "l", Schema: "s", Distinguisher: "flood", Queue: 4, IndexInQueue: 1, InitialSeats: 1},
		{Level: "l", Schema: "s", Distinguisher: "flood", Queue: 9, IndexInQueue: -1, InitialSeats: 1},
		{Level: "l", Schema: "s", Distinguisher: "lister", Queue: 2, IndexInQueue: -1, InitialSeats: 10},
		{Level: "exempt", Schema: "exempt", Queue: -1, IndexInQueue: -1, InitialSeats: 1},
	}
	queues := []QueueRow{{Level: "l", Index: 4, Pending: 5, Executing: 2}, {Level: "l", Index: 9, Pending: 0, Executing: 3}}
	flows := busiestFlows(reqs, queues)
	var order []string
	for _, f := range flows {
		order = append(order, f.Distinguisher)
	}
	if got := strings.Join(order, ","); got != "lister,flood,,mouse" {
		t.Fatalf("order %s", got)
	}
	f := flows[1]
	if f.ExecutingRequests != 1 || f.WaitingRequests != 2 || len(f.Queues) != 2 ||
		f.Queues[0].Index != 4 || f.Queues[0].Waiting != 2 || *f.Queues[0].QueueWaiting != 5 || *f.Queues[0].QueueExecuting != 2 ||
		f.Queues[1].Executing != 1 || *f.Queues[1].QueueExecuting != 3 {
		t.Errorf("flood %+v", f)
	}
	if len(flows[2].Queues) != 0 {
		t.Errorf("exempt queues %+v", flows[2].Queues)
	}
	if mouse := flows[3]; mouse.Queues[0].QueueWaiting != nil {
		t.Errorf("queue 1 is not in the queues dump: %+v", mouse.Queues[0])
	}
	if r := NewReport(nil, &Sample{Requests: reqs, Queues: queues}, 2); len(r.Flows) != 2 || r.FlowsTotal != 4 {
		t.Errorf("kept %d of %d", len(r.Flows), r.FlowsTotal)
	}
}
