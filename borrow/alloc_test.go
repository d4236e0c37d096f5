package borrow

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestAllocateErrors(t *testing.T) {
	tests := []struct {
		name     string
		required float64
		items    []allocItem
		want     error
	}{
		{name: "negative required sum", required: -1, items: []allocItem{{Lower: 0, Upper: 1, Target: 1}}, want: errInvalidItem},
		{name: "negative lower bound", required: 1, items: []allocItem{{Lower: -1, Upper: 1, Target: 1}}, want: errInvalidItem},
		{name: "target below lower bound", required: 1, items: []allocItem{{Lower: 2, Upper: 3, Target: 1}}, want: errInvalidItem},
		{name: "upper below lower", required: 1, items: []allocItem{{Lower: 2, Upper: 1, Target: 2}}, want: errInvalidItem},
		{name: "invalid item after a valid one", required: 1, items: []allocItem{{Upper: 1, Target: 1}, {Lower: 1, Upper: 0, Target: 1}}, want: errInvalidItem},
		{name: "lower bounds too large", required: 3, items: []allocItem{{Lower: 2, Upper: 5, Target: 2}, {Lower: 2, Upper: 5, Target: 2}}, want: errInfeasible},
		{name: "lower bounds too large beyond tolerance", required: 4 - 2e-7, items: []allocItem{{Lower: 2, Upper: 5, Target: 2}, {Lower: 2, Upper: 5, Target: 2}}, want: errInfeasible},
		{name: "upper bounds too small", required: 11, items: []allocItem{{Lower: 0, Upper: 5, Target: 2}, {Lower: 2, Upper: 5, Target: 2}}, want: errInfeasible},
		{name: "upper bounds too small beyond tolerance", required: 10 + 2e-7, items: []allocItem{{Lower: 0, Upper: 5, Target: 2}, {Lower: 2, Upper: 5, Target: 2}}, want: errInfeasible},
		{name: "no items but a positive sum", required: 1, want: errInfeasible},
		{name: "NaN target", required: 1, items: []allocItem{{Lower: 0, Upper: 2, Target: math.NaN()}}, want: errInfeasible},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			allocs, fp, err := allocate(tc.required, tc.items)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if allocs != nil || fp != 0 {
				t.Fatalf("on error got allocs %v, fairProp %v; want nil, 0", allocs, fp)
			}
		})
	}
}

type allocCase struct {
	name     string
	required float64
	items    []allocItem
	want     []float64
	wantFP   float64
}

func runAllocCases(t *testing.T, tests []allocCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			allocs, fp, err := allocate(tc.required, tc.items)
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if !closeTo(fp, tc.wantFP, 1e-12) {
				t.Errorf("fairProp = %v, want %v", fp, tc.wantFP)
			}
			if len(allocs) != len(tc.want) {
				t.Fatalf("allocs = %v, want %v", allocs, tc.want)
			}
			for j := range allocs {
				if !closeTo(allocs[j], tc.want[j], 1e-9) {
					t.Errorf("allocs = %v, want %v", allocs, tc.want)
					break
				}
			}
		})
	}
}

func TestAllocateEarlyExits(t *testing.T) {
	runAllocCases(t, []allocCase{
		{name: "no items, zero sum", required: 0, want: []float64{}, wantFP: 0},
		{
			name: "zero sum gives zeros", required: 0,
			items: []allocItem{{Lower: 0, Upper: 5, Target: 3}, {Lower: 0, Upper: 1, Target: 0}},
			want:  []float64{0, 0}, wantFP: 0,
		},
		{
			name: "zero sum within tolerance of positive lower bounds", required: 0,
			items: []allocItem{{Lower: 5e-8, Upper: 1, Target: 1}},
			want:  []float64{0}, wantFP: 0,
		},
		{
			name: "lower bounds exactly use the sum", required: 6,
			items: []allocItem{{Lower: 2, Upper: 5, Target: 4}, {Lower: 4, Upper: 9, Target: 5}},
			want:  []float64{2, 4}, wantFP: 0.5, // min(2/4, 4/5)
		},
		{
			name: "lower bounds within tolerance above the sum", required: 6 - 5e-8,
			items: []allocItem{{Lower: 2, Upper: 5, Target: 4}, {Lower: 4, Upper: 9, Target: 5}},
			want:  []float64{2, 4}, wantFP: 0.5,
		},
		{
			name: "lower bounds within tolerance below the sum", required: 6 + 5e-8,
			items: []allocItem{{Lower: 2, Upper: 5, Target: 4}, {Lower: 4, Upper: 9, Target: 5}},
			want:  []float64{2, 4}, wantFP: 0.5,
		},
		{
			name: "upper bounds exactly reach the sum", required: 14,
			items: []allocItem{{Lower: 2, Upper: 5, Target: 4}, {Lower: 4, Upper: 9, Target: 5}},
			want:  []float64{5, 9}, wantFP: 1.8, // max(5/4, 9/5)
		},
		{
			name: "upper bounds within tolerance", required: 14 + 5e-8,
			items: []allocItem{{Lower: 2, Upper: 5, Target: 4}, {Lower: 4, Upper: 9, Target: 5}},
			want:  []float64{5, 9}, wantFP: 1.8,
		},
		{
			name: "no bound binds: proportional", required: 12,
			items: []allocItem{{Lower: 1, Upper: 100, Target: 2}, {Lower: 0, Upper: 100, Target: 4}},
			want:  []float64{4, 8}, wantFP: 2,
		},
		{
			name: "proportional touching bounds exactly", required: 10,
			items: []allocItem{{Lower: 2, Upper: 4, Target: 2}, {Lower: 3, Upper: 6, Target: 3}},
			want:  []float64{4, 6}, wantFP: 2,
		},
		{
			name: "zero target counts as MinTarget", required: 1,
			items: []allocItem{{Lower: 0, Upper: 10, Target: 0}, {Lower: 0, Upper: 10, Target: 0.001}},
			want:  []float64{0.5, 0.5}, wantFP: 500,
		},
		{
			name: "single item", required: 7,
			items: []allocItem{{Lower: 3, Upper: 9, Target: 3}},
			want:  []float64{7}, wantFP: 7.0 / 3,
		},
	})
}

func TestAllocateSweep(t *testing.T) {
	runAllocCases(t, []allocCase{
		{
			// Relative bounds 0, .1 | 1, 2 | .25, 5. From 0 the first item
			// alone rises to its upper bound at .1 (sum 45), nothing moves
			// until .25, the third item alone brings the sum to 60 at 1,
			// then the second and third together reach 80 at 1.4.
			name: "upper, flat segment, then lower bound", required: 80,
			items: []allocItem{{Lower: 0, Upper: 10, Target: 100}, {Lower: 30, Upper: 60, Target: 30}, {Lower: 5, Upper: 100, Target: 20}},
			want:  []float64{10, 42, 28}, wantFP: 1.4,
		},
		{
			name: "one item capped", required: 50,
			items: []allocItem{{Lower: 0, Upper: 5, Target: 50}, {Lower: 0, Upper: 100, Target: 50}},
			want:  []float64{5, 45}, wantFP: 0.9,
		},
		{
			name: "one item held at its lower bound", required: 30,
			items: []allocItem{{Lower: 20, Upper: 40, Target: 20}, {Lower: 0, Upper: 10, Target: 10}, {Lower: 0, Upper: 100, Target: 10}},
			want:  []float64{20, 5, 5}, wantFP: 0.5,
		},
		{
			// Relative bounds 0, 1 | 1, 2 | 0, .1: the third item caps at
			// .1 (sum 22), then the first alone reaches 31 exactly where
			// it meets its upper bound and the second leaves its lower.
			name: "solution exactly at a breakpoint", required: 31,
			items: []allocItem{{Lower: 0, Upper: 10, Target: 10}, {Lower: 20, Upper: 40, Target: 20}, {Lower: 0, Upper: 1, Target: 10}},
			want:  []float64{10, 20, 1}, wantFP: 1,
		},
		{
			// Several items share every relative bound: they must enter
			// and leave the sensitive set together.
			name: "tied bounds", required: 21,
			items: []allocItem{
				{Lower: 1, Upper: 4, Target: 1}, {Lower: 2, Upper: 8, Target: 2}, {Lower: 3, Upper: 12, Target: 3},
				{Lower: 6, Upper: 6, Target: 6},
			},
			want: []float64{2.5, 5, 7.5, 6}, wantFP: 2.5,
		},
		{
			name: "many items at both bounds", required: 100,
			items: []allocItem{
				{Lower: 10, Upper: 12, Target: 10}, // held at 10
				{Lower: 30, Upper: 60, Target: 30}, // held at 30
				{Lower: 0, Upper: 3, Target: 40},   // capped at 3
				{Lower: 0, Upper: 5, Target: 50},   // capped at 5
				{Lower: 0, Upper: 90, Target: 40},  // free
				{Lower: 0, Upper: 90, Target: 20},  // free
			},
			// 10 + 30 + 3 + 5 + 60p = 100 → p = 52/60, below both lower
			// items' relative bound 1 and above both caps' (.075, .1).
			want: []float64{10, 30, 3, 5, 40 * 52.0 / 60, 20 * 52.0 / 60}, wantFP: 52.0 / 60,
		},
		{
			name: "zero-target items take seats only through their bounds", required: 12,
			items: []allocItem{{Lower: 0, Upper: 0, Target: 0}, {Lower: 2, Upper: 2, Target: 2}, {Lower: 0, Upper: 100, Target: 1}},
			want:  []float64{0, 2, 10}, wantFP: 10,
		},
	})
}

// solveByBisection finds fairProp independently: the clamped sum is
// non-decreasing in fairProp, so bisect on it.
func solveByBisection(required float64, items []allocItem) float64 {
	sum := func(p float64) float64 {
		s := 0.0
		for _, it := range items {
			s += math.Max(it.Lower, math.Min(it.Upper, p*math.Max(it.Target, minTarget)))
		}
		return s
	}
	lo, hi := 0.0, 1.0
	for sum(hi) < required {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if sum(mid) < required {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

func randomItems(r *rand.Rand) []allocItem {
	n := 1 + r.IntN(10)
	scale := []float64{1, 10, 100, 1000}[r.IntN(4)]
	items := make([]allocItem, n)
	for j := range items {
		lb := math.Floor(r.Float64() * scale)
		if r.IntN(4) == 0 {
			lb = 0
		}
		var target float64
		switch r.IntN(4) {
		case 0:
			target = lb
		case 1:
			target = lb + math.Floor(r.Float64()*scale*2)
		default:
			target = lb + r.Float64()*scale
		}
		ub := lb + math.Floor(r.Float64()*scale*3)
		if r.IntN(5) == 0 {
			ub = lb
		}
		items[j] = allocItem{Lower: lb, Upper: ub, Target: target}
	}
	return items
}

func TestAllocateProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(20240601, 7))
	var al allocator
	var buf []float64
	for iter := range 20000 {
		items := randomItems(r)
		var lowSum, highSum float64
		for _, it := range items {
			lowSum += it.Lower
			highSum += it.Upper
		}
		required := lowSum + r.Float64()*(highSum-lowSum)
		if r.IntN(3) == 0 {
			required = math.Round(required) // integral sums, as the adjuster uses
			required = math.Max(lowSum, math.Min(highSum, required))
		}
		allocs, fp, err := allocate(required, items)
		if err != nil {
			t.Fatalf("iter %d: %v (items %+v, required %v)", iter, err, items, required)
		}
		// The reusing variant agrees bit for bit.
		allocs2, fp2, err := al.allocateInto(buf, required, items)
		if err != nil || fp2 != fp || !slices.Equal(allocs, allocs2) {
			t.Fatalf("iter %d: AllocateInto = %v %v %v, Allocate = %v %v", iter, allocs2, fp2, err, allocs, fp)
		}
		buf = allocs2

		sum := 0.0
		for j, it := range items {
			a := allocs[j]
			sum += a
			if a < it.Lower || a > it.Upper {
				t.Fatalf("iter %d: alloc %d = %v outside [%v, %v]", iter, j, a, it.Lower, it.Upper)
			}
			tgt := math.Max(it.Target, minTarget)
			tol := 1e-9 * math.Max(1, fp*tgt)
			switch {
			case it.Lower < fp*tgt-tol && fp*tgt+tol < it.Upper:
				// Strictly inside: exactly proportional.
				if !closeTo(a, fp*tgt, tol) {
					t.Fatalf("iter %d: alloc %d = %v, want fairProp*target = %v", iter, j, a, fp*tgt)
				}
			case a == it.Lower && a != it.Upper:
				if fp*tgt > it.Lower+tol {
					t.Fatalf("iter %d: alloc %d held at lower bound %v below fairProp*target %v", iter, j, a, fp*tgt)
				}
			case a == it.Upper && a != it.Lower:
				if fp*tgt < it.Upper-tol {
					t.Fatalf("iter %d: alloc %d capped at upper bound %v above fairProp*target %v", iter, j, a, fp*tgt)
				}
			}
		}
		// Absolute 1e-6 at the adjuster's scale (hundreds of seats); the
		// sweep's rounding error grows with the magnitudes involved, so
		// larger problems get the same relative slack.
		if !closeTo(sum, required, 1e-9*math.Max(1000, required)) {
			t.Fatalf("iter %d: allocs sum to %v, want %v", iter, sum, required)
		}
		// Unless no freedom is left, fairProp is the unique solution.
		if lowSum < required-1e-7 && required < highSum-1e-7 {
			want := solveByBisection(required, items)
			if !closeTo(fp, want, 1e-9*math.Max(1, want)) {
				t.Fatalf("iter %d: fairProp %v, bisection %v (items %+v, required %v)", iter, fp, want, items, required)
			}
		}
	}
}

func TestAllocateIntoReusesDst(t *testing.T) {
	items := []allocItem{{Lower: 0, Upper: 10, Target: 100}, {Lower: 30, Upper: 60, Target: 30}, {Lower: 5, Upper: 100, Target: 20}}
	var al allocator
	dst := make([]float64, 0, 8)
	got, _, err := al.allocateInto(dst, 80, items)
	if err != nil {
		t.Fatal(err)
	}
	if &got[0] != &dst[:1][0] {
		t.Error("AllocateInto did not write into dst")
	}
	n := testing.AllocsPerRun(100, func() {
		got, _, _ = al.allocateInto(got, 80, items)
	})
	if n != 0 {
		t.Errorf("AllocateInto allocated %v times per call, want 0", n)
	}
	// A too-small dst grows.
	got, _, _ = al.allocateInto(make([]float64, 0, 1), 80, items)
	if len(got) != 3 {
		t.Errorf("len = %d, want 3", len(got))
	}
}

func closeTo(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol
}

func BenchmarkAllocate(b *testing.B) {
	// The problem of docs/spec/concurrency.md#worked-example plus a demand
	// skew that forces the bound sweep.
	items := []allocItem{
		{Lower: 13, Upper: 613, Target: 13}, {Lower: 74, Upper: 674, Target: 300},
		{Lower: 73, Upper: 698, Target: 73}, {Lower: 25, Upper: 625, Target: 25},
		{Lower: 49, Upper: 698, Target: 49}, {Lower: 24, Upper: 845, Target: 900},
		{Lower: 24, Upper: 649, Target: 24},
	}
	var al allocator
	var dst []float64
	b.ReportAllocs()
	for b.Loop() {
		dst, _, _ = al.allocateInto(dst, 602, items)
	}
}

// allocate is allocateInto with fresh scratch space and result.
func allocate(requiredSum float64, items []allocItem) (allocs []float64, fairProp float64, err error) {
	var al allocator
	return al.allocateInto(nil, requiredSum, items)
}
