package controller

import "fmt"

// Admitting returns nil when every priority level in force that has
// nominal seats can admit a request now, and otherwise an error naming
// the first that cannot: its queue set's limit is below one seat (so a
// request would wait for a borrowing adjustment), or it has not been
// given limits yet. A server does not report ready until it holds
// (docs/spec/concurrency.md#applying-the-limits). Exempt levels admit
// everything; a level with no nominal seats runs on borrowed seats only,
// by its configuration, and is not counted.
//
// It takes none of the controller's locks: it reads the configuration in
// force and each level's queue-set configuration, whose lock requests
// hold only briefly, so that a readiness probe never waits on a
// configuration change or an adjustment.
func (c *Controller) Admitting() error {
	s := c.snap.Load()
	for i, l := range s.levels {
		if l.exempt {
			continue
		}
		a := s.eng.Limits(i)
		if a == nil {
			return fmt.Errorf("priority level %q has no limits yet", l.name)
		}
		if a.Nominal < 1 {
			continue
		}
		if got := l.Config().ConcurrencyLimit; got < 1 {
			return fmt.Errorf("priority level %q has %d nominal seats but a limit of %d: it admits nothing", l.name, a.Nominal, got)
		}
	}
	return nil
}
