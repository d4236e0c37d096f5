package controller

import (
	"context"
	"sync"
	"time"

	"github.com/apfproject/apf/clock"
	"github.com/apfproject/apf/engine"
)

// waitContext is the wait context of docs/spec/requests.md#wait-limit: the
// request's context with the wait limit as deadline. It is embedded in the
// pooled Ticket and builds its channel and timers only when someone asks for
// Done, which the queue set does only for a request that has to queue: an
// uncontended admission allocates nothing for it. That first Done is also how
// the controller learns that a request queued (onQueue). The timer runs on
// the controller's clock, so fake-clock tests time out deterministically.
type waitContext struct {
	parent context.Context
	// The deadline is arrival plus the wait limit, computed only when
	// asked for: only a request that queues needs it, and the uncontended
	// one, the common case, is spared reading its context's deadline and
	// the time arithmetic. limit is the wait limit of a request without
	// a deadline of its own.
	arrival time.Time
	limit   time.Duration
	clock   clock.Clock

	mu       sync.Mutex
	gen      uint64 // bumped on disarm, so late callbacks do nothing
	done     chan struct{}
	err      error
	stopTime func() bool
	stopCtx  func() bool

	// onQueue, set once per Ticket, hears the first Done: the moment the
	// request turned out to queue. queued says it did, until the next arm.
	onQueue func(now time.Time)
	queued  bool
}

// arm readies the context for one wait. It takes no lock: the fields it
// writes are read only by the goroutine that waits (and by Done, Err and
// Value, which only that goroutine calls), never by the timer callbacks a
// previous wait may still be running, which look at gen, done and err
// only; disarm left those reset.
func (w *waitContext) arm(parent context.Context, arrival time.Time, limit time.Duration, clock clock.Clock) {
	w.parent, w.arrival, w.limit, w.clock = parent, arrival, limit, clock
	w.queued = false
}

// deadline returns the wait limit as a time: a quarter of the time the
// parent's deadline leaves after arrival (engine.WaitLimit), or limit after
// arrival when the parent has no deadline.
func (w *waitContext) deadline() time.Time {
	limit := w.limit
	if w.parent == nil {
		return w.arrival.Add(limit)
	}
	if dl, ok := w.parent.Deadline(); ok {
		limit = engine.WaitLimit(dl.Sub(w.arrival))
	}
	return w.arrival.Add(limit)
}

// wasQueued reports whether Done was called since arm, that is whether the
// queue set queued the request. Only the goroutine that waited may call
// it: the queue set calls Done from that goroutine, and nobody else writes
// queued, so no lock is needed.
func (w *waitContext) wasQueued() bool { return w.queued }

// disarm ends the wait. When nobody asked for Done (the request did not
// queue), no channel, timer or callback exists and there is nothing to
// lock for: done is written only by Done, in the waiting goroutine.
func (w *waitContext) disarm() {
	if w.done == nil {
		w.parent = nil
		return
	}
	w.mu.Lock()
	w.gen++
	st, sc := w.stopTime, w.stopCtx
	w.parent, w.done, w.err, w.stopTime, w.stopCtx = nil, nil, nil, nil, nil
	w.mu.Unlock()
	if st != nil {
		st()
	}
	if sc != nil {
		sc()
	}
}

func (w *waitContext) Deadline() (time.Time, bool) { return w.deadline(), true }

func (w *waitContext) Value(key any) any {
	w.mu.Lock()
	p := w.parent
	w.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Value(key)
}

func (w *waitContext) Done() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done != nil {
		return w.done
	}
	w.done = make(chan struct{})
	now := w.clock.Now()
	w.queued = true
	if w.onQueue != nil {
		w.onQueue(now)
	}
	if w.parent == nil {
		w.endLocked(context.Canceled)
		return w.done
	}
	if err := w.parent.Err(); err != nil {
		w.endLocked(err)
		return w.done
	}
	d := w.deadline().Sub(now)
	if d <= 0 {
		w.endLocked(context.DeadlineExceeded)
		return w.done
	}
	gen := w.gen
	w.stopTime = w.clock.AfterFunc(d, func() { w.fire(gen, context.DeadlineExceeded) })
	parent := w.parent
	w.stopCtx = context.AfterFunc(parent, func() { w.fire(gen, parent.Err()) })
	return w.done
}

func (w *waitContext) fire(gen uint64, err error) {
	w.mu.Lock()
	if w.gen == gen && w.done != nil {
		w.endLocked(err)
	}
	w.mu.Unlock()
}

func (w *waitContext) endLocked(err error) {
	if w.err == nil {
		w.err = err
		close(w.done)
	}
}

func (w *waitContext) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.parent == nil {
		return context.Canceled
	}
	if err := w.parent.Err(); err != nil {
		return err
	}
	if !w.clock.Now().Before(w.deadline()) {
		return context.DeadlineExceeded
	}
	return nil
}
