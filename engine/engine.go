package engine

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apfproject/apf/borrow"
	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/workestimate"
)

// DefaultRequestTimeout is the server's request timeout unless configured:
// the longest a request that is not long-running may take.
const DefaultRequestTimeout = 60 * time.Second

// MaxWait is the longest wait limit: however long a request may take, it
// waits in its queue at most this long.
const MaxWait = time.Minute

// WaitLimit is how long a request may wait in its queue when it has
// timeLeft from its arrival to its deadline: a quarter of it, at most
// MaxWait.
func WaitLimit(timeLeft time.Duration) time.Duration {
	return min(timeLeft/4, MaxWait)
}

// Queue runs one priority level's queue set for a driver. The engine makes
// every change to a running level through it; see the package
// documentation for who serializes what.
type Queue interface {
	// SetConcurrencyLimit imposes the level's seat limit at now, and
	// starts or wakes whatever that dispatches.
	SetConcurrencyLimit(now time.Time, limit int)
	// Reconfigure applies a new queue configuration at now (its
	// ConcurrencyLimit is the limit in force), and starts or wakes
	// whatever that dispatches.
	Reconfigure(now time.Time, cfg fairqueue.Config) error
	// Quiesce refuses new arrivals to a level that left the
	// configuration, while what it holds drains; Resume admits them again.
	Quiesce()
	Resume()
	// IsIdle reports whether nothing waits or executes.
	IsIdle() bool
	// WithLock calls f excluding every other call on the queue set, so
	// that the engine may read what the queue set's observer records.
	WithLock(f func())
}

// Config configures an Engine.
type Config[Q Queue] struct {
	// ServerConcurrencyLimit is the seats shared by all priority levels;
	// 0 means borrow.DefaultServerConcurrencyLimit.
	ServerConcurrencyLimit int
	// RequestTimeout is the server's request timeout; 0 means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Estimator configures work estimation; nil means
	// workestimate.DefaultConfig.
	Estimator *workestimate.Config
	// ObjectCounts feeds list estimates; nil prices every list at the
	// minimum.
	ObjectCounts workestimate.ObjectCounts
	// Watches counts the watches a write may have to notify; nil gives
	// writes no final phase.
	Watches workestimate.WatchCounter
	// NewQueue makes the driver's Queue for a new level, around the queue
	// set the engine created for it (already observed by the engine).
	// From then on the driver makes every call on qs. Required.
	NewQueue func(l *Level[Q], qs *fairqueue.QueueSet) (Q, error)
}

// Engine is API Priority and Fairness for one server, without goroutines,
// locks or clocks. Create it with New.
type Engine[Q Queue] struct {
	scl      int
	timeout  time.Duration
	est      *workestimate.Estimator
	newQueue func(*Level[Q], *fairqueue.QueueSet) (Q, error)

	adj    borrow.Adjuster
	live   []*Level[Q] // every level in the borrowing books: in force and retiring
	byName map[string]*Level[Q]
	snap   *Snapshot[Q]
}

// New returns an Engine with no configuration installed: Install one
// before placing requests.
func New[Q Queue](cfg Config[Q]) (*Engine[Q], error) {
	e := &Engine[Q]{
		scl:      cfg.ServerConcurrencyLimit,
		timeout:  cfg.RequestTimeout,
		newQueue: cfg.NewQueue,
		byName:   map[string]*Level[Q]{},
	}
	switch {
	case e.scl == 0:
		e.scl = borrow.DefaultServerConcurrencyLimit
	case e.scl < 0:
		return nil, fmt.Errorf("engine: negative server concurrency limit %d", e.scl)
	}
	switch {
	case e.timeout == 0:
		e.timeout = DefaultRequestTimeout
	case e.timeout < 0:
		return nil, fmt.Errorf("engine: negative request timeout %v", e.timeout)
	}
	if e.newQueue == nil {
		return nil, errors.New("engine: Config.NewQueue is required")
	}
	ecfg := workestimate.DefaultConfig()
	if cfg.Estimator != nil {
		ecfg = *cfg.Estimator
	}
	e.est = workestimate.New(ecfg, cfg.ObjectCounts, cfg.Watches, nil)
	return e, nil
}

// ServerConcurrencyLimit returns the seats shared by all levels.
func (e *Engine[Q]) ServerConcurrencyLimit() int { return e.scl }

// RequestTimeout returns the server's request timeout.
func (e *Engine[Q]) RequestTimeout() time.Duration { return e.timeout }

// Estimator returns the work estimator Place uses.
func (e *Engine[Q]) Estimator() *workestimate.Estimator { return e.est }

// Snapshot returns the configuration installed last, nil before the first
// Install.
func (e *Engine[Q]) Snapshot() *Snapshot[Q] { return e.snap }

// Levels returns every level in the borrowing books, those in force and
// those retiring, in the adjuster's order. The slice is the caller's.
func (e *Engine[Q]) Levels() []*Level[Q] { return slices.Clone(e.live) }

// Change is what Install did.
type Change[Q Queue] struct {
	// Snapshot is the configuration now in force.
	Snapshot *Snapshot[Q]
	// Added are the levels created, Retired those that left (they drain
	// and are dropped by a later Adjust), Switched those that changed
	// between exempt and limited (they drain outside the borrowing books
	// and are never dropped by the engine: the driver forgets them once
	// idle).
	Added, Retired, Switched []*Level[Q]
	// Dropped are retiring levels found idle and dropped.
	Dropped []*Level[Q]
	// Adjustments are the limits imposed after the change.
	Adjustments []Adjustment
	// Problems are the levels whose queue set refused the new
	// configuration (they keep the old one) and a borrowing error.
	Problems []error
}

// Install puts a compiled configuration into force at now. publish is
// called once the snapshot is ready and the levels' limits are set, and
// before any level that left is quiesced: a driver publishes the snapshot
// there, so that a request turned away by a quiescing level finds the new
// snapshot when it is classified again.
func (e *Engine[Q]) Install(now time.Time, c *Compiled, publish func(*Snapshot[Q])) (Change[Q], error) {
	var ch Change[Q]
	pls := c.matcher.PriorityLevels()
	snap := &Snapshot[Q]{matcher: c.matcher, levels: make([]*Level[Q], len(pls)), est: e.est, timeout: e.timeout}
	inNew := make(map[string]bool, len(pls))
	for _, pl := range pls {
		inNew[pl.Name] = true
		qc := queueConfig(pl.Object)
		bc := borrowingConfig(pl.Object)
		bc.Name = pl.Name
		l := e.byName[pl.Name]
		if l != nil && l.exempt == pl.Exempt {
			if l.retiring {
				l.Queue.Resume()
				l.retiring = false
			}
			qc.ConcurrencyLimit = l.cfg.ConcurrencyLimit
			if err := l.Queue.Reconfigure(now, qc); err != nil {
				ch.Problems = append(ch.Problems, fmt.Errorf("priority level %q: %w", pl.Name, err))
			} else {
				l.cfg = qc
			}
			l.uid, l.bcfg = pl.UID, bc
		} else {
			if l != nil {
				ch.Switched = append(ch.Switched, l)
				e.live = slices.DeleteFunc(e.live, func(x *Level[Q]) bool { return x == l })
			}
			nl, err := e.newLevel(now, pl.Name, pl.UID, pl.Exempt, qc, bc)
			if err != nil {
				return ch, err
			}
			e.byName[pl.Name] = nl
			e.live = append(e.live, nl)
			ch.Added = append(ch.Added, nl)
			l = nl
		}
		snap.levels[pl.Index] = l
	}
	for _, l := range e.live {
		if !inNew[l.name] && !l.retiring {
			l.retiring = true
			ch.Retired = append(ch.Retired, l)
		}
	}
	// The new levels get their limits before anyone can reach them; the
	// retiring ones keep their seats in the books while they drain.
	adjs, err := e.setLevels(now)
	e.snap = snap
	ch.Snapshot = snap
	publish(snap)
	// Only now, with the new snapshot published, may levels refuse
	// arrivals: a request told to classify again must find the new one.
	for _, l := range ch.Switched {
		l.retiring = true
		l.Queue.Quiesce()
	}
	for _, l := range ch.Retired {
		l.Queue.Quiesce()
	}
	if ch.Dropped = e.dropIdle(); len(ch.Dropped) > 0 {
		adjs, err = e.setLevels(now)
	}
	if err != nil {
		ch.Problems = append(ch.Problems, err)
	}
	ch.Adjustments = adjs
	return ch, nil
}

func (e *Engine[Q]) newLevel(now time.Time, name, uid string, exempt bool, qc fairqueue.Config, bc borrow.LevelConfig) (*Level[Q], error) {
	l := &Level[Q]{name: name, uid: uid, exempt: exempt, cfg: qc, bcfg: bc}
	qs, err := fairqueue.New(qc, now)
	if err != nil {
		return nil, fmt.Errorf("engine: priority level %q: %w", name, err)
	}
	q, err := e.newQueue(l, qs)
	if err != nil {
		return nil, fmt.Errorf("engine: priority level %q: %w", name, err)
	}
	l.Queue = q
	if obs, ok := any(q).(fairqueue.Observer); ok {
		l.obs = obs
	}
	// Installed once l knows the driver's observer, which decides
	// whether l integrates over time (IntegratesOverTime).
	qs.SetObserver(l)
	return l, nil
}

// Adjust runs the periodic borrowing adjustment at now: it drops the
// retiring levels that are idle and imposes the new limits. The driver
// calls it every AdjustmentPeriod.
func (e *Engine[Q]) Adjust(now time.Time) (adjs []Adjustment, dropped []*Level[Q], err error) {
	if dropped = e.dropIdle(); len(dropped) > 0 {
		adjs, err = e.setLevels(now)
		return adjs, dropped, err
	}
	withAllLocked(e.live, func() {
		ws := make([]borrow.Stats, len(e.live))
		for i, l := range e.live {
			ws[i] = l.integ.Reset(now)
		}
		adjs = e.adj.Update(ws)
	})
	e.apply(now, adjs)
	return adjs, nil, nil
}

// dropIdle forgets the retiring levels that have drained.
func (e *Engine[Q]) dropIdle() []*Level[Q] {
	var dropped []*Level[Q]
	e.live = slices.DeleteFunc(e.live, func(l *Level[Q]) bool {
		if l.retiring && l.Queue.IsIdle() {
			if e.byName[l.name] == l {
				delete(e.byName, l.name)
			}
			dropped = append(dropped, l)
			return true
		}
		return false
	})
	return dropped
}

// setLevels hands the levels in the books to the adjuster, binds their
// demand integrators, and imposes the adjustment that follows.
func (e *Engine[Q]) setLevels(now time.Time) ([]Adjustment, error) {
	cfgs := make([]borrow.LevelConfig, len(e.live))
	for i, l := range e.live {
		cfgs[i] = l.bcfg
	}
	if err := borrow.Validate(e.scl, cfgs); err != nil {
		return nil, fmt.Errorf("engine: borrowing: %w", err)
	}
	var (
		adjs []Adjustment
		err  error
	)
	withAllLocked(e.live, func() {
		// The levels already in the books close their windows; a new one
		// is judged on an empty window, then starts its first one now.
		ws := make([]borrow.Stats, len(e.live))
		for i, l := range e.live {
			if l.booked {
				ws[i] = l.integ.Reset(now)
			}
		}
		adjs, err = e.adj.SetLevels(e.scl, cfgs, ws)
		if err != nil {
			return
		}
		for _, l := range e.live {
			if !l.booked {
				l.booked = true
				l.integ = *borrow.NewIntegrator(now)
				if l.demand != 0 {
					l.integ.Set(now, float64(l.demand))
				}
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("engine: borrowing: %w", err)
	}
	e.apply(now, adjs)
	return adjs, nil
}

// apply imposes an adjustment's limits.
func (e *Engine[Q]) apply(now time.Time, adjs []Adjustment) {
	for i := range adjs {
		a := adjs[i]
		l := e.byName[a.Name]
		if l == nil {
			continue
		}
		l.limits.Store(&a)
		l.maxSeats.Store(int64(a.MaxSeats))
		if !l.exempt {
			lim := EnforcedLimit(a)
			l.Queue.SetConcurrencyLimit(now, lim)
			l.cfg.ConcurrencyLimit = lim
		}
	}
}

// EnforcedLimit is the seat limit a limited level's queue set is given
// after an adjustment: the level's current limit, but at least one seat
// when the level has nominal seats.
//
// The borrowing adjustment gives a level that lends seats (its lower
// limit is 0) and demanded none in the last window a current limit of 0,
// and a queue set with a limit of 0 dispatches nothing: a request would
// wait for the next adjustment, up to AdjustmentPeriod, before the demand
// it adds earns the level a seat. That is what kube-apiserver does (with
// a small server limit, an ordinary user's first request waits up to
// 10 s, right after start too, since the adjustment that follows a
// configuration's digest sees no demand). apf keeps the adjustment as
// upstream computes it, and its limits as reported, but enforces at least
// one seat on a level that has nominal seats, so that such a level
// always admits a request at once when none of its own requests holds a
// seat. A level configured with no shares (nominal limit 0) only ever
// runs on borrowed seats, as upstream. The server then runs at most one
// seat per such level beyond the sum of the current limits (a wider
// request runs alone, by the queue set's rule for requests wider than
// the limit).
func EnforcedLimit(a Adjustment) int {
	if a.Nominal > 0 && !a.Exempt {
		return max(a.Current, 1)
	}
	return a.Current
}

// withAllLocked calls f holding every level's Queue lock, so that f may
// read and reset their demand integrators together.
func withAllLocked[Q Queue](ls []*Level[Q], f func()) {
	if len(ls) == 0 {
		f()
		return
	}
	ls[0].Queue.WithLock(func() { withAllLocked(ls[1:], f) })
}

// Adjustment is the outcome of a borrowing adjustment for one level (see
// package borrow).
type Adjustment = borrow.Adjustment

// AdjustmentPeriod is how often a driver calls Adjust.
const AdjustmentPeriod = borrow.AdjustmentPeriod
