package sim

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/engine"
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
	// Estimator configures work estimation; nil means
	// workestimate.DefaultConfig().
	Estimator *workestimate.Config
	// SampleInterval spaces the Series points; 0 means 1 s. At most
	// 100,000 points are kept per series.
	SampleInterval time.Duration
	// Progress, if set, is called now and then with the arrivals handled
	// and the total the source expects (0 if unknown).
	Progress func(done, total int64)
}

// base is the virtual time of the start of every run; any fixed instant
// would do.
var base = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

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

// evKind is what a request's pending event does.
type evKind uint8

const (
	evTimeout  evKind = iota + 1 // its wait limit passes
	evFinish                     // its handler returns
	evRelease                    // its final phase ends
	evWatchEnd                   // the watch it started closes
)

// simReq is one request in flight. It has at most one pending event at a
// time (waiting: its time-out; executing: its finish; lingering: its
// release; watching: its end), so the request itself is the event-queue
// entry and scheduling allocates nothing. simReqs are recycled.
type simReq struct {
	fq     fairqueue.Request
	at     int64 // the pending event's time, ns since base
	seq    uint64
	idx    int // position in the event heap, -1 when not in it
	kind   evKind
	lvl    *levelSim
	schema *tally
	flow   *flowTally

	service  int64
	watchFor int64
	watch    *request.Info // the watch's scope, nil for other requests
	forget   func()
}

type simEngine struct {
	cfg      Config
	interval int64

	eng     *engine.Engine
	snap    *engine.Snapshot
	levels  []*levelSim // by classify.PriorityLevel.Index
	byLevel map[*engine.Level]*levelSim
	schemas []*tally // by classify.FlowSchema.Index
	flows   map[flowKey]*flowTally

	counts  listCounts
	watches *workestimate.WatchTracker

	now    int64 // ns since base
	events eventHeap
	seq    uint64
	free   []*simReq
	active int // requests waiting, executing or lingering

	nextAdjust, nextSample int64
	samples                int

	res Result
}

// levelSim is one priority level of the engine, and what is measured of
// it.
type levelSim struct {
	e      *simEngine
	name   string
	el     *engine.Level
	exempt bool
	tally

	occ     fairqueue.Occupancy
	limit   int
	nominal int

	// Integrals over time, in seat-nanoseconds, up to lastNs.
	lastNs     int64
	seatsArea  float64
	limitArea  float64
	maxBorrow  int
	adjusted   bool
	rejectedIn int64 // rejections since the last sample
	series     LevelSeries
}

// done applies what an input on the level did: the seats in use are
// integrated for the utilization, and the requests it dispatched start.
func (l *levelSim) done(o engine.Outcome) {
	if o.Changed {
		l.integrate(l.e.now)
		l.occ = o.Occupancy
	}
	l.e.started(o.Dispatched)
}

// integrate brings the time integrals up to t.
func (l *levelSim) integrate(t int64) {
	if dt := t - l.lastNs; dt > 0 {
		l.seatsArea += float64(l.occ.SeatsInUse) * float64(dt)
		l.limitArea += float64(l.limit) * float64(dt)
		l.lastNs = t
	}
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
	eng, err := engine.New(engine.Config{
		ServerConcurrencyLimit: cfg.ServerConcurrencyLimit,
		RequestTimeout:         cfg.RequestTimeout,
		Estimator:              cfg.Estimator,
		ObjectCounts:           &e.counts,
		Watches:                e.watches,
	})
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	e.eng = eng
	e.cfg.RequestTimeout = eng.RequestTimeout()

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
	e.res.ServerConcurrencyLimit = eng.ServerConcurrencyLimit()
	e.res.SampleInterval = iv

	e.byLevel = map[*engine.Level]*levelSim{}
	ch, err := eng.Install(base, comp, nil)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	if len(ch.Problems) > 0 {
		return nil, fmt.Errorf("sim: %w", errors.Join(ch.Problems...))
	}
	for _, el := range ch.Added {
		e.byLevel[el] = &levelSim{e: e, name: el.Name(), el: el, exempt: el.Exempt()}
	}
	e.change(ch)
	for _, el := range e.snap.Levels() {
		e.levels = append(e.levels, e.byLevel[el])
	}
	e.schemas = make([]*tally, len(comp.Matcher().FlowSchemas()))
	for i := range e.schemas {
		e.schemas[i] = &tally{}
	}
	e.adjusted(ch.Adjustments)
	e.nextAdjust = int64(engine.AdjustmentPeriod)
	e.nextSample = e.interval
	return e, nil
}

// at converts ns since base to a time.
func at(ns int64) time.Time { return base.Add(time.Duration(ns)) }

// change applies what an engine-wide input did. A run installs one
// configuration, so no level ever leaves it.
func (e *simEngine) change(ch engine.Change) {
	for _, u := range ch.Updates {
		l := e.byLevel[u.Level]
		if u.Limit >= 0 {
			l.integrate(e.now)
			l.limit = u.Limit
		}
		l.done(u.Level.Apply(at(e.now), u))
	}
	if ch.Snapshot != nil {
		e.snap = ch.Snapshot
	}
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
		l.integrate(e.now)
		l.limit, l.nominal = a.Current, a.Nominal
		b := a.Current - a.Nominal
		if !l.adjusted || b > l.maxBorrow {
			l.maxBorrow, l.adjusted = b, true
		}
	}
}

func (e *simEngine) run(ctx context.Context, src Source, total int64) error {
	var (
		arr      Arrival
		have     bool
		srcDone  bool
		handled  int64
		lastAt   time.Duration
		progress = e.cfg.Progress
	)
	for iter := 0; ; iter++ {
		if iter&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !have && !srcDone {
			var err error
			arr, have, err = src.Next()
			if err != nil {
				return fmt.Errorf("sim: reading arrivals: %w", err)
			}
			if !have {
				srcDone = true
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
		if srcDone && e.active == 0 {
			break
		}
		tEv := int64(math.MaxInt64)
		if len(e.events) > 0 {
			tEv = e.events[0].at
		}
		tArr := int64(math.MaxInt64)
		if have {
			tArr = int64(arr.At)
		}
		tPer := min(e.nextAdjust, e.nextSample)
		switch {
		case tEv <= tArr && tEv <= tPer:
			e.event()
		case tPer <= tArr:
			e.periodic(tPer)
		default:
			e.arrive(&arr)
			have = false
			handled++
			if progress != nil && handled&0xffff == 0 {
				progress(handled, total)
			}
		}
	}
	e.res.Duration = time.Duration(e.now)
	// A last sample covers the partial interval at the end.
	if e.samples == 0 || e.nextSample-e.interval < e.now {
		e.sample(e.nextSample)
	}
	for _, l := range e.levels {
		l.integrate(e.now)
	}
	// Close the watches still open.
	for _, r := range e.events {
		if r.forget != nil {
			r.forget()
			r.forget = nil
		}
	}
	e.res.Requests = handled
	if progress != nil {
		progress(handled, max(total, handled))
	}
	return nil
}

// advance moves the clock to t.
func (e *simEngine) advance(t int64) {
	if t > e.now {
		e.now = t
	}
}

func (e *simEngine) periodic(t int64) {
	e.advance(t)
	if t == e.nextAdjust {
		e.nextAdjust += int64(engine.AdjustmentPeriod)
		// A run's one configuration never retires a level, and the
		// adjuster's levels do not change: Adjust cannot fail.
		var ws []engine.Window
		for _, el := range e.eng.Levels() {
			ws = append(ws, el.CloseWindow(at(t)))
		}
		ch := e.eng.Adjust(at(t), ws)
		e.change(ch)
		e.adjusted(ch.Adjustments)
		return
	}
	e.sample(t)
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
		s.SeatsInUse = append(s.SeatsInUse, float64(l.occ.SeatsInUse))
		s.Limit = append(s.Limit, float64(l.limit))
		s.Waiting = append(s.Waiting, float64(l.occ.Waiting))
		s.Rejected = append(s.Rejected, float64(l.rejectedIn))
		l.rejectedIn = 0
	}
}

// deadline is when a request arriving at now must be over: the request
// timeout, or its own shorter ?timeout= when it is not long-running.
func (e *simEngine) deadline(now time.Time, a *Arrival) time.Time {
	return now.Add(engine.TimeAllowed(e.cfg.RequestTimeout, &a.Attributes.Info))
}

func (e *simEngine) arrive(a *Arrival) {
	e.advance(int64(a.At))
	now := at(e.now)
	e.counts.n = a.ListSize
	p := e.snap.Place(now, &a.Attributes, e.deadline(now, a))
	res, est, l := &p.Result, p.Work, e.levels[p.PriorityLevel.Index]

	r := e.get()
	r.fq.Hash, r.fq.Work, r.fq.Tag = res.FlowHash, est, r
	r.lvl = l
	r.schema = e.schemas[res.FlowSchema.Index]
	key := flowKey{res.FlowSchema.Index, res.FlowDistinguisher}
	f := e.flows[key]
	if f == nil {
		f = &flowTally{key: key, level: l.name}
		e.flows[key] = f
	}
	f.saw(a.Client)
	r.flow = f
	r.service = int64(a.Service)
	if a.Attributes.Info.IsWatch() {
		info := a.Attributes.Info
		r.watch = &info
		r.watchFor = int64(a.WatchFor)
	}
	l.arrived++
	r.schema.arrived++
	f.arrived++

	o := l.el.Arrive(now, &r.fq)
	switch o.Decision {
	case fairqueue.Dispatched:
		e.active++
		e.start(r)
	case fairqueue.Queued:
		e.active++
		e.schedule(r, e.now+int64(p.WaitLimit), evTimeout)
	default:
		e.reject(r, o.Reason)
		e.put(r)
	}
	l.done(o)
}

// started starts every request of a dispatched list.
func (e *simEngine) started(rs []*fairqueue.Request) {
	for _, fr := range rs {
		e.start(fr.Tag.(*simReq))
	}
}

// start records a dispatch and schedules the handler's return.
func (e *simEngine) start(r *simReq) {
	w := int64(r.fq.WaitDuration())
	for _, t := range [...]*tally{&r.lvl.tally, r.schema, &r.flow.tally} {
		t.dispatched++
		t.waits.add(w)
	}
	if r.watch != nil {
		r.forget = e.watches.Register(r.watch)
	}
	e.schedule(r, e.now+r.service, evFinish)
}

func (e *simEngine) reject(r *simReq, reason fairqueue.RejectReason) {
	r.lvl.rejected[reason]++
	r.lvl.rejectedIn++
	r.schema.rejected[reason]++
	r.flow.rejected[reason]++
}

// event handles the earliest pending event.
func (e *simEngine) event() {
	r := e.events[0]
	e.advance(r.at)
	now := at(e.now)
	heap.Pop(&e.events)
	switch r.kind {
	case evTimeout:
		l := r.lvl
		o := l.el.Cancel(now, &r.fq)
		if o.Decision == fairqueue.Rejected {
			e.active--
			e.reject(r, fairqueue.TimeOut)
			e.put(r)
		}
		l.done(o)
	case evFinish:
		l := r.lvl
		o := l.el.Finish(now, &r.fq)
		if o.Release > 0 {
			e.schedule(r, e.now+int64(o.Release), evRelease)
		} else {
			e.over(r)
		}
		l.done(o)
	case evRelease:
		l := r.lvl
		o := l.el.Release(now, &r.fq)
		e.over(r)
		l.done(o)
	case evWatchEnd:
		e.put(r)
	}
}

// over ends a request's stay in its level; a watch stays registered for
// its WatchFor.
func (e *simEngine) over(r *simReq) {
	e.active--
	if r.forget != nil && r.watchFor > 0 {
		e.schedule(r, e.now+r.watchFor, evWatchEnd)
		return
	}
	e.put(r)
}

// schedule sets r's pending event.
func (e *simEngine) schedule(r *simReq, t int64, k evKind) {
	r.at, r.kind = t, k
	e.seq++
	r.seq = e.seq
	if r.idx >= 0 {
		heap.Fix(&e.events, r.idx)
	} else {
		heap.Push(&e.events, r)
	}
}

func (e *simEngine) get() *simReq {
	if n := len(e.free); n > 0 {
		r := e.free[n-1]
		e.free = e.free[:n-1]
		return r
	}
	return &simReq{idx: -1}
}

func (e *simEngine) put(r *simReq) {
	if r.forget != nil {
		r.forget()
	}
	*r = simReq{idx: -1}
	e.free = append(e.free, r)
}

// eventHeap orders pending events by time, then scheduling order.
type eventHeap []*simReq

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *eventHeap) Push(x any) {
	r := x.(*simReq)
	r.idx = len(*h)
	*h = append(*h, r)
}
func (h *eventHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	r.idx = -1
	return r
}

// result assembles the Result.
func (e *simEngine) result() *Result {
	res := e.res
	dur := float64(e.now)
	for _, l := range e.levels {
		lr := LevelResult{
			Name: l.name, Exempt: l.exempt,
			Counts:           l.counts(),
			Wait:             l.waits.stats(true),
			NominalSeats:     l.nominal,
			MaxBorrowedSeats: l.maxBorrow,
			Series:           l.series,
		}
		if l.limitArea > 0 && dur > 0 {
			lr.SeatUtilization = l.seatsArea / l.limitArea
		}
		res.Levels = append(res.Levels, lr)
	}
	for _, fs := range e.snap.Matcher().FlowSchemas() {
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
	fss := e.snap.Matcher().FlowSchemas()
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
