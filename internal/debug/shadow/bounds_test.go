package shadow_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/clock/fakeclock"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/internal/debug/console"
	"github.com/apfproject/apf/internal/debug/shadow"
)

func newShadow(t *testing.T, clk *fakeclock.Clock, cfg shadow.Config) *shadow.Shadow {
	t.Helper()
	cfg.Clock, cfg.Logger = clk, slog.New(slog.DiscardHandler)
	cfg.ServerConcurrencyLimit, cfg.RequestTimeout = scl, timeout
	sh, err := shadow.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

func run(t *testing.T, sh *shadow.Shadow) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); sh.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	sync(t, sh)
}

// TestRequestPathNeverWaits: a shadow that does not keep up (here, one
// whose goroutine never runs) costs the request path neither a wait nor
// an allocation: what does not fit in its buffer is dropped and counted.
// Without a shadow, admission allocates nothing either (counted without
// the race detector, whose sync.Pool drops tickets at random).
func TestRequestPathNeverWaits(t *testing.T) {
	clk := fakeclock.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	c := newController(t, clk, builtin())
	ctx, a := context.Background(), get("flood")
	admit := func() {
		tk, err := c.Admit(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		tk.Done()
	}
	if n := testing.AllocsPerRun(100, admit); n != 0 && !raceEnabled {
		t.Fatalf("without a shadow, Admit and Done allocate %v times", n)
	}
	sh := newShadow(t, clk, shadow.Config{Live: controller.StaticSource(nil), Staged: controller.StaticSource(nil), Buffer: 1000})
	c.SetShadow(sh)
	if n := testing.AllocsPerRun(100, admit); n != 0 && !raceEnabled {
		t.Fatalf("with a shadow, Admit and Done allocate %v times", n)
	}
	// 1 + 100 admissions have filled 202 slots, the next 399 fill the
	// rest, the arrivals of the others are dropped (and so nothing is
	// sent of their completion).
	const want = 1000 - (1000-202)/2
	for range 1000 {
		admit()
	}
	if got := sh.State(false).Dropped; got != want {
		t.Fatalf("dropped %d events, want %d", got, want)
	}
	c.SetShadow(nil)
	admit()
	if got := sh.State(false).Dropped; got != want {
		t.Fatalf("a removed shadow still hears admissions: dropped %d", got)
	}
}

// TestBounds: the shadow follows at most MaxRequests requests at once,
// and ends by itself, after twice the request timeout, a request whose
// live completion it never heard of.
func TestBounds(t *testing.T) {
	clk := fakeclock.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	sh := newShadow(t, clk, shadow.Config{Live: controller.StaticSource(builtin()), Staged: controller.StaticSource(nil), MaxRequests: 2})
	run(t, sh)
	a := get("flood")
	var toks []uint64
	for range 3 {
		toks = append(toks, sh.Arrive(clk.Now(), time.Time{}, *a, nil))
	}
	sync(t, sh)
	st := sh.State(false)
	l, _ := st.Level("global-default")
	if l.Executing != 2 || st.Dropped != 1 || st.Arrived != 2 {
		t.Fatalf("executing %d, dropped %d, arrived %d", l.Executing, st.Dropped, st.Arrived)
	}
	sh.Finish(toks[0], clk.Now(), time.Millisecond, false)
	clk.Advance(2*timeout - time.Millisecond)
	sync(t, sh)
	if st := sh.State(false); st.Forced != 0 {
		t.Fatalf("forced %d before twice the timeout", st.Forced)
	}
	clk.Advance(time.Millisecond)
	sync(t, sh)
	st = sh.State(false)
	l, _ = st.Level("global-default")
	if st.Forced != 1 || l.Executing != 0 || l.Dispatched != 2 {
		t.Fatalf("forced %d, executing %d, dispatched %d", st.Forced, l.Executing, l.Dispatched)
	}
}

// TestTimersBounded: the timers of requests that ended (the force timer
// of each request whose completion came) do not pile up: a request has one
// pending event at a time, dropped when it ends, so once every request is
// over only the borrowing adjustment is pending.
func TestTimersBounded(t *testing.T) {
	clk := fakeclock.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	sh := newShadow(t, clk, shadow.Config{Live: controller.StaticSource(builtin()), Staged: controller.StaticSource(nil)})
	run(t, sh)
	a := get("flood")
	const n = 5000 // each ending after 100 µs, long before its force timer
	for i := range n {
		at := clk.Now().Add(time.Duration(i) * 100 * time.Microsecond)
		tok := sh.Arrive(at, time.Time{}, *a, nil)
		sh.Finish(tok, at.Add(100*time.Microsecond), 100*time.Microsecond, false)
		if i%1000 == 999 {
			sync(t, sh)
		}
	}
	sync(t, sh)
	st := sh.State(false)
	l, _ := st.Level("global-default")
	if l.Dispatched != n || l.Executing != 0 || st.Dropped != 0 {
		t.Fatalf("dispatched %d, executing %d, dropped %d", l.Dispatched, l.Executing, st.Dropped)
	}
	if got := shadow.TimerCount(sh); got > 1 {
		t.Fatalf("%d timers held for no request", got)
	}
}

func TestOverlay(t *testing.T) {
	live := builtin()
	staged := decode(t, jail+`---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: global-default}
spec:
  type: Limited
  limited: {nominalConcurrencyShares: 1, limitResponse: {type: Reject}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: flood-jail}
spec:
  type: Limited
  limited: {nominalConcurrencyShares: 7, limitResponse: {type: Reject}}
`)
	objs, names, liveNames := shadow.Overlay(live, staged)
	if len(objs) != len(live)+2 {
		t.Fatalf("%d objects, want the %d live ones and two new", len(objs), len(live))
	}
	want := []string{"FlowSchema/flood", "PriorityLevelConfiguration/flood-jail", "PriorityLevelConfiguration/global-default"}
	if !slices.Equal(names, want) || !liveNames["PriorityLevelConfiguration/global-default"] || liveNames["FlowSchema/flood"] {
		t.Fatalf("staged %v, live %v", names, liveNames)
	}
	for _, o := range objs {
		switch {
		case o.Kind() == "PriorityLevelConfiguration" && o.Name() == "global-default":
			if o.Source.File != "staged.yaml" {
				t.Errorf("global-default is the live one, not the staged one")
			}
		case o.Kind() == "PriorityLevelConfiguration" && o.Name() == "flood-jail":
			if got := *o.PriorityLevel.Spec.Limited.NominalConcurrencyShares; got != 7 {
				t.Errorf("flood-jail has the first staged version (%d shares), not the last", got)
			}
		}
	}
}

// failing is a source whose reading fails once err is set.
type failing struct {
	controller.StaticSource
	err *error
}

func (f failing) Objects() ([]config.Object, error) {
	if *f.err != nil {
		return nil, *f.err
	}
	return f.StaticSource, nil
}

// TestDumpAndConfigError: the dump shows the shadow levels and the moves
// as text, the whole state as JSON, refuses other methods; a staged set
// that cannot be read leaves the shadow configuration as it was and says
// so.
func TestDumpAndConfigError(t *testing.T) {
	clk := fakeclock.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	var readErr error
	c := newController(t, clk, builtin())
	staged := failing{controller.StaticSource(decode(t, jail)), &readErr}
	sh := newShadow(t, clk, shadow.Config{Live: controller.StaticSource(builtin()), Staged: staged})
	run(t, sh)
	c.SetShadow(sh)
	if r := flood(t, c, clk, 20, 50*time.Millisecond); r != 0 {
		t.Fatalf("%d rejections", r)
	}
	sync(t, sh)
	h := shadow.Handler(sh)
	get := func(method, target string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, target, nil))
		return w
	}
	w := get(http.MethodGet, "/debug/api_priority_and_fairness/shadow")
	text := w.Body.String()
	for _, s := range []string{"# shadow configuration: staged FlowSchema/flood, PriorityLevelConfiguration/flood-jail\n",
		"PriorityLevelName", "\nflood-jail ", " Reject "} {
		if !strings.Contains(text, s) {
			t.Errorf("the dump lacks %q:\n%s", s, text)
		}
	}
	found := false
	for _, line := range strings.Split(text, "\n") {
		found = found || strings.Join(strings.Fields(line), " ") == "global-default global-default flood flood-jail 20"
	}
	if !found {
		t.Errorf("the dump lacks the move of the flood:\n%s", text)
	}
	var st shadow.State
	w = get(http.MethodGet, "/debug/api_priority_and_fairness/shadow?format=json")
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("JSON dump: %v\n%s", err, w.Body)
	}
	if l, ok := st.Level("flood-jail"); !ok || l.Arrived != 20 || len(st.FlowSchemas) == 0 || st.FlowSchemas[0].Name != "exempt" {
		t.Fatalf("JSON state: %+v", st)
	}
	cs := console.ShadowOf(sh)
	var jailed *console.ShadowLevel
	for i := range cs.Levels {
		if cs.Levels[i].Name == "flood-jail" {
			jailed = &cs.Levels[i]
		}
	}
	if jailed == nil || jailed.Type != console.TypeReject || !jailed.Staged || jailed.Dispatched+jailed.Rejected.ConcurrencyLimit != 20 || cs.Arrived != 22 || cs.Moved != 20 ||
		len(cs.Moves) != 1 || cs.Moves[0] != (console.ShadowMove{LiveFlowSchema: "global-default", LivePriorityLevel: "global-default", FlowSchema: "flood", PriorityLevel: "flood-jail", Requests: 20}) {
		t.Fatalf("the console's shadow: %+v", cs)
	}
	if w := get(http.MethodPost, "/debug/api_priority_and_fairness/shadow"); w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", w.Code)
	}

	readErr = errors.New("staged.yaml: broken")
	sh.Reload()
	st = sh.State(false)
	if st.ConfigError == "" || !strings.Contains(st.ConfigError, "broken") {
		t.Fatalf("config error %q", st.ConfigError)
	}
	if _, ok := st.Level("flood-jail"); !ok {
		t.Fatal("the shadow configuration was dropped with the failed reading")
	}
}
