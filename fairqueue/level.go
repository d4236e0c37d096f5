package fairqueue

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/apfproject/apf/clock"
)

// ErrQuiescing is what Wait returns once the Level quiesces. It is not a
// rejection: the request was never admitted, and the caller should classify
// it again against the current configuration, which no longer routes
// anything here.
var ErrQuiescing = errors.New("fairqueue: the priority level is quiescing: classify the request again")

// Level is a QueueSet made safe for concurrent use, with blocking waits: the
// layer an HTTP filter or gRPC interceptor calls. It adds one mutex, a
// clock, and for each waiting request a wake-up channel. Every call holds
// the mutex once, briefly.
type Level struct {
	mu    sync.Mutex
	qs    *QueueSet
	clock clock.Clock
	// realTime is set when clock is clock.Real, whose Now the hot path then
	// calls directly rather than through the interface.
	realTime bool
	// buf is scratch space for dispatched lists (guarded by mu).
	buf []*Request
	// carriers are spare Requests that hold final-phase seats after Done,
	// so that the caller's Request is free the moment Done returns.
	carriers []*Request
	// quiescing is set by Quiesce (guarded by mu).
	quiescing bool
}

// NewLevel returns a Level configured by cfg, timed by clock (nil means
// clock.Real) and reporting its occupancy to obs (which may be nil).
func NewLevel(cfg Config, clk clock.Clock, obs Observer) (*Level, error) {
	if clk == nil {
		clk = clock.Real
	}
	qs, err := New(cfg, clk.Now())
	if err != nil {
		return nil, err
	}
	qs.SetObserver(obs)
	return Wrap(qs, clk), nil
}

// Wrap returns a Level around an existing queue set, which from then on
// must be called only through the Level. clk nil means clock.Real.
func Wrap(qs *QueueSet, clk clock.Clock) *Level {
	if clk == nil {
		clk = clock.Real
	}
	return &Level{qs: qs, clock: clk, realTime: clk == clock.Real}
}

// WithLock calls f holding the lock under which the Level calls its
// Observer, so that f may read or reset what the observer records without
// the observer needing a lock of its own. f must not call the Level.
func (l *Level) WithLock(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
}

// Wait admits r, whose Hash, Work and Tag the caller has set. It returns
// nil once r is dispatched: run the request, then call Done(r), also when
// the handler panics. Otherwise it returns a *RejectError, and r is free
// again:
//   - at once, with QueueFull or ConcurrencyLimit, if the level turns r
//     away;
//   - with TimeOut if ctx ends while r waits in its queue (r is removed).
//     ctx is the wait context (docs/spec/requests.md#wait-limit): its
//     deadline is the wait limit.
//
// Once the Level quiesces, Wait returns ErrQuiescing at once.
//
// If ctx ends just as r is dispatched, whichever the mutex sees first
// wins: Wait returns nil (run r; its context is done) or TimeOut (r never
// held seats). Seats never leak either way.
//
// An uncontended Wait allocates nothing. The first time a Request has to
// queue it gets a one-slot channel, kept and reused by later Waits, so a
// pooled Request queues without allocating too. Wait panics if r is still
// in flight (a Request reused before its Wait failed or its Done returned).
func (l *Level) Wait(ctx context.Context, r *Request) error {
	return l.wait(ctx, r, time.Time{}, true)
}

// WaitAt is Wait with the arrival time given: a caller that has just read
// the Level's clock passes that reading instead of paying for another. now
// must come from the Level's clock; a time earlier than one the Level has
// seen counts as no time passing.
func (l *Level) WaitAt(ctx context.Context, r *Request, now time.Time) error {
	return l.wait(ctx, r, now, false)
}

// wait is Wait and WaitAt. With readClock it reads the clock itself, and
// only once it knows it needs to: a rejection by a Reject level that is
// full (rejectUntimed) depends on no time, and reading the clock would
// cost more than the rest of it.
func (l *Level) wait(ctx context.Context, r *Request, now time.Time, readClock bool) error {
	l.mu.Lock()
	if r.state != stateFree {
		l.mu.Unlock() // keep the Level usable for everyone else
		panic("fairqueue: Wait on a Request that is still in flight")
	}
	if l.quiescing {
		l.mu.Unlock()
		return ErrQuiescing
	}
	if l.qs.rejectUntimed(r) {
		l.mu.Unlock()
		return rejectErrors[ConcurrencyLimit]
	}
	if readClock {
		now = l.now()
	}
	d, woken := l.qs.ArriveDispatch(now, r, l.buf[:0])
	l.wakeLocked(woken)
	switch d {
	case Dispatched:
		l.mu.Unlock()
		return nil
	case Rejected:
		l.mu.Unlock()
		return rejectErrors[r.reason]
	}
	if r.wake == nil {
		// Created under the mutex, before anyone can dispatch r.
		r.wake = make(chan struct{}, 1)
	}
	l.mu.Unlock()

	select {
	case <-r.wake:
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	cancelled := l.qs.Cancel(l.now(), r)
	l.mu.Unlock()
	if cancelled {
		return rejectErrors[TimeOut]
	}
	// Dispatched before the cancel got the mutex: the wake-up is already
	// in the channel. Take it, so the channel is empty for the next Wait.
	<-r.wake
	return nil
}

// Done ends the execution of r, which Wait dispatched, and dispatches
// whatever that allows. If r's final phase holds seats, a spare Request of
// the Level takes them over and the clock releases them AdditionalLatency
// later; either way r is free again when Done returns. Done of a request
// that is not executing does nothing.
func (l *Level) Done(r *Request) { l.DoneAt(r, l.now()) }

// DoneAt is Done with the completion time given, read from the Level's
// clock by the caller (see WaitAt).
func (l *Level) DoneAt(r *Request, now time.Time) {
	l.mu.Lock()
	woken, release := l.qs.Finish(now, r, l.buf[:0])
	l.wakeLocked(woken)
	var c *Request
	if release > 0 {
		c = l.carrierLocked()
		l.qs.handOver(r, c)
	}
	l.mu.Unlock()
	if c != nil {
		l.clock.AfterFunc(release, c.release)
	}
}

// now reads the clock.
func (l *Level) now() time.Time {
	if l.realTime {
		return time.Now()
	}
	return l.clock.Now()
}

// carrierLocked returns a spare Request for a final phase.
func (l *Level) carrierLocked() *Request {
	if n := len(l.carriers); n > 0 {
		c := l.carriers[n-1]
		l.carriers[n-1] = nil
		l.carriers = l.carriers[:n-1]
		return c
	}
	c := new(Request)
	c.release = func() { l.releaseCarrier(c) }
	return c
}

// releaseCarrier ends the final phase c carries.
func (l *Level) releaseCarrier(c *Request) {
	l.mu.Lock()
	woken := l.qs.Release(l.now(), c, l.buf[:0])
	l.wakeLocked(woken)
	c.Tag = nil
	l.carriers = append(l.carriers, c)
	l.mu.Unlock()
}

// wakeLocked wakes the waiters of dispatched requests and keeps the
// buffer for reuse.
func (l *Level) wakeLocked(rs []*Request) {
	for i, r := range rs {
		if r.wake != nil {
			select {
			case r.wake <- struct{}{}:
			default:
			}
		}
		rs[i] = nil
	}
	l.buf = rs[:0]
}

// SetConcurrencyLimit changes the level's seat limit (see
// QueueSet.SetConcurrencyLimit) and wakes what that dispatches.
func (l *Level) SetConcurrencyLimit(limit int) {
	l.mu.Lock()
	l.wakeLocked(l.qs.SetConcurrencyLimit(l.now(), limit, l.buf[:0]))
	l.mu.Unlock()
}

// Reconfigure applies cfg (see QueueSet.Reconfigure) and wakes what that
// dispatches.
func (l *Level) Reconfigure(cfg Config) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	woken, err := l.qs.Reconfigure(l.now(), cfg, l.buf[:0])
	l.wakeLocked(woken)
	return err
}

// Config returns the configuration in force.
func (l *Level) Config() Config {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.qs.Config()
}

// Stats returns the level's gauges and counters.
func (l *Level) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.qs.Stats()
}

// Dump returns the level's debug view.
func (l *Level) Dump(includeRequests bool) Dump {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.qs.Dump(includeRequests)
}

// VisitQueues calls f with each queue's row of the debug view, in order,
// and returns the level's gauges and counters, all under one hold of the
// mutex: what Dump(false) holds, for a periodic reader (a metrics sample)
// that would otherwise copy every queue into a slice and drop it. f must
// be quick and must not call the Level.
func (l *Level) VisitQueues(f func(QueueDump)) Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.qs.VisitQueues(f)
}

// Quiesce stops the Level admitting requests, for a level that was removed
// from the configuration: every later Wait returns ErrQuiescing, while the
// requests already waiting or executing go on to run, keep their seats and
// are dispatched as usual, so that nothing admitted is lost. Once IsIdle
// reports true the Level may be dropped.
func (l *Level) Quiesce() { l.setQuiescing(true) }

// Resume undoes Quiesce, for a level that comes back into the configuration
// before it was dropped: it admits requests again, with its queues, their
// virtual times and everything it holds intact.
func (l *Level) Resume() { l.setQuiescing(false) }

func (l *Level) setQuiescing(q bool) {
	l.mu.Lock()
	l.quiescing = q
	l.mu.Unlock()
}

// Quiescing reports whether Quiesce was called.
func (l *Level) Quiescing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.quiescing
}

// IsIdle reports whether nothing waits and nothing executes.
func (l *Level) IsIdle() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.qs.IsIdle()
}
