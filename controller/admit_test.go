package controller

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// A write's final phase (the watch notifications it triggers) is timed
// once: one timer of the controller's clock ends it in the queue set,
// which frees its seats, and in the metrics' executing seats, and only
// then is the Ticket recycled.
func TestFinalPhaseTimedOnce(t *testing.T) {
	c, clk := newTest(t, StaticSource(decode(t, manifests(true))), 21)
	watch := attrs(t, "mouse", "GET", "/api/v1/namespaces/ns/pods", "watch=1")
	for range 25 { // three final seats, at ten watches a seat
		defer c.Watches().Register(&watch.Info)()
	}
	tk, err := c.Admit(context.Background(), attrs(t, "mouse", "PUT", "/api/v1/namespaces/ns/pods/p", ""))
	if err != nil {
		t.Fatal(err)
	}
	est := tk.Estimate()
	if est.AdditionalLatency <= 0 || est.FinalSeats <= 0 {
		t.Fatalf("the write's estimate %+v has no final phase", est)
	}
	q := level(c, "queued").Queue
	timers := clk.Pending()
	clk.Advance(time.Millisecond)
	tk.Done()
	if n := clk.Pending() - timers; n != 1 {
		t.Fatalf("Done set %d timers for the final phase, want 1", n)
	}
	if st := q.Stats(); st.ExecutingRequests != 0 || st.SeatsInUse != est.MaxSeats() {
		t.Fatalf("in the final phase: %+v, want its %d seats held", st, est.MaxSeats())
	}
	clk.Advance(est.AdditionalLatency - time.Nanosecond)
	if st := q.Stats(); st.SeatsInUse == 0 {
		t.Fatal("the final phase ended early")
	}
	clk.Advance(time.Nanosecond)
	if st := q.Stats(); st.SeatsInUse != 0 || !q.IsIdle() || clk.Pending() != timers {
		t.Fatalf("after the final phase: %+v, %d timers pending (%d before)", st, clk.Pending(), timers)
	}
}

// An uncontended admission and its Done allocate nothing in the
// controller.
func TestAdmitAllocatesNothing(t *testing.T) {
	c, _ := newTest(t, StaticSource(decode(t, manifests(true))), 600)
	a := attrs(t, "mouse", "GET", "/api/v1/namespaces/ns/pods/p", "")
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() {
		tk, err := c.Admit(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		tk.Done()
	}); n != 0 {
		t.Fatalf("Admit and Done: %v allocations, want 0", n)
	}
}

// narrowLevel is a queuing level of eight queues, fed by every
// authenticated user, one flow per user.
const narrowLevel = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: narrow}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 100
    limitResponse:
      type: Queue
      queuing: {queues: 8, handSize: 2, queueLengthLimit: 1000}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: narrow}
spec:
  priorityLevelConfiguration: {name: narrow}
  matchingPrecedence: 100
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: system:authenticated}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`

// A waiter's cancellation racing with its dispatch: whichever the level's
// lock sees first wins, every seat comes back, and every request is
// counted once, as run or as timed out.
func TestCancelRacesDispatch(t *testing.T) {
	c, _ := newTest(t, StaticSource(decode(t, narrowLevel)), 2)
	const workers, rounds = 16, 200
	var mu sync.Mutex
	ran, timedOut := 0, 0
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			a := attrs(t, "user"+string(rune('a'+w)), "GET", "/healthz", "")
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range rounds {
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(2) == 0 {
					go cancel() // ends at an arbitrary point of the wait
				}
				tk, err := c.Admit(ctx, a)
				cancel()
				mu.Lock()
				if err == nil {
					ran++
				} else if re, ok := err.(*RejectedError); ok && re.Reason.String() == "time-out" {
					timedOut++
				} else {
					t.Errorf("unexpected %v", err)
				}
				mu.Unlock()
				if err == nil {
					runtime.Gosched()
					tk.Done()
				}
			}
		})
	}
	wg.Wait()
	narrowSettled(t, c, workers*rounds, ran, timedOut)
}

// narrowSettled checks that narrowLevel's level is empty after arrived
// requests, and that each of them was counted once, as run or as timed
// out.
func narrowSettled(t *testing.T, c *Controller, arrived, ran, timedOut int) {
	t.Helper()
	q := level(c, "narrow").Queue
	st := q.Stats()
	if st.SeatsInUse != 0 || !q.IsIdle() || st.WaitingRequests != 0 {
		t.Fatalf("seats leaked: %+v", st)
	}
	if st.Dispatched != ran || st.Cancelled != timedOut || st.Arrived != arrived {
		t.Fatalf("counts %+v; %d arrived, %d ran, %d timed out", st, arrived, ran, timedOut)
	}
	t.Logf("ran %d, timed out %d", ran, timedOut)
}

// A Ticket's wait timer is reused from wait to wait. Waits on the real
// clock whose limits pass while other requests finish make the timer fire
// as the level dispatches: a signal left from one wait would end the next
// one early. No wait may end in a time-out before its limit, and every
// seat comes back.
func TestWaitTimerReused(t *testing.T) {
	c, err := New(Config{ServerConcurrencyLimit: 2, Source: StaticSource(decode(t, narrowLevel))})
	if err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 16, 100
	// A deadline 4 ms ahead gives a wait limit of a quarter of what is
	// left at arrival: the wait cannot end in a time-out before 1 ms.
	const deadline, least = 4 * time.Millisecond, time.Millisecond
	var mu sync.Mutex
	ran, timedOut := 0, 0
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			a := attrs(t, "user"+string(rune('a'+w)), "GET", "/healthz", "")
			rng := rand.New(rand.NewPCG(uint64(w), 2))
			for range rounds {
				start := time.Now()
				ctx, cancel := context.WithDeadline(context.Background(), start.Add(deadline))
				tk, err := c.Admit(ctx, a)
				waited := time.Since(start)
				cancel()
				if err == nil {
					time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
					tk.Done()
				}
				mu.Lock()
				switch re, ok := err.(*RejectedError); {
				case err == nil:
					ran++
				case ok && re.Reason.String() == "time-out" && waited >= least:
					timedOut++
				default:
					t.Errorf("after %v: %v", waited, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	narrowSettled(t, c, workers*rounds, ran, timedOut)
	if timedOut == 0 {
		t.Fatal("no wait reached its limit: the test timed nothing")
	}
}
