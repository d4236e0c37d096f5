package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/apfproject/apf/classify"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/apfproject/apf/capacity"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/engine"
	"github.com/apfproject/apf/engine/stepper"
	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/request"
	"github.com/apfproject/apf/workestimate"
)

// DefaultSampleInterval spaces the Series points unless configured.
const DefaultSampleInterval = time.Second

const (
	// maxSeries bounds the points of each series: a run longer than that
	// many sample intervals keeps the first ones only.
	maxSeries = 100_000
	// maxSpan bounds arrival times, service times and watch durations,
	// so that sums of them cannot overflow (some 36 years).
	maxSpan = 1 << 60
)

// Config configures a run.
type Config struct {
	// Name names the configuration in the Result; "" means "bootstrap"
	// when Objects is nil, else "custom".
	Name string
	// Objects are the FlowSchemas and PriorityLevelConfigurations; nil
	// means the bootstrap objects (mandatory and suggested). Missing
	// mandatory objects are imagined, as the server does.
	Objects []config.Object
	// ServerConcurrencyLimit is the seats shared by the levels; 0 means
	// 600 (the sum of the two inflight flags' defaults).
	ServerConcurrencyLimit int
	// RequestTimeout is the server's request timeout; 0 means
	// engine.DefaultRequestTimeout. A request waits in its queue at most a
	// quarter of the time it has (engine.WaitLimit).
	RequestTimeout time.Duration
	// DeadlineAwareQueueing simulates deadline-aware queueing
	// (engine.Config.DeadlineAwareQueueing).
	DeadlineAwareQueueing bool
	// PacedDispatch simulates paced dispatch
	// (engine.Config.PacedDispatch).
	PacedDispatch bool
	// Estimator configures work estimation; nil means
	// workestimate.DefaultConfig().
	Estimator *workestimate.Config
	// SampleInterval spaces the Series points; 0 means 1 s. At most
	// 100,000 points are kept per series.
	SampleInterval time.Duration
	// Progress, if set, is called now and then with the arrivals handled
	// and the total the source expects (0 if unknown).
	Progress func(done, total int64)
	// Upstream, when set, models the service behind the server (see
	// Upstream): a request dispatched executes for as long as the
	// upstream takes to answer it, its own service time plus its wait
	// inside. Nil takes the source's (a workload's upstream section),
	// if any; without one, a request executes for its own service time
	// whatever the load.
	Upstream *Upstream
	// AdaptiveLimit, when set, learns the server concurrency limit from
	// the requests' latencies (package capacity), on the virtual clock,
	// starting from its Initial limit: ServerConcurrencyLimit is then
	// ignored. Each change goes to the levels as a new server limit.
	AdaptiveLimit *capacity.Config
}

// base is the virtual time of the start of every run: 2000-01-01 UTC on
// the wall clock, carrying a monotonic clock reading as the times a
// server takes from time.Now do. Every virtual time is base plus an
// offset, so with the reading the queue sets, integrators and estimators
// compare and subtract them on the monotonic fast path (one integer
// operation) instead of from the wall clock's seconds and nanoseconds
// with an overflow check, a tenth of a simulation's time. Only
// differences and order are ever read, and those are the offsets'
// whatever the reading, so results do not depend on when a run starts.
var base = func() time.Time {
	now := time.Now()
	return now.Add(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Sub(now.Round(0)))
}()

// Run replays src through APF as configured by cfg on a virtual clock and
// summarizes what happened. It drives the same engine.Engine as the
// server's controller — classification, work estimation, one queue set per
// priority level, the periodic borrowing adjustment — but single-threaded
// and event by event, so a run is deterministic: the same configuration
// and arrivals give the same Result.
// Run stops early, with ctx's error, when ctx ends.
func Run(ctx context.Context, cfg Config, src Source) (*Result, error) {
	e, err := newEngine(cfg)
	if err != nil {
		return nil, err
	}
	if s, ok := src.(Seeded); ok {
		e.res.Seed = s.Seed()
	}
	if u := cfg.Upstream; u != nil {
		e.up = newUpstreamSim(u, e.st.Engine().ServerConcurrencyLimit())
	} else if s, ok := src.(interface{ Upstream() *Upstream }); ok && s.Upstream() != nil {
		e.up = newUpstreamSim(s.Upstream(), e.st.Engine().ServerConcurrencyLimit())
	}
	var total int64
	if s, ok := src.(Sized); ok {
		total = s.Total()
	}
	if err := e.run(ctx, src, total); err != nil {
		return nil, err
	}
	r := e.result()
	if s, ok := src.(interface{ AuditStats() AuditStats }); ok {
		st := s.AuditStats()
		r.Audit = &st
	}
	return r, nil
}

// simReq is what the simulator keeps of one request in flight, beside
// its life in the stepper: where its counts go, and the watch it opens.
// simReqs are recycled.
type simReq struct {
	lvl    *levelSim
	schema *tally
	flow   *flowTally

	// service is the time the request's handler takes unloaded, latency
	// the time it executes (the same, or its time in the upstream model),
	// and client its tally in the upstream phase it arrived in, if any.
	service, latency time.Duration
	client           *clientTally

	watchFor time.Duration
	watch    *request.Info // the watch's scope, nil for other requests
	forget   func()
}

type simEngine struct {
	cfg      Config
	interval int64

	st      *stepper.Stepper
	levels  []*levelSim // by classify.PriorityLevel.Index
	byLevel map[*stepper.Level]*levelSim
	schemas []*tally // by classify.FlowSchema.Index
	flows   map[flowKey]*flowTally

	counts  listCounts
	watches *workestimate.WatchTracker

	free []*simReq

	// up is the upstream model, nil without one; adapt the adaptive
	// limit, nil when the limit is static; executing counts the requests
	// dispatched and not over.
	up        *upstreamSim
	upSeries  UpstreamSeries
	adapt     *adaptiveSim
	executing int

	nextSample int64
	samples    int

	res Result
}

// levelSim is one priority level of the run, and what is measured of it.
type levelSim struct {
	sl     *stepper.Level
	name   string
	exempt bool
	queues int // fairqueue.Config.Queues at the start: < 0 exempt, 0 reject
	qlen   int // the queue length limit at the start
	tally

	nominal    int
	maxBorrow  int
	adjusted   bool
	rejectedIn int64 // rejections since the last sample
	series     LevelSeries
}

// tally counts requests and waits for a level, schema or flow.
type tally struct {
	arrived, dispatched int64
	rejected            [fairqueue.TimeOut + 1]int64
	waits               waitSketch
}

func (t *tally) counts() Counts {
	c := Counts{Arrived: t.arrived, Dispatched: t.dispatched, Rejected: map[string]int64{}}
	for r, n := range t.rejected {
		if n > 0 {
			c.Rejected[fairqueue.RejectReason(r).String()] = n
		}
	}
	return c
}

type flowKey struct {
	schema int
	dist   string
}

// maxFlowClients bounds FlowResult.Clients.
const maxFlowClients = 10

type flowTally struct {
	tally
	key     flowKey
	level   string
	clients []string
	more    bool
}

func (f *flowTally) saw(client string) {
	if n := len(f.clients); n > 0 && f.clients[n-1] == client {
		return
	}
	if slices.Contains(f.clients, client) {
		return
	}
	if len(f.clients) < maxFlowClients {
		f.clients = append(f.clients, client)
	} else {
		f.more = true
	}
}

// listCounts answers the estimator's object counts with the listSize of
// the request being estimated: the engine sets n before each estimate.
type listCounts struct{ n int64 }

func (c *listCounts) Get(time.Time, string) (workestimate.Stats, error) {
	if c.n <= 0 {
		return workestimate.Stats{}, workestimate.ErrCountNotFound
	}
	return workestimate.Stats{Count: c.n}, nil
}

func newEngine(cfg Config) (*simEngine, error) {
	e := &simEngine{cfg: cfg, flows: map[flowKey]*flowTally{}, watches: workestimate.NewWatchTracker()}
	iv := cfg.SampleInterval
	if iv == 0 {
		iv = DefaultSampleInterval
	}
	if iv < 0 {
		return nil, fmt.Errorf("sim: negative sample interval %v", iv)
	}
	e.interval = int64(iv)
	scl := cfg.ServerConcurrencyLimit
	if cfg.AdaptiveLimit != nil {
		a, err := newAdaptiveSim(*cfg.AdaptiveLimit)
		if err != nil {
			return nil, fmt.Errorf("sim: adaptive limit: %w", err)
		}
		e.adapt, scl = a, a.want
	}
	st, err := stepper.New(stepper.Config{
		Engine: engine.Config{
			ServerConcurrencyLimit: scl,
			RequestTimeout:         cfg.RequestTimeout,
			Estimator:              cfg.Estimator,
			ObjectCounts:           &e.counts,
			Watches:                e.watches,
			DeadlineAwareQueueing:  cfg.DeadlineAwareQueueing,
			PacedDispatch:          cfg.PacedDispatch,
		},
		Start: base,
		Hooks: stepper.Hooks{
			Dispatched: e.dispatched,
			Rejected:   e.rejected,
			Ended:      e.ended,
			Gone:       func(r *stepper.Request) { e.put(r.Tag.(*simReq)) },
			Changed:    func(_ time.Time, ch engine.Change) { e.adjusted(ch.Adjustments) },
		},
	})
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	e.st = st
	e.cfg.RequestTimeout = st.Engine().RequestTimeout()

	name := cfg.Name
	var comp *engine.Compiled
	if cfg.Objects == nil {
		comp = engine.CompileObjects(bootstrap.FlowSchemas(), bootstrap.PriorityLevels())
		if name == "" {
			name = "bootstrap"
		}
	} else {
		comp = engine.Compile(cfg.Objects)
		if len(comp.Invalid) > 0 {
			return nil, fmt.Errorf("sim: invalid configuration: %w", errors.Join(comp.Invalid...))
		}
		if name == "" {
			name = "custom"
		}
	}
	for _, p := range comp.Matcher().Problems() {
		e.res.Problems = append(e.res.Problems, p.String())
	}
	e.res.Name = name
	e.res.ServerConcurrencyLimit = st.Engine().ServerConcurrencyLimit()
	e.res.SampleInterval = iv

	// The levels are known once installed; the install's adjustment
	// reaches them after.
	e.byLevel = map[*stepper.Level]*levelSim{}
	ch, err := st.Install(0, comp)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	if len(ch.Problems) > 0 {
		return nil, fmt.Errorf("sim: %w", errors.Join(ch.Problems...))
	}
	byEngine := map[*engine.Level]*stepper.Level{}
	for _, sl := range st.Levels() {
		byEngine[sl.Engine()] = sl
	}
	for _, el := range st.Snapshot().Levels() {
		sl := byEngine[el]
		cfg := el.Config()
		l := &levelSim{sl: sl, name: el.Name(), exempt: el.Exempt(), queues: cfg.Queues, qlen: cfg.QueueLengthLimit}
		e.levels = append(e.levels, l)
		e.byLevel[sl] = l
	}
	e.schemas = make([]*tally, len(comp.Matcher().FlowSchemas()))
	for i := range e.schemas {
		e.schemas[i] = &tally{}
	}
	e.adjusted(ch.Adjustments)
	e.nextSample = e.interval
	return e, nil
}

// adjusted records what an adjustment the engine imposed did to the
// levels: their nominal seats and the most they borrowed.
func (e *simEngine) adjusted(adjs []engine.Adjustment) {
	for i := range adjs {
		a := &adjs[i]
		var l *levelSim
		for _, x := range e.levels {
			if x.name == a.Name {
				l = x
			}
		}
		if l == nil {
			continue
		}
		l.nominal = a.Nominal
		b := a.Current - a.Nominal
		if !l.adjusted || b > l.maxBorrow {
			l.maxBorrow, l.adjusted = b, true
		}
	}
}

// now is the run's virtual time, in ns since base.
func (e *simEngine) now() int64 { return int64(e.st.Now().Sub(base)) }

func (e *simEngine) run(ctx context.Context, src Source, total int64) error {
	var (
		arr      Arrival
		have     bool
		srcDone  bool
		handled  int64
		lastAt   time.Duration
		progress = e.cfg.Progress
	)
	f, _ := src.(filler)
	for iter := 0; ; iter++ {
		if iter&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !have && !srcDone {
			var err error
			if f != nil {
				have, err = f.fill(&arr)
			} else {
				arr, have, err = src.Next()
			}
			if err != nil {
				return fmt.Errorf("sim: reading arrivals: %w", err)
			}
			if !have {
				srcDone = true
				if e.up != nil {
					// The clients have stopped: what follows is the
					// drain, which no phase measures.
					e.up.stop(int64(lastAt))
				}
			} else {
				if arr.At < lastAt {
					return fmt.Errorf("sim: arrival at %v after one at %v: a source must yield arrivals in time order", arr.At, lastAt)
				}
				if arr.At < 0 || arr.Service < 0 || arr.WatchFor < 0 {
					return fmt.Errorf("sim: arrival at %v (client %q): negative time", arr.At, arr.Client)
				}
				if arr.At > maxSpan || arr.Service > maxSpan || arr.WatchFor > maxSpan {
					return fmt.Errorf("sim: arrival at %v (client %q): times beyond %v", arr.At, arr.Client, time.Duration(maxSpan))
				}
				lastAt = arr.At
			}
		}
		if srcDone && e.st.Active() == 0 {
			break
		}
		// What is due first: the stepper's events (the requests' and the
		// borrowing adjustment), then a sample, then the arrival.
		tArr := int64(math.MaxInt64)
		if have {
			tArr = int64(arr.At)
		}
		if next, ok := e.st.Next(); ok {
			if t := int64(next); t <= tArr && t <= e.nextSample {
				e.st.Step()
				if err := e.applyLimit(); err != nil {
					return err
				}
				continue
			}
		}
		if e.nextSample <= tArr {
			e.sample(e.nextSample)
			continue
		}
		e.arrive(&arr)
		if err := e.applyLimit(); err != nil {
			return err
		}
		have = false
		handled++
		if progress != nil && handled&0xffff == 0 {
			progress(handled, total)
		}
	}
	end := e.now()
	e.res.Duration = time.Duration(end)
	// A last sample covers the partial interval at the end.
	if e.samples == 0 || e.nextSample-e.interval < end {
		e.sample(e.nextSample)
	}
	e.res.Requests = handled
	if e.up != nil {
		e.res.Upstream = e.up.result(end, e.upSeries)
	}
	if e.adapt != nil {
		e.res.Adaptive = e.adapt.result()
	}
	if progress != nil {
		progress(handled, max(total, handled))
	}
	return nil
}

// sample appends one point to every level's series.
func (e *simEngine) sample(t int64) {
	e.nextSample = t + e.interval
	if e.samples >= maxSeries {
		return
	}
	e.samples++
	for _, l := range e.levels {
		s := &l.series
		occ := l.sl.Occupancy()
		s.SeatsInUse = append(s.SeatsInUse, float64(occ.SeatsInUse))
		s.Limit = append(s.Limit, float64(l.sl.Limit()))
		s.Waiting = append(s.Waiting, float64(occ.Waiting))
		s.Rejected = append(s.Rejected, float64(l.rejectedIn))
		l.rejectedIn = 0
	}
	scl := e.st.Engine().ServerConcurrencyLimit()
	if e.adapt != nil {
		e.adapt.sample(scl)
	}
	if u := e.up; u != nil {
		s := &e.upSeries
		s.Capacity = append(s.Capacity, float64(u.phases[u.phaseAt(t)].capacity))
		s.Inside = append(s.Inside, float64(u.inside))
		s.Queued = append(s.Queued, float64(u.queued(t)))
		s.ServerLimit = append(s.ServerLimit, float64(scl))
	}
}

// applyLimit puts into force the server limit the adaptive limit wants,
// if it wants another, between two of the stepper's inputs. It is called
// after each of them, and is small enough to be inlined there.
func (e *simEngine) applyLimit() error {
	if e.adapt == nil || !e.adapt.dirty {
		return nil
	}
	return e.setLimit()
}

// setLimit puts the limit the adaptive limit wants into force. The
// stepper runs what is due at the same instant first, which may change
// what it wants again.
func (e *simEngine) setLimit() error {
	for e.adapt.dirty {
		e.adapt.dirty = false
		limit := e.adapt.want
		if err := e.st.SetServerLimit(time.Duration(e.now()), limit); err != nil {
			return fmt.Errorf("sim: adaptive limit %d: %w", limit, err)
		}
		if e.up != nil {
			e.up.setLimit(e.now(), e.st.Engine().ServerConcurrencyLimit())
		}
	}
	return nil
}

func (e *simEngine) arrive(a *Arrival) {
	e.counts.n = a.ListSize
	attrs := &a.Attributes
	if a.tmpl != nil {
		attrs = &a.tmpl.attrs
	}
	allowed := engine.TimeAllowed(e.cfg.RequestTimeout, &attrs.Info)
	var (
		p engine.Placement
		f *flowTally
	)
	if t := a.tmpl; t != nil {
		// A template's requests classify alike: once per configuration.
		e.st.RunUntil(a.At)
		snap := e.st.Snapshot()
		if m := snap.Matcher(); t.matcher != m {
			t.matcher, t.class = m, m.Classify(attrs)
			t.flow = e.flow(&t.class)
		}
		p = snap.PlaceClassified(e.st.Now(), attrs, t.class, allowed)
		f = t.flow
	} else {
		p = e.st.Place(a.At, attrs, base.Add(a.At+allowed))
		f = e.flow(&p.Result)
	}
	res := &p.Result
	l := e.levels[res.PriorityLevel.Index]

	r := e.get()
	r.lvl = l
	r.schema = e.schemas[res.FlowSchema.Index]
	f.saw(a.Client)
	r.flow = f
	if attrs.Info.IsWatch() {
		if a.tmpl != nil {
			r.watch = &attrs.Info // the template's, which nothing changes
		} else {
			info := attrs.Info
			r.watch = &info
		}
		r.watchFor = a.WatchFor
	}
	l.arrived++
	r.schema.arrived++
	f.arrived++
	r.service = a.Service
	service := a.Service
	if e.up != nil {
		// The upstream says how long it takes once it is sent.
		service = stepper.Unknown
		group := a.Group
		if group == "" {
			group = a.Client
		}
		if r.client = e.up.client(int64(a.At), group); r.client != nil {
			r.client.arrived++
		}
	}
	e.st.Arrive(&p, service, r)
}

// flow returns the tally of res's flow, made on its first request.
func (e *simEngine) flow(res *classify.Result) *flowTally {
	key := flowKey{res.FlowSchema.Index, res.FlowDistinguisher}
	f := e.flows[key]
	if f == nil {
		f = &flowTally{key: key, level: e.levels[res.PriorityLevel.Index].name}
		e.flows[key] = f
	}
	return f
}

// dispatched records a dispatch; a watch is registered while it runs.
func (e *simEngine) dispatched(sr *stepper.Request, _ time.Time) {
	r := sr.Tag.(*simReq)
	w := int64(sr.Waited())
	for _, t := range [...]*tally{&r.lvl.tally, r.schema, &r.flow.tally} {
		t.dispatched++
		t.waits.add(w)
	}
	if r.watch != nil {
		r.forget = e.watches.Register(r.watch)
	}
	e.executing++
	r.latency = r.service
	if e.up != nil {
		_, r.latency = e.up.admit(e.now(), r.service)
		sr.SetService(r.latency)
	}
}

func (e *simEngine) rejected(sr *stepper.Request, _ time.Time, reason fairqueue.RejectReason) {
	r := sr.Tag.(*simReq)
	r.lvl.rejected[reason]++
	r.lvl.rejectedIn++
	r.schema.rejected[reason]++
	r.flow.rejected[reason]++
	if r.client != nil {
		r.client.rejected++
	}
	e.put(r)
}

// ended ends a request's stay in its level; a watch stays registered for
// its WatchFor.
func (e *simEngine) ended(sr *stepper.Request, now time.Time) time.Duration {
	r := sr.Tag.(*simReq)
	if e.up != nil {
		e.up.served(e.now(), r.service)
		if c := r.client; c != nil {
			c.served++
			c.latency.add(int64(sr.Waited() + r.latency))
		}
	}
	if e.adapt != nil && r.watch == nil {
		// A watch's time is its client's: only requests that are not
		// long-running tell of the upstream.
		// Busy: the requests executing and those waiting in the levels'
		// queues (capacity.Sample.Busy), as the controller counts them.
		e.adapt.observe(now, r.latency, max(sr.Work().InitialSeats, 1), max(e.st.Active(), e.executing))
	}
	e.executing--
	if r.forget != nil && r.watchFor > 0 {
		return r.watchFor
	}
	e.put(r)
	return 0
}

func (e *simEngine) get() *simReq {
	if n := len(e.free); n > 0 {
		r := e.free[n-1]
		e.free = e.free[:n-1]
		return r
	}
	return &simReq{}
}

func (e *simEngine) put(r *simReq) {
	if r.forget != nil {
		r.forget()
	}
	*r = simReq{}
	e.free = append(e.free, r)
}

// result assembles the Result.
func (e *simEngine) result() *Result {
	res := e.res
	dur := float64(e.now())
	for _, l := range e.levels {
		lr := LevelResult{
			Name: l.name, Exempt: l.exempt,
			Counts:           l.counts(),
			Wait:             l.waits.stats(true),
			NominalSeats:     l.nominal,
			MaxBorrowedSeats: l.maxBorrow,
			Series:           l.series,
		}
		if l.queues > 0 {
			lr.Queues, lr.QueueLengthLimit = l.queues, l.qlen
		}
		if dur > 0 {
			lr.SeatUtilization = l.sl.Utilization()
		}
		res.Levels = append(res.Levels, lr)
	}
	for _, fs := range e.st.Snapshot().Matcher().FlowSchemas() {
		t := e.schemas[fs.Index]
		res.FlowSchemas = append(res.FlowSchemas, SchemaResult{
			Name: fs.Name, PriorityLevel: fs.PriorityLevel.Name,
			Counts: t.counts(), Wait: t.waits.stats(true),
		})
	}
	flows := make([]*flowTally, 0, len(e.flows))
	for _, f := range e.flows {
		flows = append(flows, f)
	}
	slices.SortFunc(flows, func(a, b *flowTally) int {
		if c := cmp.Compare(b.arrived, a.arrived); c != 0 {
			return c
		}
		if c := cmp.Compare(a.key.schema, b.key.schema); c != 0 {
			return c
		}
		return strings.Compare(a.key.dist, b.key.dist)
	})
	fss := e.st.Snapshot().Matcher().FlowSchemas()
	for _, f := range flows[:min(len(flows), TopFlows)] {
		clients := slices.Clone(f.clients)
		slices.Sort(clients)
		if f.more {
			clients = append(clients, "…")
		}
		res.Flows = append(res.Flows, FlowResult{
			FlowSchema: fss[f.key.schema].Name, Distinguisher: f.key.dist,
			PriorityLevel: f.level, Clients: clients,
			Counts: f.counts(), Wait: f.waits.stats(true),
		})
	}
	return &res
}
