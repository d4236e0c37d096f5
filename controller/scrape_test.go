package controller

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/apfproject/apf/clock/fakeclock"
	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/metrics"
)

// scrapeWant is the metric table of docs/spec/observability.md#metrics:
// every name with its label names, sorted.
var scrapeWant = map[string][]string{
	"apiserver_flowcontrol_rejected_requests_total":                 {"flow_schema", "priority_level", "reason"},
	"apiserver_flowcontrol_dispatched_requests_total":               {"flow_schema", "priority_level"},
	"apiserver_flowcontrol_current_inqueue_requests":                {"flow_schema", "priority_level"},
	"apiserver_flowcontrol_current_inqueue_seats":                   {"flow_schema", "priority_level"},
	"apiserver_flowcontrol_current_executing_requests":              {"flow_schema", "priority_level"},
	"apiserver_flowcontrol_current_executing_seats":                 {"flow_schema", "priority_level"},
	"apiserver_flowcontrol_request_queue_length_after_enqueue":      {"flow_schema", "priority_level"},
	"apiserver_flowcontrol_request_wait_duration_seconds":           {"execute", "flow_schema", "priority_level"},
	"apiserver_flowcontrol_request_execution_seconds":               {"flow_schema", "priority_level", "type"},
	"apiserver_flowcontrol_watch_count_samples":                     {"flow_schema", "priority_level"},
	"apiserver_flowcontrol_work_estimated_seats":                    {"flow_schema", "priority_level"},
	"apiserver_flowcontrol_request_dispatch_no_accommodation_total": {"flow_schema", "priority_level"},
	"apiserver_flowcontrol_epoch_advance_total":                     {"priority_level", "success"},
	"apiserver_flowcontrol_current_r":                               {"priority_level"},
	"apiserver_flowcontrol_dispatch_r":                              {"priority_level"},
	"apiserver_flowcontrol_latest_s":                                {"priority_level"},
	"apiserver_flowcontrol_next_s_bounds":                           {"bound", "priority_level"},
	"apiserver_flowcontrol_next_discounted_s_bounds":                {"bound", "priority_level"},
	"apiserver_flowcontrol_nominal_limit_seats":                     {"priority_level"},
	"apiserver_flowcontrol_lower_limit_seats":                       {"priority_level"},
	"apiserver_flowcontrol_upper_limit_seats":                       {"priority_level"},
	"apiserver_flowcontrol_current_limit_seats":                     {"priority_level"},
	"apiserver_flowcontrol_demand_seats_high_watermark":             {"priority_level"},
	"apiserver_flowcontrol_demand_seats_average":                    {"priority_level"},
	"apiserver_flowcontrol_demand_seats_stdev":                      {"priority_level"},
	"apiserver_flowcontrol_demand_seats_smoothed":                   {"priority_level"},
	"apiserver_flowcontrol_target_seats":                            {"priority_level"},
	"apiserver_flowcontrol_seat_fair_frac":                          {},
	"apiserver_flowcontrol_demand_seats":                            {"priority_level"},
	"apiserver_flowcontrol_priority_level_request_utilization":      {"phase", "priority_level"},
	"apiserver_flowcontrol_priority_level_seat_utilization":         {"phase", "priority_level"},
	"apiserver_flowcontrol_read_vs_write_current_requests":          {"phase", "request_kind"},
	"apiserver_current_inflight_requests":                           {"request_kind"},
	"apiserver_current_inqueue_requests":                            {"request_kind"},
}

func TestScrape(t *testing.T) {
	reg := prometheus.NewRegistry()
	clk := fakeclock.New(t0)
	met, err := metrics.New(reg, metrics.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{ServerConcurrencyLimit: 33, Source: StaticSource(decode(t, manifests(true))), Clock: clk, Metrics: met})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admit := func(user, method, path, query string) (*Ticket, error) {
		return c.Admit(ctx, attrs(t, user, method, path, query))
	}
	var rej *RejectedError

	// An exempt write and a watch.
	root := attrs(t, "root", "POST", "/api/v1/namespaces/ns/pods", "")
	root.User.Groups = []string{"system:masters"}
	tk, err := c.Admit(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	tk.Done()
	watch, err := admit("stranger", "GET", "/api/v1/pods", "watch=true")
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Millisecond)
	watch.Done()

	// The reject level: fill it, then one more is concurrency-limit.
	tight := level(c, "tight").Queue.Stats().ConcurrencyLimit
	var held []*Ticket
	for range tight {
		tk, err := admit("elephant", "GET", "/healthz", "")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, tk)
	}
	if _, err := admit("elephant", "GET", "/healthz", ""); !errors.As(err, &rej) || rej.Reason != fairqueue.ConcurrencyLimit {
		t.Fatalf("concurrency-limit: %v", err)
	}

	// The queuing level (1 queue, 2 long): fill it, queue two, reject a
	// third (queue-full), let one time out... (both do, at the wait limit)
	// and dispatch a later one.
	q := level(c, "queued").Queue
	for range q.Stats().ConcurrencyLimit {
		tk, err := admit("mouse", "PUT", "/api/v1/namespaces/ns/configmaps/x", "")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, tk)
	}
	errs := make(chan error, 3)
	for range 2 {
		go func() {
			_, err := admit("mouse", "GET", "/healthz", "")
			errs <- err
		}()
	}
	waitFor(t, "two waiters", func() bool { return q.Stats().WaitingRequests == 2 })
	if _, err := admit("mouse", "GET", "/healthz", ""); !errors.As(err, &rej) || rej.Reason != fairqueue.QueueFull {
		t.Fatalf("queue-full: %v", err)
	}
	c.sampleMetrics() // watermarks: 2 waiting read-only requests
	clk.Advance(15 * time.Second)
	for range 2 {
		if err := <-errs; !errors.As(err, &rej) || rej.Reason != fairqueue.TimeOut {
			t.Fatalf("time-out: %v", err)
		}
	}
	go func() {
		tk, err := admit("mouse", "GET", "/healthz", "")
		if err == nil {
			tk.Done()
		}
		errs <- err
	}()
	waitFor(t, "waiter", func() bool { return q.Stats().WaitingRequests == 1 })
	clk.Advance(time.Second)
	held[len(held)-1].Done()
	held = held[:len(held)-1]
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	c.sampleMetrics()
	clk.Advance(time.Second)

	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("content type %q", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range scrapeWant {
		f := fams[name]
		if f == nil || len(f.GetMetric()) == 0 {
			// Per-flow series exist once something happened to the flow,
			// as in the API server; no request here failed to fit.
			if name != "apiserver_flowcontrol_request_dispatch_no_accommodation_total" {
				t.Errorf("%s missing", name)
			}
			continue
		}
		for _, m := range f.GetMetric() {
			var got []string
			for _, lp := range m.GetLabel() {
				got = append(got, lp.GetName())
			}
			slices.Sort(got)
			if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("%s labels %v, want %v", name, got, want)
				break
			}
		}
	}

	// A series exists once its event happened, as in the API server: the
	// exempt flow ran requests but never rejects, so it has no rejection
	// series.
	for _, m := range fams["apiserver_flowcontrol_rejected_requests_total"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "flow_schema" && lp.GetValue() == "exempt" {
				t.Errorf("rejection series for the exempt flow: %v", m.GetLabel())
			}
		}
	}

	value := func(name string, labels map[string]string) *dto.Metric {
		t.Helper()
		for _, m := range fams[name].GetMetric() {
			ok := true
			for _, lp := range m.GetLabel() {
				if v, in := labels[lp.GetName()]; in && v != lp.GetValue() {
					ok = false
				}
			}
			if ok {
				return m
			}
		}
		t.Fatalf("%s %v missing", name, labels)
		return nil
	}
	for reason, fs := range map[string]string{"queue-full": "queued", "time-out": "queued", "concurrency-limit": "tight"} {
		want := 1.0
		if reason == "time-out" {
			want = 2
		}
		if v := value("apiserver_flowcontrol_rejected_requests_total", map[string]string{"flow_schema": fs, "reason": reason}).GetCounter().GetValue(); v != want {
			t.Errorf("rejected %s = %v, want %v", reason, v, want)
		}
	}
	if v := value("apiserver_flowcontrol_request_execution_seconds", map[string]string{"type": "watch"}).GetHistogram().GetSampleCount(); v != 1 {
		t.Errorf("watch executions %d", v)
	}
	// The second window's read-only high watermarks: the elephants and the
	// dispatched waiter executing; the two waiters it started with.
	if v := value("apiserver_current_inflight_requests", map[string]string{"request_kind": "readOnly"}).GetGauge().GetValue(); v != float64(tight+1) {
		t.Errorf("readOnly inflight watermark %v, want %d", v, tight+1)
	}
	if v := value("apiserver_current_inflight_requests", map[string]string{"request_kind": "mutating"}).GetGauge().GetValue(); v < 1 {
		t.Errorf("mutating inflight watermark %v", v)
	}
	if v := value("apiserver_current_inqueue_requests", map[string]string{"request_kind": "readOnly"}).GetGauge().GetValue(); v != 2 {
		t.Errorf("readOnly inqueue watermark %v", v)
	}
	// Time-weighted ratios: the queued level's executing utilization and
	// seat utilization spent time above 0; its waiting utilization too.
	for _, k := range []struct {
		name  string
		phase string
	}{
		{"apiserver_flowcontrol_priority_level_request_utilization", "executing"},
		{"apiserver_flowcontrol_priority_level_request_utilization", "waiting"},
		{"apiserver_flowcontrol_priority_level_seat_utilization", "executing"},
		{"apiserver_flowcontrol_demand_seats", ""},
	} {
		h := value(k.name, map[string]string{"priority_level": "queued", "phase": k.phase}).GetHistogram()
		if h.GetSampleCount() == 0 || h.GetSampleSum() <= 0 {
			t.Errorf("%s{%s}: count %d sum %v", k.name, k.phase, h.GetSampleCount(), h.GetSampleSum())
		}
	}
	if v := value("apiserver_flowcontrol_current_r", map[string]string{"priority_level": "queued"}).GetGauge().GetValue(); v <= 0 {
		t.Errorf("current_r %v", v)
	}
	if v := value("apiserver_flowcontrol_dispatch_r", map[string]string{"priority_level": "queued"}).GetGauge().GetValue(); v <= 0 {
		t.Errorf("dispatch_r %v", v)
	}
	for _, tk := range held {
		tk.Done()
	}
}
