package engine

import (
	"fmt"
	"time"

	"github.com/apfproject/apf/borrow"
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

// NominalSum returns the sum of the nominal limits of the levels in the
// books if the server concurrency limit were scl: ceiling each level's
// share of scl makes it up to one seat per level with shares more than
// scl (docs/spec/concurrency.md#per-level-limits). It does not change
// anything, and must not run concurrently with Install or Adjust.
func (e *Engine[Q]) NominalSum(scl int) int {
	cfgs := make([]borrow.LevelConfig, len(e.live))
	for i, l := range e.live {
		cfgs[i] = l.bcfg
	}
	_, sums := borrow.Limits(scl, cfgs)
	return sums.NominalCLSum
}
