package controller

import (
	"context"
	"errors"
	"testing"
)

// A running controller takes a new server concurrency limit: its levels'
// limits follow at once, requests beyond the smaller limit are refused
// while the ones admitted before run on, and Demand reports what the
// levels hold.
func TestSetServerConcurrencyLimit(t *testing.T) {
	c, _ := newTest(t, StaticSource(decode(t, manifests(true))), 200)
	ctx := context.Background()
	before := level(c, "tight").Limits
	if c.ServerConcurrencyLimit() != 200 {
		t.Fatalf("ServerConcurrencyLimit() = %d", c.ServerConcurrencyLimit())
	}
	var held []*Ticket
	for range 10 {
		tk, err := c.Admit(ctx, attrs(t, "elephant", "GET", "/healthz", ""))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, tk)
	}
	demand := func(name string) LevelDemand {
		for _, d := range c.Demand() {
			if d.Name == name {
				return d
			}
		}
		t.Fatalf("Demand() has no level %s: %+v", name, c.Demand())
		return LevelDemand{}
	}
	if d := demand("tight"); d.SeatsInUse != 10 || d.SeatsWaiting != 0 {
		t.Errorf("Demand of tight with 10 requests: %+v", d)
	}
	for _, d := range c.Demand() {
		if d.Name == "exempt" {
			t.Errorf("Demand lists the exempt level")
		}
	}

	if err := c.SetServerConcurrencyLimit(12); err != nil {
		t.Fatal(err)
	}
	if c.ServerConcurrencyLimit() != 12 {
		t.Fatalf("ServerConcurrencyLimit() = %d, want 12", c.ServerConcurrencyLimit())
	}
	after := level(c, "tight")
	if after.Limits.Nominal >= before.Nominal || after.Queue.Stats().ConcurrencyLimit >= 10 {
		t.Fatalf("tight after SCL 12: nominal %d (was %d), enforcing %d", after.Limits.Nominal, before.Nominal, after.Queue.Stats().ConcurrencyLimit)
	}
	_, err := c.Admit(ctx, attrs(t, "elephant", "GET", "/healthz", ""))
	var rej *RejectedError
	if !errors.As(err, &rej) {
		t.Fatalf("a request over the smaller limit: %v", err)
	}
	if d := demand("tight"); d.SeatsInUse != 10 {
		t.Errorf("the requests admitted before the change were cut short: %+v", d)
	}
	for _, tk := range held {
		tk.Done()
	}
	tk, err := c.Admit(ctx, attrs(t, "elephant", "GET", "/healthz", ""))
	if err != nil {
		t.Fatalf("after the others finished: %v", err)
	}
	tk.Done()
	if err := c.SetServerConcurrencyLimit(0); err == nil {
		t.Error("SetServerConcurrencyLimit(0) accepted")
	}
	if c.ServerConcurrencyLimit() != 12 {
		t.Errorf("a refused limit changed it to %d", c.ServerConcurrencyLimit())
	}
}

// FitServerConcurrencyLimit picks the largest limit whose nominal limits
// fit in the seats given, and 1 when none does.
func TestFitServerConcurrencyLimit(t *testing.T) {
	c, _ := newTest(t, StaticSource(decode(t, manifests(true))), 600)
	nominal := func() int {
		n := 0
		for _, l := range c.Levels() {
			if !l.Exempt {
				n += l.Limits.Nominal
			}
		}
		return n
	}
	for _, seats := range []int{30, 31, 57, 100, 600} {
		scl, err := c.FitServerConcurrencyLimit(seats)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.ServerConcurrencyLimit(); got != scl || scl > seats {
			t.Fatalf("Fit(%d) = %d, in force %d", seats, scl, got)
		}
		if n := nominal(); n > seats {
			t.Errorf("Fit(%d) = %d: the nominal limits add up to %d", seats, scl, n)
		}
		if scl < seats {
			// One more would not fit.
			c.mu.Lock()
			next := c.eng.NominalSum(scl + 1)
			c.mu.Unlock()
			if next <= seats {
				t.Errorf("Fit(%d) = %d, but %d fits too (nominal sum %d)", seats, scl, scl+1, next)
			}
		}
	}
	if scl, err := c.FitServerConcurrencyLimit(2); err != nil || scl != 1 {
		t.Errorf("Fit(2) with more levels than seats = %d, %v; want 1", scl, err)
	}
	if _, err := c.FitServerConcurrencyLimit(0); err == nil {
		t.Error("Fit(0) accepted")
	}
}
