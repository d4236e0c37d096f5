package maintain

import (
	"context"
	"time"

	"github.com/apfproject/apf/clock"
)

// timer is a one-shot alarm on a Clock, delivered on a channel so that a
// loop can select on it next to its context and other inputs. The channel
// has room for one tick, so the clock's callback never blocks, which
// matters for fake clocks that run callbacks in the goroutine advancing
// time.
type timer struct {
	clock clock.Clock
	C     chan struct{}
	stop  func() bool
	at    time.Time // due time of the armed alarm; zero when none
}

func newTimer(c clock.Clock) *timer {
	return &timer{clock: c, C: make(chan struct{}, 1)}
}

// armAt replaces any pending alarm with one due at at (at once if at is
// not in the future).
func (t *timer) armAt(at time.Time) {
	t.disarm()
	t.at = at
	t.stop = t.clock.AfterFunc(max(at.Sub(t.clock.Now()), 0), func() {
		select {
		case t.C <- struct{}{}:
		default:
		}
	})
}

// disarm cancels the pending alarm and drops a tick not yet received.
func (t *timer) disarm() {
	if t.stop != nil {
		t.stop()
		t.stop = nil
	}
	t.at = time.Time{}
	select {
	case <-t.C:
	default:
	}
}

// fired marks the alarm as consumed after a tick was received.
func (t *timer) fired() {
	t.stop = nil
	t.at = time.Time{}
}

// sleep waits d on t's clock, and reports false if ctx ended first.
func sleep(ctx context.Context, t *timer, d time.Duration) bool {
	t.armAt(t.clock.Now().Add(d))
	select {
	case <-ctx.Done():
		t.disarm()
		return false
	case <-t.C:
		t.fired()
		return true
	}
}
