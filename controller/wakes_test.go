package controller

import "testing"

// TestWakesKeepsFourThenWakesAtOnce checks the hand-off of dispatched
// requests to the caller: the first four wake channels wait for send (the
// caller's, after the level's lock), the rest are woken at once, and a
// second wake of a channel already woken does not block.
func TestWakesKeepsFourThenWakesAtOnce(t *testing.T) {
	var w wakes
	chs := make([]chan struct{}, 6)
	for i := range chs {
		chs[i] = make(chan struct{}, 1)
		if !w.add(chs[i]) {
			wake(chs[i])
		}
	}
	for i, ch := range chs {
		if got, want := len(ch), min(max(i-3, 0), 1); got != want {
			t.Errorf("before send: channel %d holds %d, want %d", i, got, want)
		}
	}
	w.send()
	for i, ch := range chs {
		if len(ch) != 1 {
			t.Errorf("after send: channel %d holds %d, want 1", i, len(ch))
		}
		wake(ch) // full: must return at once
	}
}
