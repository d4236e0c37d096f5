package peer

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fq "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing"
	fqs "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

	"github.com/apfproject/apf/clock"
	"github.com/apfproject/apf/fairqueue"
)

// The fair-queuing benchmarks run one scenario through apf's queue set,
// made blocking as the controller makes it (apfLevelOf), and through
// upstream's queueset, with the same level shape, the same flow
// hashes and the same work, so that BenchmarkPeer/<scenario>/apf and
// BenchmarkPeer/<scenario>/upstream can be read side by side (make
// bench-peer prints them as two benchstat columns).
//
// Every request is one seat wide with no final phase, and is made on a
// context without a deadline.

const (
	// benchFlows is how many distinct flows the scenarios cycle through:
	// request i belongs to flow i mod benchFlows.
	benchFlows = 1000

	// spinIters sizes the busy loop standing in for a request's work in
	// the saturated scenario: about 1 µs on a 2020s x86 core (the loop is a
	// chain of dependent xorshift steps, ~1.6 ns each). Long enough that
	// requests really wait for one another, short enough that the queueing
	// machinery, not the work, dominates.
	spinIters = 640

	// unreachableLimit is the concurrency limit of the levels that are
	// never meant to saturate: far above the number of goroutines any
	// scenario runs.
	unreachableLimit = 1 << 16
)

// flowHashes maps flow index to the 64-bit hash both implementations
// shuffle-shard on. It is fixed (splitmix64 of the index) so that every run,
// and both implementations, see the same hands.
var flowHashes = func() [benchFlows]uint64 {
	var hs [benchFlows]uint64
	for i := range hs {
		hs[i] = splitmix64(uint64(i))
	}
	return hs
}()

// splitmix64 is Steele, Lea and Flood's 64-bit mixer: a cheap bijection
// that spreads consecutive integers over the whole hash space.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// spinSink keeps one goroutine's spin results. Each client has its own,
// padded to a cache line: a sink shared by all would be written from both
// processors on every request, and the benchmark would time that line's
// trips between them instead of the queuing.
type spinSink struct {
	x uint64
	_ [56]byte
}

// spin does spinIters steps of dependent arithmetic and keeps the result,
// so the compiler can neither drop nor shorten the loop.
func (s *spinSink) spin() {
	x := uint64(0x9e3779b97f4a7c15)
	for range spinIters {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	s.x = x
}

// levelShape is what both implementations are configured with.
type levelShape struct {
	queues, handSize, queueLengthLimit, limit int
}

var (
	// openLevel is the default Queue level shape (64 queues, hand size 8,
	// queue length limit 50) with a limit no scenario reaches.
	openLevel = levelShape{queues: 64, handSize: 8, queueLengthLimit: 50, limit: unreachableLimit}

	// saturatedLevel has 4 seats for 64 goroutines. At most 60 requests
	// wait at any time, so a queue length limit of 64 can never be hit:
	// nothing is rejected.
	saturatedLevel = levelShape{queues: 64, handSize: 8, queueLengthLimit: 64, limit: 4}

	// oneSlotLevel is a single one-request queue in front of one seat:
	// once a blocker runs and another waits, every arrival is rejected
	// as queue-full.
	oneSlotLevel = levelShape{queues: 1, handSize: 1, queueLengthLimit: 1, limit: 1}

	// rejectLevel has no queues and one seat: once a blocker runs, every
	// arrival is rejected at the concurrency limit.
	rejectLevel = levelShape{queues: 0, limit: 1}
)

// impl is one of the two implementations under comparison.
type impl interface {
	// level builds a fresh level of the given shape on clk, or on the
	// real clock if clk is nil.
	level(tb testing.TB, shape levelShape, clk *virtualClock) peerLevel
}

// peerLevel is one level of one implementation.
type peerLevel interface {
	// client returns per-goroutine state for issuing requests one at a
	// time; work (nil for none) runs while the request holds its seat.
	client(work func()) peerClient
	// waiting reports how many requests are queued.
	waiting() int
	// executing reports how many requests hold seats.
	executing() int
}

// peerClient issues one request at a time.
type peerClient interface {
	// do admits one width-1 request of the flow with hash h, runs the
	// client's work if it was dispatched, finishes it, and reports
	// whether it ran.
	do(ctx context.Context, h uint64) bool
}

var impls = []struct {
	name string
	impl impl
}{
	{"apf", apfImpl{}},
	{"upstream", upstreamImpl{}},
}

// ---- apf ----

type apfImpl struct{}

func (apfImpl) level(tb testing.TB, s levelShape, clk *virtualClock) peerLevel {
	tb.Helper()
	var lc clock.Clock = clock.Real
	if clk != nil {
		lc = clk
	}
	l, err := newAPFLevel(fairqueue.Config{
		ConcurrencyLimit: s.limit,
		Queues:           s.queues,
		HandSize:         s.handSize,
		QueueLengthLimit: s.queueLengthLimit,
	}, lc)
	if err != nil {
		tb.Fatalf("fairqueue.New(%+v): %v", s, err)
	}
	return apfLevel{l}
}

type apfLevel struct{ l *apfLevelOf }

func (a apfLevel) client(work func()) peerClient {
	c := &apfClient{l: a.l, work: work}
	c.r.Work = fairqueue.WorkEstimate{InitialSeats: 1}
	return c
}

func (a apfLevel) waiting() int   { return a.l.stats().WaitingRequests }
func (a apfLevel) executing() int { return a.l.stats().ExecutingRequests }

type apfClient struct {
	l    *apfLevelOf
	r    apfRequest
	work func()
}

func (c *apfClient) do(ctx context.Context, h uint64) bool {
	c.r.Hash = h
	if !c.l.wait(ctx, &c.r) {
		return false
	}
	if c.work != nil {
		c.work()
	}
	c.l.done(&c.r)
	return true
}

// ---- upstream ----

type upstreamImpl struct{}

func (upstreamImpl) level(tb testing.TB, s levelShape, clk *virtualClock) peerLevel {
	tb.Helper()
	cfg := UpstreamQueueSetConfig{
		Name:             "peer-bench",
		Queues:           s.queues,
		HandSize:         s.handSize,
		QueueLengthLimit: s.queueLengthLimit,
		ConcurrencyLimit: s.limit,
	}
	u := upstreamLevel{}
	if clk != nil {
		cfg.Clock = clk
		// Under a virtual clock the level is polled step by step, and
		// Dump is too slow for that: count the queue through the
		// enqueue/dequeue notes instead.
		u.queued = new(atomic.Int64)
		u.note = func(inQueue bool) {
			if inQueue {
				u.queued.Add(1)
			} else {
				u.queued.Add(-1)
			}
		}
	}
	qs, err := NewUpstreamQueueSet(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	u.qs = qs
	return u
}

type upstreamLevel struct {
	qs fq.QueueSet
	// queued and note, when set, keep a cheap count of waiting requests;
	// the benchmarks leave them nil so as not to add a callback to
	// upstream's path.
	queued *atomic.Int64
	note   fq.QueueNoteFn
}

func (u upstreamLevel) client(work func()) peerClient {
	c := &upstreamClient{qs: u.qs, work: work, note: u.note}
	c.we = fcrequest.WorkEstimate{InitialSeats: 1}
	// Bound once, so that do allocates no closure per request.
	c.exec = func() {
		c.ran = true
		// Upstream's queueset counts a dispatch (the debug dump's
		// DispatchedRequests) only when told the request started, which
		// its HTTP filter does first thing; apf counts it at dispatch.
		fqs.OnRequestDispatched(c.req)
		if c.work != nil {
			c.work()
		}
	}
	return c
}

func (u upstreamLevel) waiting() int {
	if u.queued != nil {
		return int(u.queued.Load())
	}
	return u.qs.Dump(false).Waiting
}

func (u upstreamLevel) executing() int { return u.qs.Dump(false).Executing }

type upstreamClient struct {
	qs   fq.QueueSet
	we   fcrequest.WorkEstimate
	work func()
	exec func()
	note fq.QueueNoteFn
	req  fq.Request // the request in flight, for exec
	ran  bool
}

func (c *upstreamClient) do(ctx context.Context, h uint64) bool {
	req, _ := c.qs.StartRequest(ctx, &c.we, h, "", "peer-bench", nil, nil, c.note)
	if req == nil {
		return false
	}
	c.ran = false
	c.req = req
	req.Finish(c.exec)
	c.req = nil
	return c.ran
}

// ---- scenarios ----

// BenchmarkPeer runs each fair-queuing scenario through both
// implementations, then the HTTP filter scenarios (benchFilters); see the
// bench* functions for what each one measures.
func BenchmarkPeer(b *testing.B) {
	scenarios := []struct {
		name string
		run  func(*testing.B, impl)
	}{
		{"uncontended", benchUncontended},
		{"parallel", benchParallel},
		{"saturated", benchSaturated},
		{"reject", benchRejectQueueFull},
		{"reject-level", benchRejectLevel},
	}
	for _, sc := range scenarios {
		b.Run(sc.name, func(b *testing.B) {
			for _, im := range impls {
				before := runtime.NumGoroutine()
				b.Run(im.name, func(b *testing.B) { sc.run(b, im.impl) })
				// Each run must take its goroutines with it, or the next
				// one would be measured among leftovers.
				if !waitFor(func() bool { return runtime.NumGoroutine() <= before }) {
					b.Errorf("%s/%s left %d goroutines behind", sc.name, im.name, runtime.NumGoroutine()-before)
				}
			}
		})
	}
	// The HTTP filter scenarios (filter_bench_test.go).
	benchFilters(b)
}

// benchUncontended: one goroutine, arrive → dispatch → done with no work,
// on a Queue level that never saturates. This is the fixed cost of a
// request that passes straight through.
func benchUncontended(b *testing.B, im impl) {
	lv := im.level(b, openLevel, nil)
	c := lv.client(nil)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if !c.do(ctx, flowHashes[i%benchFlows]) {
			b.Fatal("request was not dispatched")
		}
		i++
	}
}

// benchParallel: as uncontended, from GOMAXPROCS goroutines at once, so the
// level's lock is contended but its seats never run out.
func benchParallel(b *testing.B, im impl) {
	lv := im.level(b, openLevel, nil)
	ctx := context.Background()
	var failed atomic.Int64
	var seed atomic.Uint64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c := lv.client(nil)
		// Each goroutine starts at a different flow so that they do not
		// walk the same hands in lock step.
		i := int(seed.Add(1) * 97)
		for pb.Next() {
			if !c.do(ctx, flowHashes[i%benchFlows]) {
				failed.Add(1)
			}
			i++
		}
	})
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d requests were not dispatched", n)
	}
	assertDrained(b, lv)
}

// saturatedGoroutines is how many goroutines compete for saturatedLevel's
// four seats.
const saturatedGoroutines = 64

// fairnessWindow is how many completions, in completion order, the
// saturated scenario's maxmin-flow-ratio looks at: 16 per flow. It is fixed
// so that both implementations are judged on the same amount of traffic
// whatever their speed; it is small enough that the slower one still
// completes that many in a 500 ms run.
const fairnessWindow = 16 * benchFlows

// benchSaturated: 64 goroutines share b.N requests over 1000 flows on a
// level with 4 seats; each request spins ~1 µs while holding its seat, so
// most requests queue and are dispatched by other requests' completions.
// Every arrival must complete (nothing is rejected).
//
// It reports maxmin-flow-ratio: among the first fairnessWindow completions
// (fewer, rounded down to whole rounds of flows, if b.N is smaller), the
// largest per-flow count over the smallest, among flows that got any.
// Counting all b.N completions would say nothing: every arrival completes,
// so per-flow totals are the arrival counts, and their ratio is
// ceil(b.N/1000)/floor(b.N/1000) whatever the scheduler does. In the window,
// a scheduler that served in arrival order would score 1; what exceeds it
// is requests overtaken across the window's end, so the figure is a coarse
// starvation check. Here no flow is ever backlogged (at most 64 of 1000
// flows have a request in the level), so fair queuing has little to
// arbitrate; TestPeerFairness measures fairness where it matters.
func benchSaturated(b *testing.B, im impl) {
	lv := im.level(b, saturatedLevel, nil)
	ctx := context.Background()
	n := int64(b.N)
	window := min(n, fairnessWindow)
	if window >= benchFlows {
		window -= window % benchFlows
	}
	// next hands out the arrivals. The counts of the fairness window are
	// taken only while it is open, so that once it is full the goroutines
	// share no written memory but next and the level.
	var next, windowed, completed, rejected atomic.Int64
	var windowOpen atomic.Bool
	windowOpen.Store(true)
	perGoroutine := make([][benchFlows]int32, saturatedGoroutines)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range saturatedGoroutines {
		wg.Go(func() {
			c := lv.client(new(spinSink).spin)
			counts := &perGoroutine[g]
			var ran, refused int64
			defer func() {
				completed.Add(ran)
				rejected.Add(refused)
			}()
			<-start
			for {
				i := next.Add(1) - 1
				if i >= n {
					return
				}
				f := int(i % benchFlows)
				if !c.do(ctx, flowHashes[f]) {
					refused++
					continue
				}
				ran++
				if windowOpen.Load() {
					if windowed.Add(1) <= window {
						counts[f]++
					} else {
						windowOpen.Store(false)
					}
				}
			}
		})
	}
	// The round trip before and after the run says which machine it had
	// (crossCoreRoundTrip); cmd/peermodes splits the runs by it.
	rttBefore := crossCoreRoundTrip()
	b.ReportAllocs()
	b.ResetTimer()
	close(start)
	wg.Wait()
	b.StopTimer()
	rttAfter := crossCoreRoundTrip()

	if r, c := rejected.Load(), completed.Load(); r > 0 || c != n {
		b.Fatalf("%d arrivals: %d completed, %d rejected; want all completed", n, c, r)
	}
	var perFlow [benchFlows]int64
	for g := range perGoroutine {
		for f, c := range perGoroutine[g] {
			perFlow[f] += int64(c)
		}
	}
	b.ReportMetric(maxMinRatio(perFlow[:]), "maxmin-flow-ratio")
	if rttBefore > 0 && rttAfter > 0 {
		b.ReportMetric(rttBefore, "xcore-rtt-ns")
		b.ReportMetric(rttAfter, "xcore-rtt-after-ns")
	}
	assertDrained(b, lv)
}

// maxMinRatio is max/min over the non-zero entries of xs (1 if none).
func maxMinRatio[T int64 | float64](xs []T) float64 {
	var lo, hi T
	for _, x := range xs {
		if x <= 0 {
			continue
		}
		if lo == 0 || x < lo {
			lo = x
		}
		if x > hi {
			hi = x
		}
	}
	if lo == 0 {
		return 1
	}
	return float64(hi) / float64(lo)
}

// benchRejectQueueFull: a one-seat, one-queue, one-slot level is filled by
// a blocker that runs and a blocker that waits, so every arrival in the
// timed loop is refused at once as queue-full.
func benchRejectQueueFull(b *testing.B, im impl) {
	benchReject(b, im, oneSlotLevel, 1)
}

// benchRejectLevel: a Reject level with one seat, held by a blocker, so
// every arrival in the timed loop is refused at the concurrency limit.
func benchRejectLevel(b *testing.B, im impl) {
	benchReject(b, im, rejectLevel, 0)
}

func benchReject(b *testing.B, im impl, shape levelShape, queued int) {
	lv := im.level(b, shape, nil)
	release := fillLevel(b, lv, shape.limit, queued)
	defer release()
	c := lv.client(nil)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if c.do(ctx, flowHashes[i%benchFlows]) {
			b.Fatal("an arrival was dispatched; want every arrival rejected")
		}
		i++
	}
	b.StopTimer()
	release()
	assertDrained(b, lv)
}

// fillLevel occupies every seat of lv with a blocked request, then queues
// `queued` more behind them, each from its own goroutine. It returns once
// the level shows exactly that state. The returned release (idempotent)
// unblocks them all and waits for their goroutines to end.
func fillLevel(tb testing.TB, lv peerLevel, seats, queued int) (release func()) {
	tb.Helper()
	gate := make(chan struct{})
	hold := func() { <-gate }
	var wg sync.WaitGroup
	var notRun atomic.Int64
	launch := func(h uint64) {
		wg.Go(func() {
			if !lv.client(hold).do(context.Background(), h) {
				notRun.Add(1)
			}
		})
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(gate)
			wg.Wait()
			if n := notRun.Load(); n > 0 {
				tb.Errorf("%d blockers were not dispatched", n)
			}
		})
	}
	// Seat holders first, one at a time, so that none of them queues.
	for i := range seats {
		launch(flowHashes[i])
		if !waitFor(func() bool { return lv.executing() == i+1 }) {
			release()
			tb.Fatalf("blocker %d never started executing", i)
		}
	}
	for i := range queued {
		launch(flowHashes[seats+i])
		if !waitFor(func() bool { return lv.waiting() == i+1 }) {
			release()
			tb.Fatalf("queued blocker %d never appeared in the queue", i)
		}
	}
	return release
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(cond func() bool) bool {
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Microsecond)
	}
	return true
}

// assertDrained checks that lv holds nothing once a benchmark's
// goroutines are gone: no request was lost in a queue or kept its seat.
func assertDrained(tb testing.TB, lv peerLevel) {
	tb.Helper()
	if w, e := lv.waiting(), lv.executing(); w != 0 || e != 0 {
		tb.Errorf("level not drained: %d waiting, %d executing", w, e)
	}
}
