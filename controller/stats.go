package controller

import (
	"time"

	"github.com/apfproject/apf/engine"
	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/metrics"
)

// The figures a live view needs beyond the dumps: each level's executing
// and waiting requests over the last minutes, its dispatches and its
// rejections by reason, and each FlowSchema's recent hits. None of it
// costs the request path anything: the level figures come from the
// counters its queue set already keeps (read by the once-a-second sample
// of Run, sample.go), the FlowSchema figures from the per-flow counters of
// the metrics (metrics.FlowMetrics.Counts).

// HistoryLength is how many one-second samples Stats keeps of each level:
// five minutes.
const HistoryLength = 300

// schemaMarkEvery and schemaMarks space the readings of the FlowSchema
// counters that recent hits are measured against: every 10 samples, the
// last 7 kept, so that the recent window spans 60 to 70 seconds once the
// server has run that long.
const (
	schemaMarkEvery = 10
	schemaMarks     = 7
)

// LevelSample is one second of a level's history.
type LevelSample struct {
	Time time.Time
	// Executing, Waiting and SeatsInUse are the level's requests executing
	// and waiting in its queues, and its seats held, at the sample.
	Executing, Waiting, SeatsInUse int
	// Dispatched and the rejections count what happened since the
	// previous sample.
	Dispatched                           int
	QueueFull, ConcurrencyLimit, TimeOut int
}

// LevelCounts are a level's totals since the controller first sampled it.
type LevelCounts struct {
	Dispatched                           uint64
	QueueFull, ConcurrencyLimit, TimeOut uint64
}

// LevelStats is one priority level in Stats.
type LevelStats struct {
	Name, UID string
	Exempt    bool
	// Quiescing is true for a level that left the configuration and
	// drains.
	Quiescing bool
	// Config is the queue set's configuration: Queues < 0 exempt, 0
	// reject, > 0 queuing (see fairqueue.Config).
	Config fairqueue.Config
	// Limits is the latest borrowing adjustment (nominal, lower, upper and
	// current seats), nil before the first.
	Limits *engine.Adjustment
	// Now is the queue set's state as Stats read it.
	Now fairqueue.Stats
	// Counts are the totals, Now included.
	Counts LevelCounts
	// History holds the samples of the last HistoryLength seconds, oldest
	// first.
	History []LevelSample
}

// SchemaStats is one FlowSchema in Stats, in matching order.
type SchemaStats struct {
	Name, UID string
	// Precedence is the schema's matchingPrecedence; PriorityLevel the
	// level it sends requests to; Distinguisher its distinguisher method
	// (ByUser, ByNamespace or "").
	Precedence    int32
	PriorityLevel string
	Distinguisher string
	// Imagined is true for a mandatory schema standing in for a missing
	// or unusable one.
	Imagined bool
	// Counts are the schema's totals (its requests dispatched and
	// rejected since its series began); Recent those of the last
	// RecentPeriod.
	Counts metrics.FlowCounts
	Recent metrics.FlowCounts
}

// Stats is the controller's live figures at Time.
type Stats struct {
	Time time.Time
	// Levels are the levels in the borrowing books, in the adjuster's
	// order (as Levels).
	Levels []LevelStats
	// FlowSchemas are the schemas in force, in matching order.
	FlowSchemas []SchemaStats
	// RecentPeriod is the span SchemaStats.Recent covers: up to 70 s, less
	// while the controller is young.
	RecentPeriod time.Duration
}

// statsBook is what the samples keep; guarded by Controller.mu.
type statsBook struct {
	levels  map[*Level]*levelHistory
	samples int
	// marks is a ring of FlowSchema counter readings, by (level, schema).
	marks [schemaMarks]schemaMark
	next  int
}

type schemaMark struct {
	at     time.Time
	counts map[[2]string]metrics.FlowCounts
}

// levelHistory is one level's ring of samples and the queue-set counters
// it was last read at.
type levelHistory struct {
	ring   [HistoryLength]LevelSample
	n      int // samples held
	next   int // where the next sample goes
	seen   bool
	prev   fairqueue.Stats
	totals LevelCounts
}

// delta turns the queue set's counters, read now, into what happened since
// the previous reading. Time-outs are the queue set's cancelled requests;
// its other rejections are queue-full at a queuing level and
// concurrency-limit at a reject level (the only rejections each kind
// makes).
func (h *levelHistory) delta(st fairqueue.Stats, queuing bool) LevelSample {
	var s LevelSample
	if !h.seen || st.Dispatched < h.prev.Dispatched || st.Rejected < h.prev.Rejected || st.Cancelled < h.prev.Cancelled {
		// First reading, or a queue set that started over: count from
		// here.
		return s
	}
	s.Dispatched = st.Dispatched - h.prev.Dispatched
	s.TimeOut = st.Cancelled - h.prev.Cancelled
	if other := st.Rejected - h.prev.Rejected - s.TimeOut; other > 0 {
		if queuing {
			s.QueueFull = other
		} else {
			s.ConcurrencyLimit = other
		}
	}
	return s
}

func (t *LevelCounts) add(s LevelSample) {
	t.Dispatched += uint64(s.Dispatched)
	t.QueueFull += uint64(s.QueueFull)
	t.ConcurrencyLimit += uint64(s.ConcurrencyLimit)
	t.TimeOut += uint64(s.TimeOut)
}

// sampleStatsLocked records one second of every level in the books and,
// every schemaMarkEvery samples, the FlowSchema counters. Called by
// sampleMetrics with c.mu held.
func (c *Controller) sampleStatsLocked(now time.Time) {
	b := &c.stats
	if b.levels == nil {
		b.levels = map[*Level]*levelHistory{}
	}
	live := c.eng.Levels()
	keep := make(map[*Level]bool, len(live))
	for _, l := range live {
		ls := c.levels[l]
		keep[ls] = true
		h := b.levels[ls]
		if h == nil {
			h = &levelHistory{}
			b.levels[ls] = h
		}
		st := ls.Stats()
		s := h.delta(st, l.Config().Queues > 0)
		s.Time = now
		s.Executing, s.Waiting, s.SeatsInUse = st.ExecutingRequests, st.WaitingRequests, st.SeatsInUse
		h.totals.add(s)
		h.prev, h.seen = st, true
		h.ring[h.next] = s
		h.next = (h.next + 1) % HistoryLength
		h.n = min(h.n+1, HistoryLength)
	}
	for ls := range b.levels {
		if !keep[ls] {
			delete(b.levels, ls)
		}
	}
	if b.samples%schemaMarkEvery == 0 {
		b.marks[b.next] = schemaMark{at: now, counts: c.schemaCounts()}
		b.next = (b.next + 1) % schemaMarks
	}
	b.samples++
}

// schemaCounts reads the counters of every schema in force.
func (c *Controller) schemaCounts() map[[2]string]metrics.FlowCounts {
	s := c.snap.Load()
	fss := s.eng.Matcher().FlowSchemas()
	out := make(map[[2]string]metrics.FlowCounts, len(fss))
	for _, fs := range fss {
		out[[2]string{fs.PriorityLevel.Name, fs.Name}] = s.flows[fs.Index].Counts()
	}
	return out
}

// Stats returns the live figures: every level's state, totals and
// history, and every FlowSchema's hits. The history fills as Run samples
// (once a second); a controller that does not run has levels with their
// current state and no history. It takes the controller's lock and each
// level's briefly, and copies what it returns.
func (c *Controller) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	out := Stats{Time: now}
	for _, l := range c.eng.Levels() {
		ls := c.levels[l]
		st := ls.Stats()
		v := LevelStats{
			Name: l.Name(), UID: l.UID(), Exempt: l.Exempt(), Quiescing: l.Retiring(),
			Config: l.Config(), Limits: l.Limits(), Now: st,
		}
		if h := c.stats.levels[ls]; h != nil {
			v.Counts = h.totals
			v.Counts.add(h.delta(st, l.Config().Queues > 0))
			v.History = make([]LevelSample, 0, h.n)
			for i := range h.n {
				v.History = append(v.History, h.ring[(h.next-h.n+i+HistoryLength)%HistoryLength])
			}
		}
		out.Levels = append(out.Levels, v)
	}

	// The oldest reading of the schema counters is what recent hits are
	// measured against.
	var oldest *schemaMark
	for i := range c.stats.marks {
		m := &c.stats.marks[i]
		if m.counts != nil && (oldest == nil || m.at.Before(oldest.at)) {
			oldest = m
		}
	}
	if oldest != nil {
		out.RecentPeriod = now.Sub(oldest.at)
	}
	s := c.snap.Load()
	for _, fs := range s.eng.Matcher().FlowSchemas() {
		v := SchemaStats{
			Name: fs.Name, UID: fs.UID, PriorityLevel: fs.PriorityLevel.Name, Imagined: fs.Imagined,
			Counts: s.flows[fs.Index].Counts(),
		}
		if o := fs.Object; o != nil {
			v.Precedence = o.Spec.MatchingPrecedence
			if d := o.Spec.DistinguisherMethod; d != nil {
				v.Distinguisher = string(d.Type)
			}
		}
		v.Recent = v.Counts
		if oldest != nil {
			if was, ok := oldest.counts[[2]string{fs.PriorityLevel.Name, fs.Name}]; ok {
				v.Recent = subCounts(v.Counts, was)
			}
		}
		out.FlowSchemas = append(out.FlowSchemas, v)
	}
	return out
}

// subCounts returns a − b, field by field, never below 0 (a series that
// was deleted and began again reads less than before).
func subCounts(a, b metrics.FlowCounts) metrics.FlowCounts {
	sub := func(x, y uint64) uint64 {
		if x < y {
			return x
		}
		return x - y
	}
	return metrics.FlowCounts{
		Dispatched:       sub(a.Dispatched, b.Dispatched),
		QueueFull:        sub(a.QueueFull, b.QueueFull),
		ConcurrencyLimit: sub(a.ConcurrencyLimit, b.ConcurrencyLimit),
		TimeOut:          sub(a.TimeOut, b.TimeOut),
	}
}
