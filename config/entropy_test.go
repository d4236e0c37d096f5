package config

import (
	"testing"

	"github.com/apfproject/apf/shuffle"
)

// Validation states the shuffle-sharding entropy rule itself, so as to
// need nothing of the queuing packages; it must be the rule package
// shuffle's dealer enforces, or a configuration validation accepts would
// be one the queue set cannot deal for (or the other way round). Every
// hand size of every deck up to 1,000 queues, and hand sizes around the
// bound for larger decks up to the dealer's largest, agree.
func TestEntropyRuleIsTheDealers(t *testing.T) {
	if maxHashBits != shuffle.MaxHashBits {
		t.Fatalf("maxHashBits %d, shuffle.MaxHashBits %d", maxHashBits, shuffle.MaxHashBits)
	}
	check := func(queues, hand int32) {
		t.Helper()
		ours := requiredEntropyBits(queues, hand) <= maxHashBits
		dealer := shuffle.ValidateSizes(int(queues), int(hand)) == nil
		if ours != dealer {
			t.Fatalf("queues %d, hand size %d: validation accepts %v, the dealer %v", queues, hand, ours, dealer)
		}
	}
	for q := int32(1); q <= 1000; q++ {
		for h := int32(1); h <= min(q, 2*shuffle.MaxHandSize); h++ {
			check(q, h)
		}
	}
	for q := int32(1000); q <= maxQueues; q = q*5/4 + 1 {
		for h := int32(1); h <= min(q, 2*shuffle.MaxHandSize); h++ {
			check(q, h)
		}
	}
}
