// Package clock is the time source of the parts of apf that wait: the
// current time, and a callback after a delay. The algorithms themselves
// take time as an argument and need no clock; the layers that drive them
// (the blocking queue, the controller's loops, the server's upkeep) read
// it here, so that tests and simulations can substitute fakeclock.Clock
// and move time by hand (docs/library.md).
//
// The package depends on the standard library only.
package clock

import "time"

// Clock is a time source.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed (a fake
	// clock calls it in the goroutine that moves time). stop cancels the
	// call if it has not started and reports whether it did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Real is the Clock of the time package.
var Real Clock = real{}

type real struct{}

func (real) Now() time.Time { return time.Now() }

func (real) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}
