package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apfproject/apf/clock/fakeclock"
)

// TestWaitContextDeadline: the wait context's deadline is the wait limit
// after arrival, in Deadline, in Err and in the timer Done arms.
func TestWaitContextDeadline(t *testing.T) {
	clk := fakeclock.New(t0)
	var w waitContext
	w.arm(context.Background(), t0, 250*time.Millisecond, clk)
	if dl, ok := w.Deadline(); !ok || !dl.Equal(t0.Add(250*time.Millisecond)) {
		t.Fatalf("Deadline %v %v, want %v", dl, ok, t0.Add(250*time.Millisecond))
	}
	done := w.Done()
	if !w.wasQueued() {
		t.Fatal("Done did not count as queueing")
	}
	clk.Advance(249 * time.Millisecond)
	if err := w.Err(); err != nil {
		t.Fatalf("Err before the deadline: %v", err)
	}
	clk.Advance(time.Millisecond)
	select {
	case <-done:
	default:
		t.Fatal("Done not closed at the deadline")
	}
	if err := w.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err at the deadline: %v", err)
	}
	w.disarm()
}

// TestWaitContextParentDeadline: with a deadline of its own, a request may
// wait a quarter of the time that deadline leaves after its arrival, read
// from its context only when the wait needs it.
func TestWaitContextParentDeadline(t *testing.T) {
	clk := fakeclock.New(t0)
	parent, cancel := context.WithDeadline(context.Background(), t0.Add(8*time.Second))
	defer cancel()
	var w waitContext
	w.arm(parent, t0, time.Minute, clk)
	if dl, ok := w.Deadline(); !ok || !dl.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("Deadline %v %v, want %v (a quarter of 8 s)", dl, ok, t0.Add(2*time.Second))
	}
	done := w.Done()
	clk.Advance(2 * time.Second)
	select {
	case <-done:
	default:
		t.Fatal("Done not closed at a quarter of the parent's time")
	}
	w.disarm()
}
