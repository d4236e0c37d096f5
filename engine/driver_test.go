package engine

import (
	"testing"
	"time"

	"github.com/apfproject/apf/fairqueue"
)

// serialDriver drives an Engine as a single-threaded driver does: it
// closes every level's window before an engine-wide input, and applies
// each Change at once, in the order Change documents. It logs what it
// tells the levels when logf is set.
type serialDriver struct {
	e    *Engine
	snap *Snapshot
	logf func(format string, args ...any)
	// dispatched hears the requests each input dispatched.
	dispatched func([]*fairqueue.Request)
}

func newSerialDriver(t testing.TB, cfg Config) *serialDriver {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &serialDriver{e: e}
}

func (d *serialDriver) log(format string, args ...any) {
	if d.logf != nil {
		d.logf(format, args...)
	}
}

func (d *serialDriver) windows(now time.Time) []Window {
	var ws []Window
	for _, l := range d.e.Levels() {
		ws = append(ws, l.CloseWindow(now))
	}
	return ws
}

func (d *serialDriver) install(now time.Time, c *Compiled) (Change, error) {
	ch, err := d.e.Install(now, c, d.windows(now))
	if err != nil {
		return ch, err
	}
	if d.apply(now, ch) {
		ach := d.adjust(now)
		ch.Dropped = append(ch.Dropped, ach.Dropped...)
		ch.Adjustments = ach.Adjustments
	}
	return ch, nil
}

func (d *serialDriver) adjust(now time.Time) Change {
	ch := d.e.Adjust(now, d.windows(now))
	d.apply(now, ch)
	return ch
}

func (d *serialDriver) setLimit(now time.Time, scl int) (Change, error) {
	if scl == d.e.ServerConcurrencyLimit() {
		return Change{}, nil
	}
	ch, err := d.e.SetServerLimit(now, scl, d.windows(now))
	if err == nil {
		d.apply(now, ch)
	}
	return ch, err
}

// apply tells the levels what ch asks, and reports whether a level that
// left is idle already.
func (d *serialDriver) apply(now time.Time, ch Change) (dropNow bool) {
	for _, l := range ch.Added {
		d.log("new %s", l.Name())
	}
	for _, u := range ch.Updates {
		if u.Resume {
			d.log("resume %s", u.Level.Name())
		}
		if u.Reconfigure {
			d.log("reconfigure %s queues=%d handSize=%d queueLengthLimit=%d", u.Level.Name(), u.Config.Queues, u.Config.HandSize, u.Config.QueueLengthLimit)
		}
		if u.Limit >= 0 {
			d.log("limit %s %d", u.Level.Name(), u.Limit)
		}
		o := u.Level.Apply(now, u)
		if d.dispatched != nil {
			d.dispatched(o.Dispatched)
		}
	}
	if ch.Snapshot != nil {
		d.snap = ch.Snapshot
		d.log("publish")
	}
	for _, l := range ch.Switched {
		d.log("quiesce %s", l.Name())
		l.Quiesce()
	}
	for _, l := range ch.Retired {
		d.log("quiesce %s", l.Name())
		if l.Quiesce() {
			dropNow = true
		}
	}
	return dropNow
}
