package engine

import (
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/borrow"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/fairqueue"
)

// The bootstrap levels, mapped and allocated, give the worked example of
// docs/spec/concurrency.md#worked-example: shareSum 245, nominalCLSum 602,
// and each level's limits.
func TestBorrowingConfigWorkedExample(t *testing.T) {
	var levels []borrow.LevelConfig
	for _, pl := range bootstrap.PriorityLevels() {
		levels = append(levels, borrowingConfig(pl))
	}
	limits, sums := borrow.Limits(600, levels)
	if sums.ShareSum != 245 || sums.NominalCLSum != 602 {
		t.Fatalf("sums %+v", sums)
	}
	want := map[string][4]int{ // nominal, lendable, lower, upper
		"exempt": {0, 0, 0, 600}, "catch-all": {13, 0, 13, 613}, "system": {74, 24, 50, 674},
		"node-high": {98, 25, 73, 698}, "leader-election": {25, 0, 25, 625}, "workload-high": {98, 49, 49, 698},
		"workload-low": {245, 221, 24, 845}, "global-default": {49, 25, 24, 649},
	}
	maxSeats := map[string]int{"system": 12, "node-high": 15, "leader-election": 4, "workload-high": 15, "workload-low": 37, "global-default": 8}
	for _, l := range limits {
		got := [4]int{l.Nominal, l.Lendable, l.Lower, l.Upper}
		if got != want[l.Name] || l.MaxSeats != maxSeats[l.Name] {
			t.Errorf("%s: %v maxSeats %d, want %v maxSeats %d", l.Name, got, l.MaxSeats, want[l.Name], maxSeats[l.Name])
		}
	}
}

func TestBorrowingConfigFields(t *testing.T) {
	pl := bootstrap.MandatoryPriorityLevel("catch-all")
	b := int32(150)
	pl.Spec.Limited.BorrowingLimitPercent = &b
	if c := borrowingConfig(pl); c.Exempt || c.Shares != 5 || c.HandSize != 0 || c.BorrowingLimitPercent == nil || *c.BorrowingLimitPercent != 150 {
		t.Errorf("catch-all: %+v", c)
	}
	pl.Spec.Limited.NominalConcurrencyShares = nil // maps as defaulted
	if c := borrowingConfig(pl); c.Shares != int(config.DefaultShares) {
		t.Errorf("nil shares: %+v", c)
	}
	ex := bootstrap.MandatoryPriorityLevel("exempt")
	ex.Spec.Exempt = nil
	if c := borrowingConfig(ex); !c.Exempt || c.Shares != 0 {
		t.Errorf("exempt: %+v", c)
	}
}

func TestQueueConfig(t *testing.T) {
	for _, pl := range bootstrap.PriorityLevels() {
		got := queueConfig(pl)
		switch {
		case pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt:
			if got.Queues != -1 {
				t.Errorf("%s: %+v, want Queues -1", pl.Name, got)
			}
		case pl.Spec.Limited.LimitResponse.Type == flowcontrolv1.LimitResponseTypeReject:
			if got != (fairqueue.Config{}) {
				t.Errorf("%s: %+v, want the zero config of a rejecting level", pl.Name, got)
			}
		default:
			q := pl.Spec.Limited.LimitResponse.Queuing
			if got.Queues != int(q.Queues) || got.HandSize != int(q.HandSize) || got.QueueLengthLimit != int(q.QueueLengthLimit) || got.ConcurrencyLimit != 0 {
				t.Errorf("%s: %+v, want %+v", pl.Name, got, q)
			}
		}
	}
}
