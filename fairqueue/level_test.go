package fairqueue

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apfproject/apf/clock/fakeclock"
)

func newTestLevel(t *testing.T, cfg Config) (*Level, *fakeclock.Clock) {
	t.Helper()
	clk := fakeclock.New(t0)
	l, err := NewLevel(cfg, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l, clk
}

// waitUntil yields until cond holds; the goroutines it waits for only need
// to be scheduled, never time to pass.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 1_000_000 {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

// goWait runs l.Wait(ctx, r) in a goroutine and returns its result channel.
func goWait(l *Level, ctx context.Context, r *Request) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- l.Wait(ctx, r) }()
	return ch
}

func reason(err error) RejectReason {
	var re *RejectError
	if errors.As(err, &re) {
		return re.Reason
	}
	return 0
}

func TestLevelWaitAndDone(t *testing.T) {
	l, clk := newTestLevel(t, Config{ConcurrencyLimit: 1, Queues: 4, HandSize: 1, QueueLengthLimit: 1})
	ctx := context.Background()
	a := &Request{Hash: 0, Work: WorkEstimate{InitialSeats: 1}}
	if err := l.Wait(ctx, a); err != nil {
		t.Fatal(err)
	}
	b := &Request{Hash: 0, Work: WorkEstimate{InitialSeats: 1}}
	bDone := goWait(l, ctx, b)
	waitUntil(t, "b queued", func() bool { return l.Stats().WaitingRequests == 1 })
	// Queue 0 is full and the level saturated.
	if err := l.Wait(ctx, &Request{Hash: 0, Work: WorkEstimate{InitialSeats: 1}}); reason(err) != QueueFull {
		t.Fatalf("c: %v, want queue-full", err)
	}
	clk.Advance(time.Millisecond)
	l.Done(a)
	if err := <-bDone; err != nil {
		t.Fatalf("b: %v", err)
	}
	if got := l.Dump(true); len(got.Requests) != 1 || got.Requests[0].StartTime != t0.Add(time.Millisecond) {
		t.Fatalf("dump: %+v", got.Requests)
	}
	l.Done(b)
	if !l.IsIdle() || l.Stats().SeatsInUse != 0 {
		t.Fatalf("not idle: %+v", l.Stats())
	}
	// b's wake-up channel is kept and empty, ready for reuse.
	if b.wake == nil || len(b.wake) != 0 {
		t.Fatal("wake channel not kept empty")
	}
}

func TestLevelRejectLevel(t *testing.T) {
	l, _ := newTestLevel(t, Config{ConcurrencyLimit: 1, Queues: 0})
	a := &Request{Work: WorkEstimate{InitialSeats: 1}}
	if err := l.Wait(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	err := l.Wait(context.Background(), &Request{Work: WorkEstimate{InitialSeats: 1}})
	if reason(err) != ConcurrencyLimit {
		t.Fatalf("got %v, want concurrency-limit", err)
	}
	l.Done(a)
	if st := l.Stats(); st.Rejected != 1 || st.Dispatched != 1 || st.SeatsInUse != 0 {
		t.Fatalf("%+v", st)
	}
}

// A waiter whose context ends is removed from its queue with time-out.
func TestLevelCancel(t *testing.T) {
	l, _ := newTestLevel(t, Config{ConcurrencyLimit: 1, Queues: 1, HandSize: 1, QueueLengthLimit: 10})
	a := &Request{Work: WorkEstimate{InitialSeats: 1}}
	if err := l.Wait(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Request{Work: WorkEstimate{InitialSeats: 1}, Tag: "b"}
	bDone := goWait(l, ctx, b)
	waitUntil(t, "b queued", func() bool { return l.Stats().WaitingRequests == 1 })
	cancel()
	if err := <-bDone; reason(err) != TimeOut {
		t.Fatalf("b: %v, want time-out", err)
	}
	st := l.Stats()
	if st.WaitingRequests != 0 || st.Rejected != 1 || st.Cancelled != 1 || st.TimedOut != 0 {
		t.Fatalf("%+v", st)
	}
	// An already ended context still runs a request that can start at once.
	l.Done(a)
	if err := l.Wait(ctx, b); err != nil {
		t.Fatalf("b again: %v", err)
	}
	l.Done(b)
	if st := l.Stats(); st.SeatsInUse != 0 || !l.IsIdle() {
		t.Fatalf("%+v", st)
	}
}

// A final phase holds seats until the clock releases them; the caller's
// Request is free as soon as Done returns.
func TestLevelLinger(t *testing.T) {
	l, clk := newTestLevel(t, Config{ConcurrencyLimit: 2, Queues: 2, HandSize: 1, QueueLengthLimit: 10})
	ctx := context.Background()
	w := &Request{Hash: 0, Work: WorkEstimate{InitialSeats: 1, FinalSeats: 2, AdditionalLatency: 5 * time.Millisecond}}
	if err := l.Wait(ctx, w); err != nil {
		t.Fatal(err)
	}
	l.Done(w)
	if st := l.Stats(); st.SeatsInUse != 2 || st.ExecutingRequests != 0 || clk.Pending() != 1 {
		t.Fatalf("after Done: %+v, %d timers", st, clk.Pending())
	}
	// Reuse w at once for a request that must wait for the final phase.
	w.Work = WorkEstimate{InitialSeats: 1}
	wDone := goWait(l, ctx, w)
	waitUntil(t, "w queued", func() bool { return l.Stats().WaitingRequests == 1 })
	clk.Advance(5 * time.Millisecond)
	if err := <-wDone; err != nil {
		t.Fatal(err)
	}
	l.Done(w)
	if st := l.Stats(); st.SeatsInUse != 0 || len(l.carriers) != 1 {
		t.Fatalf("%+v, %d carriers", st, len(l.carriers))
	}
}

func TestLevelReconfigure(t *testing.T) {
	l, _ := newTestLevel(t, Config{ConcurrencyLimit: 1, Queues: 2, HandSize: 1, QueueLengthLimit: 10})
	ctx := context.Background()
	rs := make([]*Request, 4)
	errs := make([]<-chan error, 4)
	for i := range rs {
		rs[i] = &Request{Hash: uint64(i), Work: WorkEstimate{InitialSeats: 1}}
		errs[i] = goWait(l, ctx, rs[i])
	}
	waitUntil(t, "all arrived", func() bool { return l.Stats().Arrived == 4 })
	if err := l.Reconfigure(Config{ConcurrencyLimit: 1, Queues: -1}); !errors.Is(err, ErrExemptSwitch) {
		t.Fatalf("exempt switch: %v", err)
	}
	if err := l.Reconfigure(Config{ConcurrencyLimit: 2, Queues: 0}); err != nil {
		t.Fatal(err)
	}
	if c := l.Config(); c.Queues != 0 || c.QueueLengthLimit != 10 || c.HandSize != 1 {
		t.Fatalf("config %+v", c)
	}
	l.SetConcurrencyLimit(4)
	for i, ch := range errs {
		if err := <-ch; err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		l.Done(rs[i])
	}
	if st := l.Stats(); st.Dispatched != 4 || st.SeatsInUse != 0 || !l.IsIdle() {
		t.Fatalf("%+v", st)
	}
}

// Cancellation racing with dispatch: whichever wins, the seats come back
// and every request is accounted for once.
func TestLevelCancelRace(t *testing.T) {
	l, err := NewLevel(Config{ConcurrencyLimit: 2, Queues: 8, HandSize: 2, QueueLengthLimit: 1000}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 16, 300
	var wg sync.WaitGroup
	var mu sync.Mutex
	ran, timedOut := 0, 0
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &Request{Hash: uint64(w), Work: WorkEstimate{InitialSeats: 1}}
			for i := 0; i < rounds; i++ {
				ctx, cancel := context.WithCancel(context.Background())
				if i%2 == 0 {
					go cancel() // ends at an arbitrary point of the wait
				}
				err := l.Wait(ctx, r)
				cancel()
				mu.Lock()
				if err == nil {
					ran++
				} else if reason(err) == TimeOut {
					timedOut++
				} else {
					t.Errorf("unexpected %v", err)
				}
				mu.Unlock()
				if err == nil {
					runtime.Gosched()
					l.Done(r)
				}
			}
		}()
	}
	wg.Wait()
	st := l.Stats()
	if st.SeatsInUse != 0 || !l.IsIdle() || st.WaitingRequests != 0 {
		t.Fatalf("seats leaked: %+v", st)
	}
	if st.Dispatched != ran || st.Cancelled != timedOut || st.Arrived != workers*rounds {
		t.Fatalf("counts %+v; ran %d, timed out %d", st, ran, timedOut)
	}
	t.Logf("ran %d, timed out %d", ran, timedOut)
}

func TestLevelExempt(t *testing.T) {
	l, _ := newTestLevel(t, Config{ConcurrencyLimit: 0, Queues: -1})
	rs := []*Request{{Work: WorkEstimate{InitialSeats: 5}}, {Work: WorkEstimate{InitialSeats: 5}}}
	for _, r := range rs {
		if err := l.Wait(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if st := l.Stats(); st.SeatsInUse != 10 || st.ExecutingRequests != 2 {
		t.Fatalf("%+v", st)
	}
	for _, r := range rs {
		l.Done(r)
	}
	if st := l.Stats(); st.SeatsInUse != 0 {
		t.Fatalf("%+v", st)
	}
}

type demandLog struct {
	seats []int
	seen  []Occupancy
}

func (d *demandLog) Occupancy(_ time.Time, o Occupancy) {
	d.seen = append(d.seen, o)
	if n := len(d.seats); n == 0 || d.seats[n-1] != o.Demand() {
		d.seats = append(d.seats, o.Demand())
	}
}

func TestLevelObserver(t *testing.T) {
	var obs demandLog
	l, err := NewLevel(Config{ConcurrencyLimit: 1, Queues: 1, HandSize: 1, QueueLengthLimit: 5}, fakeclock.New(t0), &obs)
	if err != nil {
		t.Fatal(err)
	}
	r := &Request{Work: WorkEstimate{InitialSeats: 1}}
	if err := l.Wait(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	l.Done(r)
	// Enqueued (1 waiting), dispatched (same demand), finished (0).
	if len(obs.seats) != 2 || obs.seats[0] != 1 || obs.seats[1] != 0 {
		t.Fatalf("demand %v", obs.seats)
	}
	want := []Occupancy{
		{Waiting: 1, WaitingSeats: 1},
		{Executing: 1, SeatsInUse: 1},
		{},
	}
	if !slices.Equal(obs.seen, want) {
		t.Fatalf("occupancy %+v, want %+v", obs.seen, want)
	}
}

func TestLevelNoAllocs(t *testing.T) {
	l, err := NewLevel(Config{ConcurrencyLimit: 4, Queues: 64, HandSize: 8, QueueLengthLimit: 50}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := &Request{Work: WorkEstimate{InitialSeats: 1}, Tag: "x"}
	if n := testing.AllocsPerRun(1000, func() {
		r.Hash++
		if err := l.Wait(ctx, r); err != nil {
			t.Fatal(err)
		}
		l.Done(r)
	}); n != 0 {
		t.Fatalf("uncontended Wait+Done: %v allocs, want 0", n)
	}
	// Queued: once the channel exists, waiting allocates nothing either.
	blocker := &Request{Work: WorkEstimate{InitialSeats: 4}}
	waiter := &Request{Work: WorkEstimate{InitialSeats: 1}}
	round := func() {
		if err := l.Wait(ctx, blocker); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- l.Wait(ctx, waiter) }()
		for l.Stats().WaitingRequests == 0 {
			runtime.Gosched()
		}
		l.Done(blocker)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		l.Done(waiter)
	}
	round()
	// Each round's goroutine and result channel are the test's own (3
	// allocations); the Level must add nothing.
	if n := testing.AllocsPerRun(100, round); n > 3 {
		t.Fatalf("queued round: %v allocs, want ≤ 3 (the test's own)", n)
	}
}

// Misusing a Request panics without leaving the Level locked.
func TestLevelWaitInFlightPanics(t *testing.T) {
	l, _ := newTestLevel(t, Config{ConcurrencyLimit: 1, Queues: 0})
	r := &Request{Work: WorkEstimate{InitialSeats: 1}}
	if err := l.Wait(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("no panic")
			}
		}()
		l.Wait(context.Background(), r)
	}()
	l.Done(r) // the mutex is free
	if !l.IsIdle() {
		t.Fatal("not idle")
	}
}

// Rejections on a reject level skip the clock only while no queue drains,
// and leave the same counters and virtual time as the core's Arrive.
func TestLevelRejectUntimed(t *testing.T) {
	l, clk := newTestLevel(t, Config{ConcurrencyLimit: 1, Queues: 2, HandSize: 1, QueueLengthLimit: 10})
	ctx := context.Background()
	a := &Request{Hash: 0, Work: WorkEstimate{InitialSeats: 1}}
	if err := l.Wait(ctx, a); err != nil {
		t.Fatal(err)
	}
	b := &Request{Hash: 1, Work: WorkEstimate{InitialSeats: 1}}
	bDone := goWait(l, ctx, b)
	waitUntil(t, "b queued", func() bool { return l.Stats().WaitingRequests == 1 })
	if err := l.Reconfigure(Config{ConcurrencyLimit: 1, Queues: 0}); err != nil {
		t.Fatal(err)
	}
	// Queues still drain: the rejection goes through the clock, and
	// virtual time advances.
	clk.Advance(time.Millisecond)
	c := &Request{Work: WorkEstimate{InitialSeats: 1}}
	if reason(l.Wait(ctx, c)) != ConcurrencyLimit {
		t.Fatal("c not rejected")
	}
	if l.qs.lastNs != int64(time.Millisecond) || l.Stats().CurrentR == 0 {
		t.Fatalf("clock not read: lastNs %d, R %v", l.qs.lastNs, l.Stats().CurrentR)
	}
	clk.Advance(time.Millisecond)
	l.Done(a)
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
	l.Done(b)
	// Now nothing drains: the clock is skipped, and nothing is lost by it.
	if err := l.Wait(ctx, a); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Millisecond)
	if reason(l.Wait(ctx, c)) != ConcurrencyLimit || l.qs.lastNs != int64(2*time.Millisecond) {
		t.Fatalf("lastNs %d", l.qs.lastNs)
	}
	l.Done(a)
	if st := l.Stats(); st.Arrived != 5 || st.Rejected != 2 || st.Dispatched != 3 || st.SeatsInUse != 0 {
		t.Fatalf("%+v", st)
	}
}

// A removed level quiesces: it admits nothing new, and what it holds
// (executing, waiting, lingering in a final phase) drains without loss.
func TestLevelQuiesce(t *testing.T) {
	l, clk := newTestLevel(t, Config{ConcurrencyLimit: 2, Queues: 8, HandSize: 2, QueueLengthLimit: 10})
	ctx := context.Background()
	linger := &Request{Hash: 1, Work: WorkEstimate{InitialSeats: 1, FinalSeats: 1, AdditionalLatency: 5 * time.Millisecond}}
	running := &Request{Hash: 2, Work: WorkEstimate{InitialSeats: 1}}
	for _, r := range []*Request{linger, running} {
		if err := l.Wait(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(time.Millisecond)
	l.Done(linger) // its final phase keeps a seat for 5ms
	waiting := &Request{Hash: 3, Work: WorkEstimate{InitialSeats: 2}}
	waitDone := goWait(l, ctx, waiting)
	waitUntil(t, "queued", func() bool { return l.Stats().WaitingRequests == 1 })

	l.Quiesce()
	if !l.Quiescing() {
		t.Fatal("Quiescing() false after Quiesce")
	}
	if err := l.Wait(ctx, &Request{Hash: 4, Work: WorkEstimate{InitialSeats: 1}}); !errors.Is(err, ErrQuiescing) {
		t.Fatalf("new arrival: %v, want ErrQuiescing", err)
	}
	if l.IsIdle() {
		t.Fatal("idle while holding requests")
	}

	l.Done(running)
	clk.Advance(5 * time.Millisecond) // the final phase ends: two seats free
	if err := <-waitDone; err != nil {
		t.Fatalf("the queued request was not dispatched: %v", err)
	}
	l.Done(waiting)
	st := l.Stats()
	if !l.IsIdle() || st.SeatsInUse != 0 || st.Dispatched != 3 || st.Rejected != 0 {
		t.Fatalf("after draining: idle %v, %+v", l.IsIdle(), st)
	}

	// The level comes back: it admits again.
	l.Resume()
	again := &Request{Hash: 5, Work: WorkEstimate{InitialSeats: 1}}
	if err := l.Wait(ctx, again); err != nil || l.Quiescing() {
		t.Fatalf("after Resume: %v, quiescing %v", err, l.Quiescing())
	}
	l.Done(again)
}
