// Package stepper runs package engine on virtual time: the one driver of
// the engine for every clock that is not the wall clock. It holds the
// requests in flight and one heap of their pending events (a wait limit
// passing, a handler returning after its service time, a final phase
// ending), plus the periodic borrowing adjustment, and feeds each to the
// engine at its own time, one at a time, applying what the engine
// returns. The simulator (package sim) steps it through a whole recorded
// or synthetic workload; the shadow configuration (package shadow) steps
// it behind the live traffic, its virtual clock following the timestamps
// of the live arrivals and completions it is handed.
//
// # The model
//
// A request's life is written here once. Place classifies a request
// arriving at a time and Arrive admits it, with the time it will execute
// once dispatched, or Unknown when only a later Finish will say. A
// request the engine queues waits until a later event dispatches it or
// its wait limit passes (it is then rejected with time-out); a request
// dispatched executes for its service time, then holds the seats of its
// final phase for as long as its estimate says; a request of unknown
// service executes until Finish, or, when Config.Bound is set, until
// Bound after its arrival (it is then Forced). Every request has at most
// one pending event, so the request is its own entry in the heap and
// scheduling allocates nothing; requests are recycled.
//
// The driver hears what happens through Hooks, called as it happens, in
// virtual-time order: a request dispatched, rejected, ended (its seats
// all given back), and each engine-wide change (adjustments, levels
// dropped). Each Level keeps its occupancy, its current limit and its
// utilization over time.
//
// Times are given as durations since Config.Start, as a simulated
// workload counts them. Events due at the same instant run in the order
// they were scheduled, request events before the adjustment; a time
// earlier than the latest one seen counts as that one (virtual time never
// goes back).
//
// # Concurrency
//
// A Stepper is not safe for concurrent use: it is single-threaded, like
// the engine's inputs it makes. It owns no goroutine, lock or clock.
package stepper

import (
	"math"
	"time"

	"github.com/apfproject/apf/engine"
	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/request"
)

// Unknown is the service time of a request whose end only Finish will
// tell.
const Unknown time.Duration = -1

// Config configures a Stepper.
type Config struct {
	// Engine configures the engine the Stepper runs.
	Engine engine.Config
	// Start is the virtual time the Stepper starts at.
	Start time.Time
	// Bound, when positive, ends a request of unknown service that
	// executes still Bound after its arrival, as if Finish had said so
	// then (Request.Forced).
	Bound time.Duration
	// Hooks hear what happens.
	Hooks Hooks
}

// Hooks are the driver's ears; any may be nil. They are called from
// within the Stepper's calls, at the virtual time of what they report,
// and must not call the Stepper.
type Hooks struct {
	// Dispatched: r holds its seats from now on, after waiting since its
	// arrival.
	Dispatched func(r *Request, now time.Time)
	// Rejected: r was turned away at now, at once or when its wait limit
	// passed (reason time-out). r is recycled when the hook returns.
	Rejected func(r *Request, now time.Time, reason fairqueue.RejectReason)
	// Ended: r gave its last seat back at now. It returns how long the
	// driver wants r kept (a watch the request opened, say), and Gone
	// hears that it is gone then; with 0 r is recycled when the hook
	// returns.
	Ended func(r *Request, now time.Time) (keep time.Duration)
	// Gone: a request Ended kept is gone, and is recycled when the hook
	// returns.
	Gone func(r *Request)
	// Changed: an engine-wide input (a configuration installed, the
	// server limit changed, the periodic adjustment) changed the levels.
	Changed func(now time.Time, ch engine.Change)
}

// Level is one of the engine's priority levels as the Stepper runs it.
type Level struct {
	s     *Stepper
	el    *engine.Level
	occ   fairqueue.Occupancy
	limit int

	// Integrals over time, in seat-nanoseconds, up to lastNs.
	lastNs               int64
	seatsArea, limitArea float64

	// pace is a paced level's Tick event (engine.Outcome.Wake).
	pace Request
}

// Engine returns the engine's level.
func (l *Level) Engine() *engine.Level { return l.el }

// Occupancy returns what the level holds now.
func (l *Level) Occupancy() fairqueue.Occupancy { return l.occ }

// Limit returns the level's current limit from the latest adjustment.
func (l *Level) Limit() int { return l.limit }

// Utilization returns the level's seats in use over its current limit,
// each integrated over time since the level was created, up to the
// Stepper's time; 0 while the limit has been 0 all along.
func (l *Level) Utilization() float64 {
	l.integrate(l.s.now)
	if l.limitArea <= 0 {
		return 0
	}
	return l.seatsArea / l.limitArea
}

// integrate brings the integrals up to t.
func (l *Level) integrate(t int64) {
	if dt := t - l.lastNs; dt > 0 {
		l.seatsArea += float64(l.occ.SeatsInUse) * float64(dt)
		l.limitArea += float64(l.limit) * float64(dt)
		l.lastNs = t
	}
}

// evKind is what a pending event does.
type evKind uint8

const (
	evTimeout evKind = iota + 1 // the wait limit passes
	evFinish                    // the handler returns after its service time
	evForce                     // the Bound of a request of unknown service passes
	evRelease                   // the final phase ends
	evGone                      // a request kept after its end goes
	evAdjust                    // the periodic borrowing adjustment
	evTick                      // a paced level's gap between starts passes
)

// state is where a request is in its life.
type state uint8

const (
	stWaiting state = iota + 1
	stExecuting
	stLingering
	stKept
)

// Request is one request's life in the Stepper. It is recycled once over:
// the driver must not keep it after the hook that ends it (Rejected,
// Ended without keep, Gone).
type Request struct {
	// Tag is the driver's.
	Tag any

	fq      fairqueue.Request
	level   *Level
	arrival int64 // ns since the start
	start   int64
	service time.Duration
	limit   time.Duration // the wait limit
	state   state
	forced  bool
	// dispatching is set while Hooks.Dispatched hears of the request
	// (SetService).
	dispatching bool

	// The pending event.
	at   int64
	idx  int // in the heap, -1 when not
	kind evKind
}

// Work returns the work estimate the request was admitted with.
func (r *Request) Work() fairqueue.WorkEstimate { return r.fq.Work }

// Arrival returns when the request arrived.
func (r *Request) Arrival() time.Time { return r.level.s.at(r.arrival) }

// Waited returns how long the request waited before dispatch (0 before).
func (r *Request) Waited() time.Duration {
	if r.state < stExecuting {
		return 0
	}
	return time.Duration(r.start - r.arrival)
}

// Forced reports whether the request of unknown service was ended at its
// Bound, its Finish never heard.
func (r *Request) Forced() bool { return r.forced }

// Stepper runs an engine on virtual time. Create it with New.
type Stepper struct {
	eng    *engine.Engine
	snap   *engine.Snapshot
	levels map[*engine.Level]*Level
	index  []*Level // the snapshot's levels, by classify.PriorityLevel.Index
	hooks  Hooks
	bound  time.Duration

	base   time.Time
	now    int64     // ns since base
	nowT   time.Time // base + now
	events eventHeap
	seq    uint64
	adjust Request // the periodic adjustment's event
	free   []*Request
	active int
}

// New returns a Stepper at cfg.Start with no configuration installed.
func New(cfg Config) (*Stepper, error) {
	eng, err := engine.New(cfg.Engine)
	if err != nil {
		return nil, err
	}
	s := &Stepper{eng: eng, levels: map[*engine.Level]*Level{}, hooks: cfg.Hooks, bound: cfg.Bound, base: cfg.Start, nowT: cfg.Start}
	s.adjust = Request{idx: -1, kind: evAdjust}
	return s, nil
}

// Engine returns the engine the Stepper runs. Its inputs are the
// Stepper's to make.
func (s *Stepper) Engine() *engine.Engine { return s.eng }

// Snapshot returns the snapshot requests are placed against, nil before
// the first Install.
func (s *Stepper) Snapshot() *engine.Snapshot { return s.snap }

// Levels returns the levels in the borrowing books, in the adjuster's
// order.
func (s *Stepper) Levels() []*Level {
	els := s.eng.Levels()
	out := make([]*Level, len(els))
	for i, el := range els {
		out[i] = s.levels[el]
	}
	return out
}

// Now returns the Stepper's virtual time: the latest time it was given or
// ran an event at. The inputs take their times as durations since
// Config.Start; a time before the latest one counts as that one.
func (s *Stepper) Now() time.Time { return s.nowT }

// Active returns how many requests wait, execute or hold final-phase
// seats.
func (s *Stepper) Active() int { return s.active }

// Pending returns how many events are pending: one for each request that
// waits, executes for a known time (or until its Bound) or holds
// final-phase seats, one for each request kept, and the adjustment.
func (s *Stepper) Pending() int { return len(s.events) }

// Next returns the time of the earliest pending event, as a duration since
// Config.Start, and false when there is none.
func (s *Stepper) Next() (time.Duration, bool) {
	if len(s.events) == 0 {
		return 0, false
	}
	return time.Duration(s.events[0].at), true
}

func (s *Stepper) at(ns int64) time.Time { return s.base.Add(time.Duration(ns)) }

// ns converts at, a time since the start, to what the heap orders,
// clamped: times come from the driver.
func ns(at time.Duration) int64 {
	return int64(max(min(at, math.MaxInt64/2), 0))
}

// RunUntil runs every event due by at, each at its own time, and moves the
// virtual time to at.
func (s *Stepper) RunUntil(at time.Duration) {
	end := ns(at)
	for len(s.events) > 0 && s.events[0].at <= end {
		s.step()
	}
	s.advance(end)
}

// Step runs the earliest pending event, if any.
func (s *Stepper) Step() {
	if len(s.events) > 0 {
		s.step()
	}
}

func (s *Stepper) advance(t int64) {
	if t > s.now {
		s.now, s.nowT = t, s.at(t)
	}
}

// Install runs what is due by at, then puts a compiled configuration
// into force (engine.Engine.Install). The first one starts the
// periodic borrowing adjustment.
func (s *Stepper) Install(at time.Duration, c *engine.Compiled) (engine.Change, error) {
	s.RunUntil(at)
	ch, err := s.eng.Install(s.Now(), c, s.windows())
	if err != nil {
		return ch, err
	}
	if s.apply(ch) {
		// A level that left was idle already: dropped at once, as the
		// next adjustment would.
		s.adjustNow()
	}
	if s.adjust.idx < 0 {
		s.schedule(&s.adjust, s.now+int64(engine.AdjustmentPeriod), evAdjust)
	}
	return ch, nil
}

// SetServerLimit runs what is due by at, then changes the seats shared by
// all levels (engine.Engine.SetServerLimit).
func (s *Stepper) SetServerLimit(at time.Duration, limit int) error {
	s.RunUntil(at)
	if limit == s.eng.ServerConcurrencyLimit() {
		return nil
	}
	ch, err := s.eng.SetServerLimit(s.Now(), limit, s.windows())
	if err != nil {
		return err
	}
	s.apply(ch)
	return nil
}

// windows closes every level's demand window now.
func (s *Stepper) windows() []engine.Window {
	now := s.Now()
	els := s.eng.Levels()
	ws := make([]engine.Window, len(els))
	for i, el := range els {
		ws[i] = el.CloseWindow(now)
	}
	return ws
}

// apply applies what an engine-wide input did, in the order
// engine.Change documents, and reports whether a level that left is idle
// already.
func (s *Stepper) apply(ch engine.Change) (dropNow bool) {
	now := s.Now()
	for _, el := range ch.Added {
		l := &Level{s: s, el: el, lastNs: s.now}
		l.pace = Request{idx: -1, kind: evTick, level: l}
		s.levels[el] = l
	}
	for _, u := range ch.Updates {
		l := s.levels[u.Level]
		l.done(s, u.Level.Apply(now, u))
	}
	if ch.Snapshot != nil {
		s.snap = ch.Snapshot
		els := s.snap.Levels()
		if cap(s.index) < len(els) {
			s.index = make([]*Level, len(els))
		}
		s.index = s.index[:len(els)]
		for i, el := range els {
			s.index[i] = s.levels[el]
		}
	}
	// The Stepper places requests with the snapshot it applied last, so
	// a level that left gets no arrivals to refuse; it is quiesced all
	// the same, as the engine asks.
	for _, el := range ch.Switched {
		el.Quiesce()
	}
	for _, el := range ch.Retired {
		if el.Quiesce() {
			dropNow = true
		}
	}
	for _, el := range s.eng.Levels() {
		if l, a := s.levels[el], el.Limits(); a != nil && a.Current != l.limit {
			l.integrate(s.now)
			l.limit = a.Current
		}
	}
	for _, el := range ch.Dropped {
		s.levels[el].integrate(s.now)
		delete(s.levels, el)
	}
	if s.hooks.Changed != nil {
		s.hooks.Changed(now, ch)
	}
	return dropNow
}

// adjustNow runs the borrowing adjustment now.
func (s *Stepper) adjustNow() {
	s.apply(s.eng.Adjust(s.Now(), s.windows()))
}

// Place runs what is due by at, then classifies a request arriving then
// and estimates its work (engine.Snapshot.Place; deadline is the zero time
// when it has none). Install a configuration first.
func (s *Stepper) Place(at time.Duration, a *request.Attributes, deadline time.Time) engine.Placement {
	s.RunUntil(at)
	return s.snap.Place(s.Now(), a, deadline)
}

// Arrive admits the request p places (from Place, with nothing run
// between the two), which executes for service once dispatched, or, with
// Unknown, until Finish says how long. It returns the request, or nil
// when it is over already: rejected at once (Hooks.Rejected has heard).
// Hooks.Dispatched may hear of it, and of others it let start, before
// Arrive returns.
func (s *Stepper) Arrive(p *engine.Placement, service time.Duration, tag any) *Request {
	l := s.index[p.PriorityLevel.Index]
	r := s.get()
	r.Tag = tag
	r.fq.Hash, r.fq.Work, r.fq.Tag, r.fq.WaitLimit = p.FlowHash, p.Work, r, p.WaitLimit
	r.level = l
	r.arrival, r.service, r.limit = s.now, service, p.WaitLimit
	o := l.el.Arrive(s.Now(), &r.fq)
	switch o.Decision {
	case fairqueue.Dispatched:
		s.active++
		s.start(r)
	case fairqueue.Queued:
		s.active++
		r.state = stWaiting
		s.schedule(r, s.now+int64(r.limit), evTimeout)
	default:
		if s.hooks.Rejected != nil {
			s.hooks.Rejected(r, s.Now(), o.Reason)
		}
		s.put(r)
		r = nil
	}
	l.done(s, o)
	return r
}

// done applies what an input on l did: the occupancy integrated, the
// dispatched requests started, a paced level's Tick scheduled.
func (l *Level) done(s *Stepper, o engine.Outcome) {
	if o.Wake > 0 {
		if at := s.now + int64(o.Wake); l.pace.idx < 0 || at < l.pace.at {
			s.schedule(&l.pace, at, evTick)
		}
	}
	if o.Changed {
		l.integrate(s.now)
		l.occ = o.Occupancy
	}
	for _, fr := range o.Dispatched {
		s.start(fr.Tag.(*Request))
	}
}

// Finish runs what is due by at, then says that r executes for service
// in all (Hooks.Ended has not
// heard of it yet): at once, if it has executed that long already, or
// when it has, or, while it waits, for that long once dispatched. It
// does nothing to a request whose service is known already.
func (s *Stepper) Finish(r *Request, at, service time.Duration) {
	s.RunUntil(at)
	if r.service >= 0 || r.state == stKept {
		return
	}
	r.service = max(service, 0)
	if r.state != stExecuting {
		return
	}
	if end := r.start + int64(r.service); end > s.now {
		s.schedule(r, end, evFinish)
		return
	}
	s.unschedule(r)
	s.finish(r)
}

// start records that r holds its seats now and schedules its end.
func (s *Stepper) start(r *Request) {
	r.state, r.start = stExecuting, s.now
	if s.hooks.Dispatched != nil {
		r.dispatching = true
		s.hooks.Dispatched(r, s.Now())
		r.dispatching = false
	}
	switch {
	case r.service >= 0:
		s.schedule(r, s.now+int64(r.service), evFinish)
	case s.bound > 0:
		s.schedule(r, r.arrival+int64(s.bound), evForce)
	default:
		s.unschedule(r)
	}
}

// finish ends r's execution now.
func (s *Stepper) finish(r *Request) {
	l := r.level
	o := l.el.Finish(s.Now(), &r.fq)
	if o.Release > 0 {
		r.state = stLingering
		s.schedule(r, s.now+int64(o.Release), evRelease)
	} else {
		s.ended(r)
	}
	l.done(s, o)
}

// ended hands r, whose seats are all back, to the driver.
func (s *Stepper) ended(r *Request) {
	s.active--
	var keep time.Duration
	if s.hooks.Ended != nil {
		keep = s.hooks.Ended(r, s.Now())
	}
	if keep > 0 {
		r.state = stKept
		s.schedule(r, s.now+int64(keep), evGone)
		return
	}
	s.put(r)
}

// step runs the earliest pending event.
func (s *Stepper) step() {
	r := s.events.remove(0)
	s.advance(r.at)
	switch r.kind {
	case evAdjust:
		s.adjustNow()
		s.schedule(&s.adjust, s.now+int64(engine.AdjustmentPeriod), evAdjust)
	case evTimeout:
		l := r.level
		o := l.el.Cancel(s.Now(), &r.fq)
		if o.Decision == fairqueue.Rejected {
			s.active--
			if s.hooks.Rejected != nil {
				s.hooks.Rejected(r, s.Now(), fairqueue.TimeOut)
			}
			s.put(r)
		}
		l.done(s, o)
	case evForce:
		r.forced = true
		s.finish(r)
	case evFinish:
		s.finish(r)
	case evRelease:
		l := r.level
		o := l.el.Release(s.Now(), &r.fq)
		s.ended(r)
		l.done(s, o)
	case evTick:
		l := r.level
		l.done(s, l.el.Tick(s.Now()))
	case evGone:
		if s.hooks.Gone != nil {
			s.hooks.Gone(r)
		}
		s.put(r)
	}
}

// schedule sets r's pending event.
func (s *Stepper) schedule(r *Request, at int64, k evKind) {
	r.at, r.kind = at, k
	s.seq++
	ord := s.seq
	if k == evAdjust {
		ord |= adjustLast
	}
	s.events.set(r, ord)
}

// unschedule drops r's pending event, if any.
func (s *Stepper) unschedule(r *Request) {
	if r.idx >= 0 {
		s.events.remove(r.idx)
	}
}

func (s *Stepper) get() *Request {
	if n := len(s.free); n > 0 {
		r := s.free[n-1]
		s.free = s.free[:n-1]
		return r
	}
	return &Request{idx: -1}
}

// maxFree bounds the recycled requests kept.
const maxFree = 4096

func (s *Stepper) put(r *Request) {
	*r = Request{idx: -1}
	if len(s.free) < maxFree {
		s.free = append(s.free, r)
	}
}

// eventHeap is a binary min-heap of pending events: by time, then the
// requests' events before the adjustment, then by scheduling order. Each
// entry carries its keys beside its request, so that ordering compares
// the heap's own memory rather than following a pointer per comparison,
// and each request knows its index in it (-1 when not in it), so that its
// event can be moved or dropped in place. It is written out rather than
// run through container/heap, whose interface calls cost the simulator a
// tenth of its time.
type eventHeap []event

// event is one pending event: its time, its order among events of the
// same time (the scheduling sequence, with adjustLast set for the
// adjustment) and its request.
type event struct {
	at  int64
	ord uint64
	r   *Request
}

// adjustLast orders the adjustment after the requests' events of its
// time.
const adjustLast = 1 << 63

// before reports whether a is due before b.
func (a *event) before(b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.ord < b.ord
}

// up moves the event at j up. Like down, it carries the event along
// and writes each entry it passes once, at its new place, rather than
// swapping pairs.
func (h eventHeap) up(j int) {
	e := h[j]
	for j > 0 {
		i := (j - 1) / 2
		if !e.before(&h[i]) {
			break
		}
		h.put(j, h[i])
		j = i
	}
	h.put(j, e)
}

// down moves the event at i down and reports whether it moved.
func (h eventHeap) down(i int) bool {
	i0, n, e := i, len(h), h[i]
	for {
		j := 2*i + 1
		if j >= n || j < 0 {
			break
		}
		if r := j + 1; r < n && h[r].before(&h[j]) {
			j = r
		}
		if !h[j].before(&e) {
			break
		}
		h.put(i, h[j])
		i = j
	}
	h.put(i, e)
	return i > i0
}

// put places e at i.
func (h eventHeap) put(i int, e event) {
	h[i] = e
	e.r.idx = i
}

// set adds r's event, or moves it when r has one pending.
func (h *eventHeap) set(r *Request, ord uint64) {
	if i := r.idx; i >= 0 {
		(*h)[i].at, (*h)[i].ord = r.at, ord
		if !h.down(i) {
			h.up(i)
		}
		return
	}
	r.idx = len(*h)
	*h = append(*h, event{at: r.at, ord: ord, r: r})
	h.up(r.idx)
}

// remove takes out the event at i.
func (h *eventHeap) remove(i int) *Request {
	old := *h
	n := len(old) - 1
	r := old[i].r
	if i != n {
		// The last event takes the hole and finds its place.
		old.put(i, old[n])
		if !old[:n].down(i) {
			old[:n].up(i)
		}
	}
	old[n] = event{}
	*h = old[:n]
	r.idx = -1
	return r
}
