package sim

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// Upstream models the service behind the server, whose load the server
// concurrency limit protects: it serves at most Capacity requests at
// once, each for the service time its arrival drew, and the others wait
// inside it, first come, first served. Its latency is flat up to that
// knee and grows past it by a service time for every Capacity more
// requests, as a real service's does when its threads, connections or
// CPUs are all busy. The capacity changes from phase to phase
// (autoscaling, a deploy, a bad day).
type Upstream struct {
	// Phases are the upstream's capacities in turn, from the start of the
	// run; the last lasts until its end.
	Phases []UpstreamPhase `json:"phases"`
	// Settle is how long after the start of each phase its figures
	// start being measured (PhaseResult): the time a limit is given to
	// find the new capacity. Default 0.
	Settle Duration `json:"settle,omitempty"`
}

// UpstreamPhase is one phase of an Upstream.
type UpstreamPhase struct {
	// Capacity is how many requests the upstream serves at once.
	Capacity int `json:"capacity"`
	// For is how long the phase lasts; the last phase's is ignored (it
	// lasts until the end of the run).
	For Duration `json:"for,omitempty"`
}

// maxUpstreamPhases and maxCapacity bound an Upstream.
const (
	maxUpstreamPhases = 1000
	maxCapacity       = 1 << 24
)

// validate reports u's problems, naming fields under path.
func (u *Upstream) validate(ps *problems, path string) {
	if len(u.Phases) == 0 {
		ps.add(path+".phases", "at least one phase is required")
	}
	if len(u.Phases) > maxUpstreamPhases {
		ps.add(path+".phases", "at most %d phases", maxUpstreamPhases)
	}
	if u.Settle < 0 {
		ps.add(path+".settle", "must not be negative")
	}
	var total time.Duration
	for i, p := range u.Phases {
		pp := fmt.Sprintf("%s.phases[%d]", path, i)
		if p.Capacity < 1 || p.Capacity > maxCapacity {
			ps.add(pp+".capacity", "must be between 1 and %d", maxCapacity)
		}
		if i < len(u.Phases)-1 {
			if p.For <= 0 {
				ps.add(pp+".for", "must be positive (only the last phase may leave it out)")
			}
			total += time.Duration(p.For)
		} else if p.For < 0 {
			ps.add(pp+".for", "must not be negative")
		}
	}
	if total > maxSpan {
		ps.add(path+".phases", "last beyond %v", time.Duration(maxSpan))
	}
}

// UpstreamResult is what the upstream model saw.
type UpstreamResult struct {
	// Settle is how long after each phase's start its figures start.
	Settle time.Duration `json:"settle"`
	// Phases are the figures of each phase, measured from Settle after
	// its start to its end, or to the last arrival for the last one
	// (after it, the clients have stopped sending).
	Phases []PhaseResult `json:"phases"`
	// Series are the upstream's time series, one point per
	// SampleInterval.
	Series UpstreamSeries `json:"series"`
}

// PhaseResult is one upstream phase.
type PhaseResult struct {
	// Start and End bound the phase, from the start of the run;
	// MeasuredFrom and MeasuredTo the part its figures cover.
	Start        time.Duration `json:"start"`
	End          time.Duration `json:"end"`
	MeasuredFrom time.Duration `json:"measuredFrom"`
	MeasuredTo   time.Duration `json:"measuredTo"`
	// Capacity is the requests the upstream serves at once.
	Capacity int `json:"capacity"`
	// Served is the requests it completed in the measured part, Goodput
	// the same per second.
	Served  int64   `json:"served"`
	Goodput float64 `json:"goodput"`
	// CapacityUsed is the goodput against the capacity: the service
	// time of the requests completed over Capacity × the measured time.
	// 1 means the upstream served requests all the time at its capacity.
	CapacityUsed float64 `json:"capacityUsed"`
	// Queueing is the time the requests that entered the upstream in the
	// measured part waited inside it before it served them.
	Queueing WaitStats `json:"queueing"`
	// ServerLimit is the server concurrency limit over the measured part.
	ServerLimit LimitStats `json:"serverLimit"`
	// Clients are the response times (wait in a queue plus the time in
	// the upstream) of the requests that arrived in the measured part, by
	// workload client (or audit user), at most maxPhaseClients of them.
	Clients []ClientResult `json:"clients"`
}

// LimitStats summarize a limit over time.
type LimitStats struct {
	Min  int     `json:"min"`
	Mean float64 `json:"mean"`
	Max  int     `json:"max"`
}

// ClientResult is one client's requests in an upstream phase.
type ClientResult struct {
	// Client is the workload client's name as the workload gives it
	// (user-{i} for all its replicas), or the audit user.
	Client   string `json:"client"`
	Arrived  int64  `json:"arrived"`
	Served   int64  `json:"served"`
	Rejected int64  `json:"rejected"`
	// Latency is the response time of the requests served.
	Latency WaitStats `json:"latency"`
}

// UpstreamSeries are the upstream's time series.
type UpstreamSeries struct {
	// Capacity is the upstream's capacity at the sample time.
	Capacity []float64 `json:"capacity"`
	// Inside is the requests in the upstream, served or waiting.
	Inside []float64 `json:"inside"`
	// Queued is those of them waiting.
	Queued []float64 `json:"queued"`
	// ServerLimit is the server concurrency limit.
	ServerLimit []float64 `json:"serverLimit"`
}

// maxPhaseClients bounds PhaseResult.Clients: the others are counted
// together as otherClients.
const (
	maxPhaseClients = 20
	otherClients    = "(others)"
)

// upstreamSim runs an Upstream: the times at which the requests sent into
// it start being served and end, and the figures of its phases.
type upstreamSim struct {
	settle int64
	phases []phaseSim

	// ends holds the ends of the requests assigned a server that may
	// still be busy; lastStart is the latest start assigned (first come,
	// first served: starts never go back).
	ends      int64Heap
	lastStart int64
	// starts holds the starts from head on, to count the requests still
	// waiting at a sample.
	starts []int64
	head   int
	// inside counts the requests sent in and not yet over.
	inside int

	// endAt ends the measurement: the last arrival, MaxInt64 until known.
	endAt int64
	// The server limit in force since limitSince, for the phases' limit
	// figures.
	limit      int
	limitSince int64
}

// phaseSim is one phase and its figures.
type phaseSim struct {
	start, end int64 // end is MaxInt64 for the last
	capacity   int

	served   int64
	work     float64 // service time of the requests served, ns
	queueing waitSketch

	limitArea float64 // limit × ns
	limitMin  int
	limitMax  int
	limitSeen bool
	clients   map[string]*clientTally
}

type clientTally struct {
	arrived, served, rejected int64
	latency                   waitSketch
}

func newUpstreamSim(u *Upstream, limit int) *upstreamSim {
	s := &upstreamSim{settle: int64(u.Settle), endAt: math.MaxInt64, limit: limit}
	var at int64
	for i, p := range u.Phases {
		ps := phaseSim{start: at, end: math.MaxInt64, capacity: p.Capacity, clients: map[string]*clientTally{}}
		if i < len(u.Phases)-1 {
			at += int64(p.For)
			ps.end = at
		}
		s.phases = append(s.phases, ps)
	}
	return s
}

// phaseAt returns the index of the phase t falls in.
func (s *upstreamSim) phaseAt(t int64) int {
	i, _ := slices.BinarySearchFunc(s.phases, t, func(p phaseSim, t int64) int {
		switch {
		case t < p.start:
			return 1
		case t >= p.end:
			return -1
		}
		return 0
	})
	return min(i, len(s.phases)-1)
}

// measured returns the phase t falls in if its figures cover t, else nil.
func (s *upstreamSim) measured(t int64) *phaseSim {
	p := &s.phases[s.phaseAt(t)]
	if t < p.start+s.settle || t >= min(p.end, s.endAt) {
		return nil
	}
	return p
}

// admit sends a request that takes service into the upstream at now and
// returns how long it waits inside and how long in all until its answer.
func (s *upstreamSim) admit(now int64, service time.Duration) (wait, latency time.Duration) {
	t := max(now, s.lastStart)
	s.drop(t)
	for {
		i := s.phaseAt(t)
		if len(s.ends) < s.phases[i].capacity {
			break
		}
		// Full: the next server frees up when a request ends, or when
		// the next phase brings more.
		next := s.ends[0]
		if end := s.phases[i].end; end < next {
			next = end
		}
		t = next
		s.drop(t)
	}
	s.lastStart = t
	s.ends.push(t + int64(service))
	s.starts = append(s.starts, t)
	s.inside++
	wait = time.Duration(t - now)
	if p := s.measured(now); p != nil {
		p.queueing.add(int64(wait))
	}
	return wait, wait + service
}

// drop forgets the ends up to t: those servers are free by then.
func (s *upstreamSim) drop(t int64) {
	for len(s.ends) > 0 && s.ends[0] <= t {
		s.ends.pop()
	}
}

// served records that a request that took service in the upstream got
// its answer at now.
func (s *upstreamSim) served(now int64, service time.Duration) {
	s.inside--
	if p := s.measured(now); p != nil {
		p.served++
		p.work += float64(service)
	}
}

// client returns the tally of client in the phase measuring now, nil when
// none does.
func (s *upstreamSim) client(now int64, name string) *clientTally {
	p := s.measured(now)
	if p == nil {
		return nil
	}
	c := p.clients[name]
	if c == nil {
		if len(p.clients) >= maxPhaseClients {
			name = otherClients
			if c = p.clients[name]; c != nil {
				return c
			}
		}
		c = &clientTally{}
		p.clients[name] = c
	}
	return c
}

// queued returns the requests waiting inside at t.
func (s *upstreamSim) queued(t int64) int {
	for s.head < len(s.starts) && s.starts[s.head] <= t {
		s.head++
	}
	if s.head > 4096 && s.head*2 > len(s.starts) {
		s.starts = append(s.starts[:0], s.starts[s.head:]...)
		s.head = 0
	}
	return len(s.starts) - s.head
}

// setLimit records that the server limit is limit from now on.
func (s *upstreamSim) setLimit(now int64, limit int) {
	s.closeLimit(now)
	s.limit = limit
}

// closeLimit adds the limit in force since limitSince, up to now, to the
// phases it covers.
func (s *upstreamSim) closeLimit(now int64) {
	from := s.limitSince
	s.limitSince = now
	for i := range s.phases {
		p := &s.phases[i]
		lo, hi := max(from, p.start+s.settle), min(now, p.end, s.endAt)
		if hi <= lo {
			continue
		}
		p.limitArea += float64(s.limit) * float64(hi-lo)
		if !p.limitSeen || s.limit < p.limitMin {
			p.limitMin = s.limit
		}
		if !p.limitSeen || s.limit > p.limitMax {
			p.limitMax = s.limit
		}
		p.limitSeen = true
	}
}

// stop ends the measurement at at (the last arrival).
func (s *upstreamSim) stop(at int64) {
	if s.endAt == math.MaxInt64 {
		s.closeLimit(at)
		s.endAt = at
	}
}

// result assembles the figures, the run having ended at end.
func (s *upstreamSim) result(end int64, series UpstreamSeries) *UpstreamResult {
	s.stop(end)
	r := &UpstreamResult{Settle: time.Duration(s.settle), Series: series}
	for i := range s.phases {
		p := &s.phases[i]
		pe := min(p.end, end)
		from, to := min(p.start+s.settle, pe), min(pe, s.endAt)
		to = max(to, from)
		pr := PhaseResult{
			Start: time.Duration(p.start), End: time.Duration(pe),
			MeasuredFrom: time.Duration(from), MeasuredTo: time.Duration(to),
			Capacity: p.capacity, Served: p.served,
			Queueing:    p.queueing.stats(false),
			ServerLimit: LimitStats{Min: p.limitMin, Max: p.limitMax},
		}
		if span := float64(to - from); span > 0 {
			pr.Goodput = float64(p.served) / (span / 1e9)
			pr.CapacityUsed = p.work / (float64(p.capacity) * span)
			pr.ServerLimit.Mean = p.limitArea / span
		}
		for name, c := range p.clients {
			pr.Clients = append(pr.Clients, ClientResult{
				Client: name, Arrived: c.arrived, Served: c.served, Rejected: c.rejected,
				Latency: c.latency.stats(false),
			})
		}
		slices.SortFunc(pr.Clients, func(a, b ClientResult) int { return cmp.Compare(a.Client, b.Client) })
		r.Phases = append(r.Phases, pr)
		if p.end >= end {
			break
		}
	}
	return r
}

// int64Heap is a binary min-heap of times.
type int64Heap []int64

func (h *int64Heap) push(v int64) {
	*h = append(*h, v)
	a := *h
	for j := len(a) - 1; j > 0; {
		i := (j - 1) / 2
		if a[i] <= a[j] {
			break
		}
		a[i], a[j] = a[j], a[i]
		j = i
	}
}

func (h *int64Heap) pop() int64 {
	a := *h
	v := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && a[r] < a[j] {
			j = r
		}
		if a[i] <= a[j] {
			break
		}
		a[i], a[j] = a[j], a[i]
		i = j
	}
	*h = a
	return v
}
