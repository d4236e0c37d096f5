package peer

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"k8s.io/apiserver/pkg/util/shufflesharding"

	"github.com/apfproject/apf/shuffle"
)

// dealerHashes is how many pseudo-random hashes each deck/hand pair is
// dealt, on top of a few hand-picked edge values.
const dealerHashes = 10000

// TestDealer compares shuffle.Dealer with upstream's shufflesharding.Dealer:
// the same (deck, hand) pairs are accepted or refused, and every hash deals
// the same hand in the same order.
func TestDealer(t *testing.T) {
	pairs := []struct{ deck, hand int }{
		{1, 1}, {2, 1}, {2, 2}, {5, 1}, {10, 3}, {16, 4}, {15, 15}, {32, 12},
		{64, 8}, {64, 10}, {128, 6}, {128, 8}, {256, 7}, {1024, 6},
		{10000, 4}, {1 << 26, 1}, {1 << 26, 2},
	}
	edges := []uint64{0, 1, 2, 9, 10, 123456789, math.MaxUint32, math.MaxInt64, math.MaxUint64 - 1, math.MaxUint64}
	rng := rand.New(rand.NewPCG(0x5eed, 0xa9f))
	for _, p := range pairs {
		ours, err := shuffle.NewDealer(p.deck, p.hand)
		if err != nil {
			t.Errorf("NewDealer(%d, %d): ours refused: %v", p.deck, p.hand, err)
			continue
		}
		up, err := shufflesharding.NewDealer(p.deck, p.hand)
		if err != nil {
			t.Fatalf("NewDealer(%d, %d): upstream refused: %v", p.deck, p.hand, err)
		}
		ourHand, upHand := make([]int, p.hand), make([]int, p.hand)
		mismatches := 0
		check := func(h uint64) {
			ourHand = ours.DealIntoHand(h, ourHand)
			upHand = up.DealIntoHand(h, upHand)
			if !slices.Equal(ourHand, upHand) {
				mismatches++
				if mismatches <= 5 {
					t.Errorf("deck %d hand %d hash %d: ours %v, upstream %v", p.deck, p.hand, h, ourHand, upHand)
				}
			}
		}
		for _, h := range edges {
			check(h)
		}
		for range dealerHashes {
			check(rng.Uint64())
		}
		if mismatches > 5 {
			t.Errorf("deck %d hand %d: %d mismatching hands in all", p.deck, p.hand, mismatches)
		}
	}
}

// TestDealerRefusals checks that both dealers refuse the same impossible or
// over-entropic configurations (docs/spec/shuffle-sharding.md#entropy-bound).
func TestDealerRefusals(t *testing.T) {
	pairs := []struct{ deck, hand int }{
		{0, 0}, {0, 1}, {1, 0}, {-1, 1}, {4, 5}, {64, 11}, {128, 9}, {16, 16},
		{1<<26 + 1, 1}, {1 << 27, 1}, {64, 10}, {128, 8}, {15, 15},
	}
	for _, p := range pairs {
		_, ourErr := shuffle.NewDealer(p.deck, p.hand)
		_, upErr := shufflesharding.NewDealer(p.deck, p.hand)
		if (ourErr == nil) != (upErr == nil) {
			t.Errorf("NewDealer(%d, %d): ours err=%v, upstream err=%v", p.deck, p.hand, ourErr, upErr)
		}
	}
}
