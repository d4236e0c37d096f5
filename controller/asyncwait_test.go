package controller

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apfproject/apf/fairqueue"
)

// answer is what AdmitFunc's done heard.
type answer struct {
	t   *Ticket
	err error
}

// admitFunc calls AdmitFunc and returns the channel its answer comes on,
// and whether it came before AdmitFunc returned.
func admitFunc(c *Controller, ctx context.Context, user string, t *testing.T) (<-chan answer, bool) {
	t.Helper()
	ch := make(chan answer, 2)
	var returned atomic.Bool
	var early atomic.Bool
	c.AdmitFunc(ctx, attrs(t, user, "GET", "/healthz", ""), nil, func(tk *Ticket, err error) {
		early.Store(!returned.Load())
		ch <- answer{tk, err}
	})
	returned.Store(true)
	return ch, early.Load()
}

// TestAdmitFunc: AdmitFunc answers at once a request its level dispatches
// or refuses on arrival, and later, from another goroutine, one that
// queues: when a seat frees, when its wait limit passes, when its context
// ends. Each hears exactly once; the in-queue gauges and seats come back.
func TestAdmitFunc(t *testing.T) {
	c, clk := newTest(t, StaticSource(decode(t, manifests(false))), 12)
	q := level(c, "queued").Queue
	limit := q.Stats().ConcurrencyLimit
	ctx := context.Background()

	var held []*Ticket
	for range limit {
		ch, early := admitFunc(c, ctx, "mouse", t)
		a := <-ch
		if !early || a.err != nil || a.t == nil || a.t.PriorityLevel != "queued" {
			t.Fatalf("dispatched on arrival: early %v, %+v", early, a)
		}
		held = append(held, a.t)
	}

	// Queued: nothing heard until a seat frees, then the Ticket.
	ch, early := admitFunc(c, ctx, "mouse", t)
	if early || len(ch) != 0 || q.Stats().WaitingRequests != 1 {
		t.Fatalf("a queued request: early %v, %d answers, %d waiting", early, len(ch), q.Stats().WaitingRequests)
	}
	held[0].Done()
	a := <-ch
	if a.err != nil || a.t == nil {
		t.Fatalf("dispatched when a seat freed: %+v", a)
	}
	held[0] = a.t

	// Queued, then the wait limit (15 s) passes; a second one; a third is
	// refused at once: the queue holds 2.
	ch1, _ := admitFunc(c, ctx, "mouse", t)
	ch2, _ := admitFunc(c, ctx, "mouse", t)
	ch3, early := admitFunc(c, ctx, "mouse", t)
	var rej *RejectedError
	if a := <-ch3; !early || !errors.As(a.err, &rej) || rej.Reason != fairqueue.QueueFull {
		t.Fatalf("queue full: early %v, %+v", early, a)
	}
	clk.Advance(14 * time.Second)
	if len(ch1)+len(ch2) != 0 {
		t.Fatal("gave up early")
	}
	clk.Advance(time.Second)
	for _, ch := range []<-chan answer{ch1, ch2} {
		if a := <-ch; !errors.As(a.err, &rej) || rej.Reason != fairqueue.TimeOut || a.t != nil {
			t.Fatalf("wait limit: %+v", a)
		}
	}

	// Queued, then its context ends.
	cctx, cancel := context.WithCancel(ctx)
	ch, _ = admitFunc(c, cctx, "mouse", t)
	cancel()
	if a := <-ch; !errors.As(a.err, &rej) || rej.Reason != fairqueue.TimeOut {
		t.Fatalf("context ended: %+v", a)
	}
	// A context already ended: refused without waiting.
	ch, _ = admitFunc(c, cctx, "mouse", t)
	if a := <-ch; !errors.As(a.err, &rej) || rej.Reason != fairqueue.TimeOut {
		t.Fatalf("context ended before: %+v", a)
	}

	for _, tk := range held {
		tk.Done()
	}
	// Every timer stopped or fired, no second answer anywhere.
	clk.Advance(time.Minute)
	for _, ch := range []<-chan answer{ch1, ch2, ch3, ch} {
		if len(ch) != 0 {
			t.Fatal("a second answer")
		}
	}
	st := q.Stats()
	if st.SeatsInUse != 0 || st.WaitingRequests != 0 || !q.IsIdle() {
		t.Fatalf("seats or waiters left: %+v", st)
	}
	if n := c.kinds.of("get").waiting.cur.Load(); n != 0 {
		t.Fatalf("%d requests still counted waiting", n)
	}
}

// TestAdmitFuncRaces: many requests through AdmitFunc on two seats, their
// contexts cancelled at arbitrary points, each answer's Ticket done on the
// goroutine that heard it: every request hears once, and nothing is left
// holding a seat or waiting.
func TestAdmitFuncRaces(t *testing.T) {
	c, _ := newTest(t, StaticSource(decode(t, manifests(false))), 2)
	const workers, rounds = 16, 200
	var heard, ran, timedOut atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 2))
			for range rounds {
				ctx, cancel := context.WithCancel(context.Background())
				got := make(chan struct{})
				var once atomic.Bool
				c.AdmitFunc(ctx, attrs(t, "mouse", "GET", "/healthz", ""), nil, func(tk *Ticket, err error) {
					if once.Swap(true) {
						t.Error("heard twice")
					}
					heard.Add(1)
					var rej *RejectedError
					switch {
					case err == nil:
						ran.Add(1)
						tk.Done()
					case errors.As(err, &rej) && rej.Reason != fairqueue.ConcurrencyLimit:
						if rej.Reason == fairqueue.TimeOut {
							timedOut.Add(1)
						}
					default:
						t.Errorf("unexpected %v", err)
					}
					close(got)
				})
				if rng.IntN(2) == 0 {
					cancel()
				}
				<-got
				cancel()
			}
		})
	}
	wg.Wait()
	q := level(c, "queued").Queue
	st := q.Stats()
	if heard.Load() != workers*rounds || st.SeatsInUse != 0 || st.WaitingRequests != 0 || !q.IsIdle() {
		t.Fatalf("heard %d of %d; %+v", heard.Load(), workers*rounds, st)
	}
	t.Logf("ran %d, timed out %d, refused queue-full %d", ran.Load(), timedOut.Load(), heard.Load()-ran.Load()-timedOut.Load())
}
