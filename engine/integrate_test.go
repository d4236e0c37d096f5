package engine

import (
	"testing"
	"time"

	"github.com/apfproject/apf/fairqueue"
)

// plainObserver observes without integrating over time.
type plainObserver struct{}

func (plainObserver) Occupancy(time.Time, fairqueue.Occupancy) {}

// integratingObserver integrates over time.
type integratingObserver struct{ plainObserver }

func (integratingObserver) IntegratesOverTime() bool { return true }

// TestLevelIntegratesOverTime: a level spares its queue set the instants
// that carry no weight when its driver's Queue does not observe, or
// integrates over time too, and not otherwise.
func TestLevelIntegratesOverTime(t *testing.T) {
	for _, c := range []struct {
		obs  fairqueue.Observer
		want bool
	}{{nil, true}, {integratingObserver{}, true}, {plainObserver{}, false}} {
		l := &Level[*lockedQueue]{obs: c.obs}
		if got := l.IntegratesOverTime(); got != c.want {
			t.Errorf("driver observer %T: IntegratesOverTime %v, want %v", c.obs, got, c.want)
		}
	}
}
