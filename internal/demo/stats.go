package demo

import (
	"math"
	"sync"
	"time"
)

// Latencies are counted in a log-scale histogram: buckets 4% wide from
// 100 µs to about a minute. Memory stays bounded however long the demo
// runs, and a 4% error is invisible in a table printed in milliseconds.
const (
	histMin     = 100 * time.Microsecond
	histGrowth  = 1.04
	histBuckets = 340 // histMin * 1.04^340 ≈ 61 s
)

var logGrowth = math.Log(histGrowth)

type histogram struct {
	n int
	b [histBuckets]uint32
}

func bucketOf(d time.Duration) int {
	if d <= histMin {
		return 0
	}
	i := int(math.Log(float64(d)/float64(histMin))/logGrowth) + 1
	return min(i, histBuckets-1)
}

func (h *histogram) add(d time.Duration) {
	h.b[bucketOf(d)]++
	h.n++
}

func (h *histogram) merge(o *histogram) {
	h.n += o.n
	for i, c := range o.b {
		h.b[i] += c
	}
}

// quantile returns the upper bound of the bucket holding the q-quantile,
// 0 for an empty histogram.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	seen := 0
	for i, c := range h.b {
		seen += int(c)
		if seen >= rank {
			return time.Duration(float64(histMin) * math.Pow(histGrowth, float64(i)))
		}
	}
	return time.Duration(float64(histMin) * math.Pow(histGrowth, histBuckets-1))
}

// windowSlots is how many one-second slots the recent latencies span: the
// table's p50/p99 are over the last few seconds, not since the start.
const windowSlots = 5

// counts are a client's running totals.
type counts struct {
	Sent     int // requests sent
	OK       int // answered 2xx
	Rejected int // answered 429
	Failed   int // any other answer, or no answer
}

// clientStats records one client's requests. Every method is safe for
// concurrent use.
type clientStats struct {
	start time.Time

	mu       sync.Mutex
	totals   counts
	inflight int
	levelUID string // the X-Kubernetes-PF-PriorityLevel-UID last seen
	all      histogram
	slots    [windowSlots]histogram
	slotSec  [windowSlots]int // the second (since start) each slot holds
}

func newClientStats(start time.Time) *clientStats {
	s := &clientStats{start: start}
	for i := range s.slotSec {
		s.slotSec[i] = -1
	}
	return s
}

func (s *clientStats) sent() {
	s.mu.Lock()
	s.totals.Sent++
	s.inflight++
	s.mu.Unlock()
}

// done records an answer (code 0: none) that took latency and ended at now.
func (s *clientStats) done(now time.Time, code int, latency time.Duration, levelUID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight--
	switch {
	case code >= 200 && code < 300:
		s.totals.OK++
	case code == 429:
		s.totals.Rejected++
	default:
		s.totals.Failed++
	}
	if levelUID != "" {
		s.levelUID = levelUID
	}
	if code == 0 {
		return // no latency to speak of
	}
	s.all.add(latency)
	sec := int(now.Sub(s.start) / time.Second)
	slot := &s.slots[sec%windowSlots]
	if s.slotSec[sec%windowSlots] != sec {
		*slot = histogram{}
		s.slotSec[sec%windowSlots] = sec
	}
	slot.add(latency)
}

// cancelled forgets a request cut off by the end of the demo: it was
// neither answered nor refused.
func (s *clientStats) cancelled() {
	s.mu.Lock()
	s.inflight--
	s.totals.Sent--
	s.mu.Unlock()
}

// clientSnapshot is what the table shows of a client at one moment.
type clientSnapshot struct {
	totals   counts
	inflight int
	levelUID string
	recent   histogram // the last windowSlots seconds
}

func (s *clientStats) snapshot(now time.Time) clientSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := clientSnapshot{totals: s.totals, inflight: s.inflight, levelUID: s.levelUID}
	sec := int(now.Sub(s.start) / time.Second)
	for i := range s.slots {
		if s.slotSec[i] >= 0 && sec-s.slotSec[i] < windowSlots {
			c.recent.merge(&s.slots[i])
		}
	}
	return c
}

// final returns the totals and the latency quantiles since the start.
func (s *clientStats) final() (counts, time.Duration, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals, s.all.quantile(0.5), s.all.quantile(0.99)
}
