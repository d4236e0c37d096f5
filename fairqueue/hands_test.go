package fairqueue

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apfproject/apf/shuffle"
)

// TestHandCacheDealsTheDealersHands: for hashes that come back, that
// collide in a slot and that share a slot with hands of other sizes, the
// cache answers the dealer's own hand.
func TestHandCacheDealsTheDealersHands(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var hashes []uint64
	for range 100 {
		hashes = append(hashes, rng.Uint64())
	}
	var c handCache
	var scratch [shuffle.MaxHandSize]int
	for _, shape := range [][2]int{{64, 8}, {128, 6}, {128, 8}, {7, 7}, {1, 1}} {
		d, err := shuffle.NewDealer(shape[0], shape[1])
		if err != nil {
			t.Fatal(err)
		}
		c.reset()
		for range 5 {
			for _, h := range hashes {
				got := c.hand(d, h, &scratch)
				if want := d.DealIntoHand(h, nil); !slices.Equal(got, want) {
					t.Fatalf("deck %d hand %d, hash %#x: hand %v, want %v", shape[0], shape[1], h, got, want)
				}
			}
		}
	}
}

// TestHandCacheRemembers: a hash seen before is answered from its slot,
// without dealing again.
func TestHandCacheRemembers(t *testing.T) {
	d, err := shuffle.NewDealer(64, 4)
	if err != nil {
		t.Fatal(err)
	}
	var c handCache
	var scratch [shuffle.MaxHandSize]int
	const h = 0x1234_5678_9abc_def0
	c.hand(d, h, &scratch)
	s := &c.slots[h>>60]
	if s.hash != h || s.n != 4 {
		t.Fatalf("slot after a miss: hash %#x, %d cards", s.hash, s.n)
	}
	// Mark the stored hand: a hit must return it as stored.
	s.cards[0] = 63
	if got := c.hand(d, h, &scratch); got[0] != 63 {
		t.Fatalf("hit returned %v, not the stored hand", got)
	}
}

// TestReconfigureForgetsHands: after a reconfiguration to another deck
// with the same hand size, a flow is dealt the new dealer's hand.
func TestReconfigureForgetsHands(t *testing.T) {
	cfg := Config{ConcurrencyLimit: 10, Queues: 8, HandSize: 2, QueueLengthLimit: 5}
	qs, err := New(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	const h = 0xfedc_ba98_7654_3210
	r := &Request{Hash: h, Work: WorkEstimate{InitialSeats: 1}}
	arrive1(qs, t0, r)
	qs.Finish(t0, r, nil)
	cfg.Queues = 64
	if _, err := qs.Reconfigure(t0, cfg, nil); err != nil {
		t.Fatal(err)
	}
	d, err := shuffle.NewDealer(64, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := d.DealIntoHand(h, nil)
	arrive1(qs, t0.Add(time.Second), r)
	if idx := r.QueueIndex(); !slices.Contains(want, idx) {
		t.Fatalf("queue %d chosen, not in the new hand %v", idx, want)
	}
}
