// Package fakeclock is a manually advanced clock for deterministic tests and
// simulations of code timed by a clock.Clock.
//
// Time moves only when Advance or Set says so. Callbacks registered with
// AfterFunc run synchronously, in the goroutine that moves time, in order
// of due time (then of registration), with Now reading their due time while
// they run. The clock's own lock is not held while a callback runs, so a
// callback may use the clock, and lock whatever its code locks.
//
// It depends on package clock, whose Timer it makes, and the standard
// library.
package fakeclock

import (
	"container/heap"
	"sync"
	"time"

	"github.com/apfproject/apf/clock"
)

// Clock is a fake clock. The zero value is not usable; call New.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers timerHeap
	seq    uint64
}

// New returns a clock reading start.
func New(start time.Time) *Clock {
	return &Clock{now: start}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc arranges for f to run when the clock reaches Now()+d (at the
// next Advance or Set if d <= 0). stop cancels it and reports whether it
// was still pending.
func (c *Clock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	t := c.NewTimer(f)
	t.Reset(d)
	return t.Stop
}

// NewTimer returns a stopped timer that calls f, as AfterFunc does, each
// time it is set and falls due.
func (c *Clock) NewTimer(f func()) clock.Timer {
	return &fakeTimer{c: c, t: &timer{f: f, index: -1}}
}

// fakeTimer is a Timer of the fake clock: one heap entry, pushed again at
// each Reset.
type fakeTimer struct {
	c *Clock
	t *timer
}

func (ft *fakeTimer) Reset(d time.Duration) {
	c, t := ft.c, ft.t
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.index >= 0 {
		heap.Remove(&c.timers, t.index)
	}
	t.when, t.seq = c.now.Add(d), c.seq
	c.seq++
	heap.Push(&c.timers, t)
}

func (ft *fakeTimer) Stop() bool {
	c, t := ft.c, ft.t
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&c.timers, t.index)
	return true
}

// Advance moves the clock forward by d, running every callback that falls
// due on the way, each at its own due time.
func (c *Clock) Advance(d time.Duration) {
	c.Set(c.Now().Add(d))
}

// Set moves the clock to t, running due callbacks as Advance does. A t
// before the current time leaves the time unchanged but still runs any
// callbacks already due.
func (c *Clock) Set(t time.Time) {
	for {
		c.mu.Lock()
		if len(c.timers) == 0 || c.timers[0].when.After(t) {
			if t.After(c.now) {
				c.now = t
			}
			c.mu.Unlock()
			return
		}
		next := heap.Pop(&c.timers).(*timer)
		if next.when.After(c.now) {
			c.now = next.when
		}
		c.mu.Unlock()
		next.f()
	}
}

// Pending returns the number of callbacks not yet run.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Next returns the due time of the earliest pending callback.
func (c *Clock) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 {
		return time.Time{}, false
	}
	return c.timers[0].when, true
}

type timer struct {
	when  time.Time
	seq   uint64
	f     func()
	index int // position in the heap, -1 once removed
}

type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].when.Equal(h[j].when) {
		return h[i].when.Before(h[j].when)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}
