package sharedbudget

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSharesTable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		limit    int
		floor    float64
		replicas []Replica
		want     []int
	}{
		{"none", 10, 0.25, nil, nil},
		{"alone takes all", 600, 0.25, []Replica{{"a", 3}}, []int{600}},
		{"idle split evenly", 30, 0.25, []Replica{{"a", 0}, {"b", 0}, {"c", 0}}, []int{10, 10, 10}},
		// 60: floors of 5, 45 left in proportion 8:1:1 = 36, 4.5, 4.5;
		// the half seat goes to the smaller ID.
		{"80 percent", 60, 0.25, []Replica{{"a", 40}, {"b", 5}, {"c", 5}}, []int{41, 10, 9}},
		{"order of input kept", 60, 0.25, []Replica{{"c", 5}, {"a", 40}, {"b", 5}}, []int{9, 41, 10}},
		// Demand above the limit counts as the limit: 60:10:10.
		{"demand above the limit", 60, 0.25, []Replica{{"a", 80}, {"b", 10}, {"c", 10}}, []int{39, 11, 10}},
		{"one busy", 600, 0.25, []Replica{{"a", 0}, {"b", 500}, {"c", 0}}, []int{50, 500, 50}},
		// Even with no floor fraction each replica keeps one seat: 98 seats
		// in proportion 1:3 = 24.5 and 73.5.
		{"no floors", 100, 0, []Replica{{"a", 1}, {"b", 3}}, []int{26, 74}},
		{"all floors", 100, 1, []Replica{{"a", 1}, {"b", 3}, {"c", 0}}, []int{33, 34, 33}},
		{"floor at least one seat", 3, 0, []Replica{{"a", 10}, {"b", 0}, {"c", 0}}, []int{1, 1, 1}},
		{"bad demand counts as none", 10, 0, []Replica{{"a", math.NaN()}, {"b", -4}, {"c", 1}}, []int{1, 1, 8}},
		{"demand capped at the limit", 10, 0, []Replica{{"a", math.Inf(1)}, {"b", 10}}, []int{5, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Shares(tc.limit, tc.floor, tc.replicas)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Shares(%d, %v, %v) = %v, want %v", tc.limit, tc.floor, tc.replicas, got, tc.want)
			}
		})
	}
}

func TestSharesRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		limit    int
		floor    float64
		replicas []Replica
	}{
		{10, -0.1, nil},
		{10, 1.5, nil},
		{10, math.NaN(), nil},
		{MaxLimit + 1, 0.25, nil},
		{1, 0.25, []Replica{{"a", 0}, {"b", 0}}},
		{10, 0.25, []Replica{{"a", 0}, {"a", 1}}},
		{10, 0.25, []Replica{{"", 0}}},
	} {
		if got, err := Shares(tc.limit, tc.floor, tc.replicas); err == nil {
			t.Errorf("Shares(%d, %v, %v) = %v, want an error", tc.limit, tc.floor, tc.replicas, got)
		}
	}
}

// TestSharesProperties checks on random inputs: the shares sum to the
// limit, every replica gets its floor, the answer does not depend on the
// order of the input, and a replica's share does not fall when its demand
// rises.
func TestSharesProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 20000 {
		n := 1 + rng.IntN(8)
		limit := n + rng.IntN(700)
		ff := []float64{0, 0.1, DefaultFloorFraction, 0.5, 1}[rng.IntN(5)]
		rs := make([]Replica, n)
		for i := range rs {
			rs[i] = Replica{ID: fmt.Sprintf("r%d", rng.IntN(1000)*10+i), Demand: randomDemand(rng, limit)}
		}
		got, err := Shares(limit, ff, rs)
		if err != nil {
			t.Fatalf("iteration %d: %v", iter, err)
		}
		floor := max(1, int(math.Floor(float64(limit)*ff/float64(n))))
		sum := 0
		for i, s := range got {
			sum += s
			if s < floor {
				t.Fatalf("iteration %d: Shares(%d, %v, %v)[%d] = %d, below the floor %d", iter, limit, ff, rs, i, s, floor)
			}
		}
		if sum != limit {
			t.Fatalf("iteration %d: Shares(%d, %v, %v) = %v sums to %d", iter, limit, ff, rs, got, sum)
		}

		perm := rng.Perm(n)
		shuffled := make([]Replica, n)
		for i, p := range perm {
			shuffled[i] = rs[p]
		}
		again, _ := Shares(limit, ff, shuffled)
		for i, p := range perm {
			if again[i] != got[p] {
				t.Fatalf("iteration %d: the order of the replicas changed %s's share from %d to %d", iter, rs[p].ID, got[p], again[i])
			}
		}

		k := rng.IntN(n)
		more := slices.Clone(rs)
		more[k].Demand = max(0, rs[k].Demand) + rng.Float64()*float64(limit)/2
		if rng.IntN(4) == 0 {
			more[k].Demand = rs[k].Demand + 0.001
		}
		after, _ := Shares(limit, ff, more)
		if after[k] < got[k] {
			t.Fatalf("iteration %d: raising %s's demand from %v to %v lowered its share from %d to %d (limit %d, floor fraction %v, replicas %v)",
				iter, rs[k].ID, rs[k].Demand, more[k].Demand, got[k], after[k], limit, ff, rs)
		}
	}
}

func randomDemand(rng *rand.Rand, limit int) float64 {
	switch rng.IntN(6) {
	case 0:
		return 0
	case 1:
		return float64(rng.IntN(limit + 1))
	default:
		return rng.Float64() * float64(limit)
	}
}
