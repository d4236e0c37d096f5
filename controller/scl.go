package controller

import "fmt"

// SetServerConcurrencyLimit changes the seats shared by all priority
// levels while the controller runs (engine.Engine.SetServerLimit): the
// levels' limits are derived again and imposed at once, and their gauges
// set, as after a borrowing adjustment, and the shadow configuration, if
// any, is told (Shadow.ServerLimit). Nothing on the request path changes:
// requests see only the new limits of their levels. apf serve's shared
// budget calls it (docs/spec/shared-budget.md); a server that never does
// keeps Config.ServerConcurrencyLimit.
func (c *Controller) SetServerConcurrencyLimit(limit int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.setLimitLocked(limit)
}

// setLimitLocked imposes a new server concurrency limit.
func (c *Controller) setLimitLocked(limit int) error {
	if limit < 1 {
		return fmt.Errorf("controller: server concurrency limit %d must be positive", limit)
	}
	if limit == c.eng.ServerConcurrencyLimit() {
		return nil
	}
	now := c.clock.Now()
	ch, err := c.eng.SetServerLimit(now, limit, c.windowsLocked(now))
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	c.changeLocked(now, ch)
	if h := c.shadow.Load(); h != nil {
		h.s.ServerLimit(now, limit)
	}
	return nil
}

// FitServerConcurrencyLimit sets the largest server concurrency limit, at
// most seats, whose levels' nominal limits add up to no more than seats,
// and returns it. Rounding each level's nominal limit up makes their sum
// exceed the server concurrency limit by up to a seat per level; a server
// that must keep within a number of seats (a replica's share of a shared
// budget, docs/spec/shared-budget.md#fitting-the-share) asks for this
// instead. When even a limit of 1 gives more than seats (fewer seats than
// levels) the limit is 1.
func (c *Controller) FitServerConcurrencyLimit(seats int) (int, error) {
	if seats < 1 {
		return 0, fmt.Errorf("controller: %d seats: at least 1 is needed", seats)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	best := c.fitLocked(seats)
	if err := c.setLimitLocked(best); err != nil {
		return 0, err
	}
	return best, nil
}

// fitLocked returns the largest server concurrency limit, at most seats
// (at least 1), whose levels' nominal limits fit in seats.
func (c *Controller) fitLocked(seats int) int {
	// The nominal sum never falls as the limit rises: bisect.
	best, lo, hi := 1, 1, seats
	for lo <= hi {
		mid := lo + (hi-lo)/2
		if c.eng.NominalSum(mid) <= seats {
			best, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best
}

// ServerConcurrencyLimit returns the seats shared by all priority levels
// now.
func (c *Controller) ServerConcurrencyLimit() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.eng.ServerConcurrencyLimit()
}

// LevelDemand is one limited priority level's occupancy at a moment.
type LevelDemand struct {
	Name string
	// SeatsInUse are the seats its executing requests hold, final phases
	// included; SeatsWaiting those its queued requests will take.
	SeatsInUse, SeatsWaiting int
}

// Demand returns the occupancy of every limited level in the borrowing
// books, draining ones included, in the adjuster's order. Exempt levels
// are left out: no limit holds them back. It takes each level's lock in
// turn, so it is for a periodic reader, not the request path.
func (c *Controller) Demand() []LevelDemand {
	c.mu.Lock()
	live := c.eng.Levels()
	c.mu.Unlock()
	out := make([]LevelDemand, 0, len(live))
	for _, l := range live {
		if l.Exempt() {
			continue
		}
		c.mu.Lock()
		ls := c.levels[l]
		c.mu.Unlock()
		if ls == nil {
			continue // dropped since
		}
		st := ls.Stats()
		out = append(out, LevelDemand{Name: l.Name(), SeatsInUse: st.SeatsInUse, SeatsWaiting: st.WaitingSeats})
	}
	return out
}
