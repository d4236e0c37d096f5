package borrow

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func byName(adjs []Adjustment) map[string]Adjustment {
	m := make(map[string]Adjustment, len(adjs))
	for _, a := range adjs {
		m[a.Name] = a
	}
	return m
}

// fedAdjuster is an Adjuster with the driver's side a test needs: an
// Integrator per level, fed through Demand and closed at every update, as
// package engine keeps them.
type fedAdjuster struct {
	Adjuster
	demand map[string]*Integrator
}

// Demand returns the integrator of the named level, nil for a level the
// Adjuster does not know.
func (a *fedAdjuster) Demand(name string) *Integrator {
	if a.byName[name] == nil {
		return nil
	}
	return a.demand[name]
}

// windows closes every level's window at now, in configuration order.
func (a *fedAdjuster) windows(now time.Time) []Stats {
	ws := make([]Stats, len(a.levels))
	for i, lv := range a.levels {
		if g := a.demand[lv.Name]; g != nil {
			ws[i] = g.Reset(now)
		}
	}
	return ws
}

// SetLevels closes the windows of the levels that stay, starts one for
// each new level at now, and installs levels.
func (a *fedAdjuster) SetLevels(now time.Time, scl int, levels []LevelConfig) ([]Adjustment, error) {
	if err := Validate(scl, levels); err != nil {
		return a.Adjuster.SetLevels(scl, levels, nil)
	}
	next := make(map[string]*Integrator, len(levels))
	ws := make([]Stats, len(levels))
	for i, l := range levels {
		if g := a.demand[l.Name]; g != nil && a.byName[l.Name] != nil {
			ws[i] = g.Reset(now)
			next[l.Name] = g
		} else {
			next[l.Name] = NewIntegrator(now)
		}
	}
	a.demand = next
	return a.Adjuster.SetLevels(scl, levels, ws)
}

// Update closes every window at now and updates.
func (a *fedAdjuster) Update(now time.Time) []Adjustment {
	return a.Adjuster.Update(a.windows(now))
}

func mustSetLevels(t *testing.T, a *fedAdjuster, now time.Time, scl int, levels []LevelConfig) []Adjustment {
	t.Helper()
	adjs, err := a.SetLevels(now, scl, levels)
	if err != nil {
		t.Fatalf("SetLevels: %v", err)
	}
	return adjs
}

// TestWorkedExample reproduces the worked example of
// docs/spec/concurrency.md#worked-example: SCL 600, the bootstrap levels, no
// demand, right after the first digest.
func TestWorkedExample(t *testing.T) {
	var a fedAdjuster
	adjs := mustSetLevels(t, &a, t0, DefaultServerConcurrencyLimit, bootstrapLevels())
	fair := 602.0 / 258.0
	want := []Adjustment{
		{Name: "exempt", Exempt: true, Nominal: 0, Lower: 0, Upper: 600, MaxSeats: 0, Previous: 0, Current: 0, Denominator: 60, Target: 0},
		{Name: "catch-all", Nominal: 13, Lower: 13, Upper: 613, MaxSeats: 0, Previous: 13, Current: 30, Denominator: 30, Target: 13},
		{Name: "system", Nominal: 74, Lower: 50, Upper: 674, MaxSeats: 12, Previous: 62, Current: 117, Denominator: 117, Target: 50},
		{Name: "node-high", Nominal: 98, Lower: 73, Upper: 698, MaxSeats: 15, Previous: 86, Current: 170, Denominator: 170, Target: 73},
		{Name: "leader-election", Nominal: 25, Lower: 25, Upper: 625, MaxSeats: 4, Previous: 25, Current: 58, Denominator: 58, Target: 25},
		{Name: "workload-high", Nominal: 98, Lower: 49, Upper: 698, MaxSeats: 15, Previous: 74, Current: 114, Denominator: 114, Target: 49},
		{Name: "workload-low", Nominal: 245, Lower: 24, Upper: 845, MaxSeats: 37, Previous: 135, Current: 56, Denominator: 56, Target: 24},
		{Name: "global-default", Nominal: 49, Lower: 24, Upper: 649, MaxSeats: 8, Previous: 37, Current: 56, Denominator: 56, Target: 24},
	}
	if len(adjs) != len(want) {
		t.Fatalf("got %d adjustments, want %d", len(adjs), len(want))
	}
	for i := range want {
		want[i].FairFrac = fair
		if adjs[i] != want[i] {
			t.Errorf("level %d:\n got %+v\nwant %+v", i, adjs[i], want[i])
		}
	}
	if got := a.currentSums(); got != (Sums{ServerLimit: 600, ShareSum: 245, NominalCLSum: 602}) {
		t.Errorf("Sums = %+v", got)
	}
	if a.fairFraction() != fair || a.regime != regimeFair || a.allocError() != nil {
		t.Errorf("FairFrac %v regime %v err %v; want %v, fair, nil", a.fairFraction(), a.regime, a.allocError(), fair)
	}
	// With no demand, the periodic adjustment keeps the same limits.
	again := a.Update(t0.Add(AdjustmentPeriod))
	for i := range again {
		if again[i].Current != want[i].Current || again[i].Previous != want[i].Current {
			t.Errorf("level %s moved to %d on a quiet period", again[i].Name, again[i].Current)
		}
	}
}

// lendersConfig is two Limited levels that may each lend half their seats.
func lendersConfig() []LevelConfig {
	return []LevelConfig{
		{Name: "A", Shares: 50, LendablePercent: 50, HandSize: 4},
		{Name: "B", Shares: 50, LendablePercent: 50, HandSize: 4},
	}
}

// TestLendingAndBorrowing is the acceptance scenario: B borrows what idle
// A lends, and A gets its seats back within one period of needing them.
func TestLendingAndBorrowing(t *testing.T) {
	var a fedAdjuster
	start := byName(mustSetLevels(t, &a, t0, 200, lendersConfig()))
	A0, B0 := start["A"], start["B"]
	if A0.Nominal != 100 || A0.Lower != 50 || A0.Upper != 300 || A0.Current != 100 || B0.Current != 100 {
		t.Fatalf("start: A %+v B %+v", A0, B0)
	}
	lendable := A0.Nominal - A0.Lower

	// A idle, B demanding ten times its nominal limit.
	a.Demand("B").Set(t0, 1000)
	now := t0.Add(AdjustmentPeriod)
	m := byName(a.Update(now))
	A, B := m["A"], m["B"]
	if B.Current <= B.Previous || B.Current-B.Previous > lendable || B.Current > B.Upper {
		t.Errorf("B went from %d to %d; want a rise of at most A's lendable %d, within upper %d", B.Previous, B.Current, lendable, B.Upper)
	}
	if A.Current < A.Lower {
		t.Errorf("A = %d below its lower limit %d", A.Current, A.Lower)
	}
	if A.Current != 50 || B.Current != 150 {
		t.Errorf("A, B = %d, %d; want 50, 150", A.Current, B.Current)
	}
	if B.HighWatermark != 1000 || B.Smoothed != 1000 || B.Target != 1000 || A.Target != 50 {
		t.Errorf("B hwm %d smoothed %v target %v, A target %v", B.HighWatermark, B.Smoothed, B.Target, A.Target)
	}
	if a.regime != regimeFair {
		t.Errorf("regime %v, want fair", a.regime)
	}

	// The situation is stable while it lasts.
	for range 5 {
		now = now.Add(AdjustmentPeriod)
		m = byName(a.Update(now))
		if m["A"].Current != 50 || m["B"].Current != 150 {
			t.Fatalf("at %v: A, B = %d, %d; want 50, 150", now.Sub(t0), m["A"].Current, m["B"].Current)
		}
	}

	// A's demand returns to its nominal limit, mid-period; the next
	// adjustment gives every lent seat back although B still wants more.
	a.Demand("A").Set(now.Add(4*time.Second), 100)
	now = now.Add(AdjustmentPeriod)
	m = byName(a.Update(now))
	if m["A"].Current != m["A"].Nominal || m["B"].Current != m["B"].Nominal {
		t.Errorf("after A's return: A, B = %d, %d; want both at nominal 100", m["A"].Current, m["B"].Current)
	}
	if a.regime != regimeSqueezed {
		t.Errorf("regime %v, want squeezed (floors use up the nominal sum)", a.regime)
	}
}

func TestLendingPartialReturn(t *testing.T) {
	var a fedAdjuster
	mustSetLevels(t, &a, t0, 200, lendersConfig())
	a.Demand("B").Set(t0, 1000)
	a.Update(t0.Add(AdjustmentPeriod))
	// A needs 70 of its 100: it gets 70, B keeps the other 30.
	a.Demand("A").Set(t0.Add(AdjustmentPeriod), 70)
	m := byName(a.Update(t0.Add(2 * AdjustmentPeriod)))
	if m["A"].Current != 70 || m["B"].Current != 130 {
		t.Errorf("A, B = %d, %d; want 70, 130", m["A"].Current, m["B"].Current)
	}
	// A demands more than its nominal limit: it is guaranteed only up to
	// nominal, and both share by their targets above that.
	a.Demand("A").Set(t0.Add(2*AdjustmentPeriod), 1000)
	m = byName(a.Update(t0.Add(3 * AdjustmentPeriod)))
	if m["A"].Current != 100 || m["B"].Current != 100 {
		t.Errorf("A, B = %d, %d; want 100, 100", m["A"].Current, m["B"].Current)
	}
}

// TestRegimes covers the three ways of setting limits
// (docs/spec/concurrency.md#three-regimes) with SCL 100, an exempt level of
// no shares, and X, Y of nominal 50, lower 25, upper 150. Demands are
// constant over one period.
func TestRegimes(t *testing.T) {
	tests := []struct {
		name            string
		exempt, x, y    float64
		wantRegime      regime
		wantX, wantY    int
		wantExempt      int
		wantFairFracGT0 bool
	}{
		{name: "A: exempt leaves less than the lower limits", exempt: 60, wantRegime: regimeMinimum, wantX: 25, wantY: 25, wantExempt: 60},
		{name: "A: exactly the lower limits", exempt: 50, x: 50, y: 50, wantRegime: regimeMinimum, wantX: 25, wantY: 25, wantExempt: 50},
		{name: "B: floors squeezed evenly", exempt: 20, x: 50, y: 50, wantRegime: regimeSqueezed, wantX: 40, wantY: 40, wantExempt: 20},
		// f = 30/35: X = 25 + round(21.43), Y = 25 + round(8.57).
		{name: "B: floors squeezed in proportion", exempt: 20, x: 50, y: 35, wantRegime: regimeSqueezed, wantX: 46, wantY: 34, wantExempt: 20},
		{name: "B: floors exactly fit", exempt: 0, x: 80, y: 50, wantRegime: regimeSqueezed, wantX: 50, wantY: 50, wantExempt: 0},
		// Upstream quirk: the fair regime hands out the whole nominal
		// sum, 100, although exempt holds 10 of it.
		{name: "C: nominal sum despite a busy exempt level", exempt: 10, wantRegime: regimeFair, wantX: 50, wantY: 50, wantExempt: 10, wantFairFracGT0: true},
		// X {50,150,120}, Y {25,150,25}: fairProp .625.
		{name: "C: borrowing by target", x: 120, wantRegime: regimeFair, wantX: 75, wantY: 25, wantFairFracGT0: true},
		{name: "C: exempt below its lower limit counts as its lower limit", exempt: 0, x: 30, y: 30, wantRegime: regimeFair, wantX: 50, wantY: 50, wantFairFracGT0: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a fedAdjuster
			mustSetLevels(t, &a, t0, 100, []LevelConfig{
				{Name: "exempt", Exempt: true},
				{Name: "X", Shares: 50, LendablePercent: 50},
				{Name: "Y", Shares: 50, LendablePercent: 50},
			})
			a.Demand("exempt").Set(t0, tc.exempt)
			a.Demand("X").Set(t0, tc.x)
			a.Demand("Y").Set(t0, tc.y)
			m := byName(a.Update(t0.Add(AdjustmentPeriod)))
			if a.regime != tc.wantRegime {
				t.Errorf("regime %v, want %v", a.regime, tc.wantRegime)
			}
			if m["X"].Current != tc.wantX || m["Y"].Current != tc.wantY || m["exempt"].Current != tc.wantExempt {
				t.Errorf("exempt, X, Y = %d, %d, %d; want %d, %d, %d",
					m["exempt"].Current, m["X"].Current, m["Y"].Current, tc.wantExempt, tc.wantX, tc.wantY)
			}
			if (a.fairFraction() > 0) != tc.wantFairFracGT0 {
				t.Errorf("FairFrac %v", a.fairFraction())
			}
			for _, adj := range m {
				if adj.FairFrac != a.fairFraction() {
					t.Errorf("%s: FairFrac %v, want %v", adj.Name, adj.FairFrac, a.fairFraction())
				}
			}
		})
	}
}

// TestAllocationErrorKeepsLimits: when the exempt level has shares and the
// others may not borrow, the upper limits cannot add up to the nominal sum
// the fair regime allocates (an upstream quirk, see
// docs/spec/concurrency.md#three-regimes); the allocation fails and every
// non-exempt level keeps its previous limit, here the starting one.
func TestAllocationErrorKeepsLimits(t *testing.T) {
	var a fedAdjuster
	levels := []LevelConfig{
		{Name: "exempt", Exempt: true, Shares: 50},
		{Name: "X", Shares: 25, LendablePercent: 50, BorrowingLimitPercent: intp(0)},
		{Name: "Y", Shares: 25, LendablePercent: 50, BorrowingLimitPercent: intp(0)},
	}
	for step := range 4 {
		now := t0.Add(time.Duration(step) * AdjustmentPeriod)
		var m map[string]Adjustment
		if step == 0 {
			m = byName(mustSetLevels(t, &a, now, 100, levels))
		} else {
			m = byName(a.Update(now))
		}
		if !errors.Is(a.allocError(), errInfeasible) {
			t.Fatalf("step %d: AllocError = %v, want ErrInfeasible", step, a.allocError())
		}
		if a.fairFraction() != 0 {
			t.Errorf("step %d: FairFrac %v, want 0", step, a.fairFraction())
		}
		// X: nominal 25, lendable round(12.5) = 13, so starting limit 19.
		for _, name := range []string{"X", "Y"} {
			if adj := m[name]; adj.Current != 19 || adj.Previous != 19 || !adj.Backstop {
				t.Errorf("step %d: %s = %+v; want current 19 kept as backstop", step, name, adj)
			}
		}
		if ex := m["exempt"]; ex.Current != 50 || ex.Backstop {
			t.Errorf("step %d: exempt = %+v", step, ex)
		}
		// Even a level using its whole nominal limit stays stuck.
		a.Demand("X").Set(now, 25)
	}
}

func TestExemptLevel(t *testing.T) {
	// Exempt: nominal 10, lendable 4, lower 6; its borrowing limit is
	// ignored, so upper is 10 + SCL. Its current limit (never enforced) is
	// max(lower, high watermark), and so is its reported target.
	for _, tc := range []struct {
		demand      float64
		wantCurrent int
	}{
		{demand: 0, wantCurrent: 6},
		{demand: 6.4, wantCurrent: 6},
		{demand: 7.5, wantCurrent: 8}, // round half away from zero
		{demand: 500, wantCurrent: 500},
	} {
		t.Run(fmt.Sprint(tc.demand), func(t *testing.T) {
			var a fedAdjuster
			mustSetLevels(t, &a, t0, 100, []LevelConfig{
				{Name: "exempt", Exempt: true, Shares: 10, LendablePercent: 40, BorrowingLimitPercent: intp(0)},
				{Name: "X", Shares: 90},
			})
			a.Demand("exempt").Set(t0, tc.demand)
			ex := byName(a.Update(at(10)))["exempt"]
			if ex.Lower != 6 || ex.Upper != 110 || ex.MaxSeats != 0 {
				t.Fatalf("exempt limits %+v", ex)
			}
			if ex.Current != tc.wantCurrent || ex.Target != float64(tc.wantCurrent) || ex.Denominator != tc.wantCurrent {
				t.Errorf("exempt %+v; want current = target = denominator = %d", ex, tc.wantCurrent)
			}
		})
	}
}

func TestDenominator(t *testing.T) {
	for _, tc := range []struct {
		scl, want int
	}{
		{scl: 4, want: 1},  // round(0.4) = 0, at least 1
		{scl: 15, want: 2}, // round(1.5) = 2
		{scl: 30, want: 3},
		{scl: 600, want: 60},
	} {
		t.Run(fmt.Sprint(tc.scl), func(t *testing.T) {
			var a fedAdjuster
			mustSetLevels(t, &a, t0, tc.scl, []LevelConfig{
				{Name: "exempt", Exempt: true},
				{Name: "X", Shares: 1, LendablePercent: 100},
			})
			// The exempt level's demand pushes X down to its lower limit, 0.
			a.Demand("exempt").Set(t0, float64(10*tc.scl))
			m := byName(a.Update(t0.Add(AdjustmentPeriod)))
			if x := m["X"]; x.Current != 0 || x.Denominator != tc.want {
				t.Errorf("X = %+v; want current 0, denominator %d", x, tc.want)
			}
		})
	}
}

func TestSetLevelsKeepsState(t *testing.T) {
	var a fedAdjuster
	mustSetLevels(t, &a, t0, 200, lendersConfig())
	demandA := a.Demand("A")
	demandA.Set(t0, 80)
	a.Demand("B").Set(t0, 10)
	first := byName(a.Update(at(10)))

	// Five seconds later: A changes, B goes, C arrives.
	adjs := byName(mustSetLevels(t, &a, at(15), 300, []LevelConfig{
		{Name: "A", Shares: 50, LendablePercent: 20, HandSize: 4},
		{Name: "C", Shares: 100, LendablePercent: 10, HandSize: 5},
	}))
	if len(adjs) != 2 {
		t.Fatalf("got %v", adjs)
	}
	A, C := adjs["A"], adjs["C"]
	if a.Demand("A") != demandA {
		t.Error("A's integrator was replaced")
	}
	if a.Demand("B") != nil {
		t.Error("B is still known")
	}
	if A.Previous != first["A"].Current {
		t.Errorf("A's previous limit %d, want the one it had, %d", A.Previous, first["A"].Current)
	}
	// A's demand was 80 for the 5 s window: statistics carry on.
	if A.Smoothed != 80 || A.HighWatermark != 80 || A.Average != 80 {
		t.Errorf("A's stats %+v", A)
	}
	// SCL 300 shared 50:100 → A nominal 100, lower 80; C nominal 200,
	// lendable 20, starting at 190 with zeroed statistics.
	if A.Nominal != 100 || A.Lower != 80 || C.Nominal != 200 || C.Lower != 180 || C.Previous != 190 {
		t.Errorf("A %+v C %+v", A, C)
	}
	if C.HighWatermark != 0 || C.Smoothed != 0 || C.Average != 0 || C.StdDev != 0 {
		t.Errorf("C's stats are not zero: %+v", C)
	}
	if got := a.currentSums(); got != (Sums{ServerLimit: 300, ShareSum: 150, NominalCLSum: 300}) {
		t.Errorf("Sums = %+v", got)
	}

	// B returns: it starts afresh, whatever it had before.
	adjs = byName(mustSetLevels(t, &a, at(20), 200, lendersConfig()))
	if B := adjs["B"]; B.Previous != 75 || B.Smoothed != 0 || B.HighWatermark != 0 {
		t.Errorf("returning B = %+v; want a fresh start at 75", B)
	}
	if a.Demand("C") != nil {
		t.Error("C is still known")
	}

	// Invalid input changes nothing.
	before := a.currentSums()
	if _, err := a.SetLevels(at(25), 200, []LevelConfig{{Name: "A", Shares: -1}}); !errors.Is(err, errInvalidConfig) {
		t.Fatalf("err = %v, want ErrInvalidConfig", err)
	}
	if a.currentSums() != before || a.Demand("A") != demandA || a.Demand("B") == nil {
		t.Error("a failed SetLevels changed the configuration")
	}
}

// TestSetLevelsOrder: adjustments come back in configuration order, and
// reordering the same levels changes nothing else.
func TestSetLevelsOrder(t *testing.T) {
	var a fedAdjuster
	levels := bootstrapLevels()
	first := mustSetLevels(t, &a, t0, 600, levels)
	reversed := make([]LevelConfig, len(levels))
	for i, l := range levels {
		reversed[len(levels)-1-i] = l
	}
	second := mustSetLevels(t, &a, t0, 600, reversed)
	for i := range first {
		got := second[len(first)-1-i]
		want := first[i]
		want.Previous = want.Current
		if got != want {
			t.Errorf("\n got %+v\nwant %+v", got, want)
		}
	}
}

func TestSmoothingConstantDemand(t *testing.T) {
	var a fedAdjuster
	mustSetLevels(t, &a, t0, 200, lendersConfig())
	a.Demand("A").Set(t0, 40)
	for n := 1; n <= 20; n++ {
		m := byName(a.Update(t0.Add(time.Duration(n) * AdjustmentPeriod)))
		if A := m["A"]; A.Smoothed != 40 || A.Average != 40 || A.StdDev != 0 || A.HighWatermark != 40 {
			t.Fatalf("period %d: A = %+v; want constant 40", n, A)
		}
	}
}

func TestSmoothingConvergesFromAbove(t *testing.T) {
	var a fedAdjuster
	mustSetLevels(t, &a, t0, 200, lendersConfig())
	a.Demand("A").Set(t0, 100)
	a.Update(at(10))
	a.Demand("A").Set(at(10), 40)
	for n := 1; n <= 200; n++ {
		m := byName(a.Update(at(10 + 10*float64(n))))
		want := 40 + 60*math.Pow(smoothingCoefficient, float64(n))
		if got := m["A"].Smoothed; !closeTo(got, want, 1e-9) {
			t.Fatalf("period %d: smoothed %v, want %v", n, got, want)
		}
	}
}

func TestSmoothingSpikeHalfLife(t *testing.T) {
	var a fedAdjuster
	mustSetLevels(t, &a, t0, 200, lendersConfig())
	// One period at 300, then nothing.
	a.Demand("A").Set(t0, 300)
	if s := byName(a.Update(at(10)))["A"].Smoothed; s != 300 {
		t.Fatalf("smoothed after the spike %v, want 300", s)
	}
	a.Demand("A").Set(at(10), 0)
	halved := 0
	for n := 1; n <= 60; n++ {
		s := byName(a.Update(at(10 + 10*float64(n))))["A"].Smoothed
		if want := 300 * math.Pow(smoothingCoefficient, float64(n)); !closeTo(s, want, 1e-9) {
			t.Fatalf("period %d: smoothed %v, want %v", n, s, want)
		}
		if halved == 0 && s <= 150 {
			halved = n
		}
	}
	if d := time.Duration(halved) * AdjustmentPeriod; d != 5*time.Minute {
		t.Errorf("half-life %v, want 5m0s", d)
	}
}

// TestZeroLengthWindow: a second update at the same instant (SetLevels right
// after a periodic update) only refreshes the high watermark.
func TestZeroLengthWindow(t *testing.T) {
	var a fedAdjuster
	mustSetLevels(t, &a, t0, 200, lendersConfig())
	a.Demand("A").Set(t0, 90)
	a.Demand("A").Set(at(5), 30)
	first := byName(a.Update(at(10)))["A"]
	if first.HighWatermark != 90 || first.Average != 60 || first.StdDev != 30 || first.Smoothed != 90 {
		t.Fatalf("first = %+v", first)
	}
	second := byName(a.Update(at(10)))["A"]
	if second.HighWatermark != 30 || second.Average != 60 || second.StdDev != 30 || second.Smoothed != 90 {
		t.Errorf("second = %+v; want hwm 30 and the other statistics unchanged", second)
	}
}

func TestDegenerateConfigurations(t *testing.T) {
	var a fedAdjuster
	if adjs := a.Update(t0); len(adjs) != 0 || a.fairFraction() != 0 || a.Demand("x") != nil || a.currentSums() != (Sums{}) {
		t.Errorf("zero Adjuster: %v %v %+v", adjs, a.fairFraction(), a.currentSums())
	}
	// Only an exempt level: nothing to allocate; statistics still advance.
	adjs := mustSetLevels(t, &a, t0, 100, []LevelConfig{{Name: "exempt", Exempt: true, Shares: 1}})
	if adjs != nil {
		t.Errorf("exempt only: %v, want nil", adjs)
	}
	a.Demand("exempt").Set(t0, 7)
	if adjs := a.Update(at(10)); adjs != nil {
		t.Errorf("exempt only: %v, want nil", adjs)
	}
	if lv := a.byName["exempt"]; lv.smoothed != 7 || lv.highWatermark != 7 {
		t.Errorf("exempt statistics did not advance: %+v", lv)
	}
	// Removing every level.
	if adjs := mustSetLevels(t, &a, at(20), 100, nil); len(adjs) != 0 || a.Demand("exempt") != nil {
		t.Errorf("no levels: %v", adjs)
	}
}

// TestRandomBounds drives random configurations with random demand traces
// and checks the invariants of every regime.
func TestRandomBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 4242))
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	randomLevels := func() []LevelConfig {
		var levels []LevelConfig
		if r.IntN(2) == 0 {
			levels = append(levels, LevelConfig{Name: "exempt", Exempt: true, Shares: r.IntN(2) * r.IntN(40), LendablePercent: r.IntN(101)})
		}
		for _, i := range r.Perm(len(names))[:1+r.IntN(len(names))] {
			lc := LevelConfig{Name: names[i], Shares: 1 + r.IntN(100), LendablePercent: r.IntN(101)}
			if r.IntN(3) == 0 {
				lc.BorrowingLimitPercent = intp(r.IntN(200))
			}
			if r.IntN(4) != 0 {
				lc.HandSize = 1 + r.IntN(8)
			}
			levels = append(levels, lc)
		}
		return levels
	}
	counts := map[string]int{}
	for run := range 500 {
		var a fedAdjuster
		scl := 1 + r.IntN(2000)
		now := t0
		levels := randomLevels()
		adjs := mustSetLevels(t, &a, now, scl, levels)
		demand := map[string]float64{}    // current value of each signal
		windowMax := map[string]float64{} // max since the last update
		reset := func() {
			for k := range windowMax {
				delete(windowMax, k)
			}
			for _, l := range levels {
				windowMax[l.Name] = demand[l.Name]
			}
		}
		reset()
		for step := range 60 {
			check := func(adjs []Adjustment) {
				t.Helper()
				checkInvariants(t, fmt.Sprintf("run %d step %d", run, step), &a, adjs, windowMax)
				counts[[]string{"none", "minimum", "squeezed", "fair"}[a.regime]]++
				if a.allocError() != nil {
					counts["backstop"]++
				}
			}
			check(adjs)
			reset()
			for range r.IntN(8) {
				now = now.Add(time.Duration(r.IntN(3000)) * time.Millisecond)
				l := levels[r.IntN(len(levels))]
				x := float64(r.IntN(1+scl)) * r.Float64() * 2
				demand[l.Name] = x
				windowMax[l.Name] = math.Max(windowMax[l.Name], x)
				a.Demand(l.Name).Set(now, x)
			}
			now = now.Add(time.Duration(r.IntN(11)) * time.Second)
			if r.IntN(10) == 0 {
				// Persisting levels keep their signal and open window;
				// new ones start at 0; dropped ones are forgotten.
				levels = randomLevels()
				scl = 1 + r.IntN(2000)
				nextDemand, nextMax := map[string]float64{}, map[string]float64{}
				for _, l := range levels {
					if a.Demand(l.Name) != nil {
						nextDemand[l.Name], nextMax[l.Name] = demand[l.Name], windowMax[l.Name]
					}
				}
				demand, windowMax = nextDemand, nextMax
				adjs = mustSetLevels(t, &a, now, scl, levels)
			} else {
				adjs = a.Update(now)
			}
		}
	}
	for _, k := range []string{"minimum", "squeezed", "fair", "backstop"} {
		if counts[k] == 0 {
			t.Errorf("no %s update in the random runs: %v", k, counts)
		}
	}
	t.Log(counts)
}

func checkInvariants(t *testing.T, where string, a *fedAdjuster, adjs []Adjustment, windowMax map[string]float64) {
	t.Helper()
	if len(adjs) != len(a.levels) {
		if len(adjs) == 0 && a.regime == regimeNone {
			return
		}
		t.Fatalf("%s: %d adjustments for %d levels", where, len(adjs), len(a.levels))
	}
	sum, n := 0, 0
	for i, adj := range adjs {
		lv := a.levels[i]
		if adj.Name != lv.Name || adj.Current != lv.current {
			t.Fatalf("%s: adjustment %d (%s) does not match level %s", where, i, adj.Name, lv.Name)
		}
		if want := int(math.Round(windowMax[adj.Name])); adj.HighWatermark != want {
			t.Fatalf("%s: %s high watermark %d, want %d", where, adj.Name, adj.HighWatermark, want)
		}
		if adj.Lower > adj.Nominal || adj.Nominal > adj.Upper {
			t.Fatalf("%s: %s limits out of order: %+v", where, adj.Name, adj)
		}
		if adj.Exempt {
			if want := max(adj.Lower, adj.HighWatermark); adj.Current != want {
				t.Fatalf("%s: exempt current %d, want %d", where, adj.Current, want)
			}
			continue
		}
		if (adj.Current > 0 && adj.Denominator != adj.Current) || adj.Denominator < 1 {
			t.Fatalf("%s: %s denominator %d for current %d", where, adj.Name, adj.Denominator, adj.Current)
		}
		if adj.Backstop {
			if adj.Current != adj.Previous {
				t.Fatalf("%s: %s backstop moved %d → %d", where, adj.Name, adj.Previous, adj.Current)
			}
			continue
		}
		if adj.Current < adj.Lower || adj.Current > adj.Upper {
			t.Fatalf("%s: %s current %d outside [%d, %d]", where, adj.Name, adj.Current, adj.Lower, adj.Upper)
		}
		floor := max(adj.Lower, min(adj.Nominal, adj.HighWatermark))
		switch a.regime {
		case regimeMinimum:
			if adj.Current != adj.Lower {
				t.Fatalf("%s: %s current %d, want lower %d", where, adj.Name, adj.Current, adj.Lower)
			}
		case regimeSqueezed:
			if adj.Current > floor {
				t.Fatalf("%s: %s current %d above its floor %d", where, adj.Name, adj.Current, floor)
			}
		case regimeFair:
			if adj.Current < floor {
				t.Fatalf("%s: %s current %d below its floor %d", where, adj.Name, adj.Current, floor)
			}
			if adj.Target != math.Max(float64(floor), adj.Smoothed) {
				t.Fatalf("%s: %s target %v", where, adj.Name, adj.Target)
			}
		}
		sum += adj.Current
		n++
	}
	if a.regime == regimeFair && a.allocError() == nil {
		// Upstream quirk (docs/spec/concurrency.md#three-regimes): the
		// non-exempt limits share the whole nominal sum; each rounding
		// moves the total by at most half a seat.
		if diff := math.Abs(float64(sum - a.sums.NominalCLSum)); diff > float64(n)/2+1e-6 {
			t.Fatalf("%s: non-exempt limits sum to %d, nominal sum %d", where, sum, a.sums.NominalCLSum)
		}
	}
}

func BenchmarkUpdate(b *testing.B) {
	var a fedAdjuster
	if _, err := a.SetLevels(t0, DefaultServerConcurrencyLimit, bootstrapLevels()); err != nil {
		b.Fatal(err)
	}
	now := t0
	a.Demand("workload-low").Set(now, 400)
	a.Demand("system").Set(now, 20)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(AdjustmentPeriod)
		a.Update(now)
	}
}

// currentSums returns the totals of the current configuration.
func (a *Adjuster) currentSums() Sums { return a.sums }

// fairFraction returns the fair proportion of the last update (seat_fair_frac):
// 0 unless the last update allocated fairly and successfully.
func (a *Adjuster) fairFraction() float64 { return a.fairFrac }

// allocError returns the allocation error of the last update, or nil. When
// it is not nil the non-exempt levels kept their previous limits.
func (a *Adjuster) allocError() error { return a.allocErr }
