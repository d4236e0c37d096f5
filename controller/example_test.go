package controller_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/request"
)

// A configuration of one's own: batch jobs get a small priority level that
// rejects rather than queues; everything else keeps the built-in
// configuration's mandatory levels.
const manifests = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: batch}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: batch}
spec:
  priorityLevelConfiguration: {name: batch}
  matchingPrecedence: 1000
  rules:
  - subjects: [{kind: Group, group: {name: batch-jobs}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`

// Admission outside HTTP (a gRPC interceptor, a queue consumer): describe
// the request with request.Attributes, Admit it, run it, call Done.
func Example() {
	objs, err := config.Decode([]byte(manifests), "apf.yaml")
	if err != nil {
		panic(err)
	}
	ctrl, err := controller.New(controller.Config{
		Source:                 controller.StaticSource(objs),
		ServerConcurrencyLimit: 20,
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ctrl.Run(ctx) // configuration changes, borrowing, metrics

	info, err := request.Parse("POST", "/jobs/report", "")
	if err != nil {
		panic(err)
	}
	job := &request.Attributes{Info: info, User: request.User{Name: "nightly", Groups: []string{"batch-jobs", "system:authenticated"}}}

	// Jobs run until the batch level's seats (its share of the 20) are
	// taken; the next one is turned away at once, with a Retry-After.
	var running []*controller.Ticket
	for {
		t, err := ctrl.Admit(ctx, job)
		var rej *controller.RejectedError
		if errors.As(err, &rej) {
			fmt.Printf("job %d: %s, retry after %ds\n", len(running)+1, rej.Reason, rej.RetryAfter)
			break
		}
		if err != nil {
			panic(err)
		}
		running = append(running, t)
	}
	fmt.Printf("%d jobs ran in FlowSchema %q at priority level %q\n", len(running), running[0].FlowSchema, running[0].PriorityLevel)
	for _, t := range running {
		t.Done() // always, also when the work fails or panics
	}
	// Output:
	// job 5: concurrency-limit, retry after 1s
	// 4 jobs ran in FlowSchema "batch" at priority level "batch"
}

// Admission on an event loop, where nothing may block: AdmitFunc hands
// its answer to a callback, at once when the level decides on arrival,
// later when the request queued. The loop gets it through a channel (in
// a real server, its own queue and a wake-up of its poller).
func ExampleController_AdmitFunc() {
	objs, err := config.Decode([]byte(manifests), "apf.yaml")
	if err != nil {
		panic(err)
	}
	ctrl, err := controller.New(controller.Config{Source: controller.StaticSource(objs), ServerConcurrencyLimit: 20})
	if err != nil {
		panic(err)
	}
	info, err := request.Parse("POST", "/jobs/report", "")
	if err != nil {
		panic(err)
	}
	job := &request.Attributes{Info: info, User: request.User{Name: "nightly", Groups: []string{"batch-jobs", "system:authenticated"}}}

	type answer struct {
		t   *controller.Ticket
		err error
	}
	answers := make(chan answer, 8)
	for range 5 {
		ctrl.AdmitFunc(context.Background(), job, nil, func(t *controller.Ticket, err error) {
			answers <- answer{t, err} // never blocks: room for every answer
		})
	}
	for range 5 {
		a := <-answers
		if a.err != nil {
			fmt.Println("refused:", a.err.(*controller.RejectedError).Reason)
			continue
		}
		fmt.Println("runs at", a.t.PriorityLevel)
		defer a.t.Done()
	}
	// Output:
	// runs at batch
	// runs at batch
	// runs at batch
	// runs at batch
	// refused: concurrency-limit
}

// A configuration kept in a directory of manifests (a mounted ConfigMap, a
// Git checkout): the controller reads it at start and, while Run runs,
// again whenever the files change. The mandatory objects are always there.
func ExampleNewDirSource() {
	dir, err := os.MkdirTemp("", "apf")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "batch.yaml"), []byte(manifests), 0o644); err != nil {
		panic(err)
	}

	ctrl, err := controller.New(controller.Config{Source: controller.NewDirSource(dir, 0)})
	if err != nil {
		panic(err)
	}
	fmt.Println("configuration error:", ctrl.ConfigError())
	var names []string
	for _, l := range ctrl.Levels() {
		names = append(names, l.Name)
	}
	slices.Sort(names)
	fmt.Println(names)
	// Output:
	// configuration error: <nil>
	// [batch catch-all exempt]
}
