// Package clock is the time source of the parts of apf that wait: the
// current time, and a callback after a delay. The algorithms themselves
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
