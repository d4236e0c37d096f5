package engine

import (
	"fmt"
	"time"

	"github.com/apfproject/apf/borrow"
)

// SetServerLimit changes the seats shared by all levels at now: the
// nominal, lower and upper limits are derived again from scl and the
// borrowing adjustment runs at once from the levels' windows ws (see
// Install), through the same path a configuration change takes. It is for
// a driver whose limit is not fixed (apf serve's shared budget,
// docs/spec/shared-budget.md); a driver that never calls it keeps the limit
// of Config.ServerConcurrencyLimit.
//
// The limit in force does nothing and changes nothing (a driver compares
// with ServerConcurrencyLimit before it closes the windows, which would
// otherwise be closed for nothing). A limit below 1 is refused, and so is
// any limit while the configuration in force cannot be divided (the
// engine keeps the old one then).
//
// Each call closes the levels' demand windows early, as an adjustment
// does; a driver should change the limit when it has a reason to, not on
// every tick.
func (e *Engine) SetServerLimit(now time.Time, scl int, ws []Window) (Change, error) {
	if scl < 1 {
		return Change{}, fmt.Errorf("engine: server concurrency limit %d must be positive", scl)
	}
	if scl == e.scl {
		return Change{}, nil
	}
	cfgs := e.configs()
	if err := borrow.Validate(scl, cfgs); err != nil {
		return Change{}, fmt.Errorf("engine: borrowing: %w", err)
	}
	e.scl = scl
	var ch Change
	e.setLevels(now, ws, &ch)
	return ch, nil
}

// NominalSum returns the sum of the nominal limits of the levels in the
// books if the server concurrency limit were scl: ceiling each level's
// share of scl makes it up to one seat per level with shares more than
// scl (docs/spec/concurrency.md#per-level-limits). It changes nothing.
func (e *Engine) NominalSum(scl int) int {
	_, sums := borrow.Limits(scl, e.configs())
	return sums.NominalCLSum
}

// configs returns the borrowing configurations of the levels in the books.
func (e *Engine) configs() []borrow.LevelConfig {
	cfgs := make([]borrow.LevelConfig, len(e.live))
	for i, l := range e.live {
		cfgs[i] = l.bcfg
	}
	return cfgs
}
