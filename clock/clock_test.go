package clock

import (
	"testing"
	"time"
)

// Real's Now carries the monotonic reading time.Now would give at the
// same moment, so it orders and measures exactly as time.Now does, and a
// wall reading close to the system's.
func TestRealNowFollowsTimeNow(t *testing.T) {
	prev := Real.Now()
	for range 1000 {
		before := time.Now()
		now := Real.Now()
		after := time.Now()
		if now.Before(before) || now.After(after) {
			t.Fatalf("Real.Now() = %v, outside [%v, %v]", now, before, after)
		}
		if now.Before(prev) {
			t.Fatalf("Real.Now() went back: %v after %v", now, prev)
		}
		prev = now
		// The wall readings alone (Round(0) drops the monotonic one).
		if d := now.Round(0).Sub(after.Round(0)); d > time.Millisecond || d < -reanchorAfter {
			t.Fatalf("Real.Now()'s wall reading is %v from time.Now's", d)
		}
	}
}

// The full reading is taken again once the anchor is reanchorAfter old.
func TestRealNowReanchors(t *testing.T) {
	old := time.Now().Add(-2 * reanchorAfter)
	anchor.Store(&old)
	before := time.Now()
	now := Real.Now()
	if anchor.Load() == &old {
		t.Fatal("the anchor was not taken again")
	}
	if now.Before(before) || now.Sub(old) < 2*reanchorAfter {
		t.Fatalf("Real.Now() = %v, not a new reading (old anchor %v, time.Now %v)", now, old, before)
	}
}

func BenchmarkRealNow(b *testing.B) {
	b.Run("time.Now", func(b *testing.B) {
		for b.Loop() {
			_ = time.Now()
		}
	})
	b.Run("Real", func(b *testing.B) {
		for b.Loop() {
			_ = Real.Now()
		}
	})
}

// A Timer calls its function once per Reset that falls due, and Stop
// before that cancels the call: Real's own, and the one NewTimer makes of
// AfterFunc calls for a Clock that makes none.
func TestTimers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clock Clock
		want  func(Timer) bool
	}{
		{"Real", Real, func(tm Timer) bool { _, ok := tm.(realTimer); return ok }},
		{"AfterFunc", struct{ Clock }{Real}, func(tm Timer) bool { _, ok := tm.(*afterTimer); return ok }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := make(chan struct{}, 4)
			tm := NewTimer(tc.clock, func() { calls <- struct{}{} })
			if !tc.want(tm) {
				t.Fatalf("NewTimer made a %T", tm)
			}
			if tm.Stop() {
				t.Fatal("Stop of a new timer reports a pending call")
			}
			tm.Reset(time.Hour)
			if !tm.Stop() || tm.Stop() {
				t.Fatal("Stop of a pending timer: want true, then false")
			}
			for range 3 {
				tm.Reset(time.Millisecond)
				select {
				case <-calls:
				case <-time.After(10 * time.Second):
					t.Fatal("the timer did not call")
				}
				if tm.Stop() {
					t.Fatal("Stop after the call reports a pending one")
				}
			}
			if len(calls) != 0 {
				t.Fatalf("%d calls too many", len(calls))
			}
		})
	}
}
