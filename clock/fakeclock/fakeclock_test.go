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
