package fairqueue

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// FuzzQueueSet drives a queue set with random arrivals, completions,
// releases, cancellations, time steps, limit changes and
// reconfigurations, and after every step checks it against a shadow model
// of what the API reported:
//   - no request is lost or duplicated: every request is where the answers
//     put it, on exactly one list, and every dispatch is reported once;
//   - arrived = dispatched + rejected (cancelled included) + waiting;
//   - a dispatch never overfills the level: after a call that dispatched,
//     seats in use are within the limit, unless the call dispatched one
//     request wider than the limit while nothing executed;
//   - idle exactly when nothing waits or executes;
//   - a paced level holds a request back only for the gap between
//     starts, and its driver's Dispatch, when the gap has passed, starts
//     it (check, with a time step standing for the driver's timer);
//   - every incrementally kept total matches a recomputation (check).
//
// At the end it drains everything and checks that all seats came back.
func FuzzQueueSet(f *testing.F) {
	f.Add([]byte{2, 3, 1, 2, 2, 0, 1, 1, 0, 0, 0, 0, 5, 1, 2, 0, 1, 3, 0, 7, 10, 4, 0})
	f.Add([]byte{2, 7, 3, 1, 3, 0, 1, 2, 0, 1, 0, 2, 5, 3, 14, 3, 1, 9, 4, 1, 2, 1, 6, 0, 8, 2, 3, 0, 7, 30, 5, 0, 9, 2, 1, 1, 3})
	f.Add([]byte{1, 0, 0, 0, 2, 0, 3, 1, 0, 0, 0, 1, 3, 2, 0, 0, 3, 0, 0, 8, 0, 0, 2, 1, 0, 0, 3, 0})
	f.Add([]byte{0, 0, 0, 0, 1, 0, 4, 3, 15, 2, 0, 1, 1, 2, 0, 3, 0, 7, 5, 5, 0})
	f.Add([]byte{2, 2, 1, 1, 1, 0, 1, 1, 0, 14, 3, 0, 1, 2, 1, 0, 0, 9, 1, 3, 1, 1, 3, 0, 5, 0, 7, 9, 5, 0, 3, 0})
	// A paced level of 6 seats (a hand-size byte with its top bit set):
	// one request runs 10 ms, which gives the measure; four arrive at
	// once and two of them wait for their turns while time passes in
	// 0.5 ms steps.
	f.Add([]byte{6, 2, 3, 0x81, 4, 0, 1, 1, 0, 0, 7, 100, 3, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0,
		0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 7, 5, 7, 5, 7, 5, 3, 0, 7, 20})
	f.Fuzz(func(t *testing.T, data []byte) {
		// The checks after each step scan every request, so a run costs
		// the square of its length; longer inputs add little but slow the
		// fuzzer (and its minimizer) down.
		if len(data) > maxFuzzInput {
			data = data[:maxFuzzInput]
		}
		newFuzzer(t, data).run()
	})
}

const maxFuzzInput = 512

type fuzzer struct {
	t    *testing.T
	data []byte
	qs   *QueueSet
	now  time.Time
	step int

	all       []*Request
	shadow    map[*Request]reqState // what the API answers said
	lingering []*Request
	settled   bool

	arrives, rejects, cancels, reported int
}

func newFuzzer(t *testing.T, data []byte) *fuzzer {
	z := &fuzzer{t: t, data: data, now: t0, shadow: map[*Request]reqState{}, settled: true}
	cfg := Config{ConcurrencyLimit: int(z.next() % 7)}
	switch z.next() % 3 {
	case 0:
		cfg.Queues = -1
	case 1:
		cfg.Queues = 0
	default:
		cfg.Queues = 1 + int(z.next()%8)
		hs := z.next()
		cfg.HandSize = 1 + int(hs)%cfg.Queues
		cfg.Paced = hs&0x80 != 0
		cfg.QueueLengthLimit = int(z.next() % 5)
	}
	qs, err := New(cfg, t0)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	z.qs = qs
	return z
}

// next consumes one byte of input (0 once it is used up).
func (z *fuzzer) next() byte {
	if len(z.data) == 0 {
		return 0
	}
	b := z.data[0]
	z.data = z.data[1:]
	return b
}

// pick returns one of the requests the shadow has in state s.
func (z *fuzzer) pick(s reqState) *Request {
	var c []*Request
	for _, r := range z.all {
		if z.shadow[r] == s {
			c = append(c, r)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[int(z.next())%len(c)]
}

func (z *fuzzer) fail(format string, args ...any) {
	z.t.Helper()
	z.t.Fatalf("step %d (%+v): %s", z.step, z.qs.Config(), fmt.Sprintf(format, args...))
}

func (z *fuzzer) run() {
	for len(z.data) > 0 {
		z.step++
		z.op()
	}
	z.drain()
}

// op performs one random operation and checks the result.
func (z *fuzzer) op() {
	before := z.qs.Stats()
	realBefore := make(map[*Request]reqState, len(z.all))
	for _, r := range z.all {
		realBefore[r] = r.state
	}
	var freed, ended int // seats freed and executions ended before dispatching
	dispatching := false // the call runs the dispatch loop
	var reported []*Request

	switch op := z.next() % 10; op {
	case 0, 1, 2:
		r := z.pick(stateFree)
		if r == nil || z.next()%2 == 0 {
			r = &Request{Tag: len(z.all)}
			z.all = append(z.all, r)
		}
		b := z.next()
		r.Hash = uint64(b % 16)
		r.Work = WorkEstimate{InitialSeats: int(z.next() % 4), FinalSeats: int(z.next() % 5)}
		if b >= 240 {
			r.Work.FinalSeats = 9 // wider than any limit here: capped at dispatch
		}
		r.Work.AdditionalLatency = time.Duration(z.next()%4) * time.Millisecond
		realBefore[r] = stateFree
		var d Decision
		d, reported = z.qs.Arrive(z.now, r, nil)
		z.arrives++
		switch d {
		case Dispatched:
			z.shadow[r] = stateExecuting
			z.reported++
		case Queued:
			z.shadow[r] = stateWaiting
		case Rejected:
			z.shadow[r] = stateFree
			z.rejects++
			if r.Reason() == 0 || r.Reason() == TimeOut {
				z.fail("rejected with reason %v", r.Reason())
			}
		default:
			z.fail("decision %v", d)
		}
		dispatching = z.qs.cfg.Queues > 0 && d != Rejected
	case 3, 4:
		r := z.pick(stateExecuting)
		if r == nil {
			return
		}
		var release time.Duration
		reported, release = z.qs.Finish(z.now, r, nil)
		ended = 1
		if release > 0 {
			z.shadow[r] = stateLingering
			z.lingering = append(z.lingering, r)
		} else {
			z.shadow[r] = stateFree
			freed = r.maxSeats
		}
		dispatching = true
	case 5:
		r := z.pick(stateLingering)
		if r == nil {
			return
		}
		freed = r.maxSeats
		reported = z.qs.Release(z.now, r, nil)
		z.shadow[r] = stateFree
		z.lingering = slices.DeleteFunc(z.lingering, func(x *Request) bool { return x == r })
		dispatching = true
	case 6:
		r := z.pick(stateWaiting)
		if r == nil {
			r = z.pick(stateExecuting)
			if r != nil && z.qs.Cancel(z.now, r) {
				z.fail("cancelled an executing request")
			}
			return
		}
		if r.state == stateExecuting { // dispatched already
			if z.qs.Cancel(z.now, r) {
				z.fail("cancelled a dispatched request")
			}
			return
		}
		if !z.qs.Cancel(z.now, r) {
			z.fail("could not cancel a waiting request")
		}
		if r.Reason() != TimeOut {
			z.fail("cancel reason %v", r.Reason())
		}
		z.shadow[r] = stateFree
		z.cancels++
		z.settled = false
	case 7:
		if b := z.next(); b == 255 {
			z.now = z.now.Add(-time.Millisecond) // counts as no time
		} else {
			z.now = z.now.Add(time.Duration(b) * 100 * time.Microsecond)
		}
		// A paced level's driver gives it Dispatch once the time it
		// asked for has come.
		if at, ok := z.qs.PacedUntil(); ok && !at.After(z.now) {
			reported = z.qs.Dispatch(z.now, nil)
			dispatching = true
		}
	case 8:
		reported = z.qs.SetConcurrencyLimit(z.now, int(z.next()%8), nil)
		dispatching = true
	case 9:
		cfg := z.qs.Config()
		cfg.ConcurrencyLimit = int(z.next() % 8)
		b := z.next()
		if cfg.Queues >= 0 {
			cfg.Queues = int(b % 9)
			if cfg.Queues > 0 {
				hs := z.next()
				cfg.HandSize = 1 + int(hs)%cfg.Queues
				cfg.Paced = hs&0x80 != 0
				cfg.QueueLengthLimit = int(z.next() % 5)
			}
		}
		wantErr := b >= 250
		if wantErr { // a switch between exempt and limited, or a bad hand
			if cfg.Queues < 0 {
				cfg.Queues = 2
			} else if b%2 == 0 {
				cfg.Queues = -1
			} else {
				cfg.Queues, cfg.HandSize = 2, 3
			}
		}
		var err error
		reported, err = z.qs.Reconfigure(z.now, cfg, nil)
		if (err != nil) != wantErr {
			z.fail("Reconfigure(%+v): err %v, want error %t", cfg, err, wantErr)
		}
		dispatching = err == nil
	}
	if dispatching {
		z.settled = true
	}
	z.record(reported)
	z.verify(before, realBefore, freed, ended)
}

// record applies a reported dispatched list to the shadow.
func (z *fuzzer) record(reported []*Request) {
	for _, r := range reported {
		if z.shadow[r] != stateWaiting {
			z.fail("request %v reported dispatched while the shadow has it in state %d", r.Tag, z.shadow[r])
		}
		z.shadow[r] = stateExecuting
		z.reported++
	}
}

func (z *fuzzer) verify(before Stats, realBefore map[*Request]reqState, freed, ended int) {
	qs := z.qs
	st := qs.Stats()

	// Where every request is.
	onList := map[*Request]int{}
	for _, q := range qs.queues {
		for r := q.waiting.head; r != nil; r = r.next {
			onList[r]++
		}
		for r := q.executing.head; r != nil; r = r.next {
			onList[r]++
		}
	}
	for r := qs.queueless.head; r != nil; r = r.next {
		onList[r]++
	}
	var waiting, executing int
	for _, r := range z.all {
		want, got := z.shadow[r], r.state
		if got != want {
			z.fail("request %v is in state %d, the answers say %d", r.Tag, got, want)
		}
		n := onList[r]
		switch {
		case (got == stateWaiting || got == stateExecuting) && n != 1:
			z.fail("request %v (state %d) is on %d lists", r.Tag, got, n)
		case got != stateWaiting && got != stateExecuting && n != 0:
			z.fail("request %v (state %d) is on %d lists", r.Tag, got, n)
		}
		switch got {
		case stateWaiting:
			waiting++
		case stateExecuting:
			executing++
		}
	}
	if waiting != st.WaitingRequests || executing != st.ExecutingRequests {
		z.fail("stats say %d waiting, %d executing; requests say %d, %d",
			st.WaitingRequests, st.ExecutingRequests, waiting, executing)
	}

	// Conservation and counters.
	if st.Arrived != z.arrives || st.Rejected != z.rejects+z.cancels || st.Cancelled != z.cancels ||
		st.Dispatched != z.reported || st.TimedOut != 0 {
		z.fail("counters %+v; shadow: %d arrived, %d rejected, %d cancelled, %d dispatched",
			st, z.arrives, z.rejects, z.cancels, z.reported)
	}
	if st.Arrived != st.Dispatched+st.Rejected+st.WaitingRequests {
		z.fail("arrived %d != dispatched %d + rejected %d + waiting %d", st.Arrived, st.Dispatched, st.Rejected, st.WaitingRequests)
	}
	if qs.IsIdle() != (st.WaitingRequests == 0 && st.ExecutingRequests == 0) {
		z.fail("IsIdle %t with %d waiting, %d executing", qs.IsIdle(), st.WaitingRequests, st.ExecutingRequests)
	}

	// The dispatches of this step respected the limit.
	var started []*Request
	for _, r := range z.all {
		if b := realBefore[r]; (b == stateFree || b == stateWaiting) && r.state == stateExecuting {
			started = append(started, r)
		}
	}
	if len(started) > 0 && qs.cfg.Queues >= 0 {
		limit := qs.cfg.ConcurrencyLimit
		// Wide means wider than the limit before any cap of the final phase.
		wide := slices.ContainsFunc(started, func(r *Request) bool { return r.Work.normalized().MaxSeats() > limit })
		switch {
		case wide && (len(started) != 1 || before.ExecutingRequests-ended != 0):
			z.fail("a request wider than the limit %d started with others (%d started, %d executing before)",
				limit, len(started), before.ExecutingRequests-ended)
		case !wide && st.SeatsInUse > limit:
			z.fail("dispatch overfilled the level: %d seats in use, limit %d (%d before, %d freed)",
				st.SeatsInUse, limit, before.SeatsInUse, freed)
		}
	}
	if err := qs.check(z.lingering, z.settled); err != nil {
		z.fail("%v", err)
	}
}

// drain lets everything finish and checks that the level ends empty.
func (z *fuzzer) drain() {
	z.step++
	if z.qs.cfg.Queues >= 0 {
		z.record(z.qs.SetConcurrencyLimit(z.now, 1000, nil))
	}
	for round := 0; ; round++ {
		progress := false
		// A paced level starts what waits one turn at a time: its
		// driver gives it Dispatch when each turn comes.
		for {
			at, ok := z.qs.PacedUntil()
			if !ok {
				break
			}
			z.now = at
			z.record(z.qs.Dispatch(z.now, nil))
			progress = true
		}
		for _, r := range z.all {
			switch z.shadow[r] {
			case stateExecuting:
				d, release := z.qs.Finish(z.now, r, nil)
				z.shadow[r] = stateFree
				if release > 0 {
					z.shadow[r] = stateLingering
					z.lingering = append(z.lingering, r)
				}
				z.record(d)
				progress = true
			case stateLingering:
				z.record(z.qs.Release(z.now, r, nil))
				z.shadow[r] = stateFree
				z.lingering = slices.DeleteFunc(z.lingering, func(x *Request) bool { return x == r })
				progress = true
			case stateWaiting:
				if round > 2 {
					z.fail("request %v still waits after the drain", r.Tag)
				}
			}
		}
		if !progress {
			break
		}
	}
	st := z.qs.Stats()
	if st.SeatsInUse != 0 || st.WaitingRequests != 0 || st.ExecutingRequests != 0 || st.WaitingSeats != 0 || !z.qs.IsIdle() {
		z.fail("not empty after the drain: %+v", st)
	}
	if st.Arrived != st.Dispatched+st.Rejected {
		z.fail("requests lost: %+v", st)
	}
	if err := z.qs.check(nil, true); err != nil {
		z.fail("%v", err)
	}
}
