package fairqueue

import (
	"testing"
	"time"
)

// deadlineRig drives a queue set whose requests each run for service, far
// longer than their estimate, so that the drain rate has to be measured
// to mean anything.
type deadlineRig struct {
	t       *testing.T
	qs      *QueueSet
	now     time.Time
	service time.Duration
	ends    map[*Request]time.Time
}

func newDeadlineRig(t *testing.T, aware bool) *deadlineRig {
	qs := mustNew(t, Config{ConcurrencyLimit: 2, Queues: 64, HandSize: 1, QueueLengthLimit: 1000, DeadlineAware: aware})
	return &deadlineRig{t: t, qs: qs, now: t0, service: 500 * time.Millisecond, ends: map[*Request]time.Time{}}
}

func (g *deadlineRig) started(rs ...*Request) {
	for _, r := range rs {
		g.ends[r] = g.now.Add(g.service)
	}
}

func (g *deadlineRig) arrive(hash uint64, waitLimit time.Duration) (*Request, Decision) {
	r := &Request{Hash: hash, Work: WorkEstimate{InitialSeats: 1}, WaitLimit: waitLimit}
	d, others := g.qs.Arrive(g.now, r, nil)
	g.started(others...)
	if d == Dispatched {
		g.started(r)
	}
	return r, d
}

// advance runs the clock to now+d in 10 ms steps, finishing requests as
// their service ends.
func (g *deadlineRig) advance(d time.Duration) {
	end := g.now.Add(d)
	for g.now.Before(end) {
		g.now = g.now.Add(10 * time.Millisecond)
		for r, at := range g.ends {
			if !at.After(g.now) {
				delete(g.ends, r)
				others, _ := g.qs.Finish(g.now, r, nil)
				g.started(others...)
			}
		}
	}
}

// A deadline-aware level measures its drain (two seats, 500 ms each:
// four requests a second, against estimates of 3 ms) and rejects on
// arrival the request that its queue's backlog would keep waiting past
// its wait limit, with the level's time to drain; a request of another
// flow, which fair queuing would reach in time, still queues and is
// dispatched. The same level without the option queues the late request
// and it is still waiting when its limit has passed: the prediction only
// ever answers early what the wait limit would have answered late.
func TestDeadlineAwareRejectsLateArrivals(t *testing.T) {
	const flood, waitLimit = 7, time.Second
	for _, aware := range []bool{true, false} {
		g := newDeadlineRig(t, aware)
		for range 30 {
			g.arrive(flood, time.Minute)
		}
		g.advance(2500 * time.Millisecond)
		waiting := g.qs.totWaiting
		if waiting < 15 || waiting > 22 {
			t.Fatalf("aware %v: %d waiting after 2.5 s, want about 20", aware, waiting)
		}

		late, d := g.arrive(flood, waitLimit)
		if !aware {
			if d != Queued {
				t.Fatalf("off: the late request was %v, want queued", d)
			}
			g.advance(waitLimit)
			if late.state != stateWaiting {
				t.Fatalf("off: the late request left its queue within its wait limit (state %d): the prediction would have been wrong", late.state)
			}
			if late.DrainTime() != 0 {
				t.Errorf("off: DrainTime %v", late.DrainTime())
			}
			continue
		}
		if d != Rejected || late.Reason() != TimeOut {
			t.Fatalf("the late request was %v (%v), want rejected on arrival with time-out", d, late.Reason())
		}
		// About 20 waiting at 4 a second.
		want := time.Duration(waiting) * time.Second / 4
		if dt := late.DrainTime(); dt < want/2 || dt > 2*want {
			t.Errorf("DrainTime %v, want about %v", dt, want)
		}

		var other *Request
		for h := uint64(100); other == nil || other.queueIdx == late.queueIdx; h++ {
			if other != nil {
				g.qs.Cancel(g.now, other)
			}
			other, d = g.arrive(h, waitLimit)
			if d != Queued {
				t.Fatalf("a light flow's request was %v, want queued: fair queuing reaches it in time", d)
			}
		}
		g.advance(waitLimit)
		if other.state != stateExecuting && other.state != stateFree {
			t.Errorf("the light flow's request is still waiting after its wait limit (state %d)", other.state)
		}
	}
}

// Until the level has been measured for a whole window it predicts
// nothing: the first requests of a burst are queued as Kubernetes queues
// them.
func TestDeadlineAwareWaitsForAMeasure(t *testing.T) {
	g := newDeadlineRig(t, true)
	for range 30 {
		g.arrive(7, time.Minute)
	}
	g.advance(time.Second)
	if r, d := g.arrive(7, time.Millisecond); d != Queued || r.DrainTime() != 0 {
		t.Fatalf("before a whole window: %v, DrainTime %v", d, r.DrainTime())
	}
}

// TestDeadlineAwareMargin: the prediction is optimistic (what arrives
// after a request and is served first is not in it), so a request is
// rejected once its predicted wait passes lateShare of its wait limit:
// predicted at 0.95 of its limit it is rejected, at 0.75 it queues.
func TestDeadlineAwareMargin(t *testing.T) {
	const flood = 7
	for _, c := range []struct {
		share float64
		want  Decision
	}{{0.95, Rejected}, {0.75, Queued}} {
		g := newDeadlineRig(t, true)
		for range 30 {
			g.arrive(flood, time.Minute)
		}
		g.advance(2500 * time.Millisecond)
		n := g.qs.totWaiting
		// The flood's one queue holds every waiting request, each of the
		// same work: the next one waits for them all and itself.
		predicted := g.qs.drainTime(g.qs.lastNs) * time.Duration(n+1) / time.Duration(n)
		if predicted <= 0 {
			t.Fatalf("no drain measured after 2.5 s (%d waiting)", n)
		}
		r, d := g.arrive(flood, time.Duration(float64(predicted)/c.share))
		if d != c.want {
			t.Errorf("predicted at %.2f of its wait limit (%v of %v): %v (%v), want %v", c.share, predicted, r.WaitLimit, d, r.Reason(), c.want)
		}
	}
}
