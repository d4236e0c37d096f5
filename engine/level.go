package engine

import (
	"sync/atomic"
	"time"

	"github.com/apfproject/apf/borrow"
	"github.com/apfproject/apf/fairqueue"
)

// Level is one priority level as the engine keeps it across
// configurations: its queue set (run by the driver's Queue), its
// borrowing configuration and the demand it reports to the adjuster.
type Level[Q Queue] struct {
	// Queue is the driver's runner of the level's queue set.
	Queue Q

	name   string
	uid    string // changes only in Install
	exempt bool
	cfg    fairqueue.Config // the queue configuration in force
	bcfg   borrow.LevelConfig
	obs    fairqueue.Observer // Queue, when it observes too

	// integ and demand are written by the queue set's observer, under
	// the driver's lock for the level, and read by Install and Adjust
	// holding that lock. booked says the adjuster knows the level (its
	// window is open).
	integ  borrow.Integrator
	demand int
	booked bool

	retiring bool // read and written by Install and Adjust only

	maxSeats atomic.Int64
	limits   atomic.Pointer[Adjustment]
}

// Name returns the level's name.
func (l *Level[Q]) Name() string { return l.name }

// UID returns the UID of the level's object ("" for an imagined level).
// Install may change it; read it where Install cannot run concurrently.
func (l *Level[Q]) UID() string { return l.uid }

// Exempt reports whether the level is exempt.
func (l *Level[Q]) Exempt() bool { return l.exempt }

// Config returns the level's queue configuration, with the limit in force.
// Read it where Install and Adjust cannot run concurrently.
func (l *Level[Q]) Config() fairqueue.Config { return l.cfg }

// Retiring reports whether the level has left the configuration and
// drains. Read it where Install and Adjust cannot run concurrently.
func (l *Level[Q]) Retiring() bool { return l.retiring }

// Limits returns the latest borrowing adjustment of the level, nil before
// the first.
func (l *Level[Q]) Limits() *Adjustment { return l.limits.Load() }

// MaxSeats returns the most seats one request of the level may take, from
// the latest adjustment (0 before the first, and for exempt levels).
func (l *Level[Q]) MaxSeats() int { return int(l.maxSeats.Load()) }

// IntegratesOverTime implements fairqueue.Integrator: the borrowing
// integrator integrates the demand over time and keeps its extremes, which
// an instant at the demand that follows it does not move, so the level
// has no use for instants unless the driver's Queue, observing too, has.
func (l *Level[Q]) IntegratesOverTime() bool {
	if l.obs == nil {
		return true
	}
	i, ok := l.obs.(fairqueue.Integrator)
	return ok && i.IntegratesOverTime()
}

// Occupancy implements fairqueue.Observer: the level's seat demand goes to
// its borrowing integrator, and the occupancy on to the driver's Queue when
// that observes too.
func (l *Level[Q]) Occupancy(now time.Time, o fairqueue.Occupancy) {
	if d := o.Demand(); d != l.demand {
		l.demand = d
		l.integ.Set(now, float64(d))
	}
	if l.obs != nil {
		l.obs.Occupancy(now, o)
	}
}
