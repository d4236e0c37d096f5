package metrics

import (
	"math"
	mathbits "math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The request-path figures of a (priority level, flow schema) pair.
//
// Every admitted request updates seven series of its pair: it is counted
// in dispatched_requests_total and in the two current_executing gauges
// when it starts and out of the gauges when it ends, and it is observed in
// work_estimated_seats, request_wait_duration_seconds,
// request_execution_seconds and, at a queuing level,
// request_queue_length_after_enqueue. Kept as Prometheus children, those
// are seven separately allocated objects, each written with atomic
// operations, and a pair's requests run on every processor: each write
// finds the cache line where another processor last wrote it and has to
// fetch it from there, a cost that grows with the processors serving one
// pair and that no instruction count shows.
//
// A pair therefore keeps these figures in stripes: a few copies of one
// struct, padded so that no two share a cache line, a request updating one
// copy only, the one its processor tends to use (Stripe). The exposition
// sums the stripes. Durations are kept as integer nanoseconds and seats as
// integers, so that every update is one atomic add: no compare-and-swap
// loop on a float, as a Prometheus histogram's sum or a gauge's Add needs.

// maxStripes bounds a pair's stripes. A stripe is about 750 bytes; a
// pair's stripes are allocated when it sees its first request.
const maxStripes = 8

// stripeCount is the number of stripes of a pair: the power of two at or
// above the processors available at start, at most maxStripes.
var stripeCount = func() int {
	n := 1
	for n < runtime.GOMAXPROCS(0) && n < maxStripes {
		n *= 2
	}
	return n
}()

// stripeToken carries a stripe number. Tokens live in a sync.Pool, whose
// Get and Put use a per-processor slot first: a goroutine that takes a
// token and puts it straight back, with nothing between that could move
// it to another processor, gets the token its processor used last, and so
// the same stripe, as long as the garbage collector does not empty the
// pool. That is all Stripe needs: a number that is usually the same on one
// processor and usually different on two.
type stripeToken struct{ n int }

var (
	stripeNext   atomic.Uint32
	stripeTokens = sync.Pool{New: func() any {
		return &stripeToken{n: int(stripeNext.Add(1)-1) % stripeCount}
	}}
)

// Stripe returns the stripe number for a request starting on the calling
// goroutine: pass it to [FlowMetrics.Stripe] for the request's updates,
// the same number at its start and at its end.
func Stripe() int {
	t := stripeTokens.Get().(*stripeToken)
	n := t.n
	stripeTokens.Put(t)
	return n
}

// Bits of FlowStripe.used: the series a stripe has been given a value for.
// A series is exported once any stripe of its pair has one, as a
// Prometheus child exists from its first use.
const (
	usedDispatched uint32 = 1 << iota
	usedExecutingRequests
	usedExecutingSeats
	usedWaitExecuted
	usedWaitRejected
	usedExecutionRegular
	usedExecutionWatch
	usedWorkSeats
	usedQueueLength
	// stripedSeries is the number of series a pair keeps in stripes.
	stripedSeries = iota
)

// durationHistogram is a histogram of durations over requestSecondBuckets,
// in nanoseconds. buckets[i] counts the observations in bucket i alone
// (not cumulative); the last is +Inf.
type durationHistogram struct {
	sum     atomic.Int64
	buckets [len(requestSecondBoundsNs) + 1]atomic.Uint64
}

// requestSecondBoundsNs are requestSecondBuckets in nanoseconds (a test
// checks that they agree). A duration is in the first bucket whose bound
// it does not exceed, as its seconds are in Prometheus's.
var requestSecondBoundsNs = [...]int64{0, 5e6, 20e6, 50e6, 100e6, 200e6, 500e6, 1e9, 2e9, 5e9, 10e9, 15e9, 30e9}

func (h *durationHistogram) observe(d time.Duration) {
	ns := int64(d)
	i := 0
	for i < len(requestSecondBoundsNs) && ns > requestSecondBoundsNs[i] {
		i++
	}
	h.buckets[i].Add(1)
	h.sum.Add(ns)
}

// observeSeconds is observe for a value in seconds, bucketed by comparing
// seconds as Prometheus does.
func (h *durationHistogram) observeSeconds(v float64) {
	i := 0
	for i < len(requestSecondBuckets) && !(v <= requestSecondBuckets[i]) {
		i++
	}
	h.buckets[i].Add(1)
	h.sum.Add(int64(math.Round(v * 1e9)))
}

// countHistogram is a histogram of whole numbers over eight integer
// bounds: work_estimated_seats over workSeatsBounds and
// request_queue_length_after_enqueue over queueLengthBounds.
type countHistogram struct {
	sum     atomic.Int64
	buckets [countBounds + 1]atomic.Uint64
}

// countBounds is how many bounds a countHistogram has.
const countBounds = 8

// workSeatsBounds and queueLengthBounds are workSeatsBuckets and
// queueLengthBuckets as integers (a test checks that they agree).
var (
	workSeatsBounds   = [countBounds]int64{1, 2, 4, 8, 16, 32, 64, 100}
	queueLengthBounds = [countBounds]int64{0, 10, 25, 50, 100, 250, 500, 1000}
)

func (h *countHistogram) observe(bounds *[countBounds]int64, n int64) {
	i := 0
	for i < len(bounds) && n > bounds[i] {
		i++
	}
	h.buckets[i].Add(1)
	h.sum.Add(n)
}

// observeFloat is observe for a value given as a float, bucketed by
// comparing floats as Prometheus does.
func (h *countHistogram) observeFloat(upper []float64, v float64) {
	i := 0
	for i < len(upper) && !(v <= upper[i]) {
		i++
	}
	h.buckets[i].Add(1)
	h.sum.Add(int64(math.Round(v)))
}

// FlowStripe is one stripe of a pair's request-path figures. Its methods
// are safe for concurrent use and do not allocate.
type FlowStripe struct {
	f              *FlowMetrics
	used           atomic.Uint32
	dispatched     atomic.Uint64
	executing      atomic.Int64
	executingSeats atomic.Int64
	waitExecuted   durationHistogram
	waitRejected   durationHistogram
	execRegular    durationHistogram
	execWatch      durationHistogram
	workSeats      countHistogram
	queueLength    countHistogram
	// The pad keeps the next stripe's first fields off the cache line
	// of this one's last.
	_ [64]byte
}

// mark records that the series of bits have values.
func (s *FlowStripe) mark(bits uint32) {
	if s.used.Load()&bits != bits {
		s.markSlow(bits)
	}
}

// markSlow records the first value of series in this stripe: the pair
// notes the series' creation time if no stripe did before (a Prometheus
// child's created timestamp is that of its first use), then the stripe
// marks them used, so that a collection that sees them used finds their
// creation time.
func (s *FlowStripe) markSlow(bits uint32) {
	s.f.noteCreated(bits)
	s.used.Or(bits)
}

// noteCreated sets the creation time of each series of bits that has none.
func (f *FlowMetrics) noteCreated(bits uint32) {
	var now int64
	for b := bits; b != 0; b &= b - 1 {
		c := &f.created[mathbits.TrailingZeros32(b)]
		if c.Load() != 0 {
			continue
		}
		if now == 0 {
			now = f.set.clock().UnixNano()
		}
		c.CompareAndSwap(0, now)
	}
}

// createdAt returns the creation time of the series bit.
func (f *FlowMetrics) createdAt(bit uint32) time.Time {
	return time.Unix(0, f.created[mathbits.TrailingZeros32(bit)].Load())
}

// Dispatched counts a request that starts executing with seats seats
// held: dispatched_requests_total, current_executing_requests and
// current_executing_seats.
func (s *FlowStripe) Dispatched(seats int) {
	s.dispatched.Add(1)
	s.executing.Add(1)
	s.executingSeats.Add(int64(seats))
	s.mark(usedDispatched | usedExecutingRequests | usedExecutingSeats)
}

// Finished counts a request out of current_executing_requests, gives back
// its seats in current_executing_seats and observes how long it executed
// in request_execution_seconds (type watch or regular).
func (s *FlowStripe) Finished(d time.Duration, watch bool, seats int) {
	s.executing.Add(-1)
	s.executingSeats.Add(-int64(seats))
	if watch {
		s.execWatch.observe(d)
		s.mark(usedExecutingRequests | usedExecutingSeats | usedExecutionWatch)
		return
	}
	s.execRegular.observe(d)
	s.mark(usedExecutingRequests | usedExecutingSeats | usedExecutionRegular)
}

// AddExecutingSeats adds n (which may be negative) to
// current_executing_seats: a final phase's seats.
func (s *FlowStripe) AddExecutingSeats(n int) {
	s.executingSeats.Add(int64(n))
	s.mark(usedExecutingSeats)
}

// ObserveWait observes a request's wait in request_wait_duration_seconds:
// execute "true" for a request that got its seats or timed out waiting,
// "false" for one rejected on arrival.
func (s *FlowStripe) ObserveWait(d time.Duration, executed bool) {
	if executed {
		s.waitExecuted.observe(d)
		s.mark(usedWaitExecuted)
		return
	}
	s.waitRejected.observe(d)
	s.mark(usedWaitRejected)
}

// ObserveWorkSeats observes a request's estimated seats in
// work_estimated_seats.
func (s *FlowStripe) ObserveWorkSeats(seats int) {
	s.workSeats.observe(&workSeatsBounds, int64(seats))
	s.mark(usedWorkSeats)
}

// ObserveQueueLength observes the length of the queue a request joined,
// itself included, in request_queue_length_after_enqueue.
func (s *FlowStripe) ObserveQueueLength(n int) {
	s.queueLength.observe(&queueLengthBounds, int64(n))
	s.mark(usedQueueLength)
}

// Stripe returns stripe n (a number from [Stripe]) of the pair's
// figures, allocating the pair's stripes at its first use.
func (f *FlowMetrics) Stripe(n int) *FlowStripe {
	p := f.stripes.Load()
	if p == nil {
		p = f.allocStripes()
	}
	s := *p
	return &s[n&(len(s)-1)]
}

func (f *FlowMetrics) allocStripes() *[]FlowStripe {
	s := make([]FlowStripe, stripeCount)
	for i := range s {
		s[i].f = f
	}
	if f.stripes.CompareAndSwap(nil, &s) {
		return &s
	}
	return f.stripes.Load()
}

// flowTotals is the sum of a pair's stripes.
type flowTotals struct {
	used                                               uint32
	dispatched                                         uint64
	executing, executingSeats                          int64
	waitExecuted, waitRejected, execRegular, execWatch histogramTotals
	workSeats, queueLength                             histogramTotals
}

// histogramTotals is a histogram summed over stripes: per-bucket counts
// (not cumulative) and the sum in the histogram's unit.
type histogramTotals struct {
	buckets []uint64
	sum     int64
}

// add adds one stripe's histogram: its buckets and its sum.
func (t *histogramTotals) add(buckets []atomic.Uint64, sum *atomic.Int64) {
	if t.buckets == nil {
		t.buckets = make([]uint64, len(buckets))
	}
	for i := range buckets {
		t.buckets[i] += buckets[i].Load()
	}
	t.sum += sum.Load()
}

// totals sums the pair's stripes; ok is false if it has none yet.
func (f *FlowMetrics) totals() (t flowTotals, ok bool) {
	p := f.stripes.Load()
	if p == nil {
		return t, false
	}
	for i := range *p {
		s := &(*p)[i]
		t.used |= s.used.Load()
		t.dispatched += s.dispatched.Load()
		t.executing += s.executing.Load()
		t.executingSeats += s.executingSeats.Load()
		t.waitExecuted.add(s.waitExecuted.buckets[:], &s.waitExecuted.sum)
		t.waitRejected.add(s.waitRejected.buckets[:], &s.waitRejected.sum)
		t.execRegular.add(s.execRegular.buckets[:], &s.execRegular.sum)
		t.execWatch.add(s.execWatch.buckets[:], &s.execWatch.sum)
		t.workSeats.add(s.workSeats.buckets[:], &s.workSeats.sum)
		t.queueLength.add(s.queueLength.buckets[:], &s.queueLength.sum)
	}
	return t, true
}

// stripedDescs are the descriptions of the families kept in stripes.
type stripedDescs struct {
	dispatched, executingRequests, executingSeats, waitDuration, executionSeconds, workSeats, queueLength *prometheus.Desc
}

func newStripedDescs() *stripedDescs {
	return &stripedDescs{
		dispatched: prometheus.NewDesc(fcPrefix+"dispatched_requests_total",
			beta.help("Number of requests released for execution, exempt ones included."), []string{labelPL, labelFS}, nil),
		executingRequests: prometheus.NewDesc(fcPrefix+"current_executing_requests",
			beta.help("Number of requests in their initial (executing) phase."), []string{labelPL, labelFS}, nil),
		executingSeats: prometheus.NewDesc(fcPrefix+"current_executing_seats",
			beta.help("Number of seats held by dispatched requests, the final phase included."), []string{labelPL, labelFS}, nil),
		waitDuration: prometheus.NewDesc(fcPrefix+"request_wait_duration_seconds",
			beta.help("Time a request spent between arrival and either dispatch or rejection."), []string{labelPL, labelFS, labelExecute}, nil),
		executionSeconds: prometheus.NewDesc(fcPrefix+"request_execution_seconds",
			alpha.help("Time a request spent in its initial (executing) phase."), []string{labelPL, labelFS, labelType}, nil),
		queueLength: prometheus.NewDesc(fcPrefix+"request_queue_length_after_enqueue",
			alpha.help("Length of the chosen queue just after a request was added to it."), []string{labelPL, labelFS}, nil),
		workSeats: prometheus.NewDesc(fcPrefix+"work_estimated_seats",
			alpha.help("Seats a request was estimated to need (the larger of its initial and final seats)."), []string{labelPL, labelFS}, nil),
	}
}

// stripedCollector exports the striped families of every pair of a Set
// (s, set by New once the Set exists).
type stripedCollector struct {
	d *stripedDescs
	s *Set
}

func (c *stripedCollector) Describe(ch chan<- *prometheus.Desc) {
	d := c.d
	for _, x := range []*prometheus.Desc{d.dispatched, d.executingRequests, d.executingSeats, d.waitDuration, d.executionSeconds, d.workSeats, d.queueLength} {
		ch <- x
	}
}

func (c *stripedCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	if s == nil {
		return
	}
	s.mu.Lock()
	var pairs []*FlowMetrics
	for _, schemas := range s.flows {
		for _, f := range schemas {
			if f.stripes.Load() != nil {
				pairs = append(pairs, f)
			}
		}
	}
	s.mu.Unlock()
	d := c.d
	for _, f := range pairs {
		t, ok := f.totals()
		if !ok {
			continue
		}
		pl, fs := f.pl, f.fs
		if t.used&usedDispatched != 0 {
			ch <- prometheus.MustNewConstMetricWithCreatedTimestamp(d.dispatched, prometheus.CounterValue, float64(t.dispatched),
				f.createdAt(usedDispatched), pl, fs)
		}
		if t.used&usedExecutingRequests != 0 {
			ch <- prometheus.MustNewConstMetric(d.executingRequests, prometheus.GaugeValue, float64(t.executing), pl, fs)
		}
		if t.used&usedExecutingSeats != 0 {
			ch <- prometheus.MustNewConstMetric(d.executingSeats, prometheus.GaugeValue, float64(t.executingSeats), pl, fs)
		}
		seconds := func(bit uint32, desc *prometheus.Desc, h *histogramTotals, extra string) {
			if t.used&bit != 0 {
				ch <- constHistogram(desc, requestSecondBuckets, h, float64(h.sum)/1e9, f.createdAt(bit), pl, fs, extra)
			}
		}
		seconds(usedWaitExecuted, d.waitDuration, &t.waitExecuted, "true")
		seconds(usedWaitRejected, d.waitDuration, &t.waitRejected, "false")
		seconds(usedExecutionRegular, d.executionSeconds, &t.execRegular, "regular")
		seconds(usedExecutionWatch, d.executionSeconds, &t.execWatch, "watch")
		counts := func(bit uint32, desc *prometheus.Desc, upper []float64, h *histogramTotals) {
			if t.used&bit != 0 {
				ch <- constHistogram(desc, upper, h, float64(h.sum), f.createdAt(bit), pl, fs)
			}
		}
		counts(usedWorkSeats, d.workSeats, workSeatsBuckets, &t.workSeats)
		counts(usedQueueLength, d.queueLength, queueLengthBuckets, &t.queueLength)
	}
}

// constHistogram is the exposition of h over the upper bounds upper,
// created at created.
func constHistogram(desc *prometheus.Desc, upper []float64, h *histogramTotals, sum float64, created time.Time, labels ...string) prometheus.Metric {
	cumulative := make(map[float64]uint64, len(upper))
	var acc uint64
	for i, ub := range upper {
		acc += h.buckets[i]
		cumulative[ub] = acc
	}
	return prometheus.MustNewConstHistogramWithCreatedTimestamp(desc, acc+h.buckets[len(upper)], sum, cumulative, created, labels...)
}

// The handles of the striped series for callers outside the request path
// (the fields of FlowMetrics): each update goes to the caller's stripe.

type stripedCounter struct{ f *FlowMetrics }

func (c stripedCounter) Inc() { c.Add(1) }
func (c stripedCounter) Add(v float64) {
	s := c.f.Stripe(Stripe())
	s.dispatched.Add(uint64(v))
	s.mark(usedDispatched)
}

// stripedGauge is current_executing_requests (seats false) or
// current_executing_seats (seats true).
type stripedGauge struct {
	f     *FlowMetrics
	seats bool
}

func (g stripedGauge) Inc()          { g.Add(1) }
func (g stripedGauge) Dec()          { g.Add(-1) }
func (g stripedGauge) Sub(v float64) { g.Add(-v) }
func (g stripedGauge) Add(v float64) {
	s := g.f.Stripe(Stripe())
	if g.seats {
		s.executingSeats.Add(int64(v))
		s.mark(usedExecutingSeats)
		return
	}
	s.executing.Add(int64(v))
	s.mark(usedExecutingRequests)
}

// stripedObserver observes into one of a stripe's histograms.
type stripedObserver struct {
	f    *FlowMetrics
	used uint32
}

func (o stripedObserver) Observe(v float64) {
	s := o.f.Stripe(Stripe())
	switch o.used {
	case usedWaitExecuted:
		s.waitExecuted.observeSeconds(v)
	case usedWaitRejected:
		s.waitRejected.observeSeconds(v)
	case usedExecutionRegular:
		s.execRegular.observeSeconds(v)
	case usedExecutionWatch:
		s.execWatch.observeSeconds(v)
	case usedWorkSeats:
		s.workSeats.observeFloat(workSeatsBuckets, v)
	case usedQueueLength:
		s.queueLength.observeFloat(queueLengthBuckets, v)
	}
	s.mark(o.used)
}
