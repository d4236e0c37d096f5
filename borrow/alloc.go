package borrow

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// minTarget is the smallest target the allocation works with: a smaller target
// (zero, typically) is raised to it so that bounds can be divided by it.
const minTarget = 0.001

// allocTolerance is the slack the allocation allows when comparing sums of bounds
// with the required sum, as upstream's allocation does.
const allocTolerance = 1e-7

var (
	// errInvalidItem is wrapped by the allocation's errors about malformed input:
	// a negative required sum, a negative lower bound, a target below its
	// lower bound, or an upper bound below its lower bound.
	errInvalidItem = errors.New("borrow: invalid allocation item")
	// errInfeasible is wrapped by the allocation's errors when no allocation
	// within the bounds adds up to the required sum.
	errInfeasible = errors.New("borrow: infeasible allocation")
)

// allocItem is one party to an allocation: it must get between Lower and Upper,
// and wants Target.
type allocItem struct {
	Lower, Upper, Target float64
}

// allocator holds scratch space so that repeated allocations do not
// allocate. The zero value is ready to use.
type allocator struct {
	targets []float64 // targets, raised to minTarget
	bounds  []relBound
}

// relBound is one bound of one item divided by that item's target: the
// value of fairProp at which the item starts (lower) or stops (upper)
// following its target.
type relBound struct {
	at    float64
	item  int
	upper bool
}

// allocateInto divides requiredSum among items in proportion to their
// targets, as far as their bounds allow
// (docs/spec/concurrency.md#fair-allocation). It returns allocs (one per
// item) and fairProp such that Σ allocs = requiredSum and
//
//	allocs[j] = clamp(fairProp * max(items[j].Target, minTarget), Lower, Upper)
//
// up to floating-point rounding, or an error and nil allocs when the input
// is malformed (errInvalidItem) or the bounds cannot add up to requiredSum
// within allocTolerance (errInfeasible). The result is written into dst,
// grown if its capacity is less than len(items).
func (al *allocator) allocateInto(dst []float64, requiredSum float64, items []allocItem) ([]float64, float64, error) {
	if requiredSum < 0 {
		return nil, 0, fmt.Errorf("%w: required sum %v is negative", errInvalidItem, requiredSum)
	}
	n := len(items)
	al.targets = slices.Grow(al.targets[:0], n)[:n]
	var lowSum, highSum, targetSum float64
	// The extremes of the relative bounds. Starting the minima at the
	// largest float32, not +Inf, matches upstream bit for bit even when a
	// relative bound is larger than that.
	lbMin, lbMax := float64(math.MaxFloat32), 0.0
	ubMin, ubMax := float64(math.MaxFloat32), 0.0
	for j, it := range items {
		if it.Lower < 0 {
			return nil, 0, fmt.Errorf("%w: item %d: lower bound %v is negative", errInvalidItem, j, it.Lower)
		}
		if it.Target < it.Lower {
			return nil, 0, fmt.Errorf("%w: item %d: target %v is below lower bound %v", errInvalidItem, j, it.Target, it.Lower)
		}
		if it.Upper < it.Lower {
			return nil, 0, fmt.Errorf("%w: item %d: upper bound %v is below lower bound %v", errInvalidItem, j, it.Upper, it.Lower)
		}
		t := it.Target
		if t < minTarget {
			t = minTarget
		}
		al.targets[j] = t
		lowSum += it.Lower
		highSum += it.Upper
		targetSum += t
		rl, ru := it.Lower/t, it.Upper/t
		lbMin, lbMax = math.Min(lbMin, rl), math.Max(lbMax, rl)
		ubMin, ubMax = math.Min(ubMin, ru), math.Max(ubMax, ru)
	}
	// Unreachable after the checks above (t >= Target >= Lower), unless a
	// NaN slipped through; kept because upstream checks it.
	if lbMax > 1 {
		return nil, 0, fmt.Errorf("%w: a lower bound exceeds its target by a factor of %v", errInvalidItem, lbMax)
	}
	if lowSum-requiredSum > allocTolerance {
		return nil, 0, fmt.Errorf("%w: lower bounds sum to %v, more than the required %v", errInfeasible, lowSum, requiredSum)
	}
	if requiredSum-highSum > allocTolerance {
		return nil, 0, fmt.Errorf("%w: upper bounds sum to %v, less than the required %v", errInfeasible, highSum, requiredSum)
	}
	out := slices.Grow(dst[:0], n)[:n]
	switch {
	case requiredSum == 0:
		clear(out)
		return out, 0, nil
	case lowSum-requiredSum > -allocTolerance:
		// The lower bounds already use up the sum: no freedom left.
		for j, it := range items {
			out[j] = it.Lower
		}
		return out, lbMin, nil
	case requiredSum-highSum > -allocTolerance:
		// Only the upper bounds reach the sum: no freedom left.
		for j, it := range items {
			out[j] = it.Upper
		}
		return out, ubMax, nil
	}
	// The answer is a unique fairProp in [lbMin, ubMax]. The common case:
	// proportional shares touch no bound at all.
	fairProp := requiredSum / targetSum
	if lbMax <= fairProp && fairProp <= ubMin {
		for j, t := range al.targets {
			out[j] = t * fairProp
		}
		return out, fairProp, nil
	}
	fairProp, err := al.sweep(requiredSum, lowSum, lbMin, items)
	if err != nil {
		return nil, 0, err
	}
	for j, it := range items {
		out[j] = math.Max(it.Lower, math.Min(it.Upper, fairProp*al.targets[j]))
	}
	return out, fairProp, nil
}

// sweep finds fairProp when some bounds bind. The allocation sum is a
// piecewise linear, non-decreasing function of fairProp whose breakpoints
// are the relative bounds; between two breakpoints its slope is the sum of
// the targets of the items that follow their target there (the "sensitive"
// items). Walk the breakpoints upwards from the smallest relative lower
// bound, where the sum is Σ Lower, until the segment containing
// requiredSum, and solve within it.
//
// The order of operations below (how ties are sorted, when a breakpoint's
// slope change is added) follows upstream exactly, so that results agree
// to the last bit, not just within rounding.
func (al *allocator) sweep(requiredSum, lowSum, lbMin float64, items []allocItem) (float64, error) {
	n := len(items)
	al.bounds = slices.Grow(al.bounds[:0], 2*n)[:2*n]
	for j, it := range items {
		t := al.targets[j]
		al.bounds[2*j] = relBound{at: it.Lower / t, item: j}
		al.bounds[2*j+1] = relBound{at: it.Upper / t, item: j, upper: true}
	}
	// Unstable, like upstream's sort.Sort: the generic pdqsort of
	// slices.SortFunc makes the same moves as sort.Sort's for the same
	// comparisons, so tied bounds end in the same order.
	slices.SortFunc(al.bounds, func(a, b relBound) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	sum := lowSum
	fairProp := lbMin
	var slope float64 // Σ target of the sensitive items
	var sensitive int // how many items are sensitive
	// The slope change of the breakpoint read last, applied only once the
	// walk moves past that breakpoint.
	var pendingSlope float64
	var pendingCount int
	next := 0
	for sum < requiredSum {
		// Pass every breakpoint at or below fairProp; stop at the first one
		// above it.
		var nextBound float64
		for {
			slope += pendingSlope
			sensitive += pendingCount
			if next >= len(al.bounds) {
				return 0, fmt.Errorf("%w: ran out of bounds before reaching the required sum %v", errInfeasible, requiredSum)
			}
			b := al.bounds[next]
			next++
			nextBound = b.at
			if b.upper {
				pendingSlope, pendingCount = -al.targets[b.item], -1
			} else {
				pendingSlope, pendingCount = al.targets[b.item], 1
			}
			if nextBound > fairProp {
				break
			}
		}
		if sensitive == 0 {
			// Flat segment: nothing changes until the next breakpoint.
			fairProp = nextBound
			continue
		}
		if candidate := fairProp + (requiredSum-sum)/slope; candidate <= nextBound {
			return candidate, nil
		}
		sum += (nextBound - fairProp) * slope
		fairProp = nextBound
	}
	return fairProp, nil
}
