package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/clock"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/engine"
	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/metrics"
	"github.com/apfproject/apf/workestimate"
)

// Config configures a Controller.
type Config struct {
	// ServerConcurrencyLimit is the seats shared by all priority levels
	// (SCL); 0 means 600.
	ServerConcurrencyLimit int
	// Source supplies the configuration objects; nil means none (only the
	// mandatory objects, which classification always imagines).
	Source Source
	// Metrics receives the APF metrics; nil means an unregistered Set.
	Metrics *metrics.Set
	// Estimator configures work estimation; the zero value means
	// workestimate.DefaultConfig.
	Estimator *workestimate.Config
	// ObjectCounts feeds list estimates; nil prices every list at the minimum.
	ObjectCounts workestimate.ObjectCounts
	// Watches counts watches for write estimates; nil means a new tracker
	// (see Controller.Watches).
	Watches *workestimate.WatchTracker
	// Clock times waits, final phases and adjustments; nil means clock.Real.
	Clock clock.Clock
	// RequestTimeout is the server's request timeout; 0 means 60 s. The
	// wait limit of a request without a deadline is a quarter of it.
	RequestTimeout time.Duration
	// DeadlineAwareQueueing rejects on arrival a request that its level,
	// by its measured drain rate, cannot dispatch within the request's
	// wait limit, and answers every rejection of a queuing level with a
	// Retry-After from the time the level needs to drain, jittered,
	// instead of the rejection-count tracker's. Off, as in Kubernetes
	// (docs/spec/deadline-aware-queueing.md).
	DeadlineAwareQueueing bool
	// PacedDispatch makes every queuing level paced: it measures its
	// service time, charges it in fair order instead of 3 ms, and spaces
	// its starts, so that a light flow gets one of the next seats to free
	// and one frees soon (engine.Config.PacedDispatch). Off, as in
	// Kubernetes.
	PacedDispatch bool
	// Logger receives configuration problems at each digestion: objects
	// that cannot be used (a broken level, a duplicate) as warnings, and
	// FlowSchemas naming a missing level at debug level, where
	// kube-apiserver logs them (verbosity 6); nil means slog.Default().
	Logger *slog.Logger
	// OnReload, when set, is called after every reading of the source (the
	// first in New, then each one Run makes) with its outcome: nil when what
	// was read is in force and every object of it takes part, else the error
	// ConfigError returns from then on. A server counts its configuration
	// reloads and their failures with it. It must not block, nor call the
	// controller.
	OnReload func(error)
}

// Controller enforces API Priority and Fairness for one server: it drives
// an engine.Engine with a lock per priority level, the blocking wait of a
// request that queues, the timers of final phases, the goroutines that
// adjust and sample, and the metrics.
type Controller struct {
	source  Source
	met     *metrics.Set
	watches *workestimate.WatchTracker
	clock   clock.Clock
	log     *slog.Logger
	// onReload is Config.OnReload.
	onReload func(error)

	// compile is engine.Compile; tests wrap it to act while a
	// configuration compiles.
	compile func([]config.Object) *engine.Compiled

	snap  atomic.Pointer[snapshot]
	pool  sync.Pool
	kinds *kindTracker
	// shadow is the Shadow hearing every admission, nil for none
	// (shadow.go).
	shadow atomic.Pointer[shadowHook]

	// mu serializes the engine-wide inputs (configuration changes,
	// adjustments, server limit changes) and samples, and guards
	// everything below. Held, it takes the level locks one at a time,
	// never two.
	mu        sync.Mutex
	eng       *engine.Engine
	levels    map[*engine.Level]*Level // the controller's side of each engine level
	flowPairs map[[2]string]bool
	lastErr   error
	// stats holds the samples behind Stats (stats.go).
	stats statsBook
	// adaptive learns the server concurrency limit, nil when it is static
	// (adaptive.go).
	adaptive *Adaptive
	// deadlineAware is Config.DeadlineAwareQueueing.
	deadlineAware bool
}

// snapshot is one configuration in force: the engine's, with the metric
// handles of its flow schemas. Immutable once published.
type snapshot struct {
	eng    *engine.Snapshot
	levels []*Level               // by classify.PriorityLevel.Index
	flows  []*metrics.FlowMetrics // by classify.FlowSchema.Index
	// levelUIDs and schemaUIDs hold each UID as a one-element slice, built
	// once so that transports can use them as header values without
	// allocating (Ticket.UIDValues).
	levelUIDs  [][]string // by classify.PriorityLevel.Index
	schemaUIDs [][]string // by classify.FlowSchema.Index
}

// uidValues returns a one-element slice holding uid; its capacity is 1, so
// an append by a careless user copies rather than writes into it.
func uidValues(uid string) []string { return []string{uid}[:1:1] }

// Level is the controller's side of one priority level: the lock under
// which every input on the engine's level runs, the level's metrics and
// its Retry-After tracker. Its methods read the level's queue set under
// that lock, for dumps, tests and live views.
type Level struct {
	mu     sync.Mutex
	el     *engine.Level
	name   string
	exempt bool
	lm     *metrics.LevelMetrics
	retry  retryAfter
	// demand is the seat demand set last (exempt levels export only
	// it), guarded by mu.
	demand int
	// A paced level's timer (engine.Outcome.Wake): wakeAt is when the one
	// set last fires, zero when none is pending (guarded by mu); tick
	// gives the level its Tick then.
	clk    clock.Clock
	wakeAt time.Time
	tick   func()

	// sampled holds the queue-set counters at the previous metrics
	// sample (guarded by Controller.mu).
	sampled levelSample
}

// Stats returns the level's queue-set gauges and counters.
func (l *Level) Stats() fairqueue.Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.el.Stats()
}

// Dump returns the level's queue-set debug view.
func (l *Level) Dump(includeRequests bool) fairqueue.Dump {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.el.Dump(includeRequests)
}

// Config returns the level's queue-set configuration, the limit it
// enforces included.
func (l *Level) Config() fairqueue.Config {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.el.QueueConfig()
}

// IsIdle reports whether nothing waits and nothing executes.
func (l *Level) IsIdle() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.el.IsIdle()
}

// withLock calls f holding the level's lock.
func (l *Level) withLock(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
}

// doneLocked applies what an input on the level did: its occupancy goes
// to the level's utilization histograms (exempt levels feed only
// demand_seats, as upstream's exempt levels have no queue-set gauges),
// and the requests it dispatched are woken: after the caller releases
// l.mu through w (see wakes), or at once when w is nil or full. The
// caller holds l.mu.
func (l *Level) doneLocked(now time.Time, o *engine.Outcome, w *wakes) {
	for _, r := range o.Dispatched {
		t, ok := r.Tag.(*Ticket)
		switch {
		case !ok:
		case t.async != nil:
			// AdmitFunc's caller hears of it outside the lock.
			go t.async.dispatched()
			t.async = nil
		case t.wake != nil:
			if w == nil || !w.add(t.wake) {
				wake(t.wake)
			}
		}
	}
	if o.Wake > 0 {
		if at := now.Add(o.Wake); l.wakeAt.IsZero() || at.Before(l.wakeAt) {
			// A timer set for later stays: it finds nothing to do, or
			// what the gap then allows.
			l.wakeAt = at
			l.clk.AfterFunc(o.Wake, l.tick)
		}
	}
	if !o.Changed {
		return
	}
	occ := o.Occupancy
	d := occ.Demand()
	if l.exempt {
		if d != l.demand {
			l.demand = d
			l.lm.DemandSeats.Set(now, float64(d))
		}
		return
	}
	l.demand = d
	l.lm.NoteOccupancy(now, float64(d), float64(occ.Waiting), float64(occ.Executing), float64(occ.SeatsInUse))
}

// wakes holds the wake channels of the requests an input dispatched, to
// be sent once the level's lock is released. Waking a goroutine reaches
// into memory the processor it waited on last wrote (its channel, its
// goroutine), and under the lock every other request of the level would
// wait for that; the woken one cannot act before it hears, so nothing
// changes but who waits. It lives on the caller's stack: an input
// usually dispatches one request, and those beyond its room are woken
// under the lock.
type wakes struct {
	n  int
	ch [4]chan struct{}
}

// add keeps ch for send, and reports whether there was room.
func (w *wakes) add(ch chan struct{}) bool {
	if w.n == len(w.ch) {
		return false
	}
	w.ch[w.n] = ch
	w.n++
	return true
}

// send wakes every request kept.
func (w *wakes) send() {
	for _, ch := range w.ch[:w.n] {
		wake(ch)
	}
}

// wake tells the request waiting on ch that it was dispatched. ch has
// room for one, and a request is dispatched once, so it never blocks.
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// ticked gives a paced level its Tick when the gap it asked for has
// passed.
func (l *Level) ticked() {
	l.mu.Lock()
	now := l.clk.Now()
	l.wakeAt = time.Time{}
	o := l.el.Tick(now)
	l.doneLocked(now, &o, nil)
	l.mu.Unlock()
}

// setWaitDenominator sets the denominator of the level's waiting-request
// utilization: max(1, queueLengthLimit) × queues, or 1 without queues.
func (l *Level) setWaitDenominator(now time.Time, qc fairqueue.Config) {
	den := 1.0
	if qc.Queues > 0 {
		den = float64(max(1, qc.QueueLengthLimit) * qc.Queues)
	}
	l.lm.WaitingRequests.SetDenominator(now, den)
}

// New builds a Controller and applies the source's current configuration.
// A source error is not fatal: the controller starts with the mandatory
// configuration and reports the error (see ConfigError).
func New(cfg Config) (*Controller, error) {
	c := &Controller{
		source:   cfg.Source,
		met:      cfg.Metrics,
		watches:  cfg.Watches,
		clock:    cfg.Clock,
		log:      cfg.Logger,
		onReload: cfg.OnReload,
		compile:  engine.Compile,
	}
	if c.source == nil {
		c.source = StaticSource(nil)
	}
	if c.clock == nil {
		c.clock = clock.Real
	}
	if c.met == nil {
		m, err := metrics.New(nil, metrics.WithClock(c.clock.Now))
		if err != nil {
			return nil, err
		}
		c.met = m
	}
	if c.watches == nil {
		c.watches = workestimate.NewWatchTracker()
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	eng, err := engine.New(engine.Config{
		ServerConcurrencyLimit: cfg.ServerConcurrencyLimit,
		RequestTimeout:         cfg.RequestTimeout,
		Estimator:              cfg.Estimator,
		ObjectCounts:           cfg.ObjectCounts,
		Watches:                c.watches,
		DeadlineAwareQueueing:  cfg.DeadlineAwareQueueing,
		PacedDispatch:          cfg.PacedDispatch,
	})
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	c.eng = eng
	c.deadlineAware = cfg.DeadlineAwareQueueing
	c.levels = map[*engine.Level]*Level{}
	c.pool.New = func() any { return newTicket() }
	c.kinds = newKindTracker(c.met)

	objs, err := c.source.Objects()
	if err != nil {
		c.report(err)
		objs = nil
	}
	if err := c.apply(objs); err != nil {
		return nil, err
	}
	if err != nil {
		c.reloaded(err)
	} else {
		c.reloaded(c.ConfigError())
	}
	return c, nil
}

// newLevel makes the controller's side of a level the engine created.
func (c *Controller) newLevel(now time.Time, el *engine.Level) *Level {
	l := &Level{el: el, name: el.Name(), exempt: el.Exempt(), lm: c.met.Level(el.Name()), clk: c.clock}
	l.tick = l.ticked
	if !l.exempt {
		// The level's occupancy is noted under its lock: the utilization
		// histograms log the changes and apply them in batches
		// (metrics.LevelMetrics.NoteOccupancy).
		l.lm.LogUnder(l.withLock)
	}
	l.setWaitDenominator(now, el.Config())
	return l
}

// Watches returns the tracker of watches in progress. The HTTP edge
// registers each admitted watch with it for as long as the watch runs, so
// that write estimates count it.
func (c *Controller) Watches() *workestimate.WatchTracker { return c.watches }

// ConfigError returns the error of the latest attempt to read or apply the
// source's configuration, nil if it succeeded.
func (c *Controller) ConfigError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}

func (c *Controller) report(err error) {
	c.mu.Lock()
	c.lastErr = err
	c.mu.Unlock()
	if err != nil {
		c.log.Error("apf configuration", "error", err)
	}
}

// Run applies the source's changes and runs the borrowing adjustment every
// engine.AdjustmentPeriod until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { c.source.Watch(ctx, notify) })
	defer wg.Wait()

	tick := make(chan struct{}, 1)
	arm := func() {
		c.clock.AfterFunc(engine.AdjustmentPeriod, func() {
			select {
			case tick <- struct{}{}:
			default:
			}
		})
	}
	sample := make(chan struct{}, 1)
	armSample := func() {
		c.clock.AfterFunc(samplePeriod, func() {
			select {
			case sample <- struct{}{}:
			default:
			}
		})
	}
	arm()
	armSample()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			c.reload()
		case <-tick:
			c.adjust()
			arm()
		case <-sample:
			c.sampleMetrics()
			armSample()
		}
	}
}

// reload reads the source again and applies what it holds. On a source
// error the configuration in force stays, and the error is returned and
// reported.
func (c *Controller) reload() error {
	objs, err := c.source.Objects()
	if err != nil {
		c.report(err)
		c.reloaded(err)
		return err
	}
	if err := c.apply(objs); err != nil {
		c.reloaded(err)
		return err
	}
	c.reloaded(c.ConfigError())
	return nil
}

// reloaded passes the outcome of a reading of the source to
// Config.OnReload.
func (c *Controller) reloaded(err error) {
	if c.onReload != nil {
		c.onReload(err)
	}
}

// apply puts a full set of objects into force: compiled without a lock,
// installed under c.mu.
func (c *Controller) apply(objs []config.Object) error {
	comp := c.compile(objs)
	m := comp.Matcher()
	for _, p := range m.Problems() {
		if p.Kind == "FlowSchema" && m.Dangling(p.Name) {
			// A FlowSchema naming a missing level is the user's to see in
			// its Dangling condition; kube-apiserver logs it only at
			// verbosity 6, below its default, and so it is debug here.
			c.log.Debug("apf configuration", "problem", p.String())
			continue
		}
		c.log.Warn("apf configuration", "problem", p.String())
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	ch, err := c.eng.Install(now, comp, c.windowsLocked(now))
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	dropNow := c.changeLocked(now, ch)
	for _, el := range ch.Snapshot.Levels() {
		c.levels[el].setWaitDenominator(now, el.Config())
	}
	if dropNow {
		// A level that left was idle already: dropped at once, as an
		// adjustment would.
		c.adjustLocked(now)
	}
	err = errors.Join(append(comp.Invalid, ch.Problems...)...)
	c.lastErr = err
	if err != nil {
		c.log.Error("apf configuration", "error", err)
	}
	return nil
}

// windowsLocked closes every level's demand window at now, each under its
// own lock, for an engine-wide input.
func (c *Controller) windowsLocked(now time.Time) []engine.Window {
	els := c.eng.Levels()
	ws := make([]engine.Window, len(els))
	for i, el := range els {
		l := c.levels[el]
		l.mu.Lock()
		ws[i] = el.CloseWindow(now)
		l.mu.Unlock()
	}
	return ws
}

// changeLocked applies what an engine-wide input did, in the order
// engine.Change documents: each level's part under that level's lock,
// waking what it dispatches; the snapshot published; the levels that left
// quiesced. It reports whether a level that left is idle already.
func (c *Controller) changeLocked(now time.Time, ch engine.Change) (dropNow bool) {
	for _, el := range ch.Added {
		c.levels[el] = c.newLevel(now, el)
	}
	for _, u := range ch.Updates {
		l := c.levels[u.Level]
		l.mu.Lock()
		o := u.Level.Apply(now, u)
		l.doneLocked(now, &o, nil)
		l.mu.Unlock()
	}
	if ch.Snapshot != nil {
		c.publishLocked(ch.Snapshot)
	}
	// Only now, with the new snapshot published, may levels refuse
	// arrivals: a request told to classify again must find the new one.
	for _, el := range ch.Switched {
		l := c.levels[el]
		l.mu.Lock()
		el.Quiesce()
		l.mu.Unlock()
		// The engine forgot it; what it holds drains through the
		// Tickets that hold it.
		delete(c.levels, el)
	}
	for _, el := range ch.Retired {
		l := c.levels[el]
		l.mu.Lock()
		if el.Quiesce() {
			dropNow = true
		}
		l.mu.Unlock()
	}
	for _, el := range ch.Dropped {
		c.met.DeleteLevel(el.Name())
		delete(c.levels, el)
	}
	c.adjustedLocked(now, ch.Adjustments)
	return dropNow
}

// publishLocked publishes the engine's new snapshot with the metric
// handles of its flow schemas, and retires those of the schemas that left.
func (c *Controller) publishLocked(es *engine.Snapshot) {
	m := es.Matcher()
	if old := c.snap.Load(); old != nil && old.eng.Matcher() == m {
		// The same configuration with new limits.
		snap := *old
		snap.eng = es
		c.snap.Store(&snap)
		return
	}
	pls, fss := m.PriorityLevels(), m.FlowSchemas()
	snap := &snapshot{
		eng:        es,
		levels:     make([]*Level, len(pls)),
		flows:      make([]*metrics.FlowMetrics, len(fss)),
		levelUIDs:  make([][]string, len(pls)),
		schemaUIDs: make([][]string, len(fss)),
	}
	for _, pl := range pls {
		snap.levelUIDs[pl.Index] = uidValues(pl.UID)
		snap.levels[pl.Index] = c.levels[es.Levels()[pl.Index]]
	}
	pairs := make(map[[2]string]bool, len(fss))
	for _, fs := range fss {
		snap.flows[fs.Index] = c.met.Flow(fs.PriorityLevel.Name, fs.Name)
		snap.schemaUIDs[fs.Index] = uidValues(fs.UID)
		pairs[[2]string{fs.PriorityLevel.Name, fs.Name}] = true
	}
	for p := range c.flowPairs {
		if !pairs[p] {
			c.met.DeleteFlow(p[0], p[1])
		}
	}
	c.flowPairs = pairs
	c.snap.Store(snap)
}

// adjust runs one periodic borrowing adjustment.
func (c *Controller) adjust() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.adjustLocked(c.clock.Now())
}

func (c *Controller) adjustLocked(now time.Time) {
	ch := c.eng.Adjust(now, c.windowsLocked(now))
	c.changeLocked(now, ch)
	if err := errors.Join(ch.Problems...); err != nil {
		c.lastErr = err
		c.log.Error("apf borrowing", "error", err)
	}
}

// adjustedLocked sets the limit gauges from an adjustment the engine
// imposed, and the denominators that depend on the levels' limits.
func (c *Controller) adjustedLocked(now time.Time, adjs []engine.Adjustment) {
	if len(adjs) == 0 {
		return
	}
	live := c.eng.Levels()
	byName := make(map[string]*Level, len(live))
	for _, el := range live {
		byName[el.Name()] = c.levels[el]
	}
	for i := range adjs {
		a := &adjs[i]
		l := byName[a.Name]
		if l == nil {
			continue
		}
		lm := l.lm
		lm.NominalLimitSeats.Set(float64(a.Nominal))
		lm.LowerLimitSeats.Set(float64(a.Lower))
		lm.UpperLimitSeats.Set(float64(a.Upper))
		lm.CurrentLimitSeats.Set(float64(a.Current))
		lm.DemandSeatsHighWatermark.Set(float64(a.HighWatermark))
		lm.DemandSeatsAverage.Set(a.Average)
		lm.DemandSeatsStdev.Set(a.StdDev)
		lm.DemandSeatsSmoothed.Set(a.Smoothed)
		lm.TargetSeats.Set(a.Target)
		den := float64(max(a.Denominator, 1))
		lm.DemandSeats.SetDenominator(now, den)
		lm.ExecutingRequests.SetDenominator(now, den)
		lm.SeatUtilization.SetDenominator(now, den)
		c.met.SeatFairFrac.Set(a.FairFrac)
	}
	// read_vs_write_current_requests denominators: the queue capacity of
	// the queuing levels and the sum of nominal limits, over the levels
	// in force.
	var waitCap, nominal float64
	for _, l := range live {
		if l.Exempt() || l.Retiring() {
			continue
		}
		if qc := l.Config(); qc.Queues > 0 {
			waitCap += float64(qc.Queues * max(1, qc.QueueLengthLimit))
		}
		if a := l.Limits(); a != nil {
			nominal += float64(a.Nominal)
		}
	}
	c.kinds.setDenominators(now, waitCap, nominal)
}

// LevelView describes one priority level in force, for debugging and
// dumps.
type LevelView struct {
	Name      string
	UID       string
	Exempt    bool
	Quiescing bool
	// Queue is the level, whose queue set's Stats and Dump are safe to
	// call at any time.
	Queue *Level
	// Limits is the latest borrowing adjustment, nil before the first.
	Limits *engine.Adjustment
	// RetryAfter is the value the level's tracker answers now.
	RetryAfter int
}

// Levels lists every level in the borrowing books, those in force and
// those draining after they left the configuration, in the adjuster's
// order.
func (c *Controller) Levels() []LevelView {
	c.mu.Lock()
	defer c.mu.Unlock()
	live := c.eng.Levels()
	out := make([]LevelView, 0, len(live))
	for _, el := range live {
		l := c.levels[el]
		out = append(out, LevelView{
			Name: el.Name(), UID: el.UID(), Exempt: el.Exempt(), Quiescing: el.Retiring(),
			Queue: l, Limits: el.Limits(), RetryAfter: l.retry.current(),
		})
	}
	return out
}

// Matcher returns the classification in force.
func (c *Controller) Matcher() *classify.Matcher { return c.snap.Load().eng.Matcher() }
