package fairqueue_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apfproject/apf/clock/fakeclock"
	"github.com/apfproject/apf/fairqueue"
)

// The core is driven step by step, with time as an argument.
func ExampleQueueSet() {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	qs, err := fairqueue.New(fairqueue.Config{ConcurrencyLimit: 1, Queues: 8, HandSize: 2, QueueLengthLimit: 10}, start)
	if err != nil {
		panic(err)
	}
	a := &fairqueue.Request{Hash: 1, Work: fairqueue.WorkEstimate{InitialSeats: 1}, Tag: "a"}
	b := &fairqueue.Request{Hash: 2, Work: fairqueue.WorkEstimate{InitialSeats: 1}, Tag: "b"}
	fmt.Println("a:", qs.Arrive(start, a))
	fmt.Println("b:", qs.Arrive(start, b))

	var buf []*fairqueue.Request
	dispatched, release := qs.Finish(start.Add(10*time.Millisecond), a, buf)
	for _, r := range dispatched {
		fmt.Println("now running:", r.Tag, "after waiting", r.WaitDuration())
	}
	fmt.Println("a's seats held on for", release)
	qs.Finish(start.Add(20*time.Millisecond), b, nil)
	fmt.Println("idle:", qs.IsIdle())
	// Output:
	// a: dispatched
	// b: queued
	// now running: b after waiting 10ms
	// a's seats held on for 0s
	// idle: true
}

// Level is the blocking layer; a rejected or timed-out request gets a
// *RejectError.
func ExampleLevel() {
	clock := fakeclock.New(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	level, err := fairqueue.NewLevel(fairqueue.Config{ConcurrencyLimit: 2, Queues: 0}, clock, nil)
	if err != nil {
		panic(err)
	}
	serve := func(r *fairqueue.Request) {
		if err := level.Wait(context.Background(), r); err != nil {
			var re *fairqueue.RejectError
			if errors.As(err, &re) {
				fmt.Println(r.Tag, "rejected:", re.Reason) // answer 429
			}
			return
		}
		fmt.Println(r.Tag, "runs")
		// defer level.Done(r) around the handler; here it keeps running.
	}
	list := &fairqueue.Request{Tag: "list", Work: fairqueue.WorkEstimate{InitialSeats: 2}}
	get := &fairqueue.Request{Tag: "get", Work: fairqueue.WorkEstimate{InitialSeats: 1}}
	serve(list)
	serve(get)
	level.Done(list)
	serve(get)
	level.Done(get)
	// Output:
	// list runs
	// get rejected: concurrency-limit
	// get runs
}
