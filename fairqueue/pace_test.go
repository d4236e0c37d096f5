package fairqueue

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// paceRig runs a level on virtual time the way a driver would: every
// request runs for service exactly, the flood keeps its requests
// outstanding (a new one arrives as each finishes, as a load generator's
// connection sends its next request), light requests arrive at a steady
// interval, and a paced level is given Dispatch when PacedUntil says.
type paceRig struct {
	t       *testing.T
	qs      *QueueSet
	now     time.Time
	service time.Duration
	// vary, when set, gives each request its own service time instead.
	vary func() time.Duration
	// running holds the executing requests by end.
	running []running
	// light holds the arrival of each light request not yet started.
	light map[*Request]time.Time
	// waits of the light requests, arrival to dispatch.
	waits []time.Duration
	// finished counts the requests that ended; starts, the starts at
	// each instant.
	finished int
	starts   map[time.Time]int
}

type running struct {
	r   *Request
	end time.Time
}

const (
	paceFlood = 7
	paceLight = 99
)

func newPaceRig(t *testing.T, paced bool, limit int, service time.Duration) *paceRig {
	qs := mustNew(t, Config{ConcurrencyLimit: limit, Queues: 128, HandSize: 6, QueueLengthLimit: 1000, Paced: paced})
	return &paceRig{t: t, qs: qs, now: t0, service: service, light: map[*Request]time.Time{}, starts: map[time.Time]int{}}
}

func (g *paceRig) started(rs ...*Request) {
	for _, r := range rs {
		d := g.service
		if g.vary != nil {
			d = g.vary()
		}
		end := g.now.Add(d)
		i, _ := slices.BinarySearchFunc(g.running, end, func(e running, at time.Time) int {
			if e.end.After(at) {
				return 1
			}
			return -1
		})
		g.running = slices.Insert(g.running, i, running{r, end})
		g.starts[g.now]++
		if at, ok := g.light[r]; ok {
			g.waits = append(g.waits, g.now.Sub(at))
			delete(g.light, r)
		}
	}
}

func (g *paceRig) arrive(hash uint64) {
	r := &Request{Hash: hash, Work: WorkEstimate{InitialSeats: 1}}
	if hash == paceLight {
		g.light[r] = g.now
	}
	d, others := g.qs.Arrive(g.now, r, nil)
	g.started(others...)
	if d == Dispatched {
		g.started(r)
	}
}

// run advances the clock by d, event by event, with a light request
// arriving every lightEvery (none when 0).
func (g *paceRig) run(d, lightEvery time.Duration) {
	end := g.now.Add(d)
	nextLight := g.now.Add(lightEvery)
	for {
		next := end
		if len(g.running) > 0 && g.running[0].end.Before(next) {
			next = g.running[0].end
		}
		if at, ok := g.qs.PacedUntil(); ok && at.Before(next) {
			next = at
		}
		if lightEvery > 0 && nextLight.Before(next) {
			next = nextLight
		}
		g.now = next
		for len(g.running) > 0 && !g.running[0].end.After(g.now) {
			r := g.running[0].r
			g.running = g.running[1:]
			g.finished++
			others, _ := g.qs.Finish(g.now, r, nil)
			g.started(others...)
			if r.Hash == paceFlood {
				g.arrive(paceFlood)
			}
		}
		g.started(g.qs.Dispatch(g.now, nil)...)
		if lightEvery > 0 && !nextLight.After(g.now) {
			g.arrive(paceLight)
			nextLight = nextLight.Add(lightEvery)
		}
		if !g.now.Before(end) {
			return
		}
	}
}

// floodWithLight runs the scenario of the tests: one light request
// first, so that the level knows its service time when the flood comes;
// a flood of 200 outstanding requests for a second; then 10 s more with
// a light request every 47.3 ms, so that they meet the level at every
// phase. It leaves the light requests' waits in g.waits, sorted, and the
// requests served in those 10 s in g.finished.
func (g *paceRig) floodWithLight() {
	g.arrive(paceLight)
	g.run(50*time.Millisecond, 0)
	g.flood(200)
	g.run(time.Second, 0)
	g.waits, g.finished = nil, 0
	g.run(10*time.Second, 47300*time.Microsecond)
	slices.Sort(g.waits)
}

// flood starts n flood requests at once.
func (g *paceRig) flood(n int) {
	for range n {
		g.arrive(paceFlood)
	}
}

// A flood of equal requests (20 ms each, 200 outstanding) on a level of
// 20 seats, with a light flow's requests arriving now and then
// (floodWithLight). Not paced, the
// level stays in step, the 20 seats freeing together every 20 ms, and a
// light request waits for that moment: 10 ms in the median, up to a
// whole service time. Paced, it goes first in fair order and the starts
// are spread: it waits for the next seat to free, in the median less
// than a millisecond (at most 2 ms here), never more than half the
// service time; and the level serves as many requests as the unpaced
// one.
func TestPacedDispatchBreaksStep(t *testing.T) {
	const limit, service = 20, 20 * time.Millisecond
	var done [2]int
	var p50, worst [2]time.Duration
	for i, paced := range []bool{false, true} {
		g := newPaceRig(t, paced, limit, service)
		g.floodWithLight()
		if len(g.waits) < 200 {
			t.Fatalf("paced %v: %d light requests served, want 211", paced, len(g.waits))
		}
		p50[i], worst[i], done[i] = g.waits[len(g.waits)/2], g.waits[len(g.waits)-1], g.finished
		if busy := g.qs.totSeatsInUse; busy != limit {
			t.Fatalf("paced %v: %d seats in use at the end, want %d", paced, busy, limit)
		}
	}
	t.Logf("light requests' wait, median and worst: unpaced %v, %v; paced %v, %v", p50[0], worst[0], p50[1], worst[1])
	if p50[0] < 5*time.Millisecond || worst[0] < 15*time.Millisecond {
		t.Fatalf("unpaced: light requests waited %v in the median, %v at most; want about 10 and 20 ms (the test no longer shows the step)", p50[0], worst[0])
	}
	if p50[1] > 2*time.Millisecond || worst[1] > service/2+time.Millisecond {
		t.Fatalf("paced: light requests waited %v in the median, %v at most; want at most 2 ms and %v", p50[1], worst[1], service/2+time.Millisecond)
	}
	if done[1] < done[0]*99/100 {
		t.Fatalf("paced: %d requests served in 10 s, unpaced %d: pacing cost throughput", done[1], done[0])
	}
}

// Service times that vary (uniform between 5 and 35 ms) keep no level in
// step, and pacing must not cost them throughput: paced, the level
// serves as many requests as unpaced (within 1%). A light request waits
// less: unpaced, charged G while the flood's running requests are
// charged G too, it goes behind the flood's next few now and then (its
// 99th percentile near 30 ms); paced, it goes first.
func TestPacedDispatchVaried(t *testing.T) {
	const limit = 20
	var done [2]int
	var p50, p99 [2]time.Duration
	for i, paced := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(1, 2))
		g := newPaceRig(t, paced, limit, 0)
		g.vary = func() time.Duration {
			return 5*time.Millisecond + time.Duration(rng.Int64N(int64(30*time.Millisecond)))
		}
		g.floodWithLight()
		p50[i], p99[i], done[i] = g.waits[len(g.waits)/2], g.waits[len(g.waits)*99/100], g.finished
	}
	t.Logf("served in 10 s: unpaced %d, paced %d; light requests' wait, median and 99th percentile: unpaced %v, %v; paced %v, %v",
		done[0], done[1], p50[0], p99[0], p50[1], p99[1])
	if done[1] < done[0]*99/100 {
		t.Fatalf("paced: %d requests served in 10 s, unpaced %d: pacing cost throughput", done[1], done[0])
	}
	if p50[1] > p50[0] || p99[1] > p99[0]/2 {
		t.Fatalf("paced: light requests waited %v in the median, %v at the 99th percentile; unpaced %v and %v", p50[1], p99[1], p50[0], p99[0])
	}
}

// A paced level's starts are spaced by the gap, less the slack: with a
// service time of 20 ms on 20 seats, a turn every 20 ms / (20 × 1.25) =
// 0.8 ms, a start allowed 20 ms / 8 = 2.5 ms before its turn. A batch
// that finishes together is replaced four at once (the turns of the
// next three are within the slack), then one every 0.8 ms. Before any
// request has finished there is no gap.
func TestPacedDispatchGap(t *testing.T) {
	const limit, service = 20, 20 * time.Millisecond
	const gap, slack = 800 * time.Microsecond, 2500 * time.Microsecond
	g := newPaceRig(t, true, limit, service)
	g.flood(limit)
	if n := g.starts[t0]; n != limit {
		t.Fatalf("before any service time was measured: %d started at once, want %d", n, limit)
	}
	if _, ok := g.qs.PacedUntil(); ok {
		t.Fatal("PacedUntil with no gap yet")
	}
	g.run(service, 0)
	batch := t0.Add(service)
	if n := g.starts[batch]; n != 4 {
		t.Fatalf("%d started when the first batch finished, want 4", n)
	}
	at, ok := g.qs.PacedUntil()
	if want := batch.Add(4*gap - slack); !ok || !at.Equal(want) {
		t.Fatalf("PacedUntil = %v, %v; want %v", at.Sub(batch), ok, want.Sub(batch))
	}
	g.run(service-time.Microsecond, 0)
	for k := range limit - 4 {
		if n := g.starts[batch.Add(4*gap-slack+time.Duration(k)*gap)]; n != 1 {
			t.Fatalf("%d started %v after the batch finished, want 1", n, 4*gap-slack+time.Duration(k)*gap)
		}
	}
	// Not paced, PacedUntil is always false and Dispatch finds nothing.
	u := newPaceRig(t, false, 1, service)
	u.flood(3)
	if _, ok := u.qs.PacedUntil(); ok {
		t.Fatal("PacedUntil on a level that is not paced")
	}
	if got := u.qs.Dispatch(t0, nil); len(got) != 0 {
		t.Fatalf("Dispatch on a full level that is not paced started %d", len(got))
	}
}

// The gap per seat is capped: a level whose requests held their seats
// for a minute does not hold a burst back for seconds.
func TestPacedDispatchGapCap(t *testing.T) {
	var p pacer
	p.finished(int64(time.Minute))
	p.started(0, 1, 2)
	if p.nextNs != int64(maxPaceGap) {
		t.Fatalf("gap after a minute's hold = %v, want the cap %v", time.Duration(p.nextNs), maxPaceGap)
	}
	p.started(0, 3, 2)
	if want := 4 * int64(maxPaceGap); p.nextNs != want {
		t.Fatalf("after a 3-seat start: next %v, want %v", time.Duration(p.nextNs), time.Duration(want))
	}
}
