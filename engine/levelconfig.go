package engine

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/borrow"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/fairqueue"
)

// borrowingConfig maps a priority level in hub form to the inputs of the
// concurrency allocation (package borrow): its shares, lendable and
// borrowing percentages, and its hand size when it queues. Missing pointers
// take their defaulted values, so an undefaulted object maps as its
// defaulted form would.
func borrowingConfig(pl *flowcontrolv1.PriorityLevelConfiguration) borrow.LevelConfig {
	c := borrow.LevelConfig{Name: pl.Name}
	if pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt {
		c.Exempt = true
		if e := pl.Spec.Exempt; e != nil {
			c.Shares = intOr(e.NominalConcurrencyShares, 0)
			c.LendablePercent = intOr(e.LendablePercent, config.DefaultLendablePercent)
		}
		return c
	}
	l := pl.Spec.Limited
	if l == nil {
		return c
	}
	c.Shares = intOr(l.NominalConcurrencyShares, config.DefaultShares)
	c.LendablePercent = intOr(l.LendablePercent, config.DefaultLendablePercent)
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

// queueConfig maps a priority level in hub form to its queue-set
// configuration, without the concurrency limit (the borrowing adjustment
// sets that): Queues -1 for an exempt level, 0 for one that rejects (or
// lacks its queuing section), the queuing parameters otherwise.
func queueConfig(pl *flowcontrolv1.PriorityLevelConfiguration) fairqueue.Config {
	if pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt {
		return fairqueue.Config{Queues: -1}
	}
	lim := pl.Spec.Limited
	if lim == nil || lim.LimitResponse.Type != flowcontrolv1.LimitResponseTypeQueue || lim.LimitResponse.Queuing == nil {
		return fairqueue.Config{}
	}
	q := lim.LimitResponse.Queuing
	return fairqueue.Config{Queues: int(q.Queues), HandSize: int(q.HandSize), QueueLengthLimit: int(q.QueueLengthLimit)}
}
