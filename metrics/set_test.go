package metrics

import (
	"errors"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// spec is one row of the metrics table of
// docs/spec/observability.md#metrics.
type spec struct {
	name      string
	typ       dto.MetricType
	stability string
	labels    []string // variable labels, in order
	constL    map[string]string
	buckets   []float64
}

const (
	pl = "priority_level"
	fs = "flow_schema"
)

var (
	counter   = dto.MetricType_COUNTER
	gauge     = dto.MetricType_GAUGE
	histogram = dto.MetricType_HISTOGRAM
	reqSecs   = []float64{0, .005, .02, .05, .1, .2, .5, 1, 2, 5, 10, 15, 30}
)

// specMetrics is the metrics table of docs/spec/observability.md#metrics,
// row for row; its TRH (timing-ratio histogram) rows are histograms.
var specMetrics = []spec{
	{"apiserver_flowcontrol_rejected_requests_total", counter, "BETA", []string{pl, fs, "reason"}, nil, nil},
	{"apiserver_flowcontrol_dispatched_requests_total", counter, "BETA", []string{pl, fs}, nil, nil},
	{"apiserver_flowcontrol_current_inqueue_requests", gauge, "BETA", []string{pl, fs}, nil, nil},
	{"apiserver_flowcontrol_current_inqueue_seats", gauge, "ALPHA", []string{pl, fs}, nil, nil},
	{"apiserver_flowcontrol_current_executing_requests", gauge, "BETA", []string{pl, fs}, nil, nil},
	{"apiserver_flowcontrol_current_executing_seats", gauge, "BETA", []string{pl, fs}, nil, nil},
	{"apiserver_flowcontrol_request_queue_length_after_enqueue", histogram, "ALPHA", []string{pl, fs}, nil,
		[]float64{0, 10, 25, 50, 100, 250, 500, 1000}},
	{"apiserver_flowcontrol_request_wait_duration_seconds", histogram, "BETA", []string{pl, fs, "execute"}, nil, reqSecs},
	{"apiserver_flowcontrol_request_execution_seconds", histogram, "ALPHA", []string{pl, fs, "type"}, nil, reqSecs},
	{"apiserver_flowcontrol_watch_count_samples", histogram, "ALPHA", []string{pl, fs}, nil,
		[]float64{0, 1, 10, 100, 1000, 10000}},
	{"apiserver_flowcontrol_work_estimated_seats", histogram, "ALPHA", []string{pl, fs}, nil,
		[]float64{1, 2, 4, 8, 16, 32, 64, 100}},
	{"apiserver_flowcontrol_request_dispatch_no_accommodation_total", counter, "ALPHA", []string{pl, fs}, nil, nil},
	{"apiserver_flowcontrol_epoch_advance_total", counter, "ALPHA", []string{pl, "success"}, nil, nil},
	{"apiserver_flowcontrol_current_r", gauge, "ALPHA", []string{pl}, nil, nil},
	{"apiserver_flowcontrol_dispatch_r", gauge, "ALPHA", []string{pl}, nil, nil},
	{"apiserver_flowcontrol_latest_s", gauge, "ALPHA", []string{pl}, nil, nil},
	{"apiserver_flowcontrol_next_s_bounds", gauge, "ALPHA", []string{pl, "bound"}, nil, nil},
	{"apiserver_flowcontrol_next_discounted_s_bounds", gauge, "ALPHA", []string{pl, "bound"}, nil, nil},
	{"apiserver_flowcontrol_nominal_limit_seats", gauge, "BETA", []string{pl}, nil, nil},
	{"apiserver_flowcontrol_lower_limit_seats", gauge, "ALPHA", []string{pl}, nil, nil},
	{"apiserver_flowcontrol_upper_limit_seats", gauge, "ALPHA", []string{pl}, nil, nil},
	{"apiserver_flowcontrol_current_limit_seats", gauge, "ALPHA", []string{pl}, nil, nil},
	{"apiserver_flowcontrol_demand_seats_high_watermark", gauge, "ALPHA", []string{pl}, nil, nil},
	{"apiserver_flowcontrol_demand_seats_average", gauge, "ALPHA", []string{pl}, nil, nil},
	{"apiserver_flowcontrol_demand_seats_stdev", gauge, "ALPHA", []string{pl}, nil, nil},
	{"apiserver_flowcontrol_demand_seats_smoothed", gauge, "ALPHA", []string{pl}, nil, nil},
	{"apiserver_flowcontrol_target_seats", gauge, "ALPHA", []string{pl}, nil, nil},
	{"apiserver_flowcontrol_seat_fair_frac", gauge, "ALPHA", nil, nil, nil},
	{"apiserver_flowcontrol_demand_seats", histogram, "ALPHA", []string{pl}, nil,
		[]float64{.2, .4, .6, .8, 1, 1.2, 1.4, 1.7, 2, 2.8, 4, 6}},
	{"apiserver_flowcontrol_priority_level_request_utilization", histogram, "ALPHA", []string{"phase", pl}, nil,
		[]float64{0, .001, .003, .01, .03, .1, .25, .5, .75, 1}},
	{"apiserver_flowcontrol_priority_level_seat_utilization", histogram, "ALPHA", []string{pl},
		map[string]string{"phase": "executing"},
		[]float64{0, .1, .2, .3, .4, .5, .6, .7, .8, .9, .95, .99, 1}},
	{"apiserver_flowcontrol_read_vs_write_current_requests", histogram, "ALPHA", []string{"phase", "request_kind"}, nil,
		[]float64{0, .001, .01, .1, .2, .3, .4, .5, .6, .7, .8, .9, .95, .99, 1}},
	{"apiserver_current_inflight_requests", gauge, "STABLE", []string{"request_kind"}, nil, nil},
	{"apiserver_current_inqueue_requests", gauge, "ALPHA", []string{"request_kind"}, nil, nil},
}

// fakeClock is a settable clock for the timing-ratio histograms.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time       { return c.t }
func (c *fakeClock) step(d time.Duration) { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock            { return &fakeClock{t: time.Unix(1_000_000, 0)} }
func newTestSet(t *testing.T) (*Set, *prometheus.Registry, *fakeClock) {
	t.Helper()
	reg := prometheus.NewRegistry()
	clk := newFakeClock()
	s, err := New(reg, WithClock(clk.now))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s, reg, clk
}

// exercise touches every handle of level l and pair (l, f) once.
func exercise(s *Set, l, f string, now time.Time) {
	lm := s.Level(l)
	for _, g := range []prometheus.Gauge{lm.CurrentR, lm.DispatchR, lm.LatestS, lm.NextSMin, lm.NextSMax,
		lm.NextDiscountedSMin, lm.NextDiscountedSMax, lm.NominalLimitSeats, lm.LowerLimitSeats,
		lm.UpperLimitSeats, lm.CurrentLimitSeats, lm.DemandSeatsHighWatermark, lm.DemandSeatsAverage,
		lm.DemandSeatsStdev, lm.DemandSeatsSmoothed, lm.TargetSeats} {
		g.Set(1)
	}
	lm.EpochAdvanceSucceeded.Inc()
	lm.EpochAdvanceFailed.Inc()
	for _, r := range []*RatioGauge{lm.DemandSeats, lm.WaitingRequests, lm.ExecutingRequests, lm.SeatUtilization} {
		r.SetDenominator(now, 4)
		r.Set(now, 1)
	}
	fm := s.Flow(l, f)
	for _, c := range []Counter{fm.Dispatched, fm.RejectedQueueFull, fm.RejectedConcurrencyLimit,
		fm.RejectedTimeOut, fm.NoAccommodation} {
		c.Inc()
	}
	for _, g := range []UpDown{fm.InqueueRequests, fm.InqueueSeats, fm.ExecutingRequests, fm.ExecutingSeats} {
		g.Add(1)
	}
	for _, o := range []prometheus.Observer{fm.QueueLengthAfterEnqueue, fm.WaitExecuted, fm.WaitRejected,
		fm.ExecutionRegular, fm.ExecutionWatch, fm.WatchCountSamples, fm.WorkEstimatedSeats} {
		o.Observe(1)
	}
	s.SeatFairFrac.Set(0.5)
	for _, k := range []*KindMetrics{s.Mutating, s.ReadOnly} {
		k.InflightRequests.Set(1)
		k.InqueueRequests.Set(1)
		k.Waiting.Set(now, 1)
		k.Executing.Set(now, 1)
	}
}

func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func labelNames(m *dto.Metric) []string {
	var n []string
	for _, lp := range m.GetLabel() {
		n = append(n, lp.GetName())
	}
	return n
}

func TestEverySpecMetricGathered(t *testing.T) {
	s, reg, clk := newTestSet(t)
	exercise(s, "workload-low", "service-accounts", clk.now())
	got := gather(t, reg)
	if len(got) != len(specMetrics) {
		var names []string
		for n := range got {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Errorf("gathered %d families, the specification lists %d: %v", len(got), len(specMetrics), names)
	}
	for _, want := range specMetrics {
		t.Run(want.name, func(t *testing.T) {
			mf, ok := got[want.name]
			if !ok {
				t.Fatalf("missing")
			}
			if mf.GetType() != want.typ {
				t.Errorf("type %v, want %v", mf.GetType(), want.typ)
			}
			if p := "[" + want.stability + "] "; !strings.HasPrefix(mf.GetHelp(), p) {
				t.Errorf("help %q lacks stability prefix %q", mf.GetHelp(), p)
			}
			wantNames := slices.Clone(want.labels)
			for k := range want.constL {
				wantNames = append(wantNames, k)
			}
			sort.Strings(wantNames)
			if len(mf.GetMetric()) == 0 {
				t.Fatalf("no series")
			}
			for _, m := range mf.GetMetric() {
				if n := labelNames(m); !slices.Equal(n, wantNames) {
					t.Errorf("labels %v, want %v", n, wantNames)
				}
				for _, lp := range m.GetLabel() {
					if v, ok := want.constL[lp.GetName()]; ok && lp.GetValue() != v {
						t.Errorf("const label %s=%q, want %q", lp.GetName(), lp.GetValue(), v)
					}
				}
				if want.typ == histogram {
					var bs []float64
					for _, b := range m.GetHistogram().GetBucket() {
						bs = append(bs, b.GetUpperBound())
					}
					if !slices.Equal(bs, want.buckets) {
						t.Errorf("buckets %v, want %v", bs, want.buckets)
					}
				}
			}
		})
	}
}

var variableLabelsRE = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)

// TestLabelOrder checks the variable label order, which the gathered output
// (sorted by label name) cannot show.
func TestLabelOrder(t *testing.T) {
	v := define(time.Now)
	byName := map[string][]string{}
	for _, c := range v.collectorsInOrder {
		ch := make(chan *prometheus.Desc, 16)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			str := d.String()
			name := regexp.MustCompile(`fqName: "([^"]*)"`).FindStringSubmatch(str)[1]
			var labels []string
			if l := variableLabelsRE.FindStringSubmatch(str)[1]; l != "" {
				labels = strings.Split(l, ",")
			}
			byName[name] = labels
		}
	}
	for _, want := range specMetrics {
		got, ok := byName[want.name]
		if !ok {
			t.Errorf("%s: not defined", want.name)
			continue
		}
		if !slices.Equal(got, want.labels) {
			t.Errorf("%s: labels %v, want %v", want.name, got, want.labels)
		}
	}
}

func TestLabelValues(t *testing.T) {
	s, reg, clk := newTestSet(t)
	exercise(s, "L", "F", clk.now())
	got := gather(t, reg)
	values := func(name, label string) []string {
		var vs []string
		for _, m := range got[name].GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label {
					vs = append(vs, lp.GetValue())
				}
			}
		}
		sort.Strings(vs)
		return vs
	}
	for _, c := range []struct {
		name, label string
		want        []string
	}{
		{"apiserver_flowcontrol_rejected_requests_total", "reason", []string{"concurrency-limit", "queue-full", "time-out"}},
		{"apiserver_flowcontrol_request_wait_duration_seconds", "execute", []string{"false", "true"}},
		{"apiserver_flowcontrol_request_execution_seconds", "type", []string{"regular", "watch"}},
		{"apiserver_flowcontrol_epoch_advance_total", "success", []string{"false", "true"}},
		{"apiserver_flowcontrol_next_s_bounds", "bound", []string{"max", "min"}},
		{"apiserver_flowcontrol_next_discounted_s_bounds", "bound", []string{"max", "min"}},
		{"apiserver_flowcontrol_priority_level_request_utilization", "phase", []string{"executing", "waiting"}},
		{"apiserver_flowcontrol_read_vs_write_current_requests", "phase", []string{"executing", "executing", "waiting", "waiting"}},
		{"apiserver_flowcontrol_read_vs_write_current_requests", "request_kind", []string{"mutating", "mutating", "readOnly", "readOnly"}},
		{"apiserver_current_inflight_requests", "request_kind", []string{"mutating", "readOnly"}},
		{"apiserver_current_inqueue_requests", "request_kind", []string{"mutating", "readOnly"}},
	} {
		if v := values(c.name, c.label); !slices.Equal(v, c.want) {
			t.Errorf("%s %s: %v, want %v", c.name, c.label, v, c.want)
		}
	}
}

func TestRejectedByReason(t *testing.T) {
	s, _, _ := newTestSet(t)
	f := s.Flow("L", "F")
	for reason, want := range map[string]Counter{
		reasonQueueFull: f.RejectedQueueFull, reasonConcurrencyLimit: f.RejectedConcurrencyLimit,
		reasonTimeOut: f.RejectedTimeOut, "other": nil,
	} {
		if got := f.rejected(reason); got != want {
			t.Errorf("Rejected(%q) = %v, want %v", reason, got, want)
		}
	}
}

func TestRegisterTwiceFails(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := New(reg); err != nil {
		t.Fatal(err)
	}
	_, err := New(reg)
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("second New: %v, want AlreadyRegisteredError", err)
	}
}

func TestNilRegisterer(t *testing.T) {
	s, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Flow("L", "F").Dispatched.Inc()
	s.Level("L").DemandSeats.Set(time.Now(), 1)
}

func TestResolveTwiceSharesSeries(t *testing.T) {
	s, _, _ := newTestSet(t)
	f1, f2 := s.Flow("L", "F"), s.Flow("L", "F")
	if f1.Dispatched != f2.Dispatched {
		t.Error("Flow handles differ")
	}
	l1, l2 := s.Level("L"), s.Level("L")
	if l1.DemandSeats != l2.DemandSeats {
		t.Error("Level ratio handles differ")
	}
}

func TestHandlesDoNotAllocate(t *testing.T) {
	s, _, clk := newTestSet(t)
	f := s.Flow("L", "F")
	l := s.Level("L")
	now := clk.now()
	for name, fn := range map[string]func(){
		"counter Inc":         func() { f.Dispatched.Inc() },
		"gauge Add":           func() { f.ExecutingSeats.Add(2) },
		"histogram Observe":   func() { f.WaitExecuted.Observe(0.3) },
		"level gauge Set":     func() { l.CurrentR.Set(12) },
		"ratio Set":           func() { now = now.Add(time.Millisecond); l.DemandSeats.Set(now, 3) },
		"ratio SetDenom":      func() { now = now.Add(time.Millisecond); l.SeatUtilization.SetDenominator(now, 3) },
		"kind ratio Add":      func() { now = now.Add(time.Millisecond); s.Mutating.Executing.add(now, 1) },
		"rejected via reason": func() { f.rejected(reasonTimeOut).Inc() },
	} {
		if a := testing.AllocsPerRun(100, fn); a != 0 {
			t.Errorf("%s: %v allocs per run, want 0", name, a)
		}
	}
}

func countSeries(got map[string]*dto.MetricFamily, label, value string) int {
	n := 0
	for _, mf := range got {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					n++
				}
			}
		}
	}
	return n
}

func TestDeleteLevel(t *testing.T) {
	s, reg, clk := newTestSet(t)
	exercise(s, "gone", "F", clk.now())
	exercise(s, "kept", "F", clk.now())
	s.DeleteLevel("gone")
	got := gather(t, reg)
	if n := countSeries(got, pl, "gone"); n != 0 {
		t.Errorf("%d series of deleted level remain", n)
	}
	if countSeries(got, pl, "kept") == 0 {
		t.Error("series of the kept level were removed")
	}
	for _, name := range []string{"apiserver_flowcontrol_demand_seats",
		"apiserver_flowcontrol_priority_level_seat_utilization",
		"apiserver_flowcontrol_priority_level_request_utilization",
		"apiserver_flowcontrol_rejected_requests_total", "apiserver_flowcontrol_current_r"} {
		if _, ok := got[name]; !ok {
			t.Errorf("%s vanished with the deleted level", name)
		}
	}
}

func TestDeleteFlow(t *testing.T) {
	s, reg, clk := newTestSet(t)
	exercise(s, "L", "gone", clk.now())
	exercise(s, "L", "kept", clk.now())
	exercise(s, "M", "gone", clk.now())
	s.DeleteFlow("L", "gone")
	got := gather(t, reg)
	pairs := map[[2]string]int{}
	for _, mf := range got {
		for _, m := range mf.GetMetric() {
			var p [2]string
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case pl:
					p[0] = lp.GetValue()
				case fs:
					p[1] = lp.GetValue()
				}
			}
			if p[1] != "" {
				pairs[p]++
			}
		}
	}
	if pairs[[2]string{"L", "gone"}] != 0 {
		t.Errorf("%d series of the deleted pair remain", pairs[[2]string{"L", "gone"}])
	}
	if pairs[[2]string{"L", "kept"}] == 0 || pairs[[2]string{"M", "gone"}] == 0 {
		t.Errorf("other pairs lost: %v", pairs)
	}
	if countSeries(got, pl, "L") == 0 {
		t.Error("per-level series of L removed by DeleteFlow")
	}
}

// A pair's series are created when first used, as the API server creates
// them: a schema that has seen no request exports nothing.
func TestFlowSeriesAppearOnFirstUse(t *testing.T) {
	s, reg, _ := newTestSet(t)
	f := s.Flow("L", "F")
	if n := countSeries(gather(t, reg), fs, "F"); n != 0 {
		t.Fatalf("%d series exported before any use", n)
	}
	f.Dispatched.Inc()
	f.WaitExecuted.Observe(0.1)
	got := gather(t, reg)
	if n := countSeries(got, fs, "F"); n != 2 {
		t.Fatalf("%d series exported after two handles were used, want 2", n)
	}
	if n := countSeries(got, labelReason, reasonTimeOut); n != 0 {
		t.Error("an unused rejection counter was exported")
	}
}

// After its pair is deleted, a handle never used discards what it is given,
// so a request that outlives its schema does not bring the series back; the
// pair resolved again exports as new.
func TestDeletedFlowHandlesDiscard(t *testing.T) {
	s, reg, _ := newTestSet(t)
	old := s.Flow("L", "F")
	old.Dispatched.Inc()
	s.DeleteFlow("L", "F")
	old.Dispatched.Inc()
	old.RejectedTimeOut.Inc()
	old.ExecutingRequests.Dec()
	if n := countSeries(gather(t, reg), fs, "F"); n != 0 {
		t.Fatalf("%d series of the deleted pair exported", n)
	}
	again := s.Flow("L", "F")
	if again == old {
		t.Fatal("the deleted pair's handles were handed out again")
	}
	again.ExecutingRequests.Inc()
	if n := countSeries(gather(t, reg), fs, "F"); n != 1 {
		t.Fatalf("%d series after the pair came back, want 1", n)
	}
	s.DeleteLevel("L")
	again.InqueueSeats.Add(1)
	if n := countSeries(gather(t, reg), fs, "F"); n != 0 {
		t.Fatalf("%d series after the level was deleted", n)
	}
}

// rejected returns the rejection counter for reason, one of ReasonQueueFull,
// ReasonConcurrencyLimit and ReasonTimeOut; any other reason yields nil.
func (f *FlowMetrics) rejected(reason string) Counter {
	switch reason {
	case reasonQueueFull:
		return f.RejectedQueueFull
	case reasonConcurrencyLimit:
		return f.RejectedConcurrencyLimit
	case reasonTimeOut:
		return f.RejectedTimeOut
	}
	return nil
}
