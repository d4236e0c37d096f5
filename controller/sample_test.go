package controller

import (
	"testing"

	"github.com/apfproject/apf/fairqueue"
)

// TestSampleLevelReadsQueuesInPlace: sampling a level whose
// no-accommodation count did not rise reads its queues in place, without
// a dump's copy of them.
func TestSampleLevelReadsQueuesInPlace(t *testing.T) {
	c, _ := newTest(t, StaticSource(decode(t, manifests(true))), 21)
	var ls *Level
	for _, l := range c.eng.Levels() {
		if !l.Exempt() && l.Config().Queues > 0 {
			ls = c.levels[l]
			break
		}
	}
	if ls == nil {
		t.Fatal("no queuing level")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sampleLevelLocked(ls)
	if n := testing.AllocsPerRun(20, func() { c.sampleLevelLocked(ls) }); n != 0 {
		t.Fatalf("a sample allocated %v times", n)
	}
}

// TestSBoundsMatchesDump: the bounds gathered in one pass are those over
// the queues with waiting requests, or over every queue when none waits.
func TestSBoundsMatchesDump(t *testing.T) {
	qs := []fairqueue.QueueDump{
		{NextDispatchR: 5_000_000, SeatsInUse: 2},
		{NextDispatchR: 9_000_000, PendingRequests: 1},
		{NextDispatchR: 1_000_000},
		{NextDispatchR: 7_000_000, PendingRequests: 3, SeatsInUse: 1},
	}
	g := fairqueue.EstimatedServiceTime.Seconds()
	var b sBounds
	for _, q := range qs {
		b.add(q)
	}
	sMin, sMax, dMin, dMax, found := b.bounds()
	s7, s9 := qs[3].NextDispatchR.ToFloat(), qs[1].NextDispatchR.ToFloat()
	if !found || sMin != s7 || sMax != s9 || dMin != s7-g || dMax != s9 {
		t.Errorf("waiting bounds %v %v %v %v %v", sMin, sMax, dMin, dMax, found)
	}
	if b.latest != s9 || b.all.n != 4 {
		t.Errorf("latest %v over %d queues", b.latest, b.all.n)
	}
	var idle sBounds
	for _, q := range qs {
		q.PendingRequests = 0
		idle.add(q)
	}
	s1, s5 := qs[2].NextDispatchR.ToFloat(), qs[0].NextDispatchR.ToFloat()
	if sMin, sMax, dMin, _, found := idle.bounds(); !found || sMin != s1 || sMax != s9 || dMin != min(s1, s5-2*g, s7-g) {
		t.Errorf("idle bounds %v %v %v %v", sMin, sMax, dMin, found)
	}
	if _, _, _, _, found := new(sBounds).bounds(); found {
		t.Error("bounds found without queues")
	}
	// A paced level discounts by the service time it measured.
	paced := sBounds{g: 0.02}
	for _, q := range qs {
		paced.add(q)
	}
	if _, _, dMin, _, _ := paced.bounds(); dMin != s7-0.02 {
		t.Errorf("paced: discounted S min %v, want %v", dMin, s7-0.02)
	}
}
