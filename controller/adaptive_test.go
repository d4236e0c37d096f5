package controller

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apfproject/apf/capacity"
	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/request"
)

// limitShadow is a Shadow that records the server limits it is told.
type limitShadow struct {
	mu     sync.Mutex
	limits []int
}

func (s *limitShadow) Arrive(time.Time, time.Time, request.Attributes, *classify.FlowSchema) uint64 {
	return 0
}
func (s *limitShadow) Finish(uint64, time.Time, time.Duration, bool) {}
func (s *limitShadow) ServerLimit(_ time.Time, limit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = append(s.limits, limit)
}

// holdExempt admits n exempt requests (which no limit holds back) and
// returns them, with the attributes of an exempt request.
func holdExempt(t *testing.T, c *Controller, n int) (*request.Attributes, []*Ticket) {
	t.Helper()
	root := attrs(t, "root", "GET", "/healthz", "")
	root.User.Groups = []string{"system:masters"}
	var held []*Ticket
	for range n {
		tk, err := c.Admit(context.Background(), root)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, tk)
	}
	return root, held
}

// An adaptive server limit starts at its floor, grows to its ceiling on
// an upstream whose latency stays flat, and backs off to its floor on
// overload answers. Each change reaches the levels as a new server limit
// (their nominal limits derived again from their shares) and the shadow
// configuration, and the exempt level goes on admitting whatever the
// limit.
func TestAdaptiveLimit(t *testing.T) {
	c, clk := newTest(t, StaticSource(decode(t, manifests(true))), 200)
	sh := &limitShadow{}
	c.SetShadow(sh)
	if c.Adaptive() != nil {
		t.Fatal("an adaptive limit before NewAdaptive")
	}
	a, err := c.NewAdaptive(capacity.Config{Floor: 10, Ceiling: 100, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c.Adaptive() != a {
		t.Fatal("Adaptive() is not the one made")
	}
	if _, err := c.NewAdaptive(capacity.Config{Floor: 10, Ceiling: 100}); !errors.Is(err, errAdaptiveTwice) {
		t.Fatalf("a second NewAdaptive: %v", err)
	}
	if got := c.ServerConcurrencyLimit(); got != 10 {
		t.Fatalf("limit %d after NewAdaptive, want the floor", got)
	}
	atFloor := level(c, "tight").Limits.Nominal

	// Answers of a flat 10 ms, one a millisecond, with 60 requests
	// executing all along (exempt ones, which no limit holds back), so
	// that the limit looks used.
	root, held := holdExempt(t, c, 60)
	feed := func(d time.Duration, outcome capacity.Outcome, until func() bool) {
		t.Helper()
		for end := clk.Now().Add(d); clk.Now().Before(end) && !until(); {
			clk.Advance(time.Millisecond)
			a.Observe(10*time.Millisecond, 1, outcome)
		}
	}
	feed(time.Minute, capacity.Answered, func() bool { return c.ServerConcurrencyLimit() == 100 })
	if got := c.ServerConcurrencyLimit(); got != 100 {
		t.Fatalf("limit %d after a minute of flat latency, want the ceiling; status %+v", got, a.Status())
	}
	if st := a.Status(); st.Baseline != 10*time.Millisecond || a.Changes(capacity.Grow) == 0 || a.Err() != nil {
		t.Errorf("status %+v, %d growths, error %v", st, a.Changes(capacity.Grow), a.Err())
	}
	if n := level(c, "tight").Limits.Nominal; n <= atFloor {
		t.Errorf("tight's nominal limit %d at the ceiling, %d at the floor: the levels did not follow", n, atFloor)
	}

	feed(time.Minute, capacity.Overloaded, func() bool { return c.ServerConcurrencyLimit() == 10 })
	if got := c.ServerConcurrencyLimit(); got != 10 || a.Changes(capacity.Overload) == 0 {
		t.Fatalf("limit %d after overload answers (%d backoffs), want the floor", got, a.Changes(capacity.Overload))
	}
	if level(c, "tight").Limits.Nominal != atFloor {
		t.Errorf("tight's nominal limit %d back at the floor, want %d", level(c, "tight").Limits.Nominal, atFloor)
	}

	// The shadow heard the limit when it was set, then every change.
	sh.mu.Lock()
	heard := slices.Clone(sh.limits)
	sh.mu.Unlock()
	if len(heard) < 3 || heard[0] != 200 || heard[1] != 10 || !slices.Contains(heard, 100) || heard[len(heard)-1] != 10 {
		t.Errorf("the shadow heard %v, want 200, 10, …, 100, …, 10", heard)
	}

	// Exempt is untouched: with tight's seats all held, an exempt
	// request is admitted at once.
	var tight []*Ticket
	for {
		tk, err := c.Admit(context.Background(), attrs(t, "elephant", "GET", "/healthz", ""))
		if err != nil {
			break
		}
		tight = append(tight, tk)
	}
	tk, err := c.Admit(context.Background(), root)
	if err != nil || tk.PriorityLevel != "exempt" {
		t.Fatalf("an exempt request with the limit at its floor: %v %+v", err, tk)
	}
	tk.Done()
	for _, tk := range append(tight, held...) {
		tk.Done()
	}
}

// ObserveTicket counts a ticket's latency from its dispatch, and skips
// watches.
func TestAdaptiveObserveTicket(t *testing.T) {
	c, clk := newTest(t, StaticSource(decode(t, manifests(true))), 200)
	a, err := c.NewAdaptive(capacity.Config{Floor: 5, Ceiling: 50, ProbeSamples: 1, MinSamples: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Only requests dispatched after the measurement began count.
	clk.Advance(time.Millisecond)
	watch, err := c.Admit(context.Background(), attrs(t, "mouse", "GET", "/api/v1/pods", "watch=true"))
	if err != nil {
		t.Fatal(err)
	}
	tk, err := c.Admit(context.Background(), attrs(t, "mouse", "GET", "/healthz", ""))
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(7 * time.Millisecond)
	a.ObserveTicket(watch, capacity.Answered)
	if a.Status().Baseline != 0 {
		t.Fatalf("a watch was observed: %+v", a.Status())
	}
	a.ObserveTicket(tk, capacity.Answered)
	if b := a.Status().Baseline; b != 7*time.Millisecond {
		t.Fatalf("baseline %v, want the ticket's 7ms from dispatch", b)
	}
	tk.Done()
	watch.Done()
}

// A share of a shared budget bounds the adaptive limit: the ceiling is
// the largest limit whose levels' nominal limits fit in the share, the
// floor the same part of the configured floor, and a limit above the new
// ceiling comes down at once; a larger share lets it grow again, never
// past the configured ceiling.
func TestAdaptiveFitsAShare(t *testing.T) {
	c, clk := newTest(t, StaticSource(decode(t, manifests(true))), 200)
	a, err := c.NewAdaptive(capacity.Config{Floor: 10, Ceiling: 100, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Requests executing all along, so that the limit looks used.
	_, held := holdExempt(t, c, 60)
	defer func() {
		for _, tk := range held {
			tk.Done()
		}
	}()
	grow := func(want int) {
		t.Helper()
		for end := clk.Now().Add(time.Minute); clk.Now().Before(end) && c.ServerConcurrencyLimit() != want; {
			clk.Advance(time.Millisecond)
			a.Observe(10*time.Millisecond, 1, capacity.Answered)
		}
		if got := c.ServerConcurrencyLimit(); got != want {
			t.Fatalf("limit %d after a minute of flat latency, want %d; status %+v", got, want, a.Status())
		}
	}
	grow(100)

	ceiling, err := a.FitServerConcurrencyLimit(40)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	fits := c.eng.NominalSum(ceiling) <= 40 && c.eng.NominalSum(ceiling+1) > 40
	c.mu.Unlock()
	st := a.Status()
	if !fits || st.Ceiling != ceiling || st.Floor != max(1, (10*ceiling+50)/100) || c.ServerConcurrencyLimit() != ceiling {
		t.Fatalf("a share of 40 seats: ceiling %d (fits %v), status %+v, limit %d", ceiling, fits, st, c.ServerConcurrencyLimit())
	}
	if a.Changes(capacity.Bounds) != 1 {
		t.Errorf("%d changes for bounds, want 1", a.Changes(capacity.Bounds))
	}

	// The whole budget again: the limit grows back by the law, up to the
	// configured ceiling and no further.
	if ceiling, err = a.FitServerConcurrencyLimit(1000); err != nil || ceiling != 100 {
		t.Fatalf("a share of 1000 seats: ceiling %d, %v; want the configured 100", ceiling, err)
	}
	if st := a.Status(); st.Floor != 10 || st.Ceiling != 100 {
		t.Errorf("bounds %d:%d with the whole budget, want 10:100", st.Floor, st.Ceiling)
	}
	grow(100)
	if _, err := a.FitServerConcurrencyLimit(0); err == nil {
		t.Error("a share of 0 seats was taken")
	}
}
