package fairqueue

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestArriveUncontendedSkipsWaitingList: a request that arrives when
// nothing waits, and fits, is dispatched at once with the readings of a
// request that queued for no time.
func TestArriveUncontendedSkipsWaitingList(t *testing.T) {
	qs, err := New(Config{ConcurrencyLimit: 2, Queues: 8, HandSize: 2, QueueLengthLimit: 5}, t0)
	if err != nil {
		t.Fatal(err)
	}
	r := &Request{Hash: 7, Work: WorkEstimate{InitialSeats: 1}}
	if d := arrive1(qs, t0.Add(time.Millisecond), r); d != Dispatched {
		t.Fatalf("decision %v, want Dispatched", d)
	}
	if r.QueueLengthAfterEnqueue() != 1 || r.QueueIndex() < 0 {
		t.Errorf("queue length %d, index %d; want 1 and a queue", r.QueueLengthAfterEnqueue(), r.QueueIndex())
	}
	if err := qs.check(nil, true); err != nil {
		t.Fatal(err)
	}
}

// TestStartAtOnceChangesNothing drives two queue sets with the same random
// arrivals, completions, releases, cancellations and time steps, one with
// startAtOnce and one that always goes through the waiting list, and
// requires the same decisions, dispatches, request readings, observer
// and dumps after every step.
func TestStartAtOnceChangesNothing(t *testing.T) {
	configs := []Config{
		{ConcurrencyLimit: 3, Queues: 4, HandSize: 2, QueueLengthLimit: 3},
		{ConcurrencyLimit: 1, Queues: 1, HandSize: 1, QueueLengthLimit: 2},
		{ConcurrencyLimit: 5, Queues: 16, HandSize: 4, QueueLengthLimit: 1},
		{ConcurrencyLimit: 2, Queues: 64, HandSize: 6, QueueLengthLimit: 50},
	}
	for ci, cfg := range configs {
		for seed := uint64(1); seed <= 6; seed++ {
			compareAtOnce(t, ci, cfg, seed)
		}
	}
}

func compareAtOnce(t *testing.T, ci int, cfg Config, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, uint64(ci)))
	var sets [2]*QueueSet
	for i := range sets {
		qs, err := New(cfg, t0)
		if err != nil {
			t.Fatal(err)
		}
		sets[i] = qs
	}
	sets[1].queueAlways = true
	const n = 40
	var reqs [2][n]Request
	now := t0
	fail := func(step int, what string, a, b any) {
		t.Helper()
		t.Fatalf("config %d seed %d step %d: %s: at once %+v, always queued %+v", ci, seed, step, what, a, b)
	}
	for step := 0; step < 300; step++ {
		// Every random number of the step is drawn once, for both sets.
		now = now.Add(time.Duration(rng.IntN(4)) * 3 * time.Millisecond)
		i := rng.IntN(n)
		hash := rng.Uint64()
		work := WorkEstimate{
			InitialSeats:      1 + rng.IntN(2),
			FinalSeats:        rng.IntN(2),
			AdditionalLatency: time.Duration(rng.IntN(2)) * 5 * time.Millisecond,
		}
		cancel := rng.IntN(3) == 0
		var out [2]any
		for k, qs := range sets {
			r := &reqs[k][i]
			switch {
			case r.state == stateFree:
				*r = Request{Hash: hash, Work: work, Tag: i}
				d, buf := qs.Arrive(now, r, nil)
				out[k] = []any{d, tags(buf), r.QueueLengthAfterEnqueue(), r.QueueIndex(), r.StartTime(), r.Estimate()}
			case r.state == stateWaiting:
				if cancel {
					out[k] = qs.Cancel(now, r)
				}
			case r.state == stateExecuting:
				buf, release := qs.Finish(now, r, nil)
				out[k] = []any{tags(buf), release}
			case r.state == stateLingering:
				out[k] = tags(qs.Release(now, r, nil))
			}
		}
		if !reflect.DeepEqual(out[0], out[1]) {
			fail(step, "answers", out[0], out[1])
		}
		if d0, d1 := sets[0].Dump(true), sets[1].Dump(true); !reflect.DeepEqual(d0, d1) {
			fail(step, "dumps", d0, d1)
		}
		if o0, o1 := sets[0].Occupancy(), sets[1].Occupancy(); o0 != o1 {
			fail(step, "occupancy", o0, o1)
		}
		var lingering []*Request
		for j := range reqs[0] {
			if reqs[0][j].state == stateLingering {
				lingering = append(lingering, &reqs[0][j])
			}
		}
		if err := sets[0].check(lingering, false); err != nil {
			t.Fatalf("config %d seed %d step %d: %v", ci, seed, step, err)
		}
	}
}

func tags(rs []*Request) []any {
	var out []any
	for _, r := range rs {
		out = append(out, r.Tag)
	}
	return out
}

// TestVisitQueuesIsDump: VisitQueues sees the rows and stats Dump(false)
// returns.
func TestVisitQueuesIsDump(t *testing.T) {
	qs, err := New(Config{ConcurrencyLimit: 1, Queues: 4, HandSize: 2, QueueLengthLimit: 5}, t0)
	if err != nil {
		t.Fatal(err)
	}
	r := &Request{Hash: 3, Work: WorkEstimate{InitialSeats: 1}}
	if d := arrive1(qs, t0, r); d != Dispatched {
		t.Fatal(d)
	}
	var rows []QueueDump
	st := qs.VisitQueues(func(q QueueDump) { rows = append(rows, q) })
	d := qs.Dump(false)
	if !reflect.DeepEqual(rows, d.Queues) || !reflect.DeepEqual(st, d.Stats) {
		t.Fatalf("visited %+v %+v, dump %+v %+v", rows, st, d.Queues, d.Stats)
	}
}
