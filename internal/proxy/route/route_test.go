package route

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/config"
)

const sample = `apiVersion: gateway.apfproject.io/v1alpha1
kind: GatewayConfiguration
pools:
- name: api
  upstreams: [http://127.0.0.1:1]
  healthCheck: {path: /readyz, interval: 5s, timeout: 1s, healthyThreshold: 2, unhealthyThreshold: 3}
  ejection: {consecutiveFailures: 5, duration: 30s}
routes:
- name: events
  match: {methods: [get], pathPrefix: /events/}
  longRunning: true
  pool: api
- name: export
  match: {path: /export}
  timeout: 2m
  workEstimate: {bytesPerSeat: 1000, maxSeats: 5}
- name: anything-else
  match: {pathPrefix: /}
  workEstimate: {seats: 3}
`

func TestDecodeAndMatch(t *testing.T) {
	cfg, err := Decode([]byte(sample), "gw.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.LongRunningLimits; got != (Limits{DefaultLongRunningPerFlow, DefaultLongRunningPerLevel}) {
		t.Errorf("default limits %+v", got)
	}
	p := cfg.Pool("api")
	if p == nil || p.HealthCheck.Interval != 5*time.Second || p.HealthCheck.UnhealthyThreshold != 3 || p.Ejection.Duration != 30*time.Second {
		t.Fatalf("pool %+v", p)
	}
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/events/a", "events"},
		{"POST", "/events/a", "anything-else"}, // the method does not match: the next route does
		{"GET", "/export", "export"},
		{"GET", "/export/x", "anything-else"}, // exact path
		{"GET", "/events", "anything-else"},   // prefix is a string prefix
	} {
		r := cfg.Match(c.method, c.path)
		if r == nil || r.Name != c.want {
			t.Errorf("%s %s: route %v, want %s", c.method, c.path, r, c.want)
		}
	}
	ev := cfg.Match("GET", "/events/x")
	if !ev.LongRunning || ev.Pool != "api" || ev.Methods[0] != "GET" {
		t.Errorf("events route %+v", ev)
	}
	if r := cfg.Match("GET", "/x"); r.EstimatedSeats() != 3 || r.Pool != DefaultPool {
		t.Errorf("fixed seats %d, pool %q", r.EstimatedSeats(), r.Pool)
	}
	var none *Config
	if none.Match("GET", "/") != nil {
		t.Error("a nil configuration matched")
	}
}

// The seats of a size-based route follow its recent answers, between its
// bounds, and survive a reload that keeps the route.
func TestSeatsByResponseSize(t *testing.T) {
	cfg, err := Decode([]byte(sample), "gw.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Match("GET", "/export")
	if got := r.EstimatedSeats(); got != 1 {
		t.Fatalf("before any answer: %d seats, want minSeats 1", got)
	}
	r.ObserveResponse(2500)
	if got := r.EstimatedSeats(); got != 3 {
		t.Fatalf("after a 2500-byte answer: %d seats, want 3", got)
	}
	for range 100 {
		r.ObserveResponse(1 << 30)
	}
	if got := r.EstimatedSeats(); got != 5 {
		t.Fatalf("after huge answers: %d seats, want maxSeats 5", got)
	}
	next, _ := Decode([]byte(sample), "gw.yaml")
	next.adopt(cfg)
	if got := next.Match("GET", "/export").EstimatedSeats(); got != 5 {
		t.Fatalf("after a reload: %d seats, want the learned 5", got)
	}
	for range 200 {
		r.ObserveResponse(0)
	}
	if got := r.EstimatedSeats(); got != 1 {
		t.Fatalf("after empty answers: %d seats, want 1", got)
	}
}

func TestHolds(t *testing.T) {
	h := NewHolds(Limits{PerFlow: 2, PerLevel: 3})
	a1 := Flow{PriorityLevel: "l", FlowSchema: "fs", Distinguisher: "alice"}
	b := Flow{PriorityLevel: "l", FlowSchema: "fs", Distinguisher: "bob"}
	for range 2 {
		if _, ok := h.Acquire(a1); !ok {
			t.Fatal("refused under the flow cap")
		}
	}
	if s, ok := h.Acquire(a1); ok || s != ScopeFlow {
		t.Fatalf("third of a flow: %v %v", s, ok)
	}
	if _, ok := h.Acquire(b); !ok {
		t.Fatal("another flow refused under the level cap")
	}
	if s, ok := h.Acquire(b); ok || s != ScopeLevel {
		t.Fatalf("fourth of a level: %v %v", s, ok)
	}
	h.Release(a1)
	if _, ok := h.Acquire(b); !ok {
		t.Fatal("refused after a release")
	}
	held := map[string]int{}
	h.Levels(func(l string, n int) { held[l] = n })
	if held["l"] != 3 {
		t.Errorf("held %v", held)
	}
	rej := map[Scope]uint64{}
	h.Rejected(func(_ string, s Scope, n uint64) { rej[s] = n })
	if rej[ScopeFlow] != 1 || rej[ScopeLevel] != 1 {
		t.Errorf("rejected %v", rej)
	}
	h.SetLimits(Limits{PerFlow: 10, PerLevel: 10})
	if _, ok := h.Acquire(a1); !ok {
		t.Fatal("refused after the caps were raised")
	}
}

// A change of the file is taken once two polls read it the same; a
// broken file keeps the configuration in force and says why, at its line;
// a fixed file is taken again.
func TestWatcherReload(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gw.yaml")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(sample)
	var outcomes []error
	w, err := NewWatcher(WatcherOptions{File: file, Interval: time.Hour, OnReload: func(err error) { outcomes = append(outcomes, err) }})
	if err != nil {
		t.Fatal(err)
	}
	changed := 0
	w.OnChange(func(*Config) { changed++ })
	first := w.Config()

	write(strings.Replace(sample, "timeout: 2m", "timeout: 3m", 1))
	w.Poll()
	if w.Config() != first {
		t.Fatal("a change was taken at its first reading")
	}
	w.Poll()
	if got := w.Config().Match("GET", "/export").Timeout; got != 3*time.Minute || changed != 1 {
		t.Fatalf("after two polls: timeout %v, %d changes", got, changed)
	}
	good := w.Config()

	write(strings.Replace(sample, "timeout: 2m", "timeout: never", 1))
	w.Poll()
	w.Poll()
	if w.Config() != good {
		t.Fatal("a broken file replaced the configuration")
	}
	st := w.Status()
	if st.Err == nil || !strings.Contains(st.Err.Error(), file+":15: routes[1].timeout") {
		t.Fatalf("status %v", st.Err)
	}
	if !strings.Contains(st.Describe(file), "stays in force") || strings.Contains(st.Withheld(), file) {
		t.Errorf("describe %q, withheld %q", st.Describe(file), st.Withheld())
	}
	w.Poll()
	if len(outcomes) != 2 || outcomes[0] != nil || outcomes[1] == nil {
		t.Fatalf("reload outcomes %v", outcomes)
	}

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	w.Poll()
	if w.Config() != good || w.Status().Err == nil {
		t.Fatal("a missing file was not refused")
	}
	write(sample)
	w.Poll()
	w.Poll()
	if w.Config() == good || w.Status().Err != nil || w.Config().Match("GET", "/export").Timeout != 2*time.Minute {
		t.Fatalf("the fixed file was not taken: %v", w.Status().Err)
	}
}

func TestNewWatcherRefusesABadFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: gateway.apfproject.io/v1alpha1\nkind: GatewayConfiguration\nroutes:\n- name: a\n  match: {path: a}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := NewWatcher(WatcherOptions{File: file, Interval: time.Second})
	var de *config.DecodeError
	if !errors.As(err, &de) || de.Source.Line != 5 || !strings.Contains(err.Error(), "gw.yaml:5: routes[0].match.path") {
		t.Fatalf("error %v", err)
	}
}

func TestIsGatewayConfiguration(t *testing.T) {
	if !IsGatewayConfiguration([]byte(sample)) {
		t.Error("the sample is not recognised")
	}
	for _, s := range []string{"", "kind: FlowSchema\n", "[1, 2]", "{", "kind: [x]"} {
		if IsGatewayConfiguration([]byte(s)) {
			t.Errorf("%q recognised", s)
		}
	}
}
