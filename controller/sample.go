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
		c.sampleLevelLocked(l.Queue)
	}
}

func (c *Controller) sampleLevelLocked(ls *levelState) {
	prev := &ls.sampled
	st := ls.fq.Stats()
	noAcc := st.NoAccommodation - prev.noAccommodation + prev.pendingNoAccommodation
	d := ls.fq.Dump(noAcc > 0)
	lm := ls.lm

	lm.CurrentR.Set(d.CurrentR.ToFloat())
	// S bounds over the queues with waiting requests, or every queue when
	// none waits.
	var sMin, sMax, dMin, dMax, latest float64
	found := false
	g := fairqueue.EstimatedServiceTime.Seconds()
	for pass := 0; pass < 2 && !found; pass++ {
		for _, q := range d.Queues {
			if pass == 0 && q.PendingRequests == 0 {
				continue
			}
			s := q.NextDispatchR.ToFloat()
			ds := s - float64(q.SeatsInUse)*g
			if !found {
				sMin, sMax, dMin, dMax = s, s, ds, ds
				found = true
			}
			sMin, sMax = min(sMin, s), max(sMax, s)
			dMin, dMax = min(dMin, ds), max(dMax, ds)
		}
	}
	for _, q := range d.Queues {
		latest = max(latest, q.NextDispatchR.ToFloat())
	}
	if found {
		lm.NextSMin.Set(sMin)
		lm.NextSMax.Set(sMax)
		lm.NextDiscountedSMin.Set(dMin)
		lm.NextDiscountedSMax.Set(dMax)
	}
	if d.Dispatched != prev.dispatched {
		lm.DispatchR.Set(d.CurrentR.ToFloat())
		if len(d.Queues) > 0 {
			lm.LatestS.Set(latest)
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
