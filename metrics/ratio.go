package metrics

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// RatioGauge is one child of a timing-ratio histogram: it tracks
// numerator/denominator over time and credits the histogram with the time the
// ratio spent in each bucket. See the package documentation for the model.
// Its methods are safe for concurrent use and do not allocate.
//
// Gauges that change together may share one lock (see
// [LevelMetrics.NoteOccupancy]), so that a change to all of them costs one
// lock instead of one each.
type RatioGauge struct {
	// mu is the gauge's lock, possibly shared with others, and the time
	// origin of lastNs.
	mu          *ratioLock
	upper       []float64 // finite upper bounds, ascending, shared with the vec
	labels      []string
	numerator   float64
	denominator float64
	ratio       float64
	idx         int // the bucket ratio falls in
	// lastNs is the time of the last change, in nanoseconds since mu.base.
	lastNs int64
	// counts[i] is the nanoseconds credited to bucket i alone (not
	// cumulative); the last entry is the +Inf bucket.
	counts []uint64
	sum    float64
}

// ratioLock is the lock a group of RatioGauges share, with the time origin
// of their readings. A gauge keeps the time of its last change as
// nanoseconds since base rather than as a time.Time: the gauges of a group
// change together, and one subtraction from base then serves them all,
// where each would otherwise subtract its own last time; and the hot path
// stores an integer instead of a time.Time, whose location pointer costs a
// write barrier while the garbage collector marks. Differences of readings
// are the differences of the times (monotonic when both times carry a
// monotonic reading, wall otherwise), as when they were taken directly.
type ratioLock struct {
	sync.Mutex
	base time.Time
	// drain, when set, applies the changes a level has logged for the
	// gauges of this lock (LevelMetrics.NoteOccupancy); a reading or a
	// new denominator calls it first, without holding the lock.
	drain atomic.Pointer[func()]
}

// drainLog applies what the group's owner has logged, if it logs.
func (lk *ratioLock) drainLog() {
	if d := lk.drain.Load(); d != nil {
		(*d)()
	}
}

func newRatioLock(base time.Time) *ratioLock { return &ratioLock{base: base} }

// ns returns now in nanoseconds since base.
func (lk *ratioLock) ns(now time.Time) int64 { return int64(now.Sub(lk.base)) }

func newRatioGauge(lk *ratioLock, upper []float64, labels []string, now time.Time, numerator, denominator float64) *RatioGauge {
	if lk == nil {
		lk = newRatioLock(now)
	}
	g := &RatioGauge{
		mu:          lk,
		upper:       upper,
		labels:      labels,
		numerator:   numerator,
		denominator: denominator,
		lastNs:      lk.ns(now),
		counts:      make([]uint64, len(upper)+1),
	}
	g.setRatio(numerator / denominator)
	return g
}

// setRatio sets the current ratio and finds its bucket: the first whose
// upper bound is at least the ratio, len(upper) (+Inf) when there is none
// (NaN included, as it compares false with every bound). The ratio
// usually moves by small steps, so the search walks from the previous
// bucket.
func (g *RatioGauge) setRatio(r float64) {
	g.ratio = r
	i := g.idx
	for i > 0 && r <= g.upper[i-1] {
		i--
	}
	for i < len(g.upper) && !(r <= g.upper[i]) {
		i++
	}
	g.idx = i
}

// creditLocked charges the current ratio with the time since the last
// change; t is the time now in nanoseconds since g.mu.base.
func (g *RatioGauge) creditLocked(t int64) {
	d := t - g.lastNs
	if d <= 0 {
		return
	}
	g.lastNs = t
	g.counts[g.idx] += uint64(d)
	// float64 of the signed d: the same value as of uint64(d), in one
	// conversion instruction instead of a branchy sequence.
	g.sum += g.ratio * float64(d)
}

// Set sets the numerator at time now.
func (g *RatioGauge) Set(now time.Time, numerator float64) {
	g.mu.Lock()
	g.setLocked(g.mu.ns(now), numerator)
	g.mu.Unlock()
}

// setLocked sets the numerator at t, in nanoseconds since g.mu.base.
func (g *RatioGauge) setLocked(t int64, numerator float64) {
	g.creditLocked(t)
	g.numerator = numerator
	g.setRatio(numerator / g.denominator)
}

// SetDenominator sets the denominator at time now.
func (g *RatioGauge) SetDenominator(now time.Time, denominator float64) {
	g.mu.drainLog()
	g.mu.Lock()
	g.creditLocked(g.mu.ns(now))
	g.denominator = denominator
	g.setRatio(g.numerator / denominator)
	g.mu.Unlock()
}

// snapshot credits time up to now and returns the exposition values.
func (g *RatioGauge) snapshot(now time.Time) (count uint64, sum float64, cumulative map[float64]uint64) {
	g.mu.drainLog()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.creditLocked(g.mu.ns(now))
	cumulative = make(map[float64]uint64, len(g.upper))
	var acc uint64
	for i, ub := range g.upper {
		acc += g.counts[i]
		cumulative[ub] = acc
	}
	return acc + g.counts[len(g.upper)], g.sum, cumulative
}

// ratioVec is a prometheus.Collector exposing a family of RatioGauges as a
// histogram metric.
type ratioVec struct {
	desc   *prometheus.Desc
	upper  []float64
	labels []string // variable label names, in order
	clock  func() time.Time

	mu       sync.Mutex
	children map[string]*RatioGauge
}

func newRatioVec(name, help string, stab stability, constLabels prometheus.Labels, upper []float64, clock func() time.Time, labels ...string) *ratioVec {
	return &ratioVec{
		desc:     prometheus.NewDesc(name, stab.help(help), labels, constLabels),
		upper:    upper,
		labels:   labels,
		clock:    clock,
		children: map[string]*RatioGauge{},
	}
}

// key joins label values with a byte that cannot appear in valid UTF-8.
func ratioKey(values []string) string { return strings.Join(values, "\xff") }

// child returns the gauge for the label values, creating it with ratio
// numerator/denominator at the current clock time if needed. A new gauge
// uses the lock lk, or a lock of its own if lk is nil; an existing one
// keeps the lock it was made with.
func (v *ratioVec) child(lk *ratioLock, numerator, denominator float64, values ...string) *RatioGauge {
	if len(values) != len(v.labels) {
		panic("metrics: wrong number of label values for " + v.desc.String())
	}
	k := ratioKey(values)
	v.mu.Lock()
	defer v.mu.Unlock()
	if g, ok := v.children[k]; ok {
		return g
	}
	g := newRatioGauge(lk, v.upper, append([]string(nil), values...), v.clock(), numerator, denominator)
	v.children[k] = g
	return g
}

// delete removes the child with exactly these label values, if any.
func (v *ratioVec) delete(values ...string) {
	k := ratioKey(values)
	v.mu.Lock()
	delete(v.children, k)
	v.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (v *ratioVec) Describe(ch chan<- *prometheus.Desc) { ch <- v.desc }

// Collect implements prometheus.Collector.
func (v *ratioVec) Collect(ch chan<- prometheus.Metric) {
	now := v.clock()
	v.mu.Lock()
	gs := make([]*RatioGauge, 0, len(v.children))
	for _, g := range v.children {
		gs = append(gs, g)
	}
	v.mu.Unlock()
	for _, g := range gs {
		count, sum, buckets := g.snapshot(now)
		m, err := prometheus.NewConstHistogram(v.desc, count, sum, buckets, g.labels...)
		if err != nil {
			m = prometheus.NewInvalidMetric(v.desc, err)
		}
		ch <- m
	}
}
