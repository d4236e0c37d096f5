package shadow_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apfproject/apf/clock/fakeclock"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/internal/debug/shadow"
	"github.com/apfproject/apf/request"
	"github.com/apfproject/apf/sim"
)

// jail moves the user flood to a small Reject level that may not borrow.
const jail = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: flood-jail}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 5
    borrowingLimitPercent: 0
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: flood}
spec:
  priorityLevelConfiguration: {name: flood-jail}
  matchingPrecedence: 500
  rules:
  - subjects: [{kind: User, user: {name: flood}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`

// queueJail moves the user flood to a level of one seat and one short
// queue.
const queueJail = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: flood-jail}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    borrowingLimitPercent: 0
    limitResponse:
      type: Queue
      queuing: {queues: 1, handSize: 1, queueLengthLimit: 2}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: flood}
spec:
  priorityLevelConfiguration: {name: flood-jail}
  matchingPrecedence: 500
  rules:
  - subjects: [{kind: User, user: {name: flood}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`

func decode(t *testing.T, manifest string) []config.Object {
	t.Helper()
	objs, err := config.Decode([]byte(manifest), "staged.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// builtin is the mandatory and suggested configuration, as objects.
func builtin() []config.Object {
	var objs []config.Object
	for _, pl := range bootstrap.PriorityLevels() {
		objs = append(objs, config.Object{PriorityLevel: pl, Version: config.V1})
	}
	for _, fs := range bootstrap.FlowSchemas() {
		objs = append(objs, config.Object{FlowSchema: fs, Version: config.V1})
	}
	return objs
}

func get(user string) *request.Attributes {
	return &request.Attributes{
		Info: request.Info{IsResourceRequest: true, Path: "/api/v1/namespaces/default/pods/p", Verb: "get",
			APIPrefix: "api", APIVersion: "v1", Namespace: "default", Resource: "pods", Name: "p"},
		User: request.User{Name: user, Groups: []string{"system:authenticated"}},
	}
}

const (
	scl     = 200
	timeout = 300 * time.Millisecond
)

func newController(t *testing.T, clk *fakeclock.Clock, objs []config.Object) *controller.Controller {
	t.Helper()
	c, err := controller.New(controller.Config{
		ServerConcurrencyLimit: scl, RequestTimeout: timeout, Source: controller.StaticSource(objs),
		Clock: clk, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func startShadow(t *testing.T, clk *fakeclock.Clock, c *controller.Controller, live, staged []config.Object, reg prometheus.Registerer) *shadow.Shadow {
	t.Helper()
	sh, err := shadow.New(shadow.Config{
		Live: controller.StaticSource(live), Staged: controller.StaticSource(staged),
		ServerConcurrencyLimit: scl, RequestTimeout: timeout, Watches: c.Watches(),
		Clock: clk, Registerer: reg, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); sh.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	sync(t, sh)
	c.SetShadow(sh)
	return sh
}

func sync(t *testing.T, sh *shadow.Shadow) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sh.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

// flood sends n requests of the user flood, one every 5 ms, each
// executing for service, with a mouse's request every 50 ms beside them,
// on the fake clock, moving it from event to event. None of them may wait
// in the configuration of c (Admit would block the test). It returns the
// rejections of the flood.
func flood(t *testing.T, c *controller.Controller, clk *fakeclock.Clock, n int, service time.Duration) (rejected int) {
	t.Helper()
	type running struct {
		tk  *controller.Ticket
		end time.Time
	}
	var live []running
	start := clk.Now()
	next := 0 // the next arrival
	ctx := context.Background()
	for next < n || len(live) > 0 {
		// The earliest end, if before the next arrival, else the arrival.
		first := -1
		for i, r := range live {
			if first < 0 || r.end.Before(live[first].end) {
				first = i
			}
		}
		arrival := start.Add(time.Duration(next+1) * 5 * time.Millisecond)
		if first >= 0 && (next == n || !live[first].end.After(arrival)) {
			clk.Set(live[first].end)
			live[first].tk.Done()
			live = append(live[:first], live[first+1:]...)
			continue
		}
		clk.Set(arrival)
		users := []string{"flood"}
		if next%10 == 0 {
			users = append(users, "mouse")
		}
		next++
		for _, u := range users {
			tk, err := c.Admit(ctx, get(u))
			var rej *controller.RejectedError
			switch {
			case errors.As(err, &rej):
				if u != "flood" {
					t.Fatalf("the mouse was rejected: %v", err)
				}
				rejected++
			case err != nil:
				t.Fatal(err)
			default:
				live = append(live, running{tk, arrival.Add(service)})
			}
		}
	}
	return rejected
}

// TestPredictionMatchesPromotion: the shadow's would-be rejections of a
// flood moved to a small Reject level are exactly the rejections of the
// same flood once the staged objects are in force, on a fake clock (where
// the flood does not depend on the answers). The moves are counted, the
// mouse stays where it was, and nothing is rejected live meanwhile.
func TestPredictionMatchesPromotion(t *testing.T) {
	live, staged := builtin(), decode(t, jail)
	clk := fakeclock.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	c := newController(t, clk, live)
	reg := prometheus.NewRegistry()
	sh := startShadow(t, clk, c, live, staged, reg)

	const n = 400
	if r := flood(t, c, clk, n, 50*time.Millisecond); r != 0 {
		t.Fatalf("%d live rejections before promotion", r)
	}
	sync(t, sh)
	st := sh.State(true)
	jailed, ok := st.Level("flood-jail")
	if !ok {
		t.Fatalf("no shadow level flood-jail in %+v", st.Levels)
	}
	predicted := jailed.Rejected["concurrency-limit"]
	if jailed.Type != "Reject" || !jailed.Staged || jailed.Arrived != n || jailed.Dispatched+predicted != n {
		t.Fatalf("flood-jail: %+v; arrived %d, moved %d, dropped %d, forced %d", jailed, st.Arrived, st.Moved, st.Dropped, st.Forced)
	}
	if st.Moved != n || st.Arrived != n+n/10 || st.Dropped != 0 || st.Forced != 0 {
		t.Fatalf("state: arrived %d, moved %d, dropped %d, forced %d", st.Arrived, st.Moved, st.Dropped, st.Forced)
	}
	if len(st.Moves) != 1 || st.Moves[0] != (shadow.Move{LiveFlowSchema: "global-default", LivePriorityLevel: "global-default",
		FlowSchema: "flood", PriorityLevel: "flood-jail", Requests: n}) {
		t.Fatalf("moves: %+v", st.Moves)
	}
	if got := counterValue(t, reg, "apf_shadow_rejected_requests_total", map[string]string{
		"priority_level": "flood-jail", "flow_schema": "flood", "reason": "concurrency-limit"}); int64(got) != predicted {
		t.Fatalf("apf_shadow_rejected_requests_total = %v, the state says %d", got, predicted)
	}

	promoted, _, _ := shadow.Overlay(live, staged)
	clk2 := fakeclock.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	measured := flood(t, newController(t, clk2, promoted), clk2, n, 50*time.Millisecond)
	t.Logf("predicted %d rejections of %d, measured %d after promotion", predicted, n, measured)
	if measured < n/4 || int64(measured) != predicted {
		t.Fatalf("predicted %d rejections, measured %d after promotion", predicted, measured)
	}
}

// counterValue is the value of the counter of name with the labels
// given, or -1 when there is none.
func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

// arrivals is a fixed list of sim arrivals.
type arrivals []sim.Arrival

func (a *arrivals) Next() (sim.Arrival, bool, error) {
	if len(*a) == 0 {
		return sim.Arrival{}, false, nil
	}
	x := (*a)[0]
	*a = (*a)[1:]
	return x, true, nil
}

// TestQueuingPredictionMatchesSimulation: moved to a level of one seat
// and one short queue, the flood waits, times out and finds its queue
// full in the shadow exactly as the simulator, which runs the same engine
// on virtual time, says the promoted configuration treats it. The live
// configuration lets the flood run at once, so the shadow's requests
// execute as long as the live ones from their own dispatch.
func TestQueuingPredictionMatchesSimulation(t *testing.T) {
	live, staged := builtin(), decode(t, queueJail)
	clk := fakeclock.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	c := newController(t, clk, live)
	sh := startShadow(t, clk, c, live, staged, nil)
	const (
		n       = 300
		service = 47300 * time.Microsecond // no completion falls on an arrival
	)
	if r := flood(t, c, clk, n, service); r != 0 {
		t.Fatalf("%d live rejections", r)
	}
	clk.Advance(time.Second) // the shadow's requests that wait or run on
	sync(t, sh)
	st := sh.State(false)
	got, _ := st.Level("flood-jail")

	var src arrivals
	for i := range n {
		at := time.Duration(i+1) * 5 * time.Millisecond
		src = append(src, sim.Arrival{At: at, Client: "flood", Attributes: *get("flood"), Service: service})
		if i%10 == 0 {
			src = append(src, sim.Arrival{At: at, Client: "mouse", Attributes: *get("mouse"), Service: service})
		}
	}
	promoted, _, _ := shadow.Overlay(live, staged)
	res, err := sim.Run(context.Background(), sim.Config{Objects: promoted, ServerConcurrencyLimit: scl, RequestTimeout: timeout}, &src)
	if err != nil {
		t.Fatal(err)
	}
	var want sim.LevelResult
	for _, l := range res.Levels {
		if l.Name == "flood-jail" {
			want = l
		}
	}
	t.Logf("shadow: %d dispatched (%d after a wait, mean %v, max %v), rejected %v; simulation: %d dispatched, rejected %v",
		got.Dispatched, got.Waited, time.Duration(got.MeanWait), time.Duration(got.MaxWait), got.Rejected, want.Dispatched, want.Rejected)
	if got.Type != "Queue" || got.Waited == 0 || got.MaxWait == 0 || got.Rejected["queue-full"] == 0 || got.Rejected["time-out"] == 0 {
		t.Fatalf("flood-jail: %+v", got)
	}
	if got.Arrived != want.Arrived || got.Dispatched != want.Dispatched {
		t.Fatalf("shadow %d arrived, %d dispatched; simulation %d, %d", got.Arrived, got.Dispatched, want.Arrived, want.Dispatched)
	}
	for _, r := range []string{"queue-full", "concurrency-limit", "time-out"} {
		if got.Rejected[r] != want.Rejected[r] {
			t.Errorf("%s: shadow %d, simulation %d", r, got.Rejected[r], want.Rejected[r])
		}
	}
}
