package fairqueue

import "github.com/apfproject/apf/shuffle"

// handCacheSize is the number of hands a queue set remembers. A level sees
// the same few flows again and again (a flow is a FlowSchema and a user or
// namespace), and dealing a hand costs a division per card and a
// quadratic pass over the cards, more than the rest of choosing a queue;
// a small direct-mapped cache keeps the hands of the most recent flows.
const handCacheSize = 16

// handCache maps flow hashes to the hands the queue set's dealer deals
// them. Each slot holds at most one hand, replaced on a miss. It belongs
// to the queue set, under the same serialization as the rest of its state,
// and holds plain values only (no pointers for the garbage collector to
// follow). Reconfigure empties it, since a new dealer deals other hands.
type handCache struct {
	slots [handCacheSize]handSlot
}

type handSlot struct {
	hash uint64
	// n is the number of cards; 0 marks an empty slot.
	n     int32
	cards [shuffle.MaxHandSize]int32
}

// hand returns the hand dealer deals for hash, in dealing order, using
// scratch as the buffer it returns.
func (c *handCache) hand(d *shuffle.Dealer, hash uint64, scratch *[shuffle.MaxHandSize]int) []int {
	// The top bits index the slot: the dealer reads the hash from its low
	// bits up, and flow hashes are uniform throughout anyway.
	s := &c.slots[hash>>(64-4)]
	out := scratch[:d.HandSize()]
	if s.n == int32(len(out)) && s.hash == hash {
		for i := range out {
			out[i] = int(s.cards[i])
		}
		return out
	}
	out = d.DealIntoHand(hash, out[:0])
	s.hash, s.n = hash, int32(len(out))
	for i, card := range out {
		s.cards[i] = int32(card)
	}
	return out
}

// reset empties the cache.
func (c *handCache) reset() { *c = handCache{} }
