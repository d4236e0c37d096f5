package config

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/borrow"
)

// BorrowingConfig maps a priority level in hub form to the inputs of the
// concurrency allocation (package borrow): its shares, lendable and
// borrowing percentages, and its hand size when it queues. Missing pointers
// take their defaulted values, so an undefaulted object maps as its
// defaulted form would.
func BorrowingConfig(pl *flowcontrolv1.PriorityLevelConfiguration) borrow.LevelConfig {
	c := borrow.LevelConfig{Name: pl.Name}
	if pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt {
		c.Exempt = true
		if e := pl.Spec.Exempt; e != nil {
			c.Shares = intOr(e.NominalConcurrencyShares, 0)
			c.LendablePercent = intOr(e.LendablePercent, DefaultLendablePercent)
		}
		return c
	}
	l := pl.Spec.Limited
	if l == nil {
		return c
	}
	c.Shares = intOr(l.NominalConcurrencyShares, DefaultShares)
	c.LendablePercent = intOr(l.LendablePercent, DefaultLendablePercent)
	if l.BorrowingLimitPercent != nil {
		b := int(*l.BorrowingLimitPercent)
		c.BorrowingLimitPercent = &b
	}
	if q := l.LimitResponse.Queuing; q != nil && l.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue {
		c.HandSize = int(q.HandSize)
	}
	return c
}

func intOr(p *int32, def int32) int {
	if p == nil {
		return int(def)
	}
	return int(*p)
}
