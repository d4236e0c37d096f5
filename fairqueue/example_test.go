package fairqueue_test

import (
	"fmt"
	"time"

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
	da, _ := qs.Arrive(start, a, nil)
	db, _ := qs.Arrive(start, b, nil)
	fmt.Println("a:", da)
	fmt.Println("b:", db)

	var buf []*fairqueue.Request
	dispatched, release := qs.Finish(start.Add(10*time.Millisecond), a, buf)
	for _, r := range dispatched {
		fmt.Println("now running:", r.Tag, "after waiting", r.StartTime().Sub(start))
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

// A reject level runs what fits and turns the rest away.
func ExampleQueueSet_reject() {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	qs, err := fairqueue.New(fairqueue.Config{ConcurrencyLimit: 2, Queues: 0}, start)
	if err != nil {
		panic(err)
	}
	list := &fairqueue.Request{Tag: "list", Work: fairqueue.WorkEstimate{InitialSeats: 2}}
	get := &fairqueue.Request{Tag: "get", Work: fairqueue.WorkEstimate{InitialSeats: 1}}
	d, _ := qs.Arrive(start, list, nil)
	fmt.Println("list:", d)
	if d, _ := qs.Arrive(start, get, nil); d == fairqueue.Rejected {
		fmt.Println("get: rejected,", get.Reason()) // answer 429
	}
	qs.Finish(start.Add(time.Millisecond), list, nil)
	d, _ = qs.Arrive(start.Add(time.Millisecond), get, nil)
	fmt.Println("get again:", d)
	// Output:
	// list: dispatched
	// get: rejected, concurrency-limit
	// get again: dispatched
}
