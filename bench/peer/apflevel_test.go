package peer

import (
	"context"
	"sync"
	"time"

	"github.com/apfproject/apf/clock"
	"github.com/apfproject/apf/fairqueue"
)

// apfLevelOf is apf's fair-queuing core made blocking the way the
// controller runs each priority level: one mutex around the queue set,
// the clock read at arrival and at completion (only when the request did
// not queue: a queued one reads it again when its wait ends), a one-slot
// channel per request that a later call's dispatch wakes once the mutex
// is released, and one timer per final phase. Upstream's queueset, which it is compared with, does
// the same work inside itself. The controller adds its metrics and the
// borrowing's demand to this; the filter scenarios measure all of it.
type apfLevelOf struct {
	mu    sync.Mutex
	qs    *fairqueue.QueueSet
	clock clock.Clock
	buf   []*fairqueue.Request
}

// apfRequest is a request with the channel that wakes it.
type apfRequest struct {
	fairqueue.Request
	wake chan struct{}
}

func newAPFLevel(cfg fairqueue.Config, clk clock.Clock) (*apfLevelOf, error) {
	if clk == nil {
		clk = clock.Real
	}
	qs, err := fairqueue.New(cfg, clk.Now())
	if err != nil {
		return nil, err
	}
	return &apfLevelOf{qs: qs, clock: clk}, nil
}

// now reads the level's clock, as the controller reads its own.
func (l *apfLevelOf) now() time.Time { return l.clock.Now() }

// wakeList holds, in the caller's stack memory, the wake channels of the
// requests a call dispatched, sent once l.mu is released (as the
// controller does).
type wakeList []chan struct{}

// takeLocked moves the requests a call dispatched out of the level's
// buffer, appending their channels to ws; l.mu is held.
func (l *apfLevelOf) takeLocked(rs []*fairqueue.Request, ws wakeList) wakeList {
	for i, r := range rs {
		if ch := r.Tag.(*apfRequest).wake; ch != nil {
			ws = append(ws, ch)
		}
		rs[i] = nil
	}
	l.buf = rs[:0]
	return ws
}

// wakeAll tells each waiter it was dispatched; every channel has room
// for the one message.
func (ws wakeList) wakeAll() {
	for _, ch := range ws {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// wait admits r and blocks until it is dispatched (true) or rejected, or
// ctx ends while it waits (false).
func (l *apfLevelOf) wait(ctx context.Context, r *apfRequest) bool {
	r.Tag = r
	now := l.now()
	var room [4]chan struct{}
	l.mu.Lock()
	d, woken := l.qs.Arrive(now, &r.Request, l.buf[:0])
	ws := l.takeLocked(woken, room[:0])
	if d == fairqueue.Queued && r.wake == nil {
		r.wake = make(chan struct{}, 1)
	}
	l.mu.Unlock()
	ws.wakeAll()
	if d != fairqueue.Queued {
		return d == fairqueue.Dispatched
	}
	select {
	case <-r.wake:
		return true
	case <-ctx.Done():
	}
	l.mu.Lock()
	cancelled := l.qs.Cancel(l.now(), &r.Request)
	l.mu.Unlock()
	if cancelled {
		return false
	}
	<-r.wake
	return true
}

// done finishes r; a final phase is released by a timer of the clock.
func (l *apfLevelOf) done(r *apfRequest) {
	now := l.now()
	var room [4]chan struct{}
	l.mu.Lock()
	woken, release := l.qs.Finish(now, &r.Request, l.buf[:0])
	ws := l.takeLocked(woken, room[:0])
	l.mu.Unlock()
	ws.wakeAll()
	if release > 0 {
		l.clock.AfterFunc(release, func() {
			l.mu.Lock()
			ws := l.takeLocked(l.qs.Release(l.now(), &r.Request, l.buf[:0]), nil)
			l.mu.Unlock()
			ws.wakeAll()
		})
	}
}

func (l *apfLevelOf) setLimit(limit int) {
	l.mu.Lock()
	ws := l.takeLocked(l.qs.SetConcurrencyLimit(l.now(), limit, l.buf[:0]), nil)
	l.mu.Unlock()
	ws.wakeAll()
}

func (l *apfLevelOf) stats() fairqueue.Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.qs.Stats()
}

func (l *apfLevelOf) dump() fairqueue.Dump {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.qs.Dump(false)
}
