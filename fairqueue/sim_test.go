package fairqueue

import (
	"container/heap"
	"slices"
	"testing"
	"time"

	"github.com/apfproject/apf/shuffle"
)

// simulator drives a QueueSet through a discrete-event simulation on
// virtual time: flows send requests (closed loop: a fixed number always in
// flight; open loop: one every interval), each request runs for its flow's
// service time, and the simulator records what every flow got.
type simulator struct {
	t      *testing.T
	qs     *QueueSet
	now    int64 // ns since simStart
	events eventHeap
	seq    uint64
	flows  []*simFlow
	// Seat-time is counted inside [from, to) only, to skip the warm-up.
	from, to int64
	stopped  bool // no new arrivals
	buf      []*Request
}

type simFlow struct {
	hash        uint64
	work        WorkEstimate
	service     time.Duration
	outstanding int           // closed loop: requests kept in flight
	interval    time.Duration // open loop: time between arrivals

	free                          []*Request
	arrived, rejected, dispatched int
	seatNs                        float64 // seat-nanoseconds of initial phases in the window
	completed                     int     // completions in the window
}

type simEvent struct {
	at   int64
	seq  uint64
	kind int // evArrive, evFinish, evRelease
	flow int
	req  *Request
}

const (
	evArrive = iota
	evFinish
	evRelease
)

var simStart = time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)

func newSimulator(t *testing.T, cfg Config, flows ...*simFlow) *simulator {
	qs, err := New(cfg, simStart)
	if err != nil {
		t.Fatal(err)
	}
	s := &simulator{t: t, qs: qs, flows: flows}
	for i, f := range flows {
		n := max(f.outstanding, 1)
		for k := 0; k < n; k++ {
			// Stagger starts by a nanosecond per flow so that no order
			// depends on heap ties.
			s.schedule(int64(i), evArrive, i, nil)
		}
	}
	return s
}

func (s *simulator) schedule(at int64, kind, flow int, r *Request) {
	heap.Push(&s.events, &simEvent{at: at, seq: s.seq, kind: kind, flow: flow, req: r})
	s.seq++
}

// run simulates until virtual time end, counting service in [from, end).
func (s *simulator) run(from, end time.Duration) {
	s.from, s.to = int64(from), int64(end)
	for len(s.events) > 0 && s.events[0].at < s.to {
		s.step()
	}
}

// drain stops arrivals and runs until nothing is left, then checks that
// the queue set is empty.
func (s *simulator) drain() {
	s.stopped = true
	for len(s.events) > 0 {
		s.step()
	}
	st := s.qs.Stats()
	if st.SeatsInUse != 0 || st.WaitingRequests != 0 || st.ExecutingRequests != 0 || !s.qs.IsIdle() {
		s.t.Fatalf("not empty after drain: %+v", st)
	}
	if st.Arrived != st.Dispatched+st.Rejected {
		s.t.Fatalf("requests lost: %+v", st)
	}
	if err := s.qs.check(nil, true); err != nil {
		s.t.Fatal(err)
	}
}

func (s *simulator) step() {
	e := heap.Pop(&s.events).(*simEvent)
	s.now = e.at
	now := simStart.Add(time.Duration(s.now))
	switch e.kind {
	case evArrive:
		if s.stopped {
			return
		}
		f := s.flows[e.flow]
		var r *Request
		if n := len(f.free); n > 0 {
			r, f.free = f.free[n-1], f.free[:n-1]
		} else {
			r = &Request{Tag: e.flow}
		}
		r.Hash, r.Work = f.hash, f.work
		f.arrived++
		d, others := s.qs.Arrive(now, r, s.buf[:0])
		switch d {
		case Dispatched:
			s.started(r)
		case Rejected:
			f.rejected++
			f.free = append(f.free, r)
			if f.interval == 0 {
				s.schedule(s.now, evArrive, e.flow, nil) // closed loop: try again
			}
		}
		s.startAll(others)
		if f.interval > 0 {
			s.schedule(s.now+int64(f.interval), evArrive, e.flow, nil)
		}
	case evFinish:
		r := e.req
		f := s.flows[r.Tag.(int)]
		start := r.startNs
		if lo, hi := max(start, s.from), min(s.now, s.to); hi > lo {
			f.seatNs += float64(r.est.InitialSeats) * float64(hi-lo)
		}
		if s.now >= s.from && s.now < s.to {
			f.completed++
		}
		d, release := s.qs.Finish(now, r, s.buf[:0])
		if release > 0 {
			s.schedule(s.now+int64(release), evRelease, 0, r)
		} else {
			f.free = append(f.free, r)
		}
		s.startAll(d)
		if f.interval == 0 {
			s.schedule(s.now, evArrive, r.Tag.(int), nil)
		}
	case evRelease:
		r := e.req
		s.startAll(s.qs.Release(now, r, s.buf[:0]))
		f := s.flows[r.Tag.(int)]
		f.free = append(f.free, r)
	}
}

func (s *simulator) startAll(rs []*Request) {
	for _, r := range rs {
		s.started(r)
	}
	clear(rs)
	s.buf = rs[:0]
}

func (s *simulator) started(r *Request) {
	f := s.flows[r.Tag.(int)]
	f.dispatched++
	s.schedule(s.now+int64(f.service), evFinish, 0, r)
}

// share returns each flow's fraction of the seat-time served in the window.
func (s *simulator) share() []float64 {
	var total float64
	for _, f := range s.flows {
		total += f.seatNs
	}
	out := make([]float64, len(s.flows))
	for i, f := range s.flows {
		out[i] = f.seatNs / total
	}
	return out
}

// seats returns each flow's average seats in use over the window.
func (s *simulator) seats(i int) float64 {
	return s.flows[i].seatNs / float64(s.to-s.from)
}

type eventHeap []*simEvent

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*simEvent)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// handHash returns the first hash from from on whose hand, for queues and
// handSize, is exactly the given set of queues (in any order).
func handHash(t *testing.T, queues, handSize int, from uint64, want ...int) uint64 {
	d, err := shuffle.NewDealer(queues, handSize)
	if err != nil {
		t.Fatal(err)
	}
	var hand []int
	for h := from; h < from+1<<20; h++ {
		hand = d.DealIntoHand(h, hand)
		ok := len(hand) == len(want)
		for _, q := range want {
			ok = ok && slices.Contains(hand, q)
		}
		if ok {
			return h
		}
	}
	t.Fatalf("no hash deals %v", want)
	return 0
}
