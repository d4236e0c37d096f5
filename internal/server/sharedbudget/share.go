package sharedbudget

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// DefaultFloorFraction is the part of the limit set aside as guaranteed
// floors, divided evenly among the live replicas: with 3 replicas each is
// sure of a twelfth of the limit whatever the others demand, and three
// quarters follow demand.
const DefaultFloorFraction = 0.25

// MaxLimit bounds the limit Shares divides, so that its integer arithmetic
// (demand in thousandths of a seat times the seats to divide) cannot
// overflow.
const MaxLimit = 1 << 20

// demandScale is the resolution of demand in the computation: thousandths
// of a seat, so that every replica, whatever its processor, computes the
// same integers from the same published figures.
const demandScale = 1000

// Replica is one live replica as the share computation sees it.
type Replica struct {
	// ID names the replica; it breaks ties, so that every replica
	// computing from the same records gets the same shares.
	ID string
	// Demand is the replica's recent seat demand (seats in use plus
	// seats waiting, summed over its limited priority levels). Negative
	// and NaN count as 0, anything above the limit as the limit.
	Demand float64
}

// Shares divides limit seats among replicas (docs/spec/shared-budget.md#the-share):
//
//   - each replica is guaranteed floor(limit × floorFraction / n), at least
//     1 when the limit allows it;
//   - the rest goes in proportion to demand (evenly when nobody demands
//     anything), each replica taking the whole part of its quota and the
//     seats left over going to the largest fractional parts, ties broken
//     by ID.
//
// The result is in the order of replicas and sums to exactly limit (to
// 0 when there are no replicas). A replica's share never decreases when
// its demand rises and the others' stay put. floorFraction must be in
// [0, 1], limit in [n, MaxLimit] and the IDs distinct and not empty.
func Shares(limit int, floorFraction float64, replicas []Replica) ([]int, error) {
	n := len(replicas)
	switch {
	case !(floorFraction >= 0 && floorFraction <= 1):
		return nil, fmt.Errorf("sharedbudget: floor fraction %v is not in [0, 1]", floorFraction)
	case limit > MaxLimit:
		return nil, fmt.Errorf("sharedbudget: limit %d is above %d", limit, MaxLimit)
	case limit < n:
		return nil, fmt.Errorf("sharedbudget: limit %d is less than one seat for each of %d replicas", limit, n)
	}
	if n == 0 {
		return nil, nil
	}
	order := make([]int, n) // indexes of replicas by ID
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(replicas[a].ID, replicas[b].ID) })
	for k, i := range order {
		if replicas[i].ID == "" {
			return nil, errors.New("sharedbudget: a replica has no ID")
		}
		if k > 0 && replicas[order[k-1]].ID == replicas[i].ID {
			return nil, fmt.Errorf("sharedbudget: replica %q appears twice", replicas[i].ID)
		}
	}

	floor := max(1, int(math.Floor(float64(limit)*floorFraction/float64(n))))
	rest := int64(limit - floor*n)
	weights := make([]int64, n)
	var total int64
	for i, r := range replicas {
		weights[i] = demandWeight(r.Demand, limit)
		total += weights[i]
	}
	if total == 0 {
		for i := range weights {
			weights[i] = 1
		}
		total = int64(n)
	}
	out := make([]int, n)
	rems := make([]int64, n)
	given := int64(0)
	for i, w := range weights {
		q := rest * w // at most MaxLimit × MaxLimit × demandScale: no overflow
		out[i] = floor + int(q/total)
		rems[i] = q % total
		given += q / total
	}
	// Largest remainders first, then the smaller ID: the same answer on
	// every replica.
	slices.SortStableFunc(order, func(a, b int) int {
		if rems[a] != rems[b] {
			if rems[a] > rems[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(replicas[a].ID, replicas[b].ID)
	})
	for _, i := range order[:rest-given] {
		out[i]++
	}
	return out, nil
}

// demandWeight is d in thousandths of a seat, with what cannot be a demand
// (negative, NaN) as 0 and anything above the limit as the limit.
func demandWeight(d float64, limit int) int64 {
	if !(d > 0) {
		return 0
	}
	d = min(d, float64(limit))
	return int64(math.Round(d * demandScale))
}
