package engine

import (
	"fmt"
	"time"

	"github.com/apfproject/apf/borrow"
	"github.com/apfproject/apf/fairqueue"
)

// Level is one priority level as the engine keeps it across
// configurations: its queue set, the seat demand it reports to the
// borrowing adjustment, and its configuration and limits.
//
// Its state has two owners. What its inputs change (the queue set, the
// demand, whether it admits arrivals) belongs to the level: the driver
// serializes the calls on one level (Arrive, Finish, Release, Cancel,
// Tick, Apply, Quiesce, CloseWindow and the readings QueueConfig, Stats, Dump,
// VisitQueues, IsIdle, Quiescing), with a lock of the level's, say. What the engine-wide inputs
// change (its UID, queue configuration, limits, whether it retires)
// belongs to the engine: read it where the driver serializes those
// (Config, UID, Limits, Retiring). Name and Exempt never change.
type Level struct {
	name   string
	exempt bool

	// The engine's: changed by Install, SetServerLimit and Adjust only.
	uid      string
	cfg      fairqueue.Config // the queue configuration in force, limit included
	bcfg     borrow.LevelConfig
	limits   *Adjustment
	retiring bool

	// The level's: changed by its inputs only.
	qs        *fairqueue.QueueSet
	occ       fairqueue.Occupancy // after the latest input
	demand    borrow.Integrator
	quiescing bool
	// buf holds the requests the latest input dispatched, handed out in
	// Outcome.Dispatched and reused by the next input.
	buf []*fairqueue.Request
}

// newLevel makes a level whose queue set and demand window start at now.
func newLevel(now time.Time, name, uid string, exempt bool, qc fairqueue.Config) (*Level, error) {
	qs, err := fairqueue.New(qc, now)
	if err != nil {
		return nil, fmt.Errorf("engine: priority level %q: %w", name, err)
	}
	return &Level{name: name, uid: uid, exempt: exempt, cfg: qc, qs: qs, demand: *borrow.NewIntegrator(now)}, nil
}

// Name returns the level's name.
func (l *Level) Name() string { return l.name }

// Exempt reports whether the level is exempt.
func (l *Level) Exempt() bool { return l.exempt }

// UID returns the UID of the level's object ("" for an imagined level).
func (l *Level) UID() string { return l.uid }

// Config returns the level's queue configuration, with the limit in force
// (Queues < 0 exempt, 0 reject, > 0 queuing; see fairqueue.Config).
func (l *Level) Config() fairqueue.Config { return l.cfg }

// Retiring reports whether the level has left the configuration and
// drains.
func (l *Level) Retiring() bool { return l.retiring }

// Limits returns the latest borrowing adjustment of the level, nil before
// the first. It must not be modified.
func (l *Level) Limits() *Adjustment { return l.limits }

// Outcome is what an input on a level did: the decision for the request it
// was given, the requests it dispatched as a consequence, the timer it
// wants, and the level's occupancy for metrics.
type Outcome struct {
	// Decision is what became of the request given to Arrive (or, for
	// Cancel, Rejected when the request was removed and Dispatched when
	// it had been dispatched already); 0 for the other inputs.
	Decision fairqueue.Decision
	// Reason says why a request was rejected.
	Reason fairqueue.RejectReason
	// Reclassify is set, with no Decision, when Arrive found the level
	// quiescing: the request was not admitted, and must be classified
	// again against the snapshot published since.
	Reclassify bool
	// Changed says the occupancy changed.
	Changed bool
	// Occupancy is the level's after the input.
	Occupancy fairqueue.Occupancy
	// Release, after Finish, is how long the request's final phase holds
	// its seats: call Release that much later. 0 means the request is
	// over.
	Release time.Duration
	// Dispatched are the requests the input dispatched besides the one it
	// was given: start or wake each. The slice is the level's and is
	// reused by its next input.
	Dispatched []*fairqueue.Request
	// Wake, on a paced level, is positive when the level holds back a
	// request it could start but for the gap between starts: give it
	// Tick that much later (an input on the level before then may have
	// started it already; Tick then does nothing). See
	// fairqueue.Config.Paced.
	Wake time.Duration
}

// Arrive admits r, whose Hash, Work and Tag the caller has set, at now (see
// fairqueue.QueueSet.Arrive). A request that Arrive queues is dispatched
// by a later input on the level, or removed by Cancel.
func (l *Level) Arrive(now time.Time, r *fairqueue.Request) Outcome {
	if l.quiescing {
		return Outcome{Reclassify: true, Occupancy: l.occ}
	}
	var o Outcome
	before := l.occ.Demand()
	o.Decision, o.Dispatched = l.qs.Arrive(now, r, l.scratch())
	peak := 0
	if o.Decision == fairqueue.Rejected {
		o.Reason = r.Reason()
	} else {
		// r waited with its whole width, for no time when it was
		// dispatched at once: the demand's maximum counts that instant,
		// which dispatch may narrow (a final phase wider than the limit).
		peak = before + max(r.Work.MaxSeats(), 0)
	}
	l.observe(now, &o, peak)
	return o
}

// Finish records at now that r's handler returned, and dispatches what
// that allows. When Outcome.Release is positive r's final phase holds its
// seats that much longer: call Release then.
func (l *Level) Finish(now time.Time, r *fairqueue.Request) Outcome {
	var o Outcome
	o.Dispatched, o.Release = l.qs.Finish(now, r, l.scratch())
	l.observe(now, &o, 0)
	return o
}

// Release ends r's final phase at now, and dispatches what that allows.
func (l *Level) Release(now time.Time, r *fairqueue.Request) Outcome {
	o := Outcome{Dispatched: l.qs.Release(now, r, l.scratch())}
	l.observe(now, &o, 0)
	return o
}

// Tick dispatches, at now, what a paced level held back for the gap
// between starts (Outcome.Wake).
func (l *Level) Tick(now time.Time) Outcome {
	o := Outcome{Dispatched: l.qs.Dispatch(now, l.scratch())}
	l.observe(now, &o, 0)
	return o
}

// Cancel removes r, which waits in its queue, at now: its wait limit
// passed or its client left. Outcome.Decision is Rejected (with reason
// TimeOut) when it was removed, Dispatched when an earlier input had
// dispatched it already (the caller runs it, or finishes it at once).
func (l *Level) Cancel(now time.Time, r *fairqueue.Request) Outcome {
	o := Outcome{Decision: fairqueue.Dispatched}
	if l.qs.Cancel(now, r) {
		o.Decision, o.Reason = fairqueue.Rejected, fairqueue.TimeOut
	}
	l.observe(now, &o, 0)
	return o
}

// Update is what an engine-wide input asks of one level: applied in this
// order, resume admitting arrivals, take a new queue configuration,
// enforce a new limit.
type Update struct {
	Level *Level
	// Resume says the level came back into the configuration.
	Resume bool
	// Reconfigure says the level takes Config (its ConcurrencyLimit is
	// ignored: the limit in force stays until Limit changes it).
	Reconfigure bool
	Config      fairqueue.Config
	// Limit is the seat limit to enforce, -1 to keep the one in force.
	Limit int
}

// Apply applies u, made for l by an engine-wide input, at now, and
// dispatches what that allows.
func (l *Level) Apply(now time.Time, u Update) Outcome {
	var o Outcome
	buf := l.scratch()
	if u.Resume {
		l.quiescing = false
	}
	if u.Reconfigure {
		cfg := u.Config
		cfg.ConcurrencyLimit = l.qs.Config().ConcurrencyLimit
		// The engine validated cfg, and a level never switches between
		// exempt and limited in place: this does not fail.
		buf, _ = l.qs.Reconfigure(now, cfg, buf)
	}
	if u.Limit >= 0 {
		buf = l.qs.SetConcurrencyLimit(now, u.Limit, buf)
	}
	o.Dispatched = buf
	l.observe(now, &o, 0)
	return o
}

// Quiesce makes the level refuse arrivals (Outcome.Reclassify) while what
// it holds drains, and reports whether it is idle already.
func (l *Level) Quiesce() (idle bool) {
	l.quiescing = true
	return l.qs.IsIdle()
}

// Window is one level's seat demand since its previous window, and
// whether it was idle when the window closed: what the engine-wide inputs
// need of each level.
type Window struct {
	Level  *Level
	Demand borrow.Stats
	Idle   bool
}

// CloseWindow closes the level's demand window at now and starts the next.
func (l *Level) CloseWindow(now time.Time) Window {
	return Window{Level: l, Demand: l.demand.Reset(now), Idle: l.qs.IsIdle()}
}

// Quiescing reports whether the level refuses arrivals.
func (l *Level) Quiescing() bool { return l.quiescing }

// IsIdle reports whether nothing waits and nothing executes.
func (l *Level) IsIdle() bool { return l.qs.IsIdle() }

// QueueConfig returns the queue set's configuration, the limit it enforces
// included (fairqueue.QueueSet.Config): Config as the level's inputs have
// applied it so far.
func (l *Level) QueueConfig() fairqueue.Config { return l.qs.Config() }

// Stats returns the queue set's gauges and counters.
func (l *Level) Stats() fairqueue.Stats { return l.qs.Stats() }

// Dump returns the queue set's debug view.
func (l *Level) Dump(includeRequests bool) fairqueue.Dump { return l.qs.Dump(includeRequests) }

// VisitQueues calls f with each queue's row of the debug view and returns
// the stats (fairqueue.QueueSet.VisitQueues).
func (l *Level) VisitQueues(f func(fairqueue.QueueDump)) fairqueue.Stats {
	return l.qs.VisitQueues(f)
}

// scratch returns the level's dispatch buffer, emptied, for an input to
// fill.
func (l *Level) scratch() []*fairqueue.Request {
	clear(l.buf)
	return l.buf[:0]
}

// observe completes o with the occupancy after the input and feeds the
// demand window; peak is an instant of demand within the input above
// both ends, or 0.
func (l *Level) observe(now time.Time, o *Outcome, peak int) {
	if cap(o.Dispatched) > cap(l.buf) {
		l.buf = o.Dispatched[:0]
	}
	l.buf = l.buf[:len(o.Dispatched)]
	if l.qs.Paced() {
		if at, ok := l.qs.PacedUntil(); ok {
			o.Wake = max(at.Sub(now), 1)
		}
	}
	occ := l.qs.Occupancy()
	o.Occupancy = occ
	if occ == l.occ {
		return
	}
	o.Changed = true
	before, after := l.occ.Demand(), occ.Demand()
	l.occ = occ
	if peak > after && peak > before {
		l.demand.Set(now, float64(peak))
	}
	if after != before || peak > after {
		l.demand.Set(now, float64(after))
	}
}
