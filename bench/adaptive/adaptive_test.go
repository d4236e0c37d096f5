package main

import (
	"context"
	"strings"
	"testing"
)

// A short run of the whole benchmark: three runs of three phases, each
// with its figures and the limit it ended with, the static ones at their
// limit and the adaptive one within its bounds. The figures themselves are
// for `make bench-adaptive` on a quiet machine, not for a test.
func TestShortRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs apf serve and a flood for about 20 s")
	}
	cfg := Config{Phase: 1500_000_000, Settle: 500_000_000, Service: 20_000_000, Flood: 10}
	rs, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 9 {
		t.Fatalf("%d results, want 9", len(rs))
	}
	for _, r := range rs {
		switch {
		case r.Goodput <= 0 || r.FloodOK <= 0:
			t.Errorf("%s at %d: nothing went through: %+v", r.Run, r.Capacity, r)
		case r.Run == "static 10" && r.Limit != 10, r.Run == "static 40" && r.Limit != 40:
			t.Errorf("%s ended with limit %d", r.Run, r.Limit)
		case strings.HasPrefix(r.Run, "adaptive") && (r.Limit < 2 || r.Limit > 200):
			t.Errorf("%s ended with limit %d, outside its bounds", r.Run, r.Limit)
		}
	}
	if table := Table(cfg, rs); strings.Count(table, "\n") != 13 {
		t.Errorf("table:\n%s", table)
	}
}

// A short run of the deadline-aware part: both runs give figures, and
// with the option on, the 429s that came while the level's drain was
// measured carry a Retry-After read against it. Whether they meet their
// bars is for `make bench-adaptive` on a quiet machine: here the server
// may run under the race detector on a busy one, so the flood is gentle
// (twice a capacity of 2 at 20 ms) and the wait limit long (1 s).
func TestShortDeadlineRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs apf serve and a flood twice for about 10 s")
	}
	cfg := DeadlineConfig{Capacity: 2, Service: 20_000_000, Timeout: 4_000_000_000, Users: 2, Rate: 200, Settle: 2_000_000_000, Measure: 2_000_000_000}
	rs, err := RunDeadline(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Run != "deadline-aware off" || rs[1].Run != "deadline-aware on" {
		t.Fatalf("results %+v", rs)
	}
	for _, r := range rs {
		if r.Goodput <= 0 && r.Rejected <= 0 {
			t.Errorf("%s: nothing was answered: %+v", r.Run, r)
		}
	}
	if on := rs[1]; on.Rejected > 0 && on.Drain > 0 && on.RetryRatio <= 0 {
		t.Errorf("with the option, 429s while the drain was measured, none with a Retry-After read against it: %+v", on)
	}
	table := DeadlineTable(cfg, rs)
	if strings.Count(table, "\n") != 6 {
		t.Errorf("table:\n%s", table)
	}
	t.Log("\n" + table)
}
