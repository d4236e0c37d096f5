package server

import (
	"testing"
	"time"
)

// Under --shared-concurrency-limit the shadow configuration's levels
// share the replica's seats, not the whole of the two in-flight flags:
// the controller tells the shadow the server limit when it is set and at
// every change of the replica's share. With no staged object the shadow
// configuration is the live one, so its levels' nominal seats are the
// live levels' exactly; before, the shadow kept the 60 seats of the flags
// while the replica ran on the largest limit whose nominal seats fit in
// its share of 60.
func TestShadowFollowsSharedBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server on an embedded etcd")
	}
	o := DefaultOptions()
	o.DataDir = t.TempDir()
	o.CertDir = t.TempDir()
	o.SharedBudget = SharedBudgetOptions{Enabled: true, Period: 200 * time.Millisecond, LeaseTTL: 2 * time.Second, ID: "solo"}
	o.MaxRequestsInflight, o.MaxMutatingRequestsInflight = 40, 20
	o.ShadowConfigDir = t.TempDir()
	s := startServer(t, o)
	sh := s.server.shadow

	// nominal returns each level's nominal seats and their sum.
	type seats map[string]int
	live := func() (seats, int) {
		out, sum := seats{}, 0
		for _, l := range s.server.ctl.Levels() {
			if l.Limits != nil && !l.Quiescing {
				out[l.Name] = l.Limits.Nominal
				sum += l.Limits.Nominal
			}
		}
		return out, sum
	}
	shadowed := func() (seats, int) {
		syncShadow(t, sh)
		out, sum := seats{}, 0
		for _, l := range sh.State(false).Levels {
			if !l.Retiring {
				out[l.Name] = l.NominalSeats
				sum += l.NominalSeats
			}
		}
		return out, sum
	}
	same := func(a, b seats) bool {
		if len(a) != len(b) {
			return false
		}
		for k, v := range a {
			if b[k] != v {
				return false
			}
		}
		return true
	}
	var l, sl seats
	var lsum, ssum int
	if err := waitFor(10*time.Second, func() bool {
		l, lsum = live()
		sl, ssum = shadowed()
		return s.server.ctl.ServerConcurrencyLimit() < 60 && same(l, sl)
	}); err != nil {
		t.Fatalf("server limit %d: live nominal seats %v (sum %d), shadow's %v (sum %d)", s.server.ctl.ServerConcurrencyLimit(), l, lsum, sl, ssum)
	}
	if ssum > 60 {
		t.Fatalf("the shadow's levels have %d nominal seats, more than the replica's share of 60", ssum)
	}

	// A change of the limit reaches the shadow too (the budget's next
	// period fits the limit to the share again, and that change too).
	if err := s.server.ctl.SetServerConcurrencyLimit(20); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(10*time.Second, func() bool {
		l, lsum = live()
		sl, ssum = shadowed()
		return same(l, sl)
	}); err != nil {
		t.Fatalf("after a change to 20 seats: live nominal seats %v (sum %d), shadow's %v (sum %d)", l, lsum, sl, ssum)
	}
}
