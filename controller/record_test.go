package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apfproject/apf/fairqueue"
)

// AdmitRecord tells its Record what happened to a request dispatched at
// once, one that queued, one rejected from a full queue, one rejected by a
// reject level and an exempt one; Done adds the execution time.
func TestAdmitRecord(t *testing.T) {
	c, clk := newTest(t, StaticSource(decode(t, manifests(true))), 12)
	ctx := context.Background()
	q := level(c, "queued").Queue
	limit := q.Stats().ConcurrencyLimit

	var first Record
	held := make([]*Ticket, 0, limit)
	for i := range limit {
		rec := &first
		if i > 0 {
			rec = nil
		}
		tk, err := c.AdmitRecord(ctx, attrs(t, "mouse", "GET", "/api/v1/namespaces/ns/pods/p", ""), rec)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, tk)
	}
	if first.Outcome != OutcomeDispatched || first.FlowSchema != "queued" || first.FlowSchemaUID != "uid-fs-queued" ||
		first.MatchingPrecedence != 200 || first.PriorityLevel != "queued" || first.PriorityLevelUID != "uid-pl-queued" ||
		first.Queue != 0 || first.Queued || first.Wait != 0 || !first.Arrival.Equal(t0) ||
		first.Estimate.InitialSeats != 1 || first.Seats.InitialSeats != 1 || first.Execution != 0 {
		t.Fatalf("dispatched at once: %+v", first)
	}
	clk.Advance(40 * time.Millisecond)
	held[0].Done()
	if first.Execution != 40*time.Millisecond {
		t.Fatalf("execution %v after Done, want 40ms", first.Execution)
	}
	held = held[1:]

	// Fill the level again, then one waits in the queue.
	tk, err := c.Admit(ctx, attrs(t, "mouse", "GET", "/healthz", ""))
	if err != nil {
		t.Fatal(err)
	}
	held = append(held, tk)
	var waited Record
	done := make(chan *Ticket)
	go func() {
		tk, err := c.AdmitRecord(ctx, attrs(t, "mouse", "GET", "/healthz", ""), &waited)
		if err != nil {
			t.Error(err)
		}
		done <- tk
	}()
	waitFor(t, "a waiter", func() bool { return q.Stats().WaitingRequests == 1 })
	clk.Advance(250 * time.Millisecond)
	held[0].Done()
	held = held[1:]
	wt := <-done
	if waited.Outcome != OutcomeDispatched || !waited.Queued || waited.Queue != 0 || waited.Wait != 250*time.Millisecond {
		t.Fatalf("queued: %+v", waited)
	}
	held = append(held, wt)

	// The queue (length limit 2) fills up; the next is turned away.
	for range 2 {
		go func() {
			tk, err := c.Admit(ctx, attrs(t, "mouse", "GET", "/healthz", ""))
			if err == nil {
				tk.Done()
			}
		}()
	}
	waitFor(t, "two waiters", func() bool { return q.Stats().WaitingRequests == 2 })
	var full Record
	_, err = c.AdmitRecord(ctx, attrs(t, "mouse", "GET", "/healthz", ""), &full)
	var rej *RejectedError
	if !errors.As(err, &rej) {
		t.Fatal(err)
	}
	if full.Outcome != OutcomeRejected || full.Reason != fairqueue.QueueFull || full.RetryAfter != rej.RetryAfter ||
		full.FlowSchema != "queued" || full.Queue != 0 || full.Queued || full.Execution != 0 {
		t.Fatalf("queue full: %+v", full)
	}
	for _, tk := range held {
		tk.Done()
	}
	waitFor(t, "the waiters", func() bool { return q.IsIdle() })

	// A reject level has no queue.
	tight := level(c, "tight").Queue.Stats().ConcurrencyLimit
	held = held[:0]
	for range tight {
		tk, err := c.Admit(ctx, attrs(t, "elephant", "GET", "/healthz", ""))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, tk)
	}
	var refused Record
	if _, err := c.AdmitRecord(ctx, attrs(t, "elephant", "GET", "/healthz", ""), &refused); err == nil {
		t.Fatal("not rejected")
	}
	if refused.Outcome != OutcomeRejected || refused.Reason != fairqueue.ConcurrencyLimit || refused.Queue != -1 || refused.PriorityLevel != "tight" {
		t.Fatalf("reject level: %+v", refused)
	}
	for _, tk := range held {
		tk.Done()
	}

	// system:masters is exempt.
	a := attrs(t, "root", "GET", "/healthz", "")
	a.User.Groups = []string{"system:masters"}
	var exempt Record
	tk, err = c.AdmitRecord(ctx, a, &exempt)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Millisecond)
	tk.Done()
	if exempt.Outcome != OutcomeExempt || exempt.PriorityLevel != "exempt" || exempt.FlowSchema != "exempt" ||
		exempt.Queue != -1 || exempt.Execution != time.Millisecond {
		t.Fatalf("exempt: %+v", exempt)
	}
	for o, want := range map[Outcome]string{OutcomeNone: "", OutcomeDispatched: "dispatched", OutcomeExempt: "exempt", OutcomeRejected: "rejected"} {
		if o.String() != want {
			t.Errorf("Outcome(%d) = %q, want %q", o, o.String(), want)
		}
	}
}

// A Ticket recycled after Done does not write into the Record of the
// request it served before.
func TestRecordNotKeptByRecycledTicket(t *testing.T) {
	c, clk := newTest(t, StaticSource(decode(t, manifests(false))), 12)
	ctx := context.Background()
	var rec Record
	tk, err := c.AdmitRecord(ctx, attrs(t, "mouse", "GET", "/healthz", ""), &rec)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Millisecond)
	tk.Done()
	for range 10 {
		clk.Advance(time.Second)
		tk, err := c.Admit(ctx, attrs(t, "mouse", "GET", "/healthz", ""))
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		tk.Done()
	}
	if rec.Execution != time.Millisecond {
		t.Fatalf("execution %v: a later request wrote into the record", rec.Execution)
	}
}
