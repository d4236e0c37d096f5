package fairqueue

import "time"

// Clock is the time source of a Level: the current time, and callbacks
// after a delay (used to end final phases). fakeclock.Clock implements it
// for tests and simulations.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed. stop
	// cancels the call if it has not started and reports whether it did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// RealClock is the Clock of the time package.
var RealClock Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}
