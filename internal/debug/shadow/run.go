package shadow

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/engine"
	"github.com/apfproject/apf/engine/stepper"
	"github.com/apfproject/apf/fairqueue"
)

// level is what the shadow counts of one shadow priority level.
type level struct {
	name string

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

// sreq is what the shadow keeps of one live request it follows, beside
// its life in the stepper.
type sreq struct {
	token uint64
	lvl   *level
	fs    *classify.FlowSchema
	// liveOver says the live request is over (its token is forgotten).
	liveOver bool
}

// arriveLocked places a live arrival in the shadow configuration and
// runs it through its shadow level.
func (s *Shadow) arriveLocked(ev *event) {
	if s.st.Snapshot() == nil || s.st.Active() >= s.maxReqs {
		s.dropped.Add(1)
		return
	}
	p := s.st.Place(ev.at.Sub(s.start), &ev.attrs, ev.deadline)
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
	sr := s.get()
	sr.token, sr.lvl, sr.fs = ev.token, l, fs
	// The shadow sees live completions, not its own: the request executes
	// until the live one is over (Finish), or is ended by force.
	if r := s.st.Arrive(&p, stepper.Unknown, sr); r != nil {
		s.reqs[ev.token] = r
	}
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
	sr := r.Tag.(*sreq)
	sr.liveOver = true
	l := sr.lvl
	exec := ev.exec
	if ev.rejected || exec <= 0 {
		exec = max(l.execAvg, fairqueue.EstimatedServiceTime)
	} else if l.execAvg == 0 {
		l.execAvg = exec
	} else {
		l.execAvg += (exec - l.execAvg) / 8
	}
	s.st.Finish(r, ev.at.Sub(s.start), exec)
}

// dispatched hears from the stepper that r holds its shadow seats.
func (s *Shadow) dispatched(r *stepper.Request, _ time.Time) {
	sr := r.Tag.(*sreq)
	l := sr.lvl
	l.dispatched++
	w := r.Waited()
	if w > 0 {
		l.waited++
		l.waitSum += w
		l.waitMax = max(l.waitMax, w)
	}
	s.met.dispatched(sr.fs, w)
}

// rejected hears from the stepper that r was turned away, at once or when
// its wait limit passed.
func (s *Shadow) rejected(r *stepper.Request, now time.Time, reason fairqueue.RejectReason) {
	sr := r.Tag.(*sreq)
	sr.lvl.rejected[reason]++
	s.met.rejected(sr.fs, reason, now.Sub(r.Arrival()))
	s.end(sr)
}

// ended hears from the stepper that r gave its shadow seats back.
func (s *Shadow) ended(r *stepper.Request, _ time.Time) time.Duration {
	if r.Forced() {
		s.lost++
	}
	s.end(r.Tag.(*sreq))
	return 0
}

// end forgets sr: the shadow is done with it.
func (s *Shadow) end(sr *sreq) {
	if !sr.liveOver {
		delete(s.reqs, sr.token)
	}
	s.put(sr)
}

// changed hears from the stepper what an engine-wide input did: the
// levels it added and dropped, and their limits.
func (s *Shadow) changed(_ time.Time, ch engine.Change) {
	for _, el := range ch.Added {
		s.levels[el] = &level{name: el.Name()}
	}
	for _, el := range ch.Switched {
		delete(s.levels, el)
	}
	for _, el := range ch.Dropped {
		delete(s.levels, el)
		s.met.deleteLevel(el.Name())
	}
	for i := range ch.Adjustments {
		a := &ch.Adjustments[i]
		s.met.nominal.WithLabelValues(a.Name).Set(float64(a.Nominal))
		s.met.current.WithLabelValues(a.Name).Set(float64(a.Current))
	}
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
	*r = sreq{}
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
	snap := s.st.Snapshot()
	if snap == nil {
		return
	}
	clear(s.met.cache) // the schemas are new objects
	m := snap.Matcher()
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
	for _, sl := range s.st.Levels() {
		l := s.levels[sl.Engine()]
		occ := sl.Occupancy()
		rej := l.rejected[1] + l.rejected[2] + l.rejected[3]
		l.hist.push(Sample{
			Time:       now,
			Executing:  occ.Executing,
			Waiting:    occ.Waiting,
			SeatsInUse: occ.SeatsInUse,
			Dispatched: l.dispatched - l.lastDisp,
			Rejected:   rej - l.lastRej,
		})
		l.lastDisp, l.lastRej = l.dispatched, rej
		s.met.executing.WithLabelValues(l.name).Set(float64(occ.Executing))
		s.met.waiting.WithLabelValues(l.name).Set(float64(occ.Waiting))
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
