package shuffle

import (
	"errors"
	"fmt"
	"math"
)

const (
	// MaxHashBits is the largest number of hash bits a dealer may consume,
	// as ceil(log2(deckSize)·handSize). See the package documentation for
	// why it is 60 and not 64.
	MaxHashBits = 60

	// MaxDeckSize is the largest deck a Dealer accepts (2^26). API
	// validation allows up to 10^7 queues, which is below this.
	MaxDeckSize = 1 << 26

	// MaxHandSize is the largest hand any valid Dealer can have. It follows
	// from MaxHashBits: a hand of 15 from a deck of 15 needs 59 bits, while
	// 16 cards need at least ceil(log2(16)·16) = 64.
	MaxHandSize = 15
)

// The reasons of a *SizeError.
var (
	// errDeckSize means the deck size is not in [1, MaxDeckSize].
	errDeckSize = errors.New("deck size out of range")
	// errHandSize means the hand size is not in [1, deck size].
	errHandSize = errors.New("hand size out of range")
	// errEntropy means the hand would need more than MaxHashBits bits of
	// hash.
	errEntropy = errors.New("hand needs too many hash bits")
)

// SizeError reports a deck and hand size combination NewDealer refuses.
// Reason says which limit it breaks (deck range, hand range or entropy).
type SizeError struct {
	DeckSize    int
	HandSize    int
	EntropyBits int // set only for the entropy limit
	Reason      error
}

// Error names the offending numbers and the limit they break.
func (e *SizeError) Error() string {
	switch e.Reason {
	case errDeckSize:
		return fmt.Sprintf("shuffle: deck size %d is not in [1, %d]", e.DeckSize, MaxDeckSize)
	case errHandSize:
		return fmt.Sprintf("shuffle: hand size %d is not in [1, deck size %d]", e.HandSize, e.DeckSize)
	case errEntropy:
		return fmt.Sprintf("shuffle: deck size %d with hand size %d needs %d bits of hash, more than the %d available",
			e.DeckSize, e.HandSize, e.EntropyBits, MaxHashBits)
	}
	return fmt.Sprintf("shuffle: invalid deck size %d / hand size %d: %v", e.DeckSize, e.HandSize, e.Reason)
}

func (e *SizeError) Unwrap() error { return e.Reason }

// RequiredEntropyBits returns ceil(log2(deckSize)·handSize), the number of
// hash bits a dealer of that shape is charged for. It uses the same float64
// formula as upstream, so it agrees with API validation bit for bit; the
// tests check it against exact integer arithmetic near the 60-bit limit.
// The result is meaningless for deckSize < 1.
func RequiredEntropyBits(deckSize, handSize int) int {
	return int(math.Ceil(math.Log2(float64(deckSize)) * float64(handSize)))
}

// ValidateSizes reports whether NewDealer would accept deckSize and
// handSize, returning a *SizeError if not. Checks run in the order deck
// range, hand range, entropy, so the error names the first problem.
func ValidateSizes(deckSize, handSize int) error {
	if deckSize <= 0 || deckSize > MaxDeckSize {
		return &SizeError{DeckSize: deckSize, HandSize: handSize, Reason: errDeckSize}
	}
	if handSize <= 0 || handSize > deckSize {
		return &SizeError{DeckSize: deckSize, HandSize: handSize, Reason: errHandSize}
	}
	if bits := RequiredEntropyBits(deckSize, handSize); bits > MaxHashBits {
		return &SizeError{DeckSize: deckSize, HandSize: handSize, EntropyBits: bits, Reason: errEntropy}
	}
	return nil
}

// Dealer deals hands of HandSize distinct cards from a deck of DeckSize
// cards (queue indices 0..DeckSize-1) as a pure function of a 64-bit hash.
// A Dealer is immutable and safe for concurrent use.
type Dealer struct {
	deckSize int
	handSize int
}

// NewDealer returns a dealer for the given deck and hand sizes, or a
// *SizeError if they are out of range or need more than MaxHashBits bits.
func NewDealer(deckSize, handSize int) (*Dealer, error) {
	if err := ValidateSizes(deckSize, handSize); err != nil {
		return nil, err
	}
	return &Dealer{deckSize: deckSize, handSize: handSize}, nil
}

// HandSize returns the number of cards in each hand.
func (d *Dealer) HandSize() int { return d.handSize }

// deal computes the hand for hash into out and returns it as a slice of out.
// out lives in the caller's frame, which is what keeps
// DealIntoHand free of heap allocation.
func (d *Dealer) deal(hash uint64, out *[MaxHandSize]int) []int {
	h := d.handSize
	// Split the hash into mixed-radix digits; digit i has radix
	// deckSize-i, i.e. the number of cards left after i have been dealt.
	var digits [MaxHandSize]int
	for i := 0; i < h; i++ {
		radix := uint64(d.deckSize - i)
		q := hash / radix
		digits[i] = int(hash - q*radix)
		hash = q
	}
	// Digit i indexes the cards not yet dealt. Turn it into a card number
	// by stepping over earlier cards. The comparison is against the raw
	// earlier digits, newest first, exactly as upstream does;
	// the result is a bijection between digit tuples and ordered hands.
	for i := 0; i < h; i++ {
		card := digits[i]
		for j := i; j > 0; j-- {
			if card >= digits[j-1] {
				card++
			}
		}
		out[i] = card
	}
	return out[:h]
}

// DealIntoHand computes the hand for hash and stores it in hand[:0],
// growing it only if its capacity is below HandSize. It returns the
// resulting slice, whose length is HandSize. Passing a slice with enough
// capacity makes the call allocation-free.
func (d *Dealer) DealIntoHand(hash uint64, hand []int) []int {
	var buf [MaxHandSize]int
	return append(hand[:0], d.deal(hash, &buf)...)
}
