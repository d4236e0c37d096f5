package controller

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apfproject/apf/clock/fakeclock"
)

// A paced level (Config.PacedDispatch) holds back a request whose turn
// has not come, and the controller gives the level its Tick when it
// may start: with the level's service time measured at 8 ms and a limit
// of L seats, turns come 8 ms / 1.25L apart (at most 1 ms), and a request may start 1 ms
// (8 ms / 8) before its turn. Before any request has finished there is no
// measure and no gap. The apf_paced_* metrics give the measure and the
// turn once there is one.
func TestPacedDispatch(t *testing.T) {
	clk := fakeclock.New(t0)
	c, err := New(Config{ServerConcurrencyLimit: 12, Source: StaticSource(decode(t, deepManifest)), Clock: clk, PacedDispatch: true})
	if err != nil {
		t.Fatal(err)
	}
	q := level(c, "queued").Queue
	limit := q.Stats().ConcurrencyLimit
	held := holdSeats(t, c, limit, "mouse")
	// No measure yet: no apf_paced_* metric.
	checkPacedMetrics(t, c, nil, nil)
	clk.Advance(8 * time.Millisecond)
	for _, tk := range held {
		tk.Done()
	}
	gap := min(time.Duration(float64(8*time.Millisecond)/(float64(limit)*1.25)), time.Millisecond)
	const slack = time.Millisecond
	checkPacedMetrics(t, c, map[string]float64{"queued": 0.008}, map[string]float64{"queued": gap.Seconds()})

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

// checkPacedMetrics gathers the apf_paced_* metrics of c and compares
// them, by priority level, with service and turn (seconds): a level in
// neither has none.
func checkPacedMetrics(t *testing.T, c *Controller, service, turn map[string]float64) {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := c.RegisterPaced(reg); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if got[mf.GetName()] == nil {
				got[mf.GetName()] = map[string]float64{}
			}
			got[mf.GetName()][m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	for name, want := range map[string]map[string]float64{"apf_paced_service_seconds": service, "apf_paced_turn_seconds": turn} {
		if len(got[name]) != len(want) {
			t.Errorf("%s: %v, want %v", name, got[name], want)
			continue
		}
		for level, w := range want {
			if g := got[name][level]; g < w*0.999 || g > w*1.001 {
				t.Errorf("%s{priority_level=%q} = %v, want %v", name, level, g, w)
			}
		}
	}
}
