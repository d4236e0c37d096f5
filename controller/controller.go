package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/borrow"
	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/clock"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/metrics"
	"github.com/apfproject/apf/workestimate"
)

// Defaults (facts §0).
const (
	DefaultServerConcurrencyLimit = 600
	DefaultRequestTimeout         = 60 * time.Second
	// maxWait caps the wait limit (facts §8.2).
	maxWait = time.Minute
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
	// Logger receives configuration problems; nil means slog.Default().
	Logger *slog.Logger
}

// Controller enforces API Priority and Fairness for one server.
type Controller struct {
	scl      int
	source   Source
	met      *metrics.Set
	est      *workestimate.Estimator
	watches  *workestimate.WatchTracker
	clock    clock.Clock
	waitDflt time.Duration
	log      *slog.Logger

	// compile is classify.Compile; tests wrap it to act while a
	// configuration compiles.
	compile func([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration) *classify.Matcher

	snap  atomic.Pointer[snapshot]
	pool  sync.Pool
	kinds *kindTracker

	// mu serializes configuration changes and adjustments, and guards
	// everything below.
	mu        sync.Mutex
	adj       borrow.Adjuster
	live      []*levelState // every level with a queue set, quiescing ones included
	byName    map[string]*levelState
	flowPairs map[[2]string]bool
	lastErr   error
}

// snapshot is one compiled configuration: immutable once published.
type snapshot struct {
	matcher *classify.Matcher
	levels  []*levelState          // by classify.PriorityLevel.Index
	flows   []*metrics.FlowMetrics // by classify.FlowSchema.Index
	// levelUIDs and schemaUIDs hold each UID as a one-element slice, built
	// once so that transports can use them as header values without
	// allocating (Ticket.UIDValues).
	levelUIDs  [][]string // by classify.PriorityLevel.Index
	schemaUIDs [][]string // by classify.FlowSchema.Index
}

// uidValues returns a one-element slice holding uid; its capacity is 1, so
// an append by a careless user copies rather than writes into it.
func uidValues(uid string) []string { return []string{uid}[:1:1] }

// levelState is the lasting state of one priority level.
type levelState struct {
	name   string
	uid    string
	exempt bool
	fq     *fairqueue.Level
	lm     *metrics.LevelMetrics
	retry  RetryAfter
	feed   occupancyFeed
	cfg    fairqueue.Config
	bcfg   borrow.LevelConfig

	maxSeats  atomic.Int64
	quiescing bool // guarded by Controller.mu
	lastAdj   atomic.Pointer[borrow.Adjustment]

	// sampled holds the queue-set counters at the previous metrics
	// sample (guarded by Controller.mu).
	sampled levelSample
}

// occupancyFeed follows a level's occupancy, which its queue set reports
// under the fairqueue.Level's lock: the seat demand goes into the level's
// borrowing integrator, and the occupancy into the level's utilization
// histograms. The feed's fields are guarded by that same lock (readers use
// Level.WithLock), so reporting costs no lock of its own; the histograms
// share one lock with the scrape.
type occupancyFeed struct {
	integ  *borrow.Integrator
	seats  int // the current demand
	lm     *metrics.LevelMetrics
	exempt bool
}

// Occupancy implements fairqueue.Observer.
func (f *occupancyFeed) Occupancy(now time.Time, o fairqueue.Occupancy) {
	d := o.Demand()
	changed := d != f.seats
	if changed {
		f.seats = d
		if f.integ != nil {
			f.integ.Set(now, float64(d))
		}
	}
	if f.exempt {
		// Exempt requests are not counted in the utilization
		// histograms, only in the demand.
		if changed {
			f.lm.DemandSeats.Set(now, float64(d))
		}
		return
	}
	f.lm.SetOccupancy(now, float64(d), float64(o.Waiting), float64(o.Executing), float64(o.SeatsInUse))
}

// withFeedsLocked calls f holding the lock of every level in ls, so that f
// may read and reset their feeds' integrators together.
func withFeedsLocked(ls []*levelState, f func()) {
	if len(ls) == 0 {
		f()
		return
	}
	ls[0].fq.WithLock(func() { withFeedsLocked(ls[1:], f) })
}

// New builds a Controller and applies the source's current configuration.
// A source error is not fatal: the controller starts with the mandatory
// configuration and reports the error (see ConfigError).
func New(cfg Config) (*Controller, error) {
	c := &Controller{
		scl:      cfg.ServerConcurrencyLimit,
		source:   cfg.Source,
		met:      cfg.Metrics,
		watches:  cfg.Watches,
		clock:    cfg.Clock,
		log:      cfg.Logger,
		byName:   map[string]*levelState{},
		waitDflt: cfg.RequestTimeout,
		compile:  classify.Compile,
	}
	if c.scl == 0 {
		c.scl = DefaultServerConcurrencyLimit
	}
	if c.scl < 0 {
		return nil, fmt.Errorf("controller: negative server concurrency limit %d", c.scl)
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
	if c.waitDflt <= 0 {
		c.waitDflt = DefaultRequestTimeout
	}
	c.waitDflt = min(c.waitDflt/4, maxWait)
	ecfg := workestimate.DefaultConfig()
	if cfg.Estimator != nil {
		ecfg = *cfg.Estimator
	}
	c.est = workestimate.New(ecfg, cfg.ObjectCounts, c.watches, c.clock.Now)
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
	return c, nil
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
// borrow.AdjustmentPeriod until ctx ends.
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
		c.clock.AfterFunc(borrow.AdjustmentPeriod, func() {
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
		return err
	}
	return c.apply(objs)
}

// apply digests a full set of objects into a new snapshot.
func (c *Controller) apply(objs []config.Object) error {
	var schemas []*flowcontrolv1.FlowSchema
	var levels []*flowcontrolv1.PriorityLevelConfiguration
	var problems []error
	for _, o := range objs {
		if errs := o.Validate(); len(errs) > 0 {
			problems = append(problems, fmt.Errorf("%s %q (%s) ignored: %w", o.Kind(), o.Name(), o.Source, errs.ToAggregate()))
			continue
		}
		if o.FlowSchema != nil {
			schemas = append(schemas, o.FlowSchema)
		} else if o.PriorityLevel != nil {
			levels = append(levels, o.PriorityLevel)
		}
	}
	m := c.compile(schemas, levels)
	for _, p := range m.Problems() {
		c.log.Warn("apf configuration", "problem", p.String())
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	pls := m.PriorityLevels()
	snap := &snapshot{matcher: m, levels: make([]*levelState, len(pls))}
	inNew := make(map[string]bool, len(pls))
	var retired []*levelState
	for _, pl := range pls {
		inNew[pl.Name] = true
		qc := config.QueueConfig(pl.Object)
		bc := config.BorrowingConfig(pl.Object)
		bc.Name = pl.Name
		ls := c.byName[pl.Name]
		if ls != nil && ls.exempt == pl.Exempt {
			if ls.quiescing {
				// A quiescing level that comes back is resumed, with
				// its queues and virtual time (facts §2.6).
				ls.fq.Resume()
				ls.quiescing = false
			}
			qc.ConcurrencyLimit = ls.fq.Config().ConcurrencyLimit
			if err := ls.fq.Reconfigure(qc); err != nil {
				problems = append(problems, fmt.Errorf("priority level %q: %w", pl.Name, err))
			} else {
				ls.cfg = qc
				ls.setWaitDenominator(c.clock.Now(), qc)
			}
			ls.uid, ls.bcfg = pl.UID, bc
		} else {
			if ls != nil {
				// The level switched between exempt and limited, which
				// a queue set cannot do (and valid objects never ask
				// for): the old one drains on its own, out of the
				// borrowing books, and a fresh one takes the name.
				retired = append(retired, ls)
			}
			nls, err := c.newLevel(pl, qc, bc)
			if err != nil {
				return fmt.Errorf("controller: priority level %q: %w", pl.Name, err)
			}
			c.byName[pl.Name] = nls
			c.live = append(c.live, nls)
			ls = nls
		}
		snap.levels[pl.Index] = ls
	}
	snap.levelUIDs = make([][]string, len(pls))
	for _, pl := range pls {
		snap.levelUIDs[pl.Index] = uidValues(pl.UID)
	}
	// Flow schema handles.
	fss := m.FlowSchemas()
	snap.flows = make([]*metrics.FlowMetrics, len(fss))
	snap.schemaUIDs = make([][]string, len(fss))
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

	// Only now, with the new snapshot published, may levels refuse
	// arrivals: a request told to classify again must find the new one.
	for _, ls := range retired {
		ls.fq.Quiesce()
		ls.quiescing = true
		ls.fq.WithLock(func() { ls.feed.integ = nil })
		c.live = slices.DeleteFunc(c.live, func(x *levelState) bool { return x == ls })
	}
	for _, ls := range c.live {
		if !inNew[ls.name] && !ls.quiescing {
			ls.fq.Quiesce()
			ls.quiescing = true
		}
	}
	c.dropIdleLocked()
	c.setLevelsLocked()
	err := errors.Join(problems...)
	c.lastErr = err
	if err != nil {
		c.log.Error("apf configuration", "error", err)
	}
	return nil
}

func (c *Controller) newLevel(pl *classify.PriorityLevel, qc fairqueue.Config, bc borrow.LevelConfig) (*levelState, error) {
	ls := &levelState{name: pl.Name, uid: pl.UID, exempt: pl.Exempt, cfg: qc, bcfg: bc}
	ls.lm = c.met.Level(pl.Name)
	ls.feed.lm, ls.feed.exempt = ls.lm, pl.Exempt
	// Start at the nominal limit; the adjustment right after sets the
	// real one.
	lims, _ := borrow.Limits(c.scl, []borrow.LevelConfig{bc})
	if len(lims) == 1 {
		qc.ConcurrencyLimit = lims[0].Initial
	}
	fq, err := fairqueue.NewLevel(qc, c.clock, &ls.feed)
	if err != nil {
		return nil, err
	}
	ls.fq = fq
	ls.setWaitDenominator(c.clock.Now(), qc)
	return ls, nil
}

// setWaitDenominator sets the denominator of the level's waiting-request
// utilization: max(1, queueLengthLimit) × queues, or 1 without queues.
func (ls *levelState) setWaitDenominator(now time.Time, qc fairqueue.Config) {
	den := 1.0
	if qc.Queues > 0 {
		den = float64(max(1, qc.QueueLengthLimit) * qc.Queues)
	}
	ls.lm.WaitingRequests.SetDenominator(now, den)
}

// dropIdleLocked forgets quiescing levels that have drained.
func (c *Controller) dropIdleLocked() bool {
	dropped := false
	c.live = slices.DeleteFunc(c.live, func(ls *levelState) bool {
		if ls.quiescing && ls.fq.IsIdle() {
			if c.byName[ls.name] == ls {
				delete(c.byName, ls.name)
			}
			c.met.DeleteLevel(ls.name)
			dropped = true
			return true
		}
		return false
	})
	return dropped
}

// setLevelsLocked hands the live levels to the adjuster and applies the
// adjustment that follows.
func (c *Controller) setLevelsLocked() {
	cfgs := make([]borrow.LevelConfig, len(c.live))
	for i, ls := range c.live {
		cfgs[i] = ls.bcfg
	}
	var (
		adjs []borrow.Adjustment
		err  error
	)
	withFeedsLocked(c.live, func() {
		now := c.clock.Now()
		adjs, err = c.adj.SetLevels(now, c.scl, cfgs)
		if err != nil {
			return
		}
		for _, ls := range c.live {
			ls.feed.integ = c.adj.Demand(ls.name)
			if ls.feed.integ != nil && ls.feed.seats != 0 {
				ls.feed.integ.Set(now, float64(ls.feed.seats))
			}
		}
	})
	if err != nil {
		c.lastErr = err
		c.log.Error("apf borrowing", "error", err)
		return
	}
	c.applyAdjustments(adjs)
}

// adjust runs one periodic borrowing adjustment (facts §4.2).
func (c *Controller) adjust() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropIdleLocked() {
		c.setLevelsLocked()
		return
	}
	var adjs []borrow.Adjustment
	withFeedsLocked(c.live, func() { adjs = c.adj.Update(c.clock.Now()) })
	c.applyAdjustments(adjs)
}

// applyAdjustments imposes new limits. Called with c.mu held but no level
// lock: SetConcurrencyLimit takes the level's lock.
func (c *Controller) applyAdjustments(adjs []borrow.Adjustment) {
	now := c.clock.Now()
	for i := range adjs {
		a := adjs[i]
		ls := c.byName[a.Name]
		if ls == nil {
			continue
		}
		ls.lastAdj.Store(&a)
		ls.maxSeats.Store(int64(a.MaxSeats))
		if !ls.exempt {
			ls.fq.SetConcurrencyLimit(a.Current)
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
	for _, ls := range c.live {
		if ls.exempt || ls.quiescing {
			continue
		}
		if ls.cfg.Queues > 0 {
			waitCap += float64(ls.cfg.Queues * max(1, ls.cfg.QueueLengthLimit))
		}
		if a := ls.lastAdj.Load(); a != nil {
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
	Limits *borrow.Adjustment
	// RetryAfter is the value the level's tracker answers now.
	RetryAfter int
}

// Levels lists every level with a queue set, quiescing ones included, in
// the order the adjuster sees them.
func (c *Controller) Levels() []LevelView {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]LevelView, 0, len(c.live))
	for _, ls := range c.live {
		out = append(out, LevelView{
			Name: ls.name, UID: ls.uid, Exempt: ls.exempt, Quiescing: ls.quiescing,
			Queue: ls.fq, Limits: ls.lastAdj.Load(), RetryAfter: ls.retry.Current(),
		})
	}
	return out
}

// Matcher returns the classification in force.
func (c *Controller) Matcher() *classify.Matcher { return c.snap.Load().matcher }
