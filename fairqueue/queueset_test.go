package fairqueue

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/apfproject/apf/shuffle"
)

var t0 = time.Date(2022, 2, 2, 0, 0, 0, 0, time.UTC)

func mustNew(t *testing.T, cfg Config) *QueueSet {
	t.Helper()
	qs, err := New(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

func TestSeatSeconds(t *testing.T) {
	for _, c := range []struct {
		ss   SeatSeconds
		want string
	}{
		{0, "0.00000000ss"},
		{2_100_000, "0.02100000ss"},
		{1_234_567_891, "12.34567891ss"},
		{maxSeatSeconds, "184467440737.09551615ss"},
	} {
		if got := c.ss.String(); got != c.want {
			t.Errorf("%d: String = %q, want %q", uint64(c.ss), got, c.want)
		}
	}
	if got := seatsTimesDuration(3, 7*time.Millisecond); got != 2_100_000 {
		t.Errorf("3 seats × 7ms = %d units, want 2100000", got)
	}
	// Half a unit rounds away from zero; a negative duration wraps.
	if got := seatsTimesDuration(1, 5); got != 1 {
		t.Errorf("1 seat × 5ns = %d units, want 1 (0.5 rounded up)", got)
	}
	if got := SeatSeconds(100) + seatsTimesDuration(1, -300); got != 70 {
		t.Errorf("100 + 1 seat × -300ns = %d, want 70", got)
	}
	if got := SeatSeconds(2_000_000).durationPerSeat(4); got != 5*time.Millisecond {
		t.Errorf("20 seat-ms over 4 seats = %v, want 5ms", got)
	}
	if got := SeatSeconds(150_000_000).ToFloat(); got != 1.5 {
		t.Errorf("ToFloat = %v, want 1.5", got)
	}
}

func TestValueStrings(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{QueueFull.String(), "queue-full"},
		{ConcurrencyLimit.String(), "concurrency-limit"},
		{TimeOut.String(), "time-out"},
		{RejectReason(9).String(), "RejectReason(9)"},
		{Dispatched.String(), "dispatched"},
		{Queued.String(), "queued"},
		{Rejected.String(), "rejected"},
		{Decision(0).String(), "Decision(0)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if m := (WorkEstimate{InitialSeats: 2, FinalSeats: 5}).MaxSeats(); m != 5 {
		t.Errorf("MaxSeats = %d, want 5", m)
	}
}

func TestNewValidates(t *testing.T) {
	var sizeErr *shuffle.SizeError
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{ConcurrencyLimit: -1, Queues: -1}, "ConcurrencyLimit"},
		{Config{ConcurrencyLimit: 1, Queues: 4, HandSize: 5, QueueLengthLimit: 1}, "HandSize"},
		{Config{ConcurrencyLimit: 1, Queues: 64, HandSize: 11, QueueLengthLimit: 1}, "HandSize"},
		{Config{ConcurrencyLimit: 1, Queues: 4, HandSize: 2, QueueLengthLimit: -1}, "QueueLengthLimit"},
	} {
		_, err := New(c.cfg, t0)
		var ce *configError
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%+v: err = %v, want a configError for %s", c.cfg, err, c.field)
		}
		if c.field == "HandSize" && !errors.As(err, &sizeErr) {
			t.Errorf("%+v: %v does not wrap a shuffle.SizeError", c.cfg, err)
		}
	}
	// Hand size and queue length limit do not matter unless queuing.
	for _, q := range []int{-1, 0} {
		if _, err := New(Config{ConcurrencyLimit: 0, Queues: q, HandSize: -5, QueueLengthLimit: -5}, t0); err != nil {
			t.Errorf("Queues %d: %v", q, err)
		}
	}
}

// An arrival can, through round-robin tie-breaking, let another waiting
// request start too: Arrive returns it.
func TestArriveDispatchesOthers(t *testing.T) {
	qs := mustNew(t, Config{ConcurrencyLimit: 4, Queues: 4, HandSize: 1, QueueLengthLimit: 10})
	arrive := func(hash uint64, w WorkEstimate, want Decision) *Request {
		t.Helper()
		r := &Request{Hash: hash, Work: w}
		if d := arrive1(qs, t0, r); d != want {
			t.Fatalf("hash %d: %v, want %v", hash, d, want)
		}
		return r
	}
	// y0 holds 2 seats and charges queue 3 with 9 seat-ms; x (4 seats,
	// queue 1) and y (queue 3) then tie at 12 seat-ms, x first in
	// round-robin order, and x does not fit.
	arrive(3, WorkEstimate{InitialSeats: 1, FinalSeats: 2, AdditionalLatency: 3 * time.Millisecond}, Dispatched)
	x := arrive(1, WorkEstimate{InitialSeats: 4}, Queued)
	y := arrive(3, WorkEstimate{InitialSeats: 1}, Queued)
	// r's empty queue 2 comes first; after it, queue 3 leads queue 1.
	r := &Request{Hash: 2, Work: WorkEstimate{InitialSeats: 1}}
	d, got := qs.Arrive(t0, r, nil)
	if d != Dispatched {
		t.Fatalf("r: %v", d)
	}
	if len(got) != 1 || got[0] != y {
		t.Fatalf("dispatched %v, want y", got)
	}
	if x.state != stateWaiting || y.state != stateExecuting {
		t.Fatalf("x %d, y %d", x.state, y.state)
	}
}

// Virtual time is moved back by D when it passes 1.5 D; relative order
// within the virtual world is kept.
func TestEpochAdvance(t *testing.T) {
	qs := mustNew(t, Config{ConcurrencyLimit: 1, Queues: 4, HandSize: 1, QueueLengthLimit: 10})
	qs.r = epochThreshold - 1_000_000 // 10ms of one seat before the threshold
	a := &Request{Hash: 0, Work: WorkEstimate{InitialSeats: 1}}
	b := &Request{Hash: 1, Work: WorkEstimate{InitialSeats: 1}}
	c := &Request{Hash: 1, Work: WorkEstimate{InitialSeats: 1}} // waits behind b
	arrive1(qs, t0, a)
	arrive1(qs, t0, b)
	arrive1(qs, t0, c)
	d := &Request{Hash: 3, Work: WorkEstimate{InitialSeats: 1}} // waits in a queue of its own
	arrive1(qs, t0, d)
	q1, q2 := qs.queues[1], qs.queues[2]
	q2.nextDispatchR = 12345 // idle queue: reset to 0
	q1Before := q1.nextDispatchR
	if _, rel := qs.Finish(t0.Add(40*time.Millisecond), a, nil); rel != 0 || qs.epochAdvances != 1 || qs.epochFailures != 0 {
		t.Fatalf("advances %d, failures %d", qs.epochAdvances, qs.epochFailures)
	}
	if qs.r >= epochDecrement || q2.nextDispatchR != 0 {
		t.Fatalf("R = %v, idle queue next = %v", qs.r, q2.nextDispatchR)
	}
	// b's queue is still busy (b now runs): moved back by exactly D, plus
	// the 3ms its dispatch charged. d's queue, which nothing was
	// dispatched from, waits with its place moved back too (check).
	if got, want := q1.nextDispatchR, q1Before-epochDecrement+300_000; got != want {
		t.Fatalf("q1 next = %d, want %d", got, want)
	}
	if err := qs.check(nil, true); err != nil {
		t.Fatal(err)
	}
	// c and d still wait, in two queues, and run one after the other.
	qs.Finish(t0.Add(40*time.Millisecond), b, nil)
	for range 2 {
		for _, r := range []*Request{c, d} {
			if r.state == stateExecuting {
				qs.Finish(t0.Add(40*time.Millisecond), r, nil)
			}
		}
	}
	if st := qs.Stats(); st.EpochAdvances != 1 || st.SeatsInUse != 0 {
		t.Fatalf("%+v", st)
	}
}

// Misuse that could only corrupt state is refused or ignored.
func TestMisuse(t *testing.T) {
	qs := mustNew(t, Config{ConcurrencyLimit: 1, Queues: 1, HandSize: 1, QueueLengthLimit: 10})
	other := mustNew(t, Config{ConcurrencyLimit: 1, Queues: 1, HandSize: 1, QueueLengthLimit: 10})
	r := &Request{Work: WorkEstimate{InitialSeats: -3, FinalSeats: -1, AdditionalLatency: -time.Second}}
	if arrive1(qs, t0, r) != Dispatched {
		t.Fatal("not dispatched")
	}
	if e := r.Estimate(); e != (WorkEstimate{}) {
		t.Fatalf("negative estimate not clamped: %+v", e)
	}
	if d, rel := other.Finish(t0, r, nil); d != nil || rel != 0 || r.state != stateExecuting {
		t.Fatal("another queue set finished r")
	}
	if qs.Release(t0, r, nil) != nil || other.Cancel(t0, r) || qs.Cancel(t0, r) {
		t.Fatal("release or cancel of an executing request did something")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Arrive of an in-flight request did not panic")
			}
		}()
		arrive1(qs, t0, r)
	}()
	qs.Finish(t0, r, nil)
	if arrive1(qs, t0, r) != Dispatched { // free again: reusable
		t.Fatal("reuse failed")
	}
	// Time going backwards counts as no time.
	qs.Finish(t0.Add(-time.Hour), r, nil)
	if qs.lastNs != 0 || !r.StartTime().Equal(r.arriveTime()) {
		t.Fatalf("lastNs %d", qs.lastNs)
	}
}

func TestRequestAccessors(t *testing.T) {
	qs := mustNew(t, Config{ConcurrencyLimit: 1, Queues: 2, HandSize: 1, QueueLengthLimit: 10})
	var zero Request
	if !zero.arriveTime().IsZero() || !zero.StartTime().IsZero() || zero.Reason() != 0 {
		t.Fatal("zero Request has times or a reason")
	}
	a := &Request{Hash: 0, Work: WorkEstimate{InitialSeats: 1}}
	b := &Request{Hash: 0, Work: WorkEstimate{InitialSeats: 1}}
	arrive1(qs, t0, a)
	arrive1(qs, t0.Add(time.Millisecond), b)
	if b.QueueLengthAfterEnqueue() != 1 || !b.StartTime().IsZero() || !b.arriveTime().Equal(t0.Add(time.Millisecond)) {
		t.Fatalf("b: len %d start %v arrive %v", b.QueueLengthAfterEnqueue(), b.StartTime(), b.arriveTime())
	}
	if d, _ := qs.Finish(t0.Add(5*time.Millisecond), a, nil); len(d) != 1 || d[0] != b {
		t.Fatal("b not dispatched")
	}
	if b.StartTime().Sub(b.arriveTime()) != 4*time.Millisecond || !b.StartTime().Equal(t0.Add(5*time.Millisecond)) {
		t.Fatalf("b waited %v, started %v", b.StartTime().Sub(b.arriveTime()), b.StartTime())
	}
	qs.Finish(t0.Add(5*time.Millisecond), b, nil)
}

// seatsTimesDuration returns seats×d, rounded half away from zero to the
// nearest unit. It is meant for increments (one request's work, one step
// of virtual time), not for totals since process start.
//
// The computation is deliberately done in float64, in the same order as the
// reference implementation, so that virtual time advances by bit-identical
// amounts: seats·ns/10, rounded, converted through int64. A negative result
// (a negative duration) therefore wraps to a huge uint64, which subtracting
// turns into the intended addition.
func seatsTimesDuration(seats float64, d time.Duration) SeatSeconds {
	return SeatSeconds(int64(math.Round(seats * float64(d) / nanosPerUnit)))
}
