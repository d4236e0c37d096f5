package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/clock/fakeclock"
	"github.com/apfproject/apf/fairqueue"
)

// With deadline-aware queueing a request that its level's measured drain
// cannot reach within its wait limit is rejected on arrival (time-out),
// with a Retry-After from the level's time to drain; without it the same
// request queues, as in Kubernetes, and waits.
func TestDeadlineAwareQueueing(t *testing.T) {
	for _, aware := range []bool{true, false} {
		clk := fakeclock.New(t0)
		c, err := New(Config{ServerConcurrencyLimit: 12, Source: StaticSource(decode(t, deepManifest)), Clock: clk, DeadlineAwareQueueing: aware})
		if err != nil {
			t.Fatal(err)
		}
		q := level(c, "queued").Queue
		limit := q.Stats().ConcurrencyLimit
		held := holdSeats(t, c, limit, "mouse")
		admitted := make(chan *Ticket, 64)
		failed := make(chan error, 64)
		const waiters = 20
		for range waiters {
			go func() {
				tk, err := c.Admit(context.Background(), attrs(t, "mouse", "GET", "/healthz", ""))
				if err != nil {
					failed <- err
					return
				}
				admitted <- tk
			}()
		}
		waitFor(t, "the waiters", func() bool { return q.Stats().WaitingRequests == waiters })
		// One request ends every 500 ms for 3 s: two dispatches a second.
		for range 6 {
			clk.Advance(500 * time.Millisecond)
			held[0].Done()
			held = append(held[1:], <-admitted)
		}
		waiting := q.Stats().WaitingRequests

		// A wait limit of 2 s (a quarter of an 8 s deadline) behind
		// about 14 requests draining at two a second.
		ctx, cancel := context.WithDeadline(context.Background(), clk.Now().Add(8*time.Second))
		late := make(chan error, 1)
		go func() {
			tk, err := c.Admit(ctx, attrs(t, "mouse", "GET", "/healthz", ""))
			if err == nil {
				tk.Done()
			}
			late <- err
		}()
		if aware {
			var rej *RejectedError
			select {
			case err := <-late:
				if !errors.As(err, &rej) || rej.Reason != fairqueue.TimeOut {
					t.Fatalf("the late request: %v, want a time-out on arrival", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the late request was not answered on arrival")
			}
			drain := float64(waiting) / 2 // seconds
			if ra := float64(rej.RetryAfter); ra < drain/2 || ra > drain*2 {
				t.Errorf("Retry-After %ds, the level drains in about %.1fs", rej.RetryAfter, drain)
			}
		} else {
			waitFor(t, "the late request to queue", func() bool { return q.Stats().WaitingRequests == waiting+1 })
			select {
			case err := <-late:
				t.Fatalf("without the option the late request was answered at once: %v", err)
			default:
			}
			clk.Advance(2 * time.Second)
			if err := <-late; err == nil {
				t.Fatal("the late request was dispatched within its wait limit: the prediction would have been wrong")
			}
		}
		cancel()
		// Everyone left times out; nothing stays behind.
		clk.Advance(time.Minute)
		for range waiters - 6 {
			select {
			case tk := <-admitted:
				tk.Done()
			case <-failed:
			}
		}
		for _, tk := range held {
			tk.Done()
		}
		waitFor(t, "an idle level", q.IsIdle)
	}
}

// A Retry-After from a drain time is the drain scaled by 0.75 to 1.25,
// rounded, between 1 and 60 seconds.
func TestDrainRetryAfter(t *testing.T) {
	for _, c := range []struct {
		drain time.Duration
		u     float64
		want  int
	}{
		{8 * time.Second, 0, 6},
		{8 * time.Second, 0.5, 8},
		{8 * time.Second, 0.999, 10},
		{100 * time.Millisecond, 0.5, 1},
		{10 * time.Minute, 0.5, 60},
	} {
		if got := drainRetryAfter(c.drain, c.u); got != c.want {
			t.Errorf("drainRetryAfter(%v, %v) = %d, want %d", c.drain, c.u, got, c.want)
		}
	}
}

// deepManifest is the "queued" level of the controller's tests with
// room for a long backlog in its one queue.
var deepManifest = strings.Replace(manifests(false), "queueLengthLimit: 2", "queueLengthLimit: 100", 1)
