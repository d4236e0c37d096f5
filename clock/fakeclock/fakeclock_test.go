package fakeclock

import (
	"slices"
	"testing"
	"time"
)

func TestAdvanceRunsTimersInOrderAtTheirTime(t *testing.T) {
	start := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New(start)
	var got []string
	at := func(name string) func() {
		return func() { got = append(got, name+"@"+c.Now().Sub(start).String()) }
	}
	c.AfterFunc(30*time.Millisecond, at("c"))
	c.AfterFunc(10*time.Millisecond, at("a"))
	c.AfterFunc(10*time.Millisecond, at("b"))
	stop := c.AfterFunc(20*time.Millisecond, at("never"))
	if !stop() || stop() {
		t.Fatal("stop: want true then false")
	}
	// A callback may schedule another one that falls due in the same Advance.
	c.AfterFunc(15*time.Millisecond, func() { c.AfterFunc(5*time.Millisecond, at("chained")) })
	if c.Pending() != 4 {
		t.Fatalf("Pending = %d, want 4", c.Pending())
	}
	if next, ok := c.Next(); !ok || !next.Equal(start.Add(10*time.Millisecond)) {
		t.Fatalf("Next = %v %v", next, ok)
	}
	c.Advance(25 * time.Millisecond)
	want := []string{"a@10ms", "b@10ms", "chained@20ms"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if d := c.Now().Sub(start); d != 25*time.Millisecond {
		t.Fatalf("Now = +%v, want +25ms", d)
	}
	c.Set(start) // backwards: no change
	c.Advance(time.Hour)
	if want = append(want, "c@30ms"); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if _, ok := c.Next(); ok || c.Pending() != 0 {
		t.Fatal("timers left")
	}
}

// A Timer is one reusable AfterFunc: Reset arms it, Stop disarms it, and
// each Reset that falls due calls its function once, at its due time.
func TestTimerResetAndStop(t *testing.T) {
	start := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New(start)
	var calls []time.Duration
	tm := c.NewTimer(func() { calls = append(calls, c.Now().Sub(start)) })
	if tm.Stop() {
		t.Fatal("Stop of a new timer reports a pending call")
	}
	tm.Reset(10 * time.Millisecond)
	if !tm.Stop() || tm.Stop() || c.Pending() != 0 {
		t.Fatal("Stop: want true, then false, and nothing pending")
	}
	c.Advance(20 * time.Millisecond)
	if len(calls) != 0 {
		t.Fatalf("a stopped timer called at %v", calls)
	}
	tm.Reset(10 * time.Millisecond) // due at +30ms
	tm.Reset(5 * time.Millisecond)  // moved: due at +25ms, once
	if c.Pending() != 1 {
		t.Fatalf("Pending = %d after two Resets, want 1", c.Pending())
	}
	c.Advance(20 * time.Millisecond)
	if !slices.Equal(calls, []time.Duration{25 * time.Millisecond}) || tm.Stop() {
		t.Fatalf("calls %v, want one at 25ms and nothing pending after it", calls)
	}
	tm.Reset(time.Millisecond)
	c.Advance(time.Millisecond)
	if !slices.Equal(calls, []time.Duration{25 * time.Millisecond, 41 * time.Millisecond}) {
		t.Fatalf("calls %v, want a second at 41ms", calls)
	}
}
