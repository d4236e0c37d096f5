package controller

import (
	"strings"
	"testing"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/engine"
)

// A controller at a small server limit admits on every level that has
// nominal seats from the start (the borrowing adjustment leaves
// global-default and workload-low a current limit of 0, their queue sets
// one seat). A level whose queue set admits nothing makes Admitting fail,
// naming it; a level with no shares of its own, which runs on borrowed
// seats only, does not.
func TestAdmitting(t *testing.T) {
	var objs []config.Object
	for _, pl := range bootstrap.PriorityLevels() {
		objs = append(objs, config.Object{PriorityLevel: pl, Version: config.V1})
	}
	for _, fs := range bootstrap.FlowSchemas() {
		objs = append(objs, config.Object{FlowSchema: fs, Version: config.V1})
	}
	objs = append(objs, decode(t, `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: borrower, uid: uid-pl-borrower}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 0
    limitResponse:
      type: Queue
      queuing: {queues: 4, handSize: 2, queueLengthLimit: 10}
`)...)
	c, _ := newTest(t, StaticSource(objs), 10)
	for _, name := range []string{"global-default", "workload-low", "borrower"} {
		l := level(c, name)
		if l.Limits == nil || l.Limits.Current != 0 {
			t.Fatalf("%s's limits %+v: the test expects a current limit of 0", name, l.Limits)
		}
	}
	if l := level(c, "borrower"); l.Limits.Nominal != 0 || l.Queue.Config().ConcurrencyLimit != 0 {
		t.Fatalf("borrower: %+v, queue set limit %d; want no seats at all", l.Limits, l.Queue.Config().ConcurrencyLimit)
	}
	if err := c.Admitting(); err != nil {
		t.Fatalf("Admitting at a limit of 10: %v", err)
	}

	gd := level(c, "global-default").Queue
	setLimit := func(n int) {
		gd.mu.Lock()
		gd.el.Apply(t0, engine.Update{Level: gd.el, Limit: n})
		gd.mu.Unlock()
	}
	setLimit(0)
	err := c.Admitting()
	if err == nil || !strings.Contains(err.Error(), `"global-default"`) {
		t.Fatalf("Admitting with global-default's queue set at 0 seats: %v", err)
	}
	setLimit(1)
	if err := c.Admitting(); err != nil {
		t.Fatalf("Admitting once global-default has a seat again: %v", err)
	}
}
