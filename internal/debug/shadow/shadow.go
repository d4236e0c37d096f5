package shadow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/clock"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/engine"
	"github.com/apfproject/apf/engine/stepper"
	"github.com/apfproject/apf/request"
	"github.com/apfproject/apf/workestimate"
)

// Defaults of the bounds on what a Shadow holds.
const (
	// DefaultBuffer is how many arrivals and completions may wait for the
	// shadow's goroutine before the request path drops them.
	DefaultBuffer = 4096
	// DefaultMaxRequests is how many requests the shadow follows at once;
	// arrivals beyond it are dropped.
	DefaultMaxRequests = 50_000
	// HistoryLength is how many one-second samples of each shadow level
	// the state keeps: the last five minutes.
	HistoryLength = 300
	// maxMoves bounds the distinct (live, shadow) classification pairs
	// counted; the moves beyond it are counted under OtherMoves.
	maxMoves = 1000
)

// Config configures a Shadow.
type Config struct {
	// Live is the configuration in force, as the controller reads it;
	// Staged holds the candidate objects. The shadow configuration is
	// Live with every Staged object in place of the live object of the
	// same kind and name, or added: what `kubectl apply -f` of the staged
	// objects would make of the live configuration. Both are required.
	Live, Staged controller.Source
	// ServerConcurrencyLimit is the server limit the shadow starts with
	// (0: the engine's default), until the live controller tells it the
	// limit in force (ServerLimit, from Controller.SetShadow and every
	// change after). RequestTimeout is the live controller's (0: the
	// engine's default), so that the shadow levels get the waits the same
	// configuration would get live.
	ServerConcurrencyLimit int
	RequestTimeout         time.Duration
	// DeadlineAwareQueueing is the live controller's, so that the shadow
	// levels reject late arrivals as live ones would.
	DeadlineAwareQueueing bool
	// PacedDispatch is the live controller's, so that the shadow levels
	// are paced as the live ones are.
	PacedDispatch bool
	// Estimator, ObjectCounts and Watches price requests as the live
	// controller does; pass the controller's (Controller.Watches).
	Estimator    *workestimate.Config
	ObjectCounts workestimate.ObjectCounts
	Watches      workestimate.WatchCounter
	// Clock is the live controller's clock; nil means real time.
	Clock clock.Clock
	// Registerer receives the apf_shadow_* metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger hears configuration problems; nil means slog.Default().
	Logger *slog.Logger
	// Buffer and MaxRequests bound what the shadow holds (0: DefaultBuffer
	// and DefaultMaxRequests).
	Buffer, MaxRequests int
}

// Shadow runs a candidate configuration on the live traffic without
// enforcing it. It implements controller.Shadow: give it to the live
// controller with Controller.SetShadow, and run Run.
type Shadow struct {
	clock   clock.Clock
	live    controller.Source
	staged  controller.Source
	log     *slog.Logger
	maxReqs int

	// The request path's side: a token per request, the event channel,
	// and the count of what it could not hand over.
	tokens  atomic.Uint64
	events  chan event
	dropped atomic.Int64
	running atomic.Bool

	met *metricSet

	// mu guards everything below. The shadow's goroutine holds it while
	// it works; State and Dump take it to read. The request path never
	// takes it.
	mu sync.Mutex
	// st runs the shadow engine on the live timestamps from start; its
	// hooks are this package's dispatched, rejected, ended and changed.
	st     *stepper.Stepper
	start  time.Time
	levels map[*engine.Level]*level
	reqs   map[uint64]*stepper.Request // by token, until the live request is over
	free   []*sreq
	// limit is the live server concurrency limit, and when it was set,
	// as ServerLimit last heard it (guarded by limitMu), and limitCh
	// says it changed.
	limitMu  sync.Mutex
	limit    int
	limitAt  time.Time
	limitCh  chan struct{}
	wake     func() bool // stops the pending wake-up, nil for none
	wakeAt   time.Time
	wakeCh   chan struct{}
	cfgErr   error
	problems []string
	staging  []string // kind/name of each staged object
	liveObjs map[string]bool
	arrived  int64
	moved    int64
	moves    map[moveKey]*moveCount
	other    int64 // moves beyond maxMoves pairs
	hits     map[string]int64
	lost     int64 // shadow requests ended by force: their completion never came
}

// New builds a Shadow. It reads nothing until Run starts.
func New(cfg Config) (*Shadow, error) {
	if cfg.Live == nil || cfg.Staged == nil {
		return nil, errors.New("shadow: Config.Live and Config.Staged are required")
	}
	s := &Shadow{
		clock:   cfg.Clock,
		live:    cfg.Live,
		staged:  cfg.Staged,
		log:     cfg.Logger,
		maxReqs: cfg.MaxRequests,
		reqs:    map[uint64]*stepper.Request{},
		levels:  map[*engine.Level]*level{},
		limitCh: make(chan struct{}, 1),
		wakeCh:  make(chan struct{}, 1),
		moves:   map[moveKey]*moveCount{},
		hits:    map[string]int64{},
	}
	if s.clock == nil {
		s.clock = clock.Real
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.maxReqs <= 0 {
		s.maxReqs = DefaultMaxRequests
	}
	n := cfg.Buffer
	if n <= 0 {
		n = DefaultBuffer
	}
	s.events = make(chan event, n)
	s.start = s.clock.Now()
	timeout := cfg.RequestTimeout
	if timeout == 0 {
		timeout = engine.DefaultRequestTimeout
	}
	st, err := stepper.New(stepper.Config{
		Engine: engine.Config{
			ServerConcurrencyLimit: cfg.ServerConcurrencyLimit,
			RequestTimeout:         cfg.RequestTimeout,
			Estimator:              cfg.Estimator,
			ObjectCounts:           cfg.ObjectCounts,
			Watches:                cfg.Watches,
			DeadlineAwareQueueing:  cfg.DeadlineAwareQueueing,
			PacedDispatch:          cfg.PacedDispatch,
		},
		Start: s.start,
		// No live request takes longer than its timeout, from its
		// arrival; a shadow request still executing well after that
		// lost its completion (dropped when the request path was busy)
		// and is ended by force.
		Bound: 2 * timeout,
		Hooks: stepper.Hooks{Dispatched: s.dispatched, Rejected: s.rejected, Ended: s.ended, Changed: s.changed},
	})
	if err != nil {
		return nil, fmt.Errorf("shadow: %w", err)
	}
	s.st = st
	if s.met, err = newMetricSet(cfg.Registerer, s); err != nil {
		return nil, err
	}
	return s, nil
}

var _ controller.Shadow = (*Shadow)(nil)

// event is what the request path hands over: an arrival or the end of a
// live request, or a test's request to wait for what came before.
type event struct {
	kind     evKind
	token    uint64
	at       time.Time // arrival, or the end of the live request
	deadline time.Time
	exec     time.Duration
	rejected bool
	live     *classify.FlowSchema
	attrs    request.Attributes
	synced   chan struct{}
}

type evKind uint8

const (
	evArrive evKind = iota + 1
	evFinish
	evSync
)

// Arrive implements controller.Shadow: it hands the arrival to the
// shadow's goroutine, or drops it when that is behind.
func (s *Shadow) Arrive(arrival, deadline time.Time, a request.Attributes, live *classify.FlowSchema) uint64 {
	tok := s.tokens.Add(1)
	select {
	case s.events <- event{kind: evArrive, token: tok, at: arrival, deadline: deadline, live: live, attrs: a}:
		return tok
	default:
		s.dropped.Add(1)
		return 0
	}
}

// Finish implements controller.Shadow.
func (s *Shadow) Finish(token uint64, now time.Time, execution time.Duration, rejected bool) {
	if token == 0 {
		return
	}
	select {
	case s.events <- event{kind: evFinish, token: token, at: now, exec: execution, rejected: rejected}:
	default:
		// The shadow request will be ended by force (Config.Bound of
		// its stepper).
		s.dropped.Add(1)
	}
}

// ServerLimit implements controller.Shadow: the live server concurrency
// limit is limit from now on, and the shadow's levels share as many seats
// as soon as its goroutine takes it (Run). Only the latest limit counts:
// it is kept, never dropped, whatever the request path hands over.
func (s *Shadow) ServerLimit(now time.Time, limit int) {
	s.limitMu.Lock()
	s.limit, s.limitAt = limit, now
	s.limitMu.Unlock()
	select {
	case s.limitCh <- struct{}{}:
	default:
	}
}

// followLimit imposes the live server limit ServerLimit heard last, at
// the time it was heard.
func (s *Shadow) followLimit() {
	s.limitMu.Lock()
	limit, at := s.limit, s.limitAt
	s.limitMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if limit < 1 {
		return
	}
	if err := s.st.SetServerLimit(at.Sub(s.start), limit); err != nil {
		s.log.Error("apf shadow server limit", "limit", limit, "error", err)
		return
	}
	s.armLocked()
}

// Sync waits until the shadow's goroutine has handled everything handed
// over before it, or ctx ends. It is for tests and tools; the request path
// never waits for the shadow.
func (s *Shadow) Sync(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case s.events <- event{kind: evSync, synced: done}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run reads the configurations, follows their changes and simulates the
// shadow levels until ctx ends. Everything the shadow does happens in this
// goroutine.
func (s *Shadow) Run(ctx context.Context) {
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { s.live.Watch(ctx, notify) })
	wg.Go(func() { s.staged.Watch(ctx, notify) })
	defer wg.Wait()
	s.running.Store(true)
	defer s.running.Store(false)

	every := func(d time.Duration, ch chan struct{}) {
		s.clock.AfterFunc(d, func() {
			select {
			case ch <- struct{}{}:
			default:
			}
		})
	}
	sample := make(chan struct{}, 1)
	s.followLimit()
	s.reload()
	every(time.Second, sample)
	for {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			if s.wake != nil {
				s.wake()
			}
			s.mu.Unlock()
			return
		case <-changed:
			s.reload()
		case <-s.limitCh:
			s.followLimit()
		case <-sample:
			s.sample()
			every(time.Second, sample)
		case <-s.wakeCh:
			s.mu.Lock()
			s.wake = nil
			s.catchUpLocked(s.clock.Now().Add(-grace))
			s.armLocked()
			s.mu.Unlock()
		case ev := <-s.events:
			s.mu.Lock()
			s.handleLocked(&ev)
			// Take what else is there under the same lock, a bounded
			// batch, so that State and the metrics get their turn.
			for more := maxBatch; more > 0; more-- {
				select {
				case ev = <-s.events:
					s.handleLocked(&ev)
				default:
					more = 0
				}
			}
			s.armLocked()
			s.mu.Unlock()
		}
	}
}

// maxBatch is how many events the goroutine handles under one holding of
// its lock.
const maxBatch = 1024

// armLocked makes sure the goroutine wakes for the stepper's earliest
// event: a wait limit, an end, the borrowing adjustment.
func (s *Shadow) armLocked() {
	ch := s.wakeCh
	next, ok := s.st.Next()
	if !ok {
		return
	}
	due := s.start.Add(next)
	if s.wake != nil && !s.wakeAt.After(due) {
		return
	}
	if s.wake != nil {
		s.wake()
	}
	s.wakeAt = due
	s.wake = s.clock.AfterFunc(max(due.Add(grace).Sub(s.clock.Now()), 0), func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
}

// handleLocked handles one event from the request path.
func (s *Shadow) handleLocked(ev *event) {
	switch ev.kind {
	case evSync:
		// What is due by now is done before the caller hears back.
		s.catchUpLocked(s.clock.Now())
		close(ev.synced)
	case evArrive:
		s.arriveLocked(ev)
	case evFinish:
		s.liveOverLocked(ev)
	}
}

// grace is how late the shadow's own events run after they are due: the
// time a request's event may take from the clock reading that stamped it
// to the channel. A timer run before an earlier event has arrived would
// decide without it (a wait limit passing before the completion that
// would have dispatched the request, say).
const grace = 10 * time.Millisecond

// catchUpLocked handles the events already handed over, then does what is
// due by now, each event of the stepper at its own time, and returns now
// (or the latest time seen, if later: events from several goroutines
// reach the shadow slightly out of order, and its virtual time does not
// go back). now is read before the events are taken, so that
// every event stamped before it has been sent by then, but for those
// still within grace of it.
func (s *Shadow) catchUpLocked(now time.Time) time.Time {
	// Only those there now: under a steady stream, taking until none is
	// left might never end.
	for n := len(s.events); n > 0; n-- {
		ev := <-s.events
		s.handleLocked(&ev)
	}
	s.st.RunUntil(now.Sub(s.start))
	return s.st.Now()
}

// Reload reads both sources again now; Run does it whenever either says
// it changed.
func (s *Shadow) Reload() { s.reload() }

// reload reads both sources and installs the shadow configuration: the
// live objects with the staged ones applied over them. A staged set that
// cannot be read leaves the shadow configuration as it was.
func (s *Shadow) reload() {
	liveObjs, lerr := s.live.Objects()
	staged, serr := s.staged.Objects()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := errors.Join(lerr, serr); err != nil {
		s.cfgErr = err
		s.met.configError.Set(1)
		s.log.Error("apf shadow configuration", "error", err)
		if s.st.Snapshot() != nil {
			return
		}
		liveObjs, staged = nil, nil
	}
	objs, names, liveNames := Overlay(liveObjs, staged)
	comp := engine.Compile(objs)
	var problems []string
	for _, e := range comp.Invalid {
		problems = append(problems, e.Error())
	}
	for _, p := range comp.Matcher().Problems() {
		problems = append(problems, p.String())
	}
	// The events waiting are left for after the change: taken now, the
	// first configuration's would find no snapshot to place them with.
	ch, err := s.st.Install(s.clock.Now().Sub(s.start), comp)
	if err != nil {
		s.cfgErr = err
		s.met.configError.Set(1)
		s.log.Error("apf shadow configuration", "error", err)
		return
	}
	for _, e := range ch.Problems {
		problems = append(problems, e.Error())
	}
	if lerr == nil && serr == nil {
		s.cfgErr = nil
		s.met.configError.Set(0)
	}
	s.problems, s.staging, s.liveObjs = problems, names, liveNames
	for _, p := range problems {
		s.log.Warn("apf shadow configuration", "problem", p)
	}
	s.pruneLocked()
	s.armLocked()
}

// Overlay is the shadow configuration: live, with each staged object in
// place of the live object of the same kind and name, or added, as
// `kubectl apply -f` of the staged objects would leave the live
// configuration. It also returns the staged objects' kind/name, and the
// set of the live objects' kind/name.
func Overlay(live, staged []config.Object) (objs []config.Object, stagedNames []string, liveNames map[string]bool) {
	key := func(o config.Object) string { return o.Kind() + "/" + o.Name() }
	byKey := make(map[string]int, len(staged))
	for i, o := range staged {
		byKey[key(o)] = i // the last of duplicates wins, as a second apply would
	}
	liveNames = make(map[string]bool, len(live))
	objs = make([]config.Object, 0, len(live)+len(staged))
	for _, o := range live {
		k := key(o)
		liveNames[k] = true
		if _, ok := byKey[k]; ok {
			continue
		}
		objs = append(objs, o)
	}
	for i, o := range staged {
		k := key(o)
		if byKey[k] != i {
			continue
		}
		objs = append(objs, o)
		stagedNames = append(stagedNames, k)
	}
	slices.Sort(stagedNames)
	return objs, stagedNames, liveNames
}
