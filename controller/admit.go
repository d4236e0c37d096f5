package controller

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/clock"
	"github.com/apfproject/apf/engine"
	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/metrics"
	"github.com/apfproject/apf/request"
)

// Ticket is an admitted request. Its exported fields say how it was
// classified; Done releases its seats. A Ticket is pooled: it must not be
// used after Done.
type Ticket struct {
	FlowSchema, FlowSchemaUID       string
	PriorityLevel, PriorityLevelUID string
	FlowDistinguisher               string
	// User is the requesting user's name and Path the request path, kept
	// for queue dumps (the fairqueue.Request's Tag is the Ticket).
	User, Path string

	// dmu guards the fields a debug dump or a metrics sample reads from
	// another goroutine: FlowSchema, FlowDistinguisher, User, Path, info
	// and fm (written under it, read freely by the owner). A dump finds the
	// Ticket through the queue set and may read it while the Ticket is
	// recycled; the lock keeps those reads whole (a row may then describe
	// the Ticket's next request, which is harmless).
	dmu sync.Mutex
	// info holds the request attributes the detailed dump prints; the
	// strings are the caller's, so copying them allocates nothing.
	info dumpInfo
	// kind counts the request in the request-kind watermarks.
	kind *kindCounts

	// fsUIDs and plUIDs are the snapshot's shared one-element UID slices.
	fsUIDs, plUIDs []string

	c  *Controller
	ls *Level
	fm *metrics.FlowMetrics
	// hot is the stripe of fm's request-path figures the request updates,
	// at its start and at its end (metrics.FlowMetrics.Stripe).
	hot *metrics.FlowStripe
	req fairqueue.Request
	// wake hears that the queued request was dispatched: made, under the
	// level's lock, the first time the Ticket's request queues, and
	// reused.
	wake chan struct{}
	// timer ends a queued request's wait at its wait limit by a signal on
	// expiry; both are made the first time the Ticket's request waits with
	// a limit, and reused, so that a wait allocates nothing. expiry is
	// empty whenever no wait is under way (see stopTimer).
	timer  clock.Timer
	expiry chan struct{}
	// async, for a request admitted by AdmitFunc that queued, is its
	// wait: set under the level's lock before anyone can dispatch it, and
	// cleared when the wait ends (asyncwait.go).
	async *asyncWait
	start time.Time
	watch bool
	// final is the seats of a final phase, held in the metrics until the
	// phase ends; over, bound once, ends it.
	final int
	over  func()
	// rec, when the caller passed one to AdmitRecord, receives the
	// execution time at Done.
	rec *Record
	// shadow, when a Shadow heard the request arrive, hears at Done that
	// it is over (shadow.go); shadowTok is the token it gave.
	shadow    Shadow
	shadowTok uint64
}

func newTicket() *Ticket {
	t := &Ticket{}
	t.over = t.finalOver
	return t
}

// UIDValues returns the FlowSchema and priority-level UIDs as one-element
// slices built once per configuration and shared by every ticket, so that a
// transport can use them as header values without allocating. They must
// not be modified.
func (t *Ticket) UIDValues() (flowSchema, priorityLevel []string) { return t.fsUIDs, t.plUIDs }

// Estimate returns the ticket's work estimate.
func (t *Ticket) Estimate() fairqueue.WorkEstimate { return t.req.Work }

// Done ends the request's execution (for a watch: its initial phase) and
// frees its seats, apart from a final phase, which the controller frees
// later by itself. Call it exactly once, also when the handler panics.
func (t *Ticket) Done() {
	c := t.c
	now := c.clock.Now()
	t.kind.executing.add(-1)
	l := t.ls
	t.hot.Finished(now.Sub(t.start), t.watch, max(t.req.Work.InitialSeats, 0))
	if t.rec != nil {
		t.rec.Execution = now.Sub(t.start)
		t.rec = nil
	}
	if t.shadow != nil {
		t.shadow.Finish(t.shadowTok, now, now.Sub(t.start), false)
		t.shadow = nil
	}
	var w wakes
	l.mu.Lock()
	o := l.el.Finish(now, &t.req)
	l.doneLocked(now, &o, &w)
	l.mu.Unlock()
	w.send()
	if o.Release > 0 {
		// One timer ends the final phase: in the queue set, which frees
		// its seats, and in the metrics' executing seats. The Ticket, and
		// its Request, stay out of the pool until then.
		t.final = max(t.req.Estimate().FinalSeats, 0)
		t.hot.AddExecutingSeats(t.final)
		c.clock.AfterFunc(o.Release, t.over)
		return
	}
	c.putTicket(t)
}

// expire is the wait timer's call: the wait limit has passed. expiry has
// room, since a wait begins with it empty and the timer calls once.
func (t *Ticket) expire() {
	select {
	case t.expiry <- struct{}{}:
	default:
	}
}

// stopTimer stops the wait's timer. If its call has started already, the
// call's signal is taken, so that the Ticket's next wait does not see it.
func (t *Ticket) stopTimer() {
	if !t.timer.Stop() {
		<-t.expiry
	}
}

// finalOver ends the final phase and recycles the ticket.
func (t *Ticket) finalOver() {
	c, l := t.c, t.ls
	now := c.clock.Now()
	var w wakes
	l.mu.Lock()
	o := l.el.Release(now, &t.req)
	l.doneLocked(now, &o, &w)
	l.mu.Unlock()
	w.send()
	t.hot.AddExecutingSeats(-t.final)
	c.putTicket(t)
}

func (c *Controller) putTicket(t *Ticket) {
	// The fields under dmu keep their values until the next Admit
	// overwrites them under the lock: clearing them here would cost the
	// request path a second lock.
	t.ls, t.req.Tag, t.kind, t.rec, t.shadow, t.hot = nil, nil, nil, nil, nil, nil
	c.pool.Put(t)
}

// dumpInfo is what dump_requests?includeRequestDetails=x prints beyond the
// Ticket's exported fields.
type dumpInfo struct {
	verb, namespace, name, group, version, resource, subresource string
}

// shadowArrive tells the shadow configuration of a request's arrival. It
// is kept out of line: the attributes it passes by value would otherwise
// take room in admit's frame, which every request keeps on its
// stack while it runs, shadow or not.
//
//go:noinline
func shadowArrive(ctx context.Context, sh Shadow, arrival time.Time, a *request.Attributes, fs *classify.FlowSchema) uint64 {
	deadline, _ := ctx.Deadline()
	return sh.Arrive(arrival, deadline, *a, fs)
}

// RejectedError is Admit's answer for a request that will not run: the
// HTTP edge turns it into a 429.
type RejectedError struct {
	// Reason is queue-full, concurrency-limit or time-out.
	Reason                          fairqueue.RejectReason
	FlowSchema, FlowSchemaUID       string
	PriorityLevel, PriorityLevelUID string
	// RetryAfter is the Retry-After to send, in seconds: 1 to 32, chosen by
	// the level's Retry-After tracker.
	RetryAfter int
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("apf: request rejected by priority level %q (%s), retry after %ds", e.PriorityLevel, e.Reason, e.RetryAfter)
}

// Admit classifies a request, estimates its work and waits for its level
// to dispatch it. It returns a Ticket to run the request under, or a
// *RejectedError. a is all it knows of the request: its Info, as
// request.Parse resolved it (a list is priced by Info.List), and its user.
// ctx is the request's context: the wait limit is a quarter
// of the time its deadline leaves, or of the request timeout when it has
// none, and at most a minute; waiting ends early when it is cancelled.
func (c *Controller) Admit(ctx context.Context, a *request.Attributes) (*Ticket, error) {
	return c.AdmitRecord(ctx, a, nil)
}

// AdmitRecord is Admit that also tells rec what APF did with the request
// (see Record): when Admit returns, rec holds the classification, the
// queue, the wait, the seats and the outcome, and the Ticket's Done adds
// the execution time. A nil rec is Admit.
func (c *Controller) AdmitRecord(ctx context.Context, a *request.Attributes, rec *Record) (*Ticket, error) {
	return c.admit(ctx, a, rec, nil)
}

// admit is AdmitRecord; with done set (AdmitFunc), a request its level
// queues does not wait: admit returns nil, nil and its wait goes on
// without a goroutine (asyncwait.go).
func (c *Controller) admit(ctx context.Context, a *request.Attributes, rec *Record, done func(*Ticket, error)) (*Ticket, error) {
	arrival := c.clock.Now()
	// The shadow configuration, if any, hears of the request once, at its
	// first classification (shadow.go).
	var (
		sh     Shadow
		shTok  uint64
		shSeen bool
	)
	for {
		s := c.snap.Load()
		// Placed as if without a deadline: the wait limit the request's
		// deadline gives is worked out only if the request queues (wait),
		// which spares the uncontended admission a walk up the context
		// chain.
		p := s.eng.Place(arrival, a, time.Time{})
		res, est := &p.Result, p.Work
		l := s.levels[res.PriorityLevel.Index]
		fm := s.flows[res.FlowSchema.Index]
		if !shSeen {
			shSeen = true
			if h := c.shadow.Load(); h != nil {
				sh = h.s
				shTok = shadowArrive(ctx, sh, arrival, a, res.FlowSchema)
			}
		}

		t := c.pool.Get().(*Ticket)
		t.c, t.ls = c, l
		t.FlowSchemaUID = res.FlowSchema.UID
		t.PriorityLevel, t.PriorityLevelUID = res.PriorityLevel.Name, res.PriorityLevel.UID
		t.fsUIDs, t.plUIDs = s.schemaUIDs[res.FlowSchema.Index], s.levelUIDs[res.PriorityLevel.Index]
		in := &a.Info
		t.dmu.Lock()
		t.fm = fm
		t.FlowSchema = res.FlowSchema.Name
		t.FlowDistinguisher = res.FlowDistinguisher
		t.User, t.Path = a.User.Name, in.Path
		t.info = dumpInfo{
			verb: in.Verb, namespace: in.Namespace, name: in.Name,
			group: in.APIGroup, version: in.APIVersion,
			resource: in.Resource, subresource: in.Subresource,
		}
		t.dmu.Unlock()
		t.kind = c.kinds.of(in.Verb)
		t.watch = a.IsWatch()
		t.req.Hash, t.req.Work, t.req.Tag = res.FlowHash, est, t
		if c.deadlineAware {
			// The level weighs the wait limit against its drain on
			// arrival, so it is worked out now rather than in wait.
			t.req.WaitLimit = waitLimit(ctx, arrival, p.WaitLimit)
		}

		adm := admission{
			res: *res, est: est, arrival: arrival, rec: rec, sh: sh, shTok: shTok,
			watches: p.Watches, watchesObserved: p.WatchesObserved,
		}
		var (
			w  *asyncWait
			wk wakes
		)
		l.mu.Lock()
		o := l.el.Arrive(arrival, &t.req)
		if o.Decision == fairqueue.Queued {
			// Made under the lock, before anyone can dispatch it.
			adm.queued = true
			if done != nil {
				w = &asyncWait{c: c, t: t, done: done, adm: adm, seats: float64(est.MaxSeats())}
				t.async = w
			} else if t.wake == nil {
				t.wake = make(chan struct{}, 1)
			}
		}
		l.doneLocked(arrival, &o, &wk)
		l.mu.Unlock()
		wk.send()
		if o.Reclassify {
			// The level left the configuration after we classified:
			// the snapshot replacing it is already published.
			c.putTicket(t)
			continue
		}
		decision, reason := o.Decision, o.Reason
		if decision == fairqueue.Queued {
			if w != nil {
				w.start(ctx, p.WaitLimit)
				return nil, nil
			}
			decision, reason = c.wait(ctx, t, arrival, p.WaitLimit)
		}
		return c.decided(t, &adm, decision, reason)
	}
}

// admission is what the end of an admission needs of its start.
type admission struct {
	res                     classify.Result
	est                     fairqueue.WorkEstimate
	arrival                 time.Time
	rec                     *Record
	sh                      Shadow
	shTok                   uint64
	watches                 int
	watchesObserved, queued bool
}

// decided ends the admission of t, which its level dispatched or
// rejected: its metrics, its record, and the Ticket or the error Admit
// returns.
func (c *Controller) decided(t *Ticket, adm *admission, decision fairqueue.Decision, reason fairqueue.RejectReason) (*Ticket, error) {
	l, fm, est, arrival := t.ls, t.fm, adm.est, adm.arrival
	// A dispatched request's start time is the moment the queue set
	// dispatched it (arrival itself when it did not wait): no need to
	// read the clock again.
	var now time.Time
	if decision == fairqueue.Dispatched {
		now = t.req.StartTime()
	} else {
		now = c.clock.Now()
	}
	hot := fm.Stripe(metrics.Stripe())
	hot.ObserveWorkSeats(est.MaxSeats())
	if adm.watchesObserved {
		fm.WatchCountSamples.Observe(float64(adm.watches))
	}
	if decision == fairqueue.Dispatched {
		if !l.exempt {
			hot.ObserveWait(now.Sub(arrival), true)
			if q := t.req.QueueLengthAfterEnqueue(); q > 0 {
				hot.ObserveQueueLength(q)
			}
		}
		hot.Dispatched(max(est.InitialSeats, 0))
		t.kind.executing.add(1)
		t.hot, t.start = hot, now
		t.shadow, t.shadowTok = adm.sh, adm.shTok
		if adm.rec != nil {
			adm.rec.note(&adm.res, &t.req, est, arrival, now, adm.queued, l.exempt)
			t.rec = adm.rec
		}
		return t, nil
	}
	return nil, c.rejected(t, adm.rec, &adm.res, est, arrival, now, adm.queued, reason, hot, adm.sh, adm.shTok)
}

// waitLimit is the wait limit of a request that arrived at arrival: a
// quarter of the time ctx's deadline leaves, or limit (from the request
// timeout) when ctx has none.
func waitLimit(ctx context.Context, arrival time.Time, limit time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return engine.WaitLimit(dl.Sub(arrival))
	}
	return limit
}

// rejected counts and records a rejection, and returns its error. It is
// kept out of admit's and decided's frames, which every admitted request
// keeps on its stack while it runs.
//
//go:noinline
func (c *Controller) rejected(t *Ticket, rec *Record, res *classify.Result, est fairqueue.WorkEstimate, arrival, now time.Time,
	queued bool, reason fairqueue.RejectReason, hot *metrics.FlowStripe, sh Shadow, shTok uint64) error {
	fm := t.fm
	switch reason {
	case fairqueue.TimeOut:
		hot.ObserveWait(now.Sub(arrival), true)
		fm.RejectedTimeOut.Inc()
	case fairqueue.QueueFull:
		hot.ObserveWait(now.Sub(arrival), false)
		fm.RejectedQueueFull.Inc()
	default:
		hot.ObserveWait(now.Sub(arrival), false)
		fm.RejectedConcurrencyLimit.Inc()
	}
	e := &RejectedError{
		Reason:     reason,
		FlowSchema: t.FlowSchema, FlowSchemaUID: t.FlowSchemaUID,
		PriorityLevel: t.PriorityLevel, PriorityLevelUID: t.PriorityLevelUID,
		RetryAfter: t.ls.retry.reject(now),
	}
	if d := t.req.DrainTime(); d > 0 {
		e.RetryAfter = drainRetryAfter(d, rand.Float64())
	}
	if rec != nil {
		rec.note(res, &t.req, est, arrival, now, queued, false)
		rec.Outcome, rec.Reason, rec.RetryAfter = OutcomeRejected, reason, e.RetryAfter
	}
	c.putTicket(t)
	if sh != nil {
		sh.Finish(shTok, now, 0, true)
	}
	return e
}

// wait blocks the request t, which its level queued at arrival, until the
// level dispatches it, its wait limit passes or ctx ends
// (docs/spec/requests.md#wait-limit): a quarter of the time ctx's deadline
// leaves after arrival, or limit (from the request timeout) when ctx has
// none. A request whose wait ends is removed from its queue with
// time-out, unless the level dispatched it first: whichever the level's
// lock sees first wins, and no seat is lost either way. Only a request
// that queues pays for this: the in-queue gauges, the deadline, a timer.
func (c *Controller) wait(ctx context.Context, t *Ticket, arrival time.Time, limit time.Duration) (fairqueue.Decision, fairqueue.RejectReason) {
	fm, seats := t.fm, float64(t.req.Work.MaxSeats())
	fm.InqueueRequests.Inc()
	fm.InqueueSeats.Add(seats)
	t.kind.waiting.add(1)
	defer func() {
		fm.InqueueRequests.Dec()
		fm.InqueueSeats.Sub(seats)
		t.kind.waiting.add(-1)
	}()
	limit = waitLimit(ctx, arrival, limit)
	if d := arrival.Add(limit).Sub(c.clock.Now()); d > 0 && ctx.Err() == nil {
		if t.timer == nil {
			t.expiry = make(chan struct{}, 1)
			t.timer = clock.NewTimer(c.clock, t.expire)
		}
		t.timer.Reset(d)
		select {
		case <-t.wake:
			t.stopTimer()
			return fairqueue.Dispatched, 0
		case <-ctx.Done():
			t.stopTimer()
		case <-t.expiry:
		}
	}
	l := t.ls
	now := c.clock.Now()
	l.mu.Lock()
	o := l.el.Cancel(now, &t.req)
	l.doneLocked(now, &o, nil)
	l.mu.Unlock()
	if o.Decision == fairqueue.Rejected {
		return fairqueue.Rejected, fairqueue.TimeOut
	}
	// Dispatched before the cancel got the lock: the wake-up is already
	// in the channel. Take it, so the channel is empty for the next wait.
	<-t.wake
	return fairqueue.Dispatched, 0
}
