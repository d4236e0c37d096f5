package capacity

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// upstreamModel is a closed loop for the tests: a flood keeps every seat
// of the Estimator's limit busy, in front of an upstream that serves
// capacity(t) requests at once, each for its service time, the rest
// waiting inside it first come, first served. Each answer is observed at
// the moment it comes, so the run is exact and deterministic: no timers,
// no clock but the model's.
type upstreamModel struct {
	e        *Estimator
	t0       time.Time
	now      time.Duration
	capacity func(t time.Duration) int
	service  func() time.Duration
	// answer, when set, turns an answer into an overload one.
	answer func(t time.Duration) Outcome
	// busy, when set, is what Sample.Busy says; else the seats in use.
	busy func(inflight int) int

	inflight int
	starts   []time.Duration // starts of the requests queued or served, FIFO
	ends     durHeap         // ends of the requests in the upstream
	done     reqHeap         // requests in flight, by end

	// Per second of the run: the limit at each answer, the answers, the
	// upstream's queueing.
	limits    []int
	completed int64
	queueing  []time.Duration
}

type req struct {
	dispatch, end time.Duration
}

func newModel(e *Estimator, t0 time.Time, capacity func(time.Duration) int, service func() time.Duration) *upstreamModel {
	return &upstreamModel{e: e, t0: t0, capacity: capacity, service: service}
}

// constService returns d every time; lognormalService a median d with
// shape sigma, from a fixed seed.
func constService(d time.Duration) func() time.Duration { return func() time.Duration { return d } }

func lognormalService(d time.Duration, sigma float64, seed uint64) func() time.Duration {
	rng := rand.New(rand.NewPCG(seed, 1))
	return func() time.Duration {
		return time.Duration(float64(d) * math.Exp(sigma*rng.NormFloat64()))
	}
}

// dispatch sends one request into the upstream now.
func (m *upstreamModel) dispatch() {
	// It starts when fewer than capacity requests are in service, after
	// every request before it started (first come, first served).
	s := m.now
	if n := len(m.starts); n > 0 {
		s = max(s, m.starts[n-1])
	}
	for len(m.ends) > 0 && m.ends[0] <= s {
		heap.Pop(&m.ends)
	}
	for len(m.ends) >= m.capacity(s) {
		s = heap.Pop(&m.ends).(time.Duration)
	}
	end := s + m.service()
	heap.Push(&m.ends, end)
	m.starts = append(m.starts, s)
	if len(m.starts) > 1024 {
		m.starts = slices.Delete(m.starts, 0, 512)
	}
	m.queueing = append(m.queueing, s-m.now)
	heap.Push(&m.done, req{dispatch: m.now, end: end})
	m.inflight++
}

// run runs the loop until the model's time reaches until.
func (m *upstreamModel) run(until time.Duration, each func(d Decision)) {
	for {
		for m.inflight < m.e.Limit() {
			m.dispatch()
		}
		if len(m.done) == 0 || m.done[0].end > until {
			m.now = until
			return
		}
		r := heap.Pop(&m.done).(req)
		m.now = r.end
		out := Answered
		if m.answer != nil {
			out = m.answer(m.now)
		}
		busy := m.inflight
		if m.busy != nil {
			busy = m.busy(m.inflight)
		}
		m.inflight--
		m.completed++
		d := m.e.Observe(m.t0.Add(m.now), Sample{Latency: r.end - r.dispatch, Seats: 1, Outcome: out, Busy: busy})
		m.limits = append(m.limits, d.Limit)
		if each != nil {
			each(d)
		}
	}
}

// reset forgets the figures gathered so far.
func (m *upstreamModel) reset() {
	m.limits, m.queueing, m.completed = nil, nil, 0
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

func meanInt(v []int) float64 {
	if len(v) == 0 {
		return 0
	}
	sum := 0
	for _, x := range v {
		sum += x
	}
	return float64(sum) / float64(len(v))
}

type durHeap []time.Duration

func (h durHeap) Len() int           { return len(h) }
func (h durHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h durHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *durHeap) Push(x any)        { *h = append(*h, x.(time.Duration)) }
func (h *durHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type reqHeap []req

func (h reqHeap) Len() int { return len(h) }
func (h reqHeap) Less(i, j int) bool {
	if h[i].end != h[j].end {
		return h[i].end < h[j].end
	}
	return h[i].dispatch < h[j].dispatch
}
func (h reqHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *reqHeap) Push(x any)   { *h = append(*h, x.(req)) }
func (h *reqHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
