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
	"github.com/apfproject/apf/request"
	"github.com/apfproject/apf/shadow"
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
	timeout = 400 * time.Millisecond
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
// executing 50 ms, with a mouse's request every 50 ms beside them, on the
// fake clock, none of which waits in the live configuration. It returns
// the rejections of the flood.
func flood(t *testing.T, c *controller.Controller, clk *fakeclock.Clock, n int) (rejected int) {
	t.Helper()
	type running struct {
		tk  *controller.Ticket
		end time.Time
	}
	var live []running
	over := func(now time.Time) {
		kept := live[:0]
		for _, r := range live {
			if r.end.After(now) {
				kept = append(kept, r)
				continue
			}
			r.tk.Done()
		}
		live = kept
	}
	ctx := context.Background()
	for i := range n {
		clk.Advance(5 * time.Millisecond)
		now := clk.Now()
		over(now)
		users := []string{"flood"}
		if i%10 == 0 {
			users = append(users, "mouse")
		}
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
				live = append(live, running{tk, now.Add(50 * time.Millisecond)})
			}
		}
	}
	for len(live) > 0 {
		clk.Advance(5 * time.Millisecond)
		over(clk.Now())
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
	if r := flood(t, c, clk, n); r != 0 {
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
		t.Fatalf("flood-jail: %+v", jailed)
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
	measured := flood(t, newController(t, clk2, promoted), clk2, n)
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
