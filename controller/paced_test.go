package controller

import (
	"context"
	"testing"
	"time"

	"github.com/apfproject/apf/clock/fakeclock"
)

// A paced level (Config.PacedDispatch) holds back a request whose turn
// has not come, and the controller gives the level its Tick when it
// may start: with the level's service time measured at 8 ms and a limit
// of L seats, turns come 8 ms / 1.25L apart (at most 1 ms), and a request may start 1 ms
// (8 ms / 8) before its turn. Before any request has finished there is no
// measure and no gap.
func TestPacedDispatch(t *testing.T) {
	clk := fakeclock.New(t0)
	c, err := New(Config{ServerConcurrencyLimit: 12, Source: StaticSource(decode(t, deepManifest)), Clock: clk, PacedDispatch: true})
	if err != nil {
		t.Fatal(err)
	}
	q := level(c, "queued").Queue
	limit := q.Stats().ConcurrencyLimit
	held := holdSeats(t, c, limit, "mouse")
	clk.Advance(8 * time.Millisecond)
	for _, tk := range held {
		tk.Done()
	}
	gap := min(time.Duration(float64(8*time.Millisecond)/(float64(limit)*1.25)), time.Millisecond)
	const slack = time.Millisecond

	admitted := make(chan *Ticket, 3)
	for range 3 {
		go func() {
			tk, err := c.Admit(context.Background(), attrs(t, "mouse", "GET", "/healthz", ""))
			if err != nil {
				t.Error(err)
			}
			admitted <- tk
		}()
	}
	start := clk.Now()
	// When each of the three may start: the first at once, each later one
	// a slack before its turn.
	var at []time.Time
	turn := start
	for range 3 {
		a := turn.Add(-slack)
		if a.Before(start) {
			a = start
		}
		at = append(at, a)
		turn = turn.Add(gap)
	}
	held2 := 0
	for _, a := range at {
		if a.After(start) {
			held2++
		}
	}
	if held2 == 0 {
		t.Fatalf("a gap of %v with a slack of %v holds nothing back: the level's limit %d is too small for the test", gap, slack, limit)
	}
	waitFor(t, "requests held back", func() bool { return q.Stats().WaitingRequests == held2 })
	var started []*Ticket
	defer func() {
		for _, tk := range started {
			tk.Done()
		}
	}()
	for i := range 3 {
		var tk *Ticket
		select {
		case tk = <-admitted:
		case <-time.After(10 * time.Second):
			t.Fatalf("request %d was not started", i+1)
		}
		if tk == nil {
			t.FailNow()
		}
		if !tk.start.Equal(at[i]) {
			t.Errorf("request %d started at %v, want %v", i+1, tk.start.Sub(start), at[i].Sub(start))
		}
		started = append(started, tk)
		if i < 2 && at[i+1].After(clk.Now()) {
			clk.Advance(at[i+1].Sub(clk.Now()))
		}
	}
}
