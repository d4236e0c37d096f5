package server

import (
	"context"
	"os"
	"runtime/debug"
	"testing"
	"time"
)

// TestGCPercentFor: the goal, live*(1+p/100), reaches the floor, and p is
// never below the default nor unbounded.
func TestGCPercentFor(t *testing.T) {
	const floor = 64 << 20
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 10000},
		{1, 10000},
		{4 << 20, 1500},
		{8 << 20, 700},
		{32 << 20, 100},
		{40 << 20, 100},
		{1 << 30, 100},
	} {
		got := gcPercentFor(c.live, floor)
		if got != c.want {
			t.Errorf("live %d: %d, want %d", c.live, got, c.want)
		}
		if c.live > 0 && got < 10000 && c.live+c.live*uint64(got)/100 < floor {
			t.Errorf("live %d: GOGC %d sets the goal below the floor", c.live, got)
		}
	}
}

// TestKeepHeapFloor: while it runs, GOGC is above the default for a
// process whose live heap is small; once its context ends, the default
// is back.
func TestKeepHeapFloor(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		t.Skip("GOGC is set: keepHeapFloor leaves it")
	}
	gogc := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { keepHeapFloor(ctx); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for gogc() <= 100 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if p := gogc(); p <= 100 {
		t.Errorf("GOGC %d while the floor is kept", p)
	}
	cancel()
	<-done
	if p := gogc(); p != 100 {
		t.Errorf("GOGC %d after, want 100", p)
	}
}
