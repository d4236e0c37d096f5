package engine

import (
	"testing"
	"time"

	"github.com/apfproject/apf/borrow"
	"github.com/apfproject/apf/config/bootstrap"
)

// A new server concurrency limit gives every level the nominal limits
// package borrow derives from it, and the queue sets their new current
// limits, at once; a limit below 1 is refused and changes nothing.
func TestSetServerConcurrencyLimit(t *testing.T) {
	d := newSerialDriver(t, Config{})
	e := d.e
	if _, err := d.install(base, CompileObjects(bootstrap.FlowSchemas(), bootstrap.PriorityLevels())); err != nil {
		t.Fatal(err)
	}
	check := func(scl int) {
		t.Helper()
		if got := e.ServerConcurrencyLimit(); got != scl {
			t.Fatalf("ServerConcurrencyLimit() = %d, want %d", got, scl)
		}
		var cfgs []borrow.LevelConfig
		for _, l := range e.Levels() {
			cfgs = append(cfgs, l.bcfg)
		}
		want, _ := borrow.Limits(scl, cfgs)
		for i, l := range e.Levels() {
			a := l.Limits()
			if a.Nominal != want[i].Nominal {
				t.Errorf("SCL %d: level %s has nominal limit %d, want %d", scl, l.Name(), a.Nominal, want[i].Nominal)
			}
			if l.Exempt() {
				continue
			}
			if got := l.Stats().ConcurrencyLimit; got != enforcedLimit(*a) {
				t.Errorf("SCL %d: level %s's queue set enforces %d, its adjustment says %d", scl, l.Name(), got, enforcedLimit(*a))
			}
		}
	}
	check(borrow.DefaultServerConcurrencyLimit)

	ch, err := d.setLimit(base.Add(time.Second), 120)
	if err != nil {
		t.Fatal(err)
	}
	if adjs := ch.Adjustments; len(adjs) != len(e.Levels()) || ch.Snapshot == nil {
		t.Errorf("SetServerConcurrencyLimit returned %d adjustments for %d levels", len(adjs), len(e.Levels()))
	}
	check(120)
	for _, l := range e.Levels() {
		if l.Name() == "global-default" && l.Limits().Nominal >= 100 {
			t.Fatalf("global-default after SCL 120: %+v", l.Limits())
		}
	}

	if ch, err := e.SetServerLimit(base.Add(2*time.Second), 120, nil); err != nil || ch.Adjustments != nil || ch.Snapshot != nil {
		t.Errorf("the same limit again: %+v, %v; want nothing done", ch, err)
	}
	for _, bad := range []int{0, -5} {
		if _, err := e.SetServerLimit(base.Add(3*time.Second), bad, nil); err == nil {
			t.Errorf("SetServerLimit(%d) accepted", bad)
		}
	}
	check(120)
	if _, err := d.setLimit(base.Add(4*time.Second), 900); err != nil {
		t.Fatal(err)
	}
	check(900)
}

// NominalSum is the nominal sum package borrow computes for the levels in
// the books, without changing the limit in force.
func TestNominalSum(t *testing.T) {
	d := newSerialDriver(t, Config{})
	e := d.e
	if _, err := d.install(base, CompileObjects(bootstrap.FlowSchemas(), bootstrap.PriorityLevels())); err != nil {
		t.Fatal(err)
	}
	var cfgs []borrow.LevelConfig
	for _, l := range e.Levels() {
		cfgs = append(cfgs, l.bcfg)
	}
	for _, scl := range []int{1, 7, 30, 600} {
		_, want := borrow.Limits(scl, cfgs)
		if got := e.NominalSum(scl); got != want.NominalCLSum {
			t.Errorf("NominalSum(%d) = %d, want %d", scl, got, want.NominalCLSum)
		}
	}
	if e.NominalSum(1) <= 1 || e.NominalSum(30) <= 30 {
		t.Errorf("the bootstrap levels' nominal limits do not round up: %d at 1, %d at 30", e.NominalSum(1), e.NominalSum(30))
	}
	if e.ServerConcurrencyLimit() != borrow.DefaultServerConcurrencyLimit {
		t.Errorf("NominalSum changed the limit to %d", e.ServerConcurrencyLimit())
	}
}
