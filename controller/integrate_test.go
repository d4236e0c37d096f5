package controller

import "testing"

// TestLevelsIntegrateOverTime: the controller's levels observe their
// queue sets only to integrate over time, so their queue sets spare them
// the instants an uncontended arrival waits (fairqueue.Integrator).
func TestLevelsIntegrateOverTime(t *testing.T) {
	c, _ := newTest(t, StaticSource(decode(t, manifests(true))), 21)
	levels := c.eng.Levels()
	if len(levels) == 0 {
		t.Fatal("no levels")
	}
	for _, l := range levels {
		if !l.IntegratesOverTime() {
			t.Errorf("level %s does not integrate over time", l.Name())
		}
	}
}
