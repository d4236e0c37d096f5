package clock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apfproject/apf/clock/fakeclock"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/request"
)

// A test runs the controller on a fake clock and moves time itself: here a
// queued request's wait limit (a quarter of the request timeout) passes
// without the test waiting for it.
func ExampleClock() {
	objs, err := config.Decode([]byte(`
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: one-at-a-time}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    limitResponse: {type: Queue, queuing: {queues: 1, handSize: 1, queueLengthLimit: 10}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: jobs}
spec:
  priorityLevelConfiguration: {name: one-at-a-time}
  matchingPrecedence: 1000
  rules:
  - subjects: [{kind: Group, group: {name: batch-jobs}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`), "jobs.yaml")
	if err != nil {
		panic(err)
	}
	clk := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctrl, err := controller.New(controller.Config{
		Source:                 controller.StaticSource(objs),
		ServerConcurrencyLimit: 6, // one seat for the level, five for catch-all
		RequestTimeout:         time.Minute,
		Clock:                  clk,
	})
	if err != nil {
		panic(err)
	}
	info, _ := request.Parse("POST", "/jobs", "")
	job := &request.Attributes{Info: info, User: request.User{Name: "nightly", Groups: []string{"batch-jobs"}}}

	first, err := ctrl.Admit(context.Background(), job) // takes the seat
	if err != nil {
		panic(err)
	}
	second := make(chan error)
	pending := clk.Pending()
	go func() {
		_, err := ctrl.Admit(context.Background(), job) // queues
		second <- err
	}()
	for clk.Pending() == pending { // until the waiter has set its wait limit
		time.Sleep(time.Millisecond)
	}
	clk.Advance(15 * time.Second)
	var rej *controller.RejectedError
	if err := <-second; errors.As(err, &rej) {
		fmt.Println("second job:", rej.Reason, "at", clk.Now().Format(time.TimeOnly))
	}
	first.Done()
	// Output:
	// second job: time-out at 00:00:15
}
