package engine

import (
	"fmt"
	"time"
)

// SetServerConcurrencyLimit changes the seats shared by all levels at now:
// the nominal, lower and upper limits are derived again from scl and the
// borrowing adjustment runs at once, through the same path a
// configuration change takes, so every level's Queue gets its new limit
// before this returns. It is for a driver whose limit is not fixed (apf
// serve's shared budget, docs/spec/shared-budget.md); a driver that never
// calls it keeps the limit of Config.ServerConcurrencyLimit.
//
// The same scl as in force does nothing and returns no adjustments. A
// limit below 1 is refused, and so is any limit while the configuration
// in force cannot be divided (the engine keeps the old one then). It must
// not run concurrently with Install or Adjust.
//
// Each call closes the levels' demand windows early, as an adjustment
// does; a driver should change the limit when it has a reason to, not on
// every tick.
func (e *Engine[Q]) SetServerConcurrencyLimit(now time.Time, scl int) ([]Adjustment, error) {
	if scl < 1 {
		return nil, fmt.Errorf("engine: server concurrency limit %d must be positive", scl)
	}
	if scl == e.scl {
		return nil, nil
	}
	old := e.scl
	e.scl = scl
	adjs, err := e.setLevels(now)
	if err != nil {
		e.scl = old
		return nil, err
	}
	return adjs, nil
}
