package shuffle

import (
	"errors"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func mustDealer(t testing.TB, deck, hand int) *Dealer {
	t.Helper()
	d, err := NewDealer(deck, hand)
	if err != nil {
		t.Fatalf("NewDealer(%d, %d): %v", deck, hand, err)
	}
	return d
}

// Vectors of docs/spec/shuffle-sharding.md#test-vectors (checked there
// against upstream).
func TestDealN10H3(t *testing.T) {
	d := mustDealer(t, 10, 3)
	for _, tc := range []struct {
		hash uint64
		want []int
	}{
		{0, []int{0, 1, 2}},
		{1, []int{1, 0, 2}},
		{9, []int{9, 0, 1}},
		{10, []int{0, 2, 1}},
		{123456789, []int{9, 0, 7}},
	} {
		if got := d.DealIntoHand(tc.hash, nil); !slices.Equal(got, tc.want) {
			t.Errorf("N=10 H=3 hash %d: got %v, want %v", tc.hash, got, tc.want)
		}
	}
}

func TestDealFlowHashVectors(t *testing.T) {
	d128x6 := mustDealer(t, 128, 6)
	d64x8 := mustDealer(t, 64, 8)
	for _, tc := range []struct {
		flow    string
		hash    uint64
		hand128 []int
		hand64  []int
	}{
		{"global-default, alice", 17644606172554983095,
			[]int{55, 62, 126, 125, 105, 1}, []int{55, 56, 51, 36, 11, 5, 38, 52}},
		{"service-accounts, system:serviceaccount:default:builder", 6620097910960460477,
			[]int{61, 18, 103, 1, 16, 69}, []int{61, 49, 41, 48, 53, 59, 15, 4}},
		{"kube-system-service-accounts, kube-system", 5788695476672829020,
			[]int{92, 95, 124, 69, 84, 46}, []int{28, 56, 24, 53, 10, 59, 21, 25}},
	} {
		if got := d128x6.DealIntoHand(tc.hash, nil); !slices.Equal(got, tc.hand128) {
			t.Errorf("%s: N=128 H=6 got %v, want %v", tc.flow, got, tc.hand128)
		}
		if got := d64x8.DealIntoHand(tc.hash, nil); !slices.Equal(got, tc.hand64) {
			t.Errorf("%s: N=64 H=8 got %v, want %v", tc.flow, got, tc.hand64)
		}
	}
}

func TestDealSingleQueue(t *testing.T) {
	d := mustDealer(t, 1, 1)
	for _, h := range []uint64{0, 1, 12345, ^uint64(0)} {
		if got := d.DealIntoHand(h, nil); !slices.Equal(got, []int{0}) {
			t.Errorf("N=1 H=1 hash %d: got %v, want [0]", h, got)
		}
	}
}

func TestNewDealerErrors(t *testing.T) {
	for _, tc := range []struct {
		deck, hand int
		reason     error
		bits       int
	}{
		{0, 1, errDeckSize, 0},
		{-5, 1, errDeckSize, 0},
		{MaxDeckSize + 1, 1, errDeckSize, 0},
		{10, 0, errHandSize, 0},
		{10, -1, errHandSize, 0},
		{10, 11, errHandSize, 0},
		{64, 11, errEntropy, 66},
		{128, 9, errEntropy, 63},
		{16, 16, errEntropy, 64},
		{MaxDeckSize, 3, errEntropy, 78},
		{10000000, 5, errEntropy, 117},
	} {
		d, err := NewDealer(tc.deck, tc.hand)
		if err == nil {
			t.Errorf("NewDealer(%d, %d) = %v, want error", tc.deck, tc.hand, d)
			continue
		}
		if !errors.Is(err, tc.reason) {
			t.Errorf("NewDealer(%d, %d): error %q is not %v", tc.deck, tc.hand, err, tc.reason)
		}
		var se *SizeError
		if !errors.As(err, &se) {
			t.Fatalf("NewDealer(%d, %d): error %T is not *SizeError", tc.deck, tc.hand, err)
		}
		if se.DeckSize != tc.deck || se.HandSize != tc.hand || se.EntropyBits != tc.bits {
			t.Errorf("NewDealer(%d, %d): SizeError %+v", tc.deck, tc.hand, *se)
		}
		// The message must name the numbers that were refused.
		msg := err.Error()
		for _, want := range []int{tc.deck, tc.hand} {
			if tc.reason == errDeckSize && want == tc.hand {
				continue
			}
			if !strings.Contains(msg, strconv.Itoa(want)) {
				t.Errorf("NewDealer(%d, %d): message %q does not name %d", tc.deck, tc.hand, msg, want)
			}
		}
		if tc.reason == errEntropy && !strings.Contains(msg, strconv.Itoa(tc.bits)) {
			t.Errorf("message %q does not name the %d bits", msg, tc.bits)
		}
	}
}

func TestNewDealerAccepts(t *testing.T) {
	for _, tc := range [][2]int{
		{1, 1}, {64, 10}, {128, 8}, {15, 15}, {16, 15}, {32, 12}, {256, 7}, {1024, 6},
		{MaxDeckSize, 1}, {MaxDeckSize, 2}, {10000000, 1},
	} {
		d := mustDealer(t, tc[0], tc[1])
		if d.deckSize != tc[0] || d.HandSize() != tc[1] {
			t.Errorf("NewDealer(%d, %d) reports %d, %d", tc[0], tc[1], d.deckSize, d.HandSize())
		}
	}
}

// The examples of docs/spec/shuffle-sharding.md#entropy-bound.
func TestRequiredEntropyBits(t *testing.T) {
	for _, tc := range []struct{ deck, hand, want int }{
		{64, 10, 60}, {64, 11, 66}, {128, 8, 56}, {128, 9, 63}, {15, 15, 59}, {16, 16, 64},
		{64, 8, 48}, {32, 12, 60}, {256, 7, 56}, {1024, 6, 60}, {1, 1, 0}, {2, 1, 1}, {3, 1, 2},
	} {
		if got := RequiredEntropyBits(tc.deck, tc.hand); got != tc.want {
			t.Errorf("RequiredEntropyBits(%d, %d) = %d, want %d", tc.deck, tc.hand, got, tc.want)
		}
	}
	// The largest hand each deck size allows, as listed in
	// docs/spec/shuffle-sharding.md#entropy-bound.
	for deck, maxHand := range map[int]int{64: 10, 128: 8, 256: 7, 1024: 6, 32: 12} {
		if ValidateSizes(deck, maxHand) != nil || ValidateSizes(deck, maxHand+1) == nil {
			t.Errorf("deck %d: largest valid hand should be %d", deck, maxHand)
		}
	}
}

// exactEntropyBits is ceil(log2(deck^hand)) in integer arithmetic: the
// bit length of deck^hand - 1.
func exactEntropyBits(deck, hand int) int {
	p := new(big.Int).Exp(big.NewInt(int64(deck)), big.NewInt(int64(hand)), nil)
	return p.Sub(p, big.NewInt(1)).BitLen()
}

// The float64 formula (kept for parity with upstream) must agree with exact
// arithmetic. Checked here on every deck up to 4096 and around every power
// of two up to MaxDeckSize; the full domain was checked once offline.
func TestRequiredEntropyBitsExact(t *testing.T) {
	check := func(deck int) {
		for hand := 1; hand <= min(deck, MaxHandSize+1); hand++ {
			if got, want := RequiredEntropyBits(deck, hand), exactEntropyBits(deck, hand); got != want {
				t.Errorf("RequiredEntropyBits(%d, %d) = %d, exact %d", deck, hand, got, want)
			}
		}
	}
	for deck := 1; deck <= 4096; deck++ {
		check(deck)
	}
	for p := 13; p <= 26; p++ {
		for _, deck := range []int{1<<p - 1, 1 << p, 1<<p + 1} {
			if deck <= MaxDeckSize {
				check(deck)
			}
		}
	}
}

// numHands is N·(N-1)·…·(N-H+1), the number of ordered hands.
func numHands(deck, hand int) uint64 {
	p := uint64(1)
	for i := 0; i < hand; i++ {
		p *= uint64(deck - i)
	}
	return p
}

func checkHand(t *testing.T, d *Dealer, hash uint64, hand []int) {
	t.Helper()
	if len(hand) != d.HandSize() {
		t.Fatalf("N=%d H=%d hash %d: hand %v has wrong length", d.deckSize, d.HandSize(), hash, hand)
	}
	var seen [MaxHandSize]int
	for i, c := range hand {
		if c < 0 || c >= d.deckSize {
			t.Fatalf("N=%d H=%d hash %d: card %d out of range in %v", d.deckSize, d.HandSize(), hash, c, hand)
		}
		if slices.Contains(seen[:i], c) {
			t.Fatalf("N=%d H=%d hash %d: card %d repeated in %v", d.deckSize, d.HandSize(), hash, c, hand)
		}
		seen[i] = c
	}
}

// Every hash below the number of ordered hands must give a different ordered
// hand, i.e. the deal is a bijection onto ordered hands, which makes a
// uniform hash deal a uniform hand.
func TestDealIsBijection(t *testing.T) {
	for deck := 1; deck <= 8; deck++ {
		for hand := 1; hand <= deck; hand++ {
			d := mustDealer(t, deck, hand)
			p := numHands(deck, hand)
			seen := make(map[string]bool, p)
			buf := make([]int, 0, hand)
			for v := uint64(0); v < p; v++ {
				buf = d.DealIntoHand(v, buf)
				checkHand(t, d, v, buf)
				key := fmtHand(buf)
				if seen[key] {
					t.Fatalf("N=%d H=%d: hand %v dealt twice", deck, hand, buf)
				}
				seen[key] = true
			}
		}
	}
}

func fmtHand(h []int) string {
	var b strings.Builder
	for _, c := range h {
		b.WriteString(strconv.Itoa(c))
		b.WriteByte(',')
	}
	return b.String()
}

// Random sizes and hashes: cards distinct and in range, the result depends
// only on hash mod (number of ordered hands), and Deal and DealIntoHand
// agree and are deterministic.
func TestDealRandomProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for i := 0; i < n; i++ {
		var deck int
		switch i % 3 {
		case 0:
			deck = 1 + rng.IntN(20)
		case 1:
			deck = 1 + rng.IntN(2000)
		default:
			deck = 1 + rng.IntN(MaxDeckSize)
		}
		hand := 1 + rng.IntN(min(deck, MaxHandSize))
		d, err := NewDealer(deck, hand)
		if err != nil {
			if !errors.Is(err, errEntropy) {
				t.Fatalf("NewDealer(%d, %d): unexpected %v", deck, hand, err)
			}
			continue
		}
		hash := rng.Uint64()
		got := d.DealIntoHand(hash, nil)
		checkHand(t, d, hash, got)
		if again := d.DealIntoHand(hash, make([]int, 3, 20)); !slices.Equal(got, again) {
			t.Fatalf("N=%d H=%d hash %d: not deterministic: %v then %v", deck, hand, hash, got, again)
		}
		if reduced := d.DealIntoHand(hash%numHands(deck, hand), nil); !slices.Equal(got, reduced) {
			t.Fatalf("N=%d H=%d hash %d: %v, but hash mod hands gives %v", deck, hand, hash, got, reduced)
		}
	}
}

func TestDealIntoHandReusesStorage(t *testing.T) {
	d := mustDealer(t, 64, 8)
	buf := make([]int, 20, 32)
	got := d.DealIntoHand(42, buf)
	if len(got) != 8 || &got[0] != &buf[0] {
		t.Errorf("DealIntoHand did not reuse a large enough slice: len %d", len(got))
	}
	small := make([]int, 0, 2)
	got = d.DealIntoHand(42, small)
	if len(got) != 8 || !slices.Equal(got, d.DealIntoHand(42, nil)) {
		t.Errorf("DealIntoHand with a small slice: %v", got)
	}
}

func TestDealAllocatesNothing(t *testing.T) {
	d := mustDealer(t, 128, 6)
	hand := make([]int, 0, 6)
	hash := uint64(17644606172554983095)
	if n := testing.AllocsPerRun(100, func() { hand = d.DealIntoHand(hash, hand); hash++ }); n != 0 {
		t.Errorf("DealIntoHand allocates %v times per call", n)
	}
}

func BenchmarkDealIntoHand(b *testing.B) {
	for _, sz := range [][2]int{{64, 8}, {128, 6}, {15, 15}} {
		b.Run(strconv.Itoa(sz[0])+"x"+strconv.Itoa(sz[1]), func(b *testing.B) {
			d := mustDealer(b, sz[0], sz[1])
			hand := make([]int, 0, sz[1])
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				hand = d.DealIntoHand(uint64(i)*0x9e3779b97f4a7c15, hand)
			}
		})
	}
}

// TestLargestValidHand: no deck allows a hand over 15 within the entropy
// bound of 60 bits, which is why MaxHandSize is 15.
func TestLargestValidHand(t *testing.T) {
	largest := 0
	for deck := 1; deck <= 64; deck++ {
		for hand := 1; hand <= deck; hand++ {
			if RequiredEntropyBits(deck, hand) <= MaxHashBits {
				largest = max(largest, hand)
			}
		}
	}
	if largest != MaxHandSize {
		t.Errorf("largest valid hand = %d, want %d", largest, MaxHandSize)
	}
}
