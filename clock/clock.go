// Package clock is the time source of the parts of apf that wait: the
// current time, and a callback after a delay (once, or again and again
// with a Timer, for a caller that times one wait after another). The
// algorithms themselves
// take time as an argument and need no clock; the layers that drive them
// (the blocking queue, the controller's loops, the server's upkeep) read
// it here, so that tests and simulations can substitute fakeclock.Clock
// and move time by hand (docs/library.md).
//
// The package depends on the standard library only.
package clock

import (
	"sync/atomic"
	"time"
)

// Clock is a time source.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed (a fake
	// clock calls it in the goroutine that moves time). stop cancels the
	// call if it has not started and reports whether it did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Timer calls a function once a delay has passed, as AfterFunc does, and
// can be set again: a caller that times many waits one after another keeps
// one Timer rather than paying AfterFunc's allocations for each.
type Timer interface {
	// Reset arranges for the function to be called d from now. The timer
	// must be stopped: new, stopped by Stop, or past its call.
	Reset(d time.Duration)
	// Stop cancels the pending call and reports whether there was one.
	// false means the call has started, or has run, or was never set.
	Stop() bool
}

// timerMaker is a Clock that makes its own Timers (Real, fakeclock.Clock).
type timerMaker interface {
	NewTimer(f func()) Timer
}

// NewTimer returns a stopped Timer of c that calls f. For a Clock that
// makes no Timers of its own, each Reset is an AfterFunc.
func NewTimer(c Clock, f func()) Timer {
	if m, ok := c.(timerMaker); ok {
		return m.NewTimer(f)
	}
	return &afterTimer{c: c, f: f}
}

// Real is the Clock of the time package, with a cheaper Now (see Now).
var Real Clock = real{}

type real struct{}

// reanchorAfter is how long Real's wall reading may go without being read
// again from the system.
const reanchorAfter = time.Second

// anchor is the latest time Real read in full, with its wall and monotonic
// readings.
var anchor atomic.Pointer[time.Time]

func init() {
	t := time.Now()
	anchor.Store(&t)
}

// Now returns the current time. time.Now reads two system clocks, the
// wall clock and the monotonic one, and a request reads the time at
// least twice (arrival and completion), so Now reads only the monotonic
// clock and adds the time it says has passed to the latest full reading,
// taken again once a second. The monotonic reading, which every duration
// and comparison between Times uses, is exactly time.Now's; the wall
// reading moves with it and so may miss, for up to a second, a step or
// slew of the system's wall clock that time.Now would show.
func (real) Now() time.Time {
	a := anchor.Load()
	if d := time.Since(*a); d < reanchorAfter {
		return a.Add(d)
	}
	t := time.Now()
	anchor.Store(&t)
	return t
}

func (real) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// NewTimer returns a stopped Timer that calls f in its own goroutine.
func (real) NewTimer(f func()) Timer {
	t := time.AfterFunc(time.Hour, f)
	t.Stop()
	return realTimer{t}
}

// realTimer is a time package timer as a Timer; it holds one pointer, so
// it fits in an interface value without an allocation.
type realTimer struct{ t *time.Timer }

func (r realTimer) Reset(d time.Duration) { r.t.Reset(d) }
func (r realTimer) Stop() bool            { return r.t.Stop() }

// afterTimer is a Timer made of AfterFunc calls.
type afterTimer struct {
	c    Clock
	f    func()
	stop func() bool
}

func (a *afterTimer) Reset(d time.Duration) { a.stop = a.c.AfterFunc(d, a.f) }

func (a *afterTimer) Stop() bool {
	if a.stop == nil {
		return false
	}
	stopped := a.stop()
	a.stop = nil
	return stopped
}
