package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apfproject/apf/classify"
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
	ls *levelState
	fm *metrics.FlowMetrics
	// hot is the stripe of fm's request-path figures the request updates,
	// at its start and at its end (metrics.FlowMetrics.Stripe).
	hot   *metrics.FlowStripe
	req   fairqueue.Request
	wait  waitContext
	start time.Time
	watch bool
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
	t.wait.onQueue = t.queuedAt
	return t
}

// queuedAt counts the request as waiting in its flow's in-queue gauges and
// the request-kind watermarks. The wait context calls it when the queue
// set first waits on it, which it does only for a request it queued; an
// uncontended admission never pays for it. (The level's own waiting count
// comes from its queue set's occupancy.)
func (t *Ticket) queuedAt(time.Time) {
	t.fm.InqueueRequests.Inc()
	t.fm.InqueueSeats.Add(float64(t.req.Work.MaxSeats()))
	t.kind.waiting.add(1)
}

// UIDValues returns the FlowSchema and priority-level UIDs as one-element
// slices built once per configuration and shared by every ticket, so that a
// transport can use them as header values without allocating. They must
// not be modified.
func (t *Ticket) UIDValues() (flowSchema, priorityLevel []string) { return t.fsUIDs, t.plUIDs }

// Estimate returns the ticket's work estimate.
func (t *Ticket) Estimate() fairqueue.WorkEstimate { return t.req.Work }

// Done ends the request's execution (for a watch: its initial phase) and
// frees its seats, apart from a final phase, which the level frees later
// by itself. Call it exactly once, also when the handler panics.
func (t *Ticket) Done() {
	c := t.c
	now := c.clock.Now()
	t.kind.executing.add(-1)
	ls := t.ls
	w := t.req.Work
	t.hot.Finished(now.Sub(t.start), t.watch, max(w.InitialSeats, 0))
	if t.rec != nil {
		t.rec.Execution = now.Sub(t.start)
		t.rec = nil
	}
	if t.shadow != nil {
		t.shadow.Finish(t.shadowTok, now, now.Sub(t.start), false)
		t.shadow = nil
	}
	ls.fq.DoneAt(&t.req, now)
	if w.AdditionalLatency > 0 && w.FinalSeats > 0 {
		t.final = w.FinalSeats
		t.hot.AddExecutingSeats(w.FinalSeats)
		c.clock.AfterFunc(w.AdditionalLatency, t.over)
		return
	}
	c.putTicket(t)
}

// finalOver ends the final phase in the metrics and recycles the ticket.
func (t *Ticket) finalOver() {
	t.hot.AddExecutingSeats(-t.final)
	t.c.putTicket(t)
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
// take room in AdmitRecord's frame, which every request keeps on its
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
	// the level's RetryAfter tracker.
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
		// deadline gives is worked out by the wait context, only if the
		// request queues (waitctx.go), which spares the uncontended
		// admission a walk up the context chain.
		p := s.eng.Place(arrival, a, time.Time{})
		res, est := &p.Result, p.Work
		ls := p.Level.Queue
		fm := s.flows[res.FlowSchema.Index]
		if !shSeen {
			shSeen = true
			if h := c.shadow.Load(); h != nil {
				sh = h.s
				shTok = shadowArrive(ctx, sh, arrival, a, res.FlowSchema)
			}
		}

		t := c.pool.Get().(*Ticket)
		t.c, t.ls = c, ls
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
		t.watch = in.IsWatch()
		t.req.Hash, t.req.Work, t.req.Tag = res.FlowHash, est, t

		wctx := ctx
		if ctx.Err() == nil {
			t.wait.arm(ctx, arrival, p.WaitLimit, c.clock)
			wctx = &t.wait
		}
		err := ls.fq.WaitAt(wctx, &t.req, arrival)
		queued := false
		if wctx != ctx {
			queued = t.wait.wasQueued()
			t.wait.disarm()
		}
		// A dispatched request's start time is the moment the queue set
		// dispatched it (arrival itself when it did not wait): no need to
		// read the clock again.
		now := t.req.StartTime()
		if err != nil {
			now = c.clock.Now()
		}
		seats := float64(est.MaxSeats())
		if queued {
			fm.InqueueRequests.Dec()
			fm.InqueueSeats.Sub(seats)
			t.kind.waiting.add(-1)
		}
		if errors.Is(err, fairqueue.ErrQuiescing) {
			// The level left the configuration after we classified:
			// the snapshot replacing it is already published.
			c.putTicket(t)
			continue
		}
		hot := fm.Stripe(metrics.Stripe())
		hot.ObserveWorkSeats(est.MaxSeats())
		if p.WatchesObserved {
			fm.WatchCountSamples.Observe(float64(p.Watches))
		}
		if err == nil {
			if !ls.exempt {
				hot.ObserveWait(now.Sub(arrival), true)
				if q := t.req.QueueLengthAfterEnqueue(); q > 0 {
					hot.ObserveQueueLength(q)
				}
			}
			hot.Dispatched(max(est.InitialSeats, 0))
			t.kind.executing.add(1)
			t.hot, t.start = hot, now
			t.shadow, t.shadowTok = sh, shTok
			if rec != nil {
				rec.note(res, &t.req, est, arrival, now, queued, ls.exempt)
				t.rec = rec
			}
			return t, nil
		}
		var rej *fairqueue.RejectError
		if !errors.As(err, &rej) {
			c.putTicket(t)
			if sh != nil {
				sh.Finish(shTok, now, 0, false)
			}
			return nil, err
		}
		switch rej.Reason {
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
			Reason:     rej.Reason,
			FlowSchema: t.FlowSchema, FlowSchemaUID: t.FlowSchemaUID,
			PriorityLevel: t.PriorityLevel, PriorityLevelUID: t.PriorityLevelUID,
			RetryAfter: ls.retry.Reject(now),
		}
		if rec != nil {
			rec.note(res, &t.req, est, arrival, now, queued, false)
			rec.Outcome, rec.Reason, rec.RetryAfter = OutcomeRejected, rej.Reason, e.RetryAfter
		}
		c.putTicket(t)
		if sh != nil {
			sh.Finish(shTok, now, 0, true)
		}
		return nil, e
	}
}
