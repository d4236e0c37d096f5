package engine

import (
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

// maxWait is the longest wait limit: however long a request may take, it
// waits in its queue at most this long.
const maxWait = time.Minute

// WaitLimit is how long a request may wait in its queue when it has
// timeLeft from its arrival to its deadline: a quarter of it, at most
// maxWait.
func WaitLimit(timeLeft time.Duration) time.Duration {
	return min(timeLeft/4, maxWait)
}

// Adjustment is the outcome of a borrowing adjustment for one level (see
// package borrow).
type Adjustment = borrow.Adjustment

// AdjustmentPeriod is how often a driver calls Adjust.
const AdjustmentPeriod = borrow.AdjustmentPeriod

// Config configures an Engine.
type Config struct {
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
	// DeadlineAwareQueueing makes every queuing level deadline-aware
	// (fairqueue.Config.DeadlineAware): a request its level cannot
	// dispatch within its wait limit, by the level's measured drain rate,
	// is rejected on arrival. Off, as in Kubernetes.
	DeadlineAwareQueueing bool
	// PacedDispatch makes every queuing level paced
	// (fairqueue.Config.Paced): it measures its service time, charges it
	// in fair order instead of G, and spaces its starts, so that a light
	// flow gets one of the next seats to free and one frees soon. Off, as
	// in Kubernetes.
	PacedDispatch bool
}

// Engine is API Priority and Fairness for one server, without goroutines,
// locks or clocks. Create it with New.
type Engine struct {
	scl           int
	timeout       time.Duration
	deadlineAware bool
	paced         bool
	est           *workestimate.Estimator

	adj    borrow.Adjuster
	live   []*Level // every level in the borrowing books: in force and retiring
	byName map[string]*Level
	snap   *Snapshot
}

// New returns an Engine with no configuration installed: Install one
// before placing requests.
func New(cfg Config) (*Engine, error) {
	e := &Engine{scl: cfg.ServerConcurrencyLimit, timeout: cfg.RequestTimeout, deadlineAware: cfg.DeadlineAwareQueueing, paced: cfg.PacedDispatch, byName: map[string]*Level{}}
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
	ecfg := workestimate.DefaultConfig()
	if cfg.Estimator != nil {
		ecfg = *cfg.Estimator
	}
	e.est = workestimate.New(ecfg, cfg.ObjectCounts, cfg.Watches)
	return e, nil
}

// ServerConcurrencyLimit returns the seats shared by all levels.
func (e *Engine) ServerConcurrencyLimit() int { return e.scl }

// RequestTimeout returns the server's request timeout.
func (e *Engine) RequestTimeout() time.Duration { return e.timeout }

// Levels returns every level in the borrowing books, those in force and
// those retiring, in the adjuster's order: the levels whose windows the
// engine-wide inputs want. The slice is the caller's.
func (e *Engine) Levels() []*Level { return slices.Clone(e.live) }

// Change is what an engine-wide input (Install, SetServerLimit, Adjust)
// did, and what the driver must now tell the levels, in this order:
//
//  1. apply each of Updates to its level (Level.Apply), under that level's
//     serialization, and start or wake what each dispatches;
//  2. publish Snapshot, when it is not nil: requests are placed against it
//     from then on;
//  3. quiesce the levels of Switched and Retired (Level.Quiesce): a
//     request they turn away must find the published snapshot when it is
//     classified again. When a level of Retired is idle already, an
//     Adjust now drops it.
type Change struct {
	// Updates are the per-level parts of the change.
	Updates []Update
	// Snapshot is the snapshot to place requests against, nil when the
	// input changed nothing a request sees.
	Snapshot *Snapshot
	// Added are the levels created, Retired those that left the
	// configuration (they drain, and an Adjust drops each once it is
	// idle), Switched those that changed between exempt and limited (they
	// drain outside the borrowing books and the engine forgets them: the
	// driver does too, once they are idle), Dropped the retiring levels
	// found idle and forgotten.
	Added, Retired, Switched, Dropped []*Level
	// Adjustments are the limits now in force, one per level in the
	// books, in the adjuster's order.
	Adjustments []Adjustment
	// Problems are the levels whose new queue configuration was refused
	// (they keep the old one) and a borrowing error.
	Problems []error
}

// update returns the Update of l in ch, adding one.
func (ch *Change) update(l *Level) *Update {
	for i := range ch.Updates {
		if ch.Updates[i].Level == l {
			return &ch.Updates[i]
		}
	}
	ch.Updates = append(ch.Updates, Update{Level: l, Limit: -1})
	return &ch.Updates[len(ch.Updates)-1]
}

// Install puts a compiled configuration into force at now. ws are the
// windows of the levels in the books (Levels), each closed at now by
// Level.CloseWindow. A level that stays keeps its queue set, reconfigured
// in place; one that leaves retires; one that comes back before it was
// dropped resumes; one that switches between exempt and limited is
// replaced by a new level of the same name. See Change for what the driver
// does next.
//
// Install fails, changing nothing, only when a new level's queue set
// cannot be made.
func (e *Engine) Install(now time.Time, c *Compiled, ws []Window) (Change, error) {
	var ch Change
	pls := c.matcher.PriorityLevels()
	levels := make([]*Level, len(pls))
	inNew := make(map[string]bool, len(pls))
	type kept struct {
		l        *Level
		qc       fairqueue.Config
		reconfig bool
	}
	var keeps []kept
	for _, pl := range pls {
		inNew[pl.Name] = true
		qc := queueConfig(pl.Object)
		qc.DeadlineAware = e.deadlineAware && qc.Queues > 0
		qc.Paced = e.paced && qc.Queues > 0
		if l := e.byName[pl.Name]; l != nil && l.exempt == pl.Exempt {
			qc.ConcurrencyLimit = l.cfg.ConcurrencyLimit
			k := kept{l: l, qc: qc, reconfig: true}
			if err := qc.Validate(); err != nil {
				ch.Problems = append(ch.Problems, fmt.Errorf("priority level %q: %w", pl.Name, err))
				k.reconfig = false
			}
			keeps = append(keeps, k)
			levels[pl.Index] = l
			continue
		}
		nl, err := newLevel(now, pl.Name, pl.UID, pl.Exempt, qc)
		if err != nil {
			return Change{}, err
		}
		levels[pl.Index] = nl
		ch.Added = append(ch.Added, nl)
	}
	// Nothing can fail from here on.
	for _, k := range keeps {
		l := k.l
		u := ch.update(l)
		if l.retiring {
			l.retiring = false
			u.Resume = true
		}
		if k.reconfig {
			u.Reconfigure, u.Config = true, k.qc
			l.cfg = k.qc
		}
	}
	for _, pl := range pls {
		l := levels[pl.Index]
		bc := borrowingConfig(pl.Object)
		bc.Name = pl.Name
		l.uid, l.bcfg = pl.UID, bc
	}
	for _, nl := range ch.Added {
		if old := e.byName[nl.name]; old != nil {
			old.retiring = true
			ch.Switched = append(ch.Switched, old)
			e.live = slices.DeleteFunc(e.live, func(x *Level) bool { return x == old })
		}
		e.byName[nl.name] = nl
		e.live = append(e.live, nl)
	}
	// Only the levels that were retiring already, and so refuse arrivals,
	// may be dropped now; those that leave now are quiesced by the driver
	// after this returns.
	ch.Dropped = e.dropIdle(ws)
	for _, l := range e.live {
		if !inNew[l.name] && !l.retiring {
			l.retiring = true
			ch.Retired = append(ch.Retired, l)
		}
	}
	// The new levels get their limits before anyone can reach them; the
	// retiring ones keep their seats in the books while they drain.
	e.snap = &Snapshot{matcher: c.matcher, levels: levels, est: e.est, timeout: e.timeout}
	e.setLevels(now, ws, &ch)
	return ch, nil
}

// Adjust runs the periodic borrowing adjustment at now, from the levels'
// windows ws (see Install): it drops the retiring levels that are idle and
// imposes the new limits. The driver calls it every AdjustmentPeriod.
func (e *Engine) Adjust(now time.Time, ws []Window) Change {
	var ch Change
	if ch.Dropped = e.dropIdle(ws); len(ch.Dropped) > 0 {
		e.setLevels(now, ws, &ch)
		return ch
	}
	e.apply(now, e.adj.Update(e.windows(ws)), &ch)
	return ch
}

// dropIdle forgets the retiring levels whose windows say they are idle.
// A retiring level has refused arrivals since its Quiesce, so once idle it
// stays idle.
func (e *Engine) dropIdle(ws []Window) []*Level {
	var dropped []*Level
	e.live = slices.DeleteFunc(e.live, func(l *Level) bool {
		if !l.retiring || !window(ws, l).Idle {
			return false
		}
		if e.byName[l.name] == l {
			delete(e.byName, l.name)
		}
		dropped = append(dropped, l)
		return true
	})
	return dropped
}

// window returns l's window in ws, an empty one when ws has none (a level
// created by the input at hand).
func window(ws []Window, l *Level) Window {
	for i := range ws {
		if ws[i].Level == l {
			return ws[i]
		}
	}
	return Window{Level: l}
}

// windows returns the demand windows of the levels in the books, in their
// order.
func (e *Engine) windows(ws []Window) []borrow.Stats {
	out := make([]borrow.Stats, len(e.live))
	for i, l := range e.live {
		if i < len(ws) && ws[i].Level == l {
			out[i] = ws[i].Demand
		} else {
			out[i] = window(ws, l).Demand
		}
	}
	return out
}

// setLevels hands the levels in the books to the adjuster with their
// windows, and imposes the adjustment that follows.
func (e *Engine) setLevels(now time.Time, ws []Window, ch *Change) {
	adjs, err := e.adj.SetLevels(e.scl, e.configs(), e.windows(ws))
	if err != nil {
		ch.Problems = append(ch.Problems, fmt.Errorf("engine: borrowing: %w", err))
		e.publish(ch)
		return
	}
	e.apply(now, adjs, ch)
}

// apply records an adjustment's limits, asks each limited level for its
// new one, and makes the snapshot that carries them.
func (e *Engine) apply(now time.Time, adjs []Adjustment, ch *Change) {
	ch.Adjustments = adjs
	for i := range adjs {
		a := &adjs[i]
		l := e.byName[a.Name]
		if l == nil {
			continue
		}
		l.limits = a
		if !l.exempt {
			lim := enforcedLimit(*a)
			ch.update(l).Limit = lim
			l.cfg.ConcurrencyLimit = lim
		}
	}
	e.publish(ch)
}

// publish makes the snapshot of the levels' latest limits.
func (e *Engine) publish(ch *Change) {
	if e.snap == nil {
		return
	}
	s := *e.snap
	s.limits = make([]*Adjustment, len(s.levels))
	s.maxSeats = make([]int, len(s.levels))
	for i, l := range s.levels {
		if l.limits != nil {
			s.limits[i], s.maxSeats[i] = l.limits, l.limits.MaxSeats
		}
	}
	e.snap = &s
	ch.Snapshot = &s
}

// enforcedLimit is the seat limit a limited level's queue set is given
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
func enforcedLimit(a Adjustment) int {
	if a.Nominal > 0 && !a.Exempt {
		return max(a.Current, 1)
	}
	return a.Current
}
