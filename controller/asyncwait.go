package controller

import (
	"context"
	"sync"
	"time"

	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/request"
)

// AdmitFunc is AdmitRecord for a server that does not give each request a
// goroutine to park, such as one on event loops: it never blocks. done
// hears, exactly once, what AdmitRecord would return: before AdmitFunc
// returns when the level dispatches or rejects the request on arrival;
// later, from another goroutine, when a request that queued is
// dispatched, its wait limit passes or ctx ends. The wait limit is
// AdmitRecord's. done must not block (a server on event loops hands the
// answer to the request's loop); it may call the Ticket's Done.
func (c *Controller) AdmitFunc(ctx context.Context, a *request.Attributes, rec *Record, done func(*Ticket, error)) {
	if t, err := c.admit(ctx, a, rec, done); t != nil || err != nil {
		done(t, err)
	}
}

// asyncWait is the wait of a request AdmitFunc admitted and its level
// queued. Where Admit's caller blocks on the Ticket's wake channel, this
// wait is three events that may race: the level dispatches the request
// (seen by whichever goroutine's input did, under the level's lock), its
// wait limit passes (a timer), its context ends. The first to end the
// wait wins; the others find it over. An asyncWait is its own object, not
// part of the pooled Ticket, so that a timer that fires after the wait is
// over never touches a Ticket recycled for another request; and until the
// wait is over the Ticket cannot be recycled, since only done hands it
// out.
type asyncWait struct {
	c    *Controller
	t    *Ticket
	done func(*Ticket, error)
	// adm and seats are set before the request can be dispatched.
	adm   admission
	seats float64

	// mu orders the events; it is taken before the level's lock, never
	// under it.
	mu      sync.Mutex
	over    bool
	started bool
	stops   []func() bool
}

// start begins the wait, unless the level dispatched the request already:
// the in-queue gauges, and the wait limit's timer and ctx's end, either
// of which removes the request from its queue.
func (w *asyncWait) start(ctx context.Context, limit time.Duration) {
	w.mu.Lock()
	if w.over {
		w.mu.Unlock()
		return
	}
	t := w.t
	w.started = true
	t.fm.InqueueRequests.Inc()
	t.fm.InqueueSeats.Add(w.seats)
	t.kind.waiting.add(1)
	limit = waitLimit(ctx, w.adm.arrival, limit)
	d := w.adm.arrival.Add(limit).Sub(w.c.clock.Now())
	if d <= 0 || ctx.Err() != nil {
		w.mu.Unlock()
		w.expire()
		return
	}
	w.stops = append(w.stops, w.c.clock.AfterFunc(d, w.expire))
	if ctx.Done() != nil {
		w.stops = append(w.stops, context.AfterFunc(ctx, w.expire))
	}
	w.mu.Unlock()
}

// endLocked ends the wait; w.mu is held and the wait not over.
func (w *asyncWait) endLocked() {
	w.over = true
	for _, stop := range w.stops {
		stop()
	}
	if w.started {
		t := w.t
		t.fm.InqueueRequests.Dec()
		t.fm.InqueueSeats.Sub(w.seats)
		t.kind.waiting.add(-1)
	}
}

// dispatched is the level's dispatch of the request: run on a goroutine
// of its own by the input that dispatched it, so that done runs outside
// the level's lock.
func (w *asyncWait) dispatched() {
	w.mu.Lock()
	if w.over {
		w.mu.Unlock()
		return
	}
	w.endLocked()
	w.mu.Unlock()
	w.done(w.c.decided(w.t, &w.adm, fairqueue.Dispatched, 0))
}

// expire removes the request from its queue because its wait limit
// passed or its context ended; if the level dispatched it first, the
// dispatch ends the wait.
func (w *asyncWait) expire() {
	w.mu.Lock()
	if w.over {
		w.mu.Unlock()
		return
	}
	t := w.t
	l := t.ls
	now := w.c.clock.Now()
	l.mu.Lock()
	o := l.el.Cancel(now, &t.req)
	if o.Decision == fairqueue.Rejected {
		t.async = nil
	}
	l.doneLocked(now, &o, nil)
	l.mu.Unlock()
	if o.Decision != fairqueue.Rejected {
		w.mu.Unlock()
		return
	}
	w.endLocked()
	w.mu.Unlock()
	w.done(w.c.decided(t, &w.adm, fairqueue.Rejected, fairqueue.TimeOut))
}
