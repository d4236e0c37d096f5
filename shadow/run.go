package shadow

import (
	"container/heap"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/engine"
	"github.com/apfproject/apf/fairqueue"
)

// level is one shadow priority level: the engine's level, driven by the
// shadow's goroutine alone, with what the state reports of it.
type level struct {
	s      *Shadow
	name   string
	exempt bool
	el     *engine.Level
	occ    fairqueue.Occupancy

	arrived, dispatched int64
	rejected            [4]int64 // by fairqueue.RejectReason
	waited              int64    // dispatched after waiting in a queue
	waitSum, waitMax    time.Duration
	// execAvg is a moving average of the live execution times of the
	// level's requests: the time charged to a request the live
	// configuration rejected, which never executed.
	execAvg time.Duration

	hist              ring
	lastDisp, lastRej int64
}

// doneLocked applies what an input on the level did at now.
func (l *level) doneLocked(o engine.Outcome, now time.Time) {
	l.occ = o.Occupancy
	l.s.startedLocked(o.Dispatched, now)
}

// sreq is one live request as the shadow follows it.
type sreq struct {
	req     fairqueue.Request
	token   uint64
	lvl     *level
	fs      *classify.FlowSchema
	arrival time.Time
	start   time.Time // dispatch in the shadow
	state   reqState
	// liveOver says the live request is over; exec is then how long the
	// shadow request executes once dispatched.
	liveOver bool
	exec     time.Duration
	// gen tells a timer set for this use of the sreq from one left over
	// from an earlier use.
	gen uint32
}

type reqState uint8

const (
	stWaiting reqState = iota + 1
	stExecuting
	stLingering
)

// timer is something the shadow does at a time of its own: end a wait at
// its limit, end an execution whose length is known, release a final
// phase, or end by force an execution whose live completion never came.
type timer struct {
	due  time.Time
	r    *sreq
	gen  uint32
	kind timerKind
}

type timerKind uint8

const (
	tmWaitLimit timerKind = iota + 1
	tmFinish
	tmRelease
	tmForce
)

type timerHeap []timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)        { *h = append(*h, x.(timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// current reports whether the timer still applies: its request is the
// same use of the sreq and still in the state the timer acts on.
func (tm *timer) current() bool {
	r := tm.r
	if r.gen != tm.gen {
		return false
	}
	switch tm.kind {
	case tmWaitLimit:
		return r.state == stWaiting
	case tmFinish:
		return r.state == stExecuting
	case tmForce:
		return r.state == stExecuting && !r.liveOver
	case tmRelease:
		return r.state == stLingering
	}
	return false
}

// schedule sets a timer. Timers that no longer apply stay in the heap
// until due; when they outnumber the requests the shadow holds, they are
// swept out, which keeps the heap within a few times MaxRequests.
func (s *Shadow) schedule(r *sreq, due time.Time, k timerKind) {
	heap.Push(&s.timers, timer{due: due, r: r, gen: r.gen, kind: k})
	if len(s.timers) > 2*s.alive+1024 {
		kept := s.timers[:0]
		for _, tm := range s.timers {
			if tm.current() {
				kept = append(kept, tm)
			}
		}
		clear(s.timers[len(kept):])
		s.timers = kept
		heap.Init(&s.timers)
	}
}

// fireLocked runs every timer due by now, each at its own time.
func (s *Shadow) fireLocked(now time.Time) {
	for len(s.timers) > 0 && !s.timers[0].due.After(now) {
		tm := heap.Pop(&s.timers).(timer)
		r := tm.r
		if !tm.current() {
			continue
		}
		at := s.at(tm.due)
		switch tm.kind {
		case tmWaitLimit:
			l := r.lvl
			o := l.el.Cancel(at, &r.req)
			l.occ = o.Occupancy
			if o.Decision == fairqueue.Rejected {
				l.rejected[fairqueue.TimeOut]++
				s.met.rejected(r.fs, fairqueue.TimeOut, at.Sub(r.arrival))
				s.endLocked(r)
			}
		case tmFinish, tmForce:
			if tm.kind == tmForce {
				s.lost++
			}
			s.finishLocked(r, at)
		case tmRelease:
			l := r.lvl
			o := l.el.Release(at, &r.req)
			s.endLocked(r)
			l.doneLocked(o, at)
		}
	}
}

// arriveLocked places a live arrival in the shadow configuration and
// runs it through its shadow level.
func (s *Shadow) arriveLocked(ev *event) {
	if s.snap == nil || s.alive >= s.maxReqs {
		s.dropped.Add(1)
		return
	}
	now := s.at(ev.at)
	p := s.snap.Place(now, &ev.attrs, ev.deadline)
	fs, pl := p.FlowSchema, p.PriorityLevel
	s.arrived++
	s.hits[fs.Name]++
	if live := ev.live; live != nil && (live.Name != fs.Name || live.PriorityLevel.Name != pl.Name) {
		s.moved++
		k := moveKey{live.Name, live.PriorityLevel.Name, fs.Name, pl.Name}
		if m := s.moves[k]; m != nil {
			m.n++
			m.c.Inc()
		} else if len(s.moves) < maxMoves {
			m = &moveCount{n: 1, c: s.met.moved(k)}
			m.c.Inc()
			s.moves[k] = m
		} else {
			s.other++
		}
	}
	l := s.levels[p.Level]
	l.arrived++
	r := s.get()
	r.token, r.lvl, r.fs, r.arrival = ev.token, l, fs, now
	r.req.Hash, r.req.Work, r.req.Tag = p.FlowHash, p.Work, r
	o := l.el.Arrive(now, &r.req)
	switch o.Decision {
	case fairqueue.Rejected:
		reason := o.Reason
		l.rejected[reason]++
		s.met.rejected(fs, reason, 0)
		s.put(r)
	case fairqueue.Queued:
		r.state = stWaiting
		s.alive++
		s.reqs[r.token] = r
		s.schedule(r, now.Add(p.WaitLimit), tmWaitLimit)
	case fairqueue.Dispatched:
		s.alive++
		s.reqs[r.token] = r
		s.startLocked(r, now)
	}
	l.doneLocked(o, now)
}

// liveOverLocked hears that a live request is over, after executing for
// ev.exec. Its shadow request executes that long from its own dispatch:
// if it executes, it ends now or, when the shadow dispatched it later than
// the live configuration did, that much later; if it still waits, it will
// execute that long once dispatched. A request the live configuration
// rejected never executed: its shadow request executes for as long as
// the level's requests do on average.
func (s *Shadow) liveOverLocked(ev *event) {
	r, ok := s.reqs[ev.token]
	if !ok {
		return
	}
	delete(s.reqs, ev.token)
	now := s.at(ev.at)
	l := r.lvl
	r.liveOver, r.exec = true, ev.exec
	if ev.rejected || ev.exec <= 0 {
		r.exec = max(l.execAvg, fairqueue.EstimatedServiceTime)
	} else if l.execAvg == 0 {
		l.execAvg = ev.exec
	} else {
		l.execAvg += (ev.exec - l.execAvg) / 8
	}
	if r.state != stExecuting {
		return
	}
	if end := r.start.Add(r.exec); end.After(now) {
		s.schedule(r, end, tmFinish)
		return
	}
	s.finishLocked(r, now)
}

// startLocked records that r was dispatched at now.
func (s *Shadow) startLocked(r *sreq, now time.Time) {
	r.state, r.start = stExecuting, now
	l := r.lvl
	l.dispatched++
	w := now.Sub(r.arrival)
	if w > 0 {
		l.waited++
		l.waitSum += w
		l.waitMax = max(l.waitMax, w)
	}
	s.met.dispatched(r.fs, w)
	if r.liveOver {
		s.schedule(r, now.Add(r.exec), tmFinish)
	} else {
		s.schedule(r, r.arrival.Add(s.forceEnd), tmForce)
	}
}

// startedLocked records the dispatch of requests another call let go.
func (s *Shadow) startedLocked(rs []*fairqueue.Request, now time.Time) {
	for _, q := range rs {
		if r, ok := q.Tag.(*sreq); ok && r.state == stWaiting {
			s.startLocked(r, now)
		}
	}
}

// finishLocked ends r's execution at now.
func (s *Shadow) finishLocked(r *sreq, now time.Time) {
	l := r.lvl
	o := l.el.Finish(now, &r.req)
	if o.Release > 0 {
		r.state = stLingering
		r.gen++ // the force timer no longer applies
		s.schedule(r, now.Add(o.Release), tmRelease)
	} else {
		s.endLocked(r)
	}
	l.doneLocked(o, now)
}

// endLocked forgets r: the shadow is done with it.
func (s *Shadow) endLocked(r *sreq) {
	if !r.liveOver {
		delete(s.reqs, r.token)
	}
	s.alive--
	s.put(r)
}

func (s *Shadow) get() *sreq {
	if n := len(s.free); n > 0 {
		r := s.free[n-1]
		s.free = s.free[:n-1]
		return r
	}
	return &sreq{}
}

// put recycles r; at most a few thousand are kept.
func (s *Shadow) put(r *sreq) {
	gen := r.gen + 1
	*r = sreq{gen: gen}
	if len(s.free) < 4096 {
		s.free = append(s.free, r)
	}
}

// moveCount is the requests one pair of classifications moved, and their
// series.
type moveCount struct {
	n int64
	c prometheus.Counter
}

// moveKey is a pair of classifications: live, then shadow.
type moveKey struct {
	LiveFlowSchema, LivePriorityLevel string
	FlowSchema, PriorityLevel         string
}

// pruneLocked forgets the counts of schemas and levels that are neither
// live nor in the shadow configuration any more.
func (s *Shadow) pruneLocked() {
	if s.snap == nil {
		return
	}
	clear(s.met.cache) // the schemas are new objects
	m := s.snap.Matcher()
	shadowFS := map[string]bool{}
	for _, fs := range m.FlowSchemas() {
		shadowFS[fs.Name] = true
	}
	shadowPL := map[string]bool{}
	for _, pl := range m.PriorityLevels() {
		shadowPL[pl.Name] = true
	}
	for k := range s.moves {
		if !shadowFS[k.FlowSchema] || !shadowPL[k.PriorityLevel] ||
			!s.liveObjs["FlowSchema/"+k.LiveFlowSchema] && !shadowFS[k.LiveFlowSchema] {
			delete(s.moves, k)
			s.met.deleteMove(k)
		}
	}
	for name := range s.hits {
		if !shadowFS[name] {
			delete(s.hits, name)
			s.met.deleteSchema(name)
		}
	}
}

// sample records, once a second, each level's occupancy in its history
// and in the gauges.
func (s *Shadow) sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.catchUpLocked(s.clock.Now())
	for _, el := range s.eng.Levels() {
		l := s.levels[el]
		rej := l.rejected[1] + l.rejected[2] + l.rejected[3]
		l.hist.push(Sample{
			Time:       now,
			Executing:  l.occ.Executing,
			Waiting:    l.occ.Waiting,
			SeatsInUse: l.occ.SeatsInUse,
			Dispatched: l.dispatched - l.lastDisp,
			Rejected:   rej - l.lastRej,
		})
		l.lastDisp, l.lastRej = l.dispatched, rej
		s.met.executing.WithLabelValues(l.name).Set(float64(l.occ.Executing))
		s.met.waiting.WithLabelValues(l.name).Set(float64(l.occ.Waiting))
	}
	s.armLocked()
}

// ring is a level's last HistoryLength samples.
type ring struct {
	buf  []Sample
	next int
}

func (r *ring) push(x Sample) {
	if len(r.buf) < HistoryLength {
		r.buf = append(r.buf, x)
		return
	}
	r.buf[r.next] = x
	r.next = (r.next + 1) % HistoryLength
}

// all returns the samples, oldest first, in a new slice.
func (r *ring) all() []Sample {
	out := make([]Sample, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}
