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
	// Clock times waits, final phases and adjustments; nil means real time.
	Clock clock.Clock
	// RequestTimeout is the server's request timeout; 0 means 60 s. The
	// wait limit of a request without a deadline is a quarter of it.
	RequestTimeout time.Duration
	// Logger receives configuration problems at each digestion: objects
	// that cannot be used (a broken level, a duplicate) as warnings, and
	// FlowSchemas naming a missing level at debug level, where
	// kube-apiserver logs them (verbosity 6); nil means slog.Default().
	Logger *slog.Logger
	// OnReload, when set, is called after every reading of the source (the
	// first in New, then each Reload) with its outcome: nil when what was
	// read is in force and every object of it takes part, else the error
	// ConfigError returns from then on. A server counts its configuration
	// reloads and their failures with it. It must not block, nor call the
	// controller.
	OnReload func(error)
}

// Controller enforces API Priority and Fairness for one server: it drives
// an engine.Engine with a lock per priority level, the blocking wait of a
// request that queues, the goroutines that adjust and sample, and the
// metrics.
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

	// mu serializes configuration changes, adjustments and samples, and
	// guards everything below.
	mu        sync.Mutex
	eng       *engine.Engine[*levelState]
	flowPairs map[[2]string]bool
	lastErr   error
	// stats holds the samples behind Stats (stats.go).
	stats statsBook
}

// snapshot is one configuration in force: the engine's, with the metric
// handles of its flow schemas. Immutable once published.
type snapshot struct {
	eng   *engine.Snapshot[*levelState]
	flows []*metrics.FlowMetrics // by classify.FlowSchema.Index
	// levelUIDs and schemaUIDs hold each UID as a one-element slice, built
	// once so that transports can use them as header values without
	// allocating (Ticket.UIDValues).
	levelUIDs  [][]string // by classify.PriorityLevel.Index
	schemaUIDs [][]string // by classify.FlowSchema.Index
}

// uidValues returns a one-element slice holding uid; its capacity is 1, so
// an append by a careless user copies rather than writes into it.
func uidValues(uid string) []string { return []string{uid}[:1:1] }

// levelState is the controller's side of one priority level: the
// blocking queue around the engine's queue set, its metrics and its
// Retry-After tracker. It is the level's engine.Queue.
type levelState struct {
	name   string
	exempt bool
	fq     *fairqueue.Level
	lm     *metrics.LevelMetrics
	retry  RetryAfter
	// demand is the seat demand last reported, guarded by fq's lock
	// (exempt levels export only it).
	demand int

	// sampled holds the queue-set counters at the previous metrics
	// sample (guarded by Controller.mu).
	sampled levelSample
}

// SetConcurrencyLimit implements engine.Queue; the blocking level reads
// the time from the controller's clock itself.
func (ls *levelState) SetConcurrencyLimit(_ time.Time, limit int) { ls.fq.SetConcurrencyLimit(limit) }

// Reconfigure implements engine.Queue.
func (ls *levelState) Reconfigure(_ time.Time, cfg fairqueue.Config) error {
	return ls.fq.Reconfigure(cfg)
}

// Quiesce implements engine.Queue.
func (ls *levelState) Quiesce() { ls.fq.Quiesce() }

// Resume implements engine.Queue.
func (ls *levelState) Resume() { ls.fq.Resume() }

// IsIdle implements engine.Queue.
func (ls *levelState) IsIdle() bool { return ls.fq.IsIdle() }

// WithLock implements engine.Queue.
func (ls *levelState) WithLock(f func()) { ls.fq.WithLock(f) }

// Occupancy implements fairqueue.Observer: the engine passes on each
// change of the level's occupancy, under the level's lock, and it goes
// into the level's utilization histograms. Exempt requests are not
// counted in those, only in the demand.
func (ls *levelState) Occupancy(now time.Time, o fairqueue.Occupancy) {
	d := o.Demand()
	if ls.exempt {
		if d != ls.demand {
			ls.demand = d
			ls.lm.DemandSeats.Set(now, float64(d))
		}
		return
	}
	ls.demand = d
	ls.lm.NoteOccupancy(now, float64(d), float64(o.Waiting), float64(o.Executing), float64(o.SeatsInUse))
}

// IntegratesOverTime implements fairqueue.Integrator: the level's
// utilization histograms weigh each occupancy by how long it lasts, and
// its demand is only kept, so an occupancy that lasts no time changes
// nothing here.
func (ls *levelState) IntegratesOverTime() bool { return true }

// setWaitDenominator sets the denominator of the level's waiting-request
// utilization: max(1, queueLengthLimit) × queues, or 1 without queues.
func (ls *levelState) setWaitDenominator(now time.Time, qc fairqueue.Config) {
	den := 1.0
	if qc.Queues > 0 {
		den = float64(max(1, qc.QueueLengthLimit) * qc.Queues)
	}
	ls.lm.WaitingRequests.SetDenominator(now, den)
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
	eng, err := engine.New(engine.Config[*levelState]{
		ServerConcurrencyLimit: cfg.ServerConcurrencyLimit,
		RequestTimeout:         cfg.RequestTimeout,
		Estimator:              cfg.Estimator,
		ObjectCounts:           cfg.ObjectCounts,
		Watches:                c.watches,
		NewQueue:               c.newLevel,
	})
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	c.eng = eng
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

// newLevel is the engine's Config.NewQueue: a blocking level around the
// engine's queue set, timed by the controller's clock.
func (c *Controller) newLevel(l *engine.Level[*levelState], qs *fairqueue.QueueSet) (*levelState, error) {
	ls := &levelState{name: l.Name(), exempt: l.Exempt(), lm: c.met.Level(l.Name())}
	ls.fq = fairqueue.Wrap(qs, c.clock)
	if !ls.exempt {
		// The level reports its occupancy under its lock: the
		// utilization histograms log the changes and apply them in
		// batches (metrics.LevelMetrics.NoteOccupancy).
		ls.lm.LogUnder(ls.fq.WithLock)
	}
	ls.setWaitDenominator(c.clock.Now(), l.Config())
	return ls, nil
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
			c.Reload()
		case <-tick:
			c.adjust()
			arm()
		case <-sample:
			c.sampleMetrics()
			armSample()
		}
	}
}

// Reload reads the source again and applies what it holds. On a source
// error the configuration in force stays, and the error is returned and
// reported.
func (c *Controller) Reload() error {
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
	ch, err := c.eng.Install(now, comp, c.publishLocked)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	for _, l := range ch.Snapshot.Levels() {
		l.Queue.setWaitDenominator(now, l.Config())
	}
	for _, l := range ch.Dropped {
		c.met.DeleteLevel(l.Name())
	}
	c.adjustedLocked(now, ch.Adjustments)
	err = errors.Join(append(comp.Invalid, ch.Problems...)...)
	c.lastErr = err
	if err != nil {
		c.log.Error("apf configuration", "error", err)
	}
	return nil
}

// publishLocked publishes the engine's new snapshot with the metric
// handles of its flow schemas, and retires those of the schemas that left.
func (c *Controller) publishLocked(es *engine.Snapshot[*levelState]) {
	m := es.Matcher()
	pls, fss := m.PriorityLevels(), m.FlowSchemas()
	snap := &snapshot{
		eng:        es,
		flows:      make([]*metrics.FlowMetrics, len(fss)),
		levelUIDs:  make([][]string, len(pls)),
		schemaUIDs: make([][]string, len(fss)),
	}
	for _, pl := range pls {
		snap.levelUIDs[pl.Index] = uidValues(pl.UID)
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
	now := c.clock.Now()
	adjs, dropped, err := c.eng.Adjust(now)
	for _, l := range dropped {
		c.met.DeleteLevel(l.Name())
	}
	if err != nil {
		c.lastErr = err
		c.log.Error("apf borrowing", "error", err)
	}
	c.adjustedLocked(now, adjs)
}

// adjustedLocked sets the limit gauges from an adjustment the engine
// imposed, and the denominators that depend on the levels' limits.
func (c *Controller) adjustedLocked(now time.Time, adjs []engine.Adjustment) {
	live := c.eng.Levels()
	byName := make(map[string]*levelState, len(live))
	for _, l := range live {
		byName[l.Name()] = l.Queue
	}
	for i := range adjs {
		a := &adjs[i]
		ls := byName[a.Name]
		if ls == nil {
			continue
		}
		lm := ls.lm
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
	// Queue is the level's queue set (Stats and Dump are safe to call).
	Queue *fairqueue.Level
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
	for _, l := range live {
		out = append(out, LevelView{
			Name: l.Name(), UID: l.UID(), Exempt: l.Exempt(), Quiescing: l.Retiring(),
			Queue: l.Queue.fq, Limits: l.Limits(), RetryAfter: l.Queue.retry.Current(),
		})
	}
	return out
}

// Matcher returns the classification in force.
func (c *Controller) Matcher() *classify.Matcher { return c.snap.Load().eng.Matcher() }
