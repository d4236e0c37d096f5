package peer

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
)

// virtualClock is one manually advanced clock that both implementations
// read: it is an upstream eventclock.Interface and an apf clock.Clock.
// Time moves only in advanceTo, and timers that come due there run
// synchronously on the caller's goroutine, in due-time order (ties in the
// order they were set).
type virtualClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers []*virtualTimer
}

type virtualTimer struct {
	due  time.Time
	seq  uint64
	f    func(time.Time)
	dead bool
}

var _ eventclock.Interface = (*virtualClock)(nil)

func newVirtualClock(start time.Time) *virtualClock { return &virtualClock{now: start} }

func (c *virtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *virtualClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// AfterFunc is clock.Clock's timer.
func (c *virtualClock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	t := c.add(c.Now().Add(d), func(time.Time) { f() })
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.dead
		t.dead = true
		return was
	}
}

func (c *virtualClock) EventAfterDuration(f eventclock.EventFunc, d time.Duration) {
	c.add(c.Now().Add(d), f)
}

func (c *virtualClock) EventAfterTime(f eventclock.EventFunc, t time.Time) { c.add(t, f) }

// Sleep blocks until another goroutine advances the clock past d from now.
func (c *virtualClock) Sleep(d time.Duration) {
	done := make(chan struct{})
	c.EventAfterDuration(func(time.Time) { close(done) }, d)
	<-done
}

func (c *virtualClock) add(due time.Time, f func(time.Time)) *virtualTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &virtualTimer{due: due, seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	return t
}

// advanceTo moves the clock to t (never backwards) and runs every timer
// due by then, including timers those timers set.
func (c *virtualClock) advanceTo(t time.Time) {
	for {
		c.mu.Lock()
		if t.After(c.now) {
			c.now = t
		}
		c.timers = slices.DeleteFunc(c.timers, func(x *virtualTimer) bool { return x.dead })
		i := -1
		for j, x := range c.timers {
			if x.due.After(c.now) {
				continue
			}
			if i < 0 || x.due.Before(c.timers[i].due) || x.due.Equal(c.timers[i].due) && x.seq < c.timers[i].seq {
				i = j
			}
		}
		if i < 0 {
			c.mu.Unlock()
			return
		}
		x := c.timers[i]
		x.dead = true
		now := c.now
		c.mu.Unlock()
		x.f(now)
	}
}
