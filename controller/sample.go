package controller

import (
	"time"

	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/metrics"
)

// samplePeriod is how often Run publishes the request-kind watermarks and
// samples the queue sets' virtual-time gauges and counters.
const samplePeriod = time.Second

// levelSample is what the previous sample of a level read.
type levelSample struct {
	dispatched, noAccommodation, epochAdvances, epochFailures int
	// pendingNoAccommodation is a rise of the no-accommodation count not
	// yet credited to a flow schema (no waiting head to blame was found).
	pendingNoAccommodation int
}

// sampleMetrics publishes the request-kind watermarks and, for every level
// in force, the virtual-time gauges and the counters the queue set keeps
// (request_dispatch_no_accommodation_total, epoch_advance_total). Run calls
// it every samplePeriod; it never runs on the request path.
func (c *Controller) sampleMetrics() {
	now := c.clock.Now()
	c.kinds.publish(now)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sampleStatsLocked(c.clock.Now())
	for _, l := range c.eng.Levels() {
		if l.Exempt() {
			continue
		}
		c.sampleLevelLocked(c.levels[l])
	}
}

func (c *Controller) sampleLevelLocked(ls *Level) {
	prev := &ls.sampled
	// The queues are read in place, under the level's lock; only a rise
	// of the no-accommodation count, which needs the waiting requests,
	// takes a dump.
	var b sBounds
	var d fairqueue.Dump
	ls.mu.Lock()
	st := ls.el.Stats()
	b.g = st.PacedService.Seconds()
	noAcc := st.NoAccommodation - prev.noAccommodation + prev.pendingNoAccommodation
	if noAcc > 0 {
		d = ls.el.Dump(true)
		for _, q := range d.Queues {
			b.add(q)
		}
	} else {
		d.Stats = ls.el.VisitQueues(b.add)
	}
	ls.mu.Unlock()
	lm := ls.lm

	lm.CurrentR.Set(d.CurrentR.ToFloat())
	if sMin, sMax, dMin, dMax, found := b.bounds(); found {
		lm.NextSMin.Set(sMin)
		lm.NextSMax.Set(sMax)
		lm.NextDiscountedSMin.Set(dMin)
		lm.NextDiscountedSMax.Set(dMax)
	}
	if d.Dispatched != prev.dispatched {
		lm.DispatchR.Set(d.CurrentR.ToFloat())
		if b.all.n > 0 {
			lm.LatestS.Set(b.latest)
		}
	}
	if adv := d.EpochAdvances - prev.epochAdvances; adv > 0 {
		fail := d.EpochFailures - prev.epochFailures
		lm.EpochAdvanceFailed.Add(float64(fail))
		lm.EpochAdvanceSucceeded.Add(float64(adv - fail))
	}
	prev.pendingNoAccommodation = 0
	if noAcc > 0 {
		if fm := headFlow(d); fm != nil {
			fm.NoAccommodation.Add(float64(noAcc))
		} else {
			prev.pendingNoAccommodation = noAcc
		}
	}
	prev.dispatched = d.Dispatched
	prev.noAccommodation = st.NoAccommodation
	prev.epochAdvances, prev.epochFailures = d.EpochAdvances, d.EpochFailures
}

// sBounds gathers, in one pass over a level's queues, the bounds of their
// next dispatch R (S) and of S less their seats in use times G (the
// discounted S): over the queues with waiting requests and over every
// queue, and the largest S. On a paced level G is the service time the
// level measured (g), which it charges instead.
type sBounds struct {
	waiting, all span
	latest       float64
	// g, when positive, is the service time in seconds the level charges
	// a seat instead of G.
	g float64
}

// span is the bounds of S and discounted S over n queues.
type span struct {
	n                      int
	sMin, sMax, dMin, dMax float64
}

func (sp *span) add(s, ds float64) {
	if sp.n == 0 {
		sp.sMin, sp.sMax, sp.dMin, sp.dMax = s, s, ds, ds
	}
	sp.n++
	sp.sMin, sp.sMax = min(sp.sMin, s), max(sp.sMax, s)
	sp.dMin, sp.dMax = min(sp.dMin, ds), max(sp.dMax, ds)
}

func (b *sBounds) add(q fairqueue.QueueDump) {
	s := q.NextDispatchR.ToFloat()
	g := b.g
	if g <= 0 {
		g = fairqueue.EstimatedServiceTime.Seconds()
	}
	ds := s - float64(q.SeatsInUse)*g
	if q.PendingRequests != 0 {
		b.waiting.add(s, ds)
	}
	b.all.add(s, ds)
	b.latest = max(b.latest, s)
}

// bounds returns the bounds over the queues with waiting requests, or over
// every queue when none waits; found is false without queues.
func (b *sBounds) bounds() (sMin, sMax, dMin, dMax float64, found bool) {
	sp := b.waiting
	if sp.n == 0 {
		sp = b.all
	}
	return sp.sMin, sp.sMax, sp.dMin, sp.dMax, sp.n > 0
}

// headFlow returns the flow-schema metrics of the oldest queue head in d
// (the request most likely to be the one that did not fit), nil if no
// request waits.
func headFlow(d fairqueue.Dump) *metrics.FlowMetrics {
	var best *Ticket
	var arrive time.Time
	for _, r := range d.Requests {
		if r.IndexInQueue != 0 {
			continue
		}
		t, ok := r.Tag.(*Ticket)
		if !ok {
			continue
		}
		if best == nil || r.ArriveTime.Before(arrive) {
			best, arrive = t, r.ArriveTime
		}
	}
	if best == nil {
		return nil
	}
	best.dmu.Lock()
	defer best.dmu.Unlock()
	return best.fm
}
