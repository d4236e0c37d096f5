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
