package top

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/apfproject/apf/capacity"
	"github.com/apfproject/apf/controller"
)

// A learned server limit shows in the view and the JSON as the
// controller's own metrics state it (read from a registry the controller
// filled, so that a renamed metric fails here); a static limit shows
// nothing of it.
func TestAdaptiveLimitInTheReport(t *testing.T) {
	c, err := controller.New(controller.Config{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.NewAdaptive(capacity.Config{Floor: 2, Ceiling: 64, Initial: 10})
	if err != nil {
		t.Fatal(err)
	}
	for range 500 {
		a.Observe(20*time.Millisecond, 1, capacity.Answered)
	}
	at := time.Unix(1767195045, 0)
	r := reportOf(t, at, a.Register)
	al := r.AdaptiveLimit
	if al == nil || al.FloorSeats != 2 || al.CeilingSeats != 64 || al.LimitSeats < 2 || al.LimitSeats > 64 {
		t.Fatalf("adaptive limit %+v", al)
	}
	var b bytes.Buffer
	if err := Render(&b, r, Screen{}); err != nil {
		t.Fatal(err)
	}
	if want := "adaptive limit: " + number(al.LimitSeats) + " seats (floor 2, ceiling 64); upstream latency per seat"; !strings.Contains(b.String(), want) {
		t.Errorf("the view lacks %q:\n%s", want, b.String())
	}
	var doc map[string]any
	if err := json.Unmarshal(mustJSON(t, r), &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc["adaptiveLimit"]; !ok {
		t.Errorf("the JSON lacks adaptiveLimit: %v", doc)
	}

	r = NewReport(nil, &Sample{Server: "https://gw:6443", At: at, Metrics: &Metrics{}, MetricsAt: at}, 0)
	b.Reset()
	if err := Render(&b, r, Screen{}); err != nil {
		t.Fatal(err)
	}
	if r.AdaptiveLimit != nil || strings.Contains(b.String(), "adaptive limit") {
		t.Errorf("a static limit shows an adaptive one:\n%s", b.String())
	}
}

// reportOf is the report of what register puts into a registry, read
// as a client reads /metrics: the text exposition, parsed.
func reportOf(t *testing.T, at time.Time, register func(prometheus.Registerer) error) *Report {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := register(reg); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	for _, f := range families {
		if _, err := expfmt.MetricFamilyToText(&text, f); err != nil {
			t.Fatal(err)
		}
	}
	m, err := ParseMetrics(&text)
	if err != nil {
		t.Fatal(err)
	}
	return NewReport(nil, &Sample{Server: "https://gw:6443", At: at, Metrics: m, MetricsAt: at}, 0)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
