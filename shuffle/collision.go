package shuffle

import (
	"errors"
	"fmt"
	"math/big"
)

const (
	// MaxElephants bounds the elephant counts Row accepts.
	// The exact numerator and denominator grow by log2(C(N,H)) bits per
	// elephant; this cap keeps the worst case (large N and H) well under a
	// second while covering any count anyone would tabulate.
	MaxElephants = 1024

	// MaxCollisionHandSize bounds the hand size Row accepts. It is far above MaxHandSize so that configurations beyond
	// the entropy bound can still be analysed, yet keeps the binomials
	// small enough to stay fast.
	MaxCollisionHandSize = 64
)

// errCollisionArgs is the error an *ArgsError unwraps to.
var errCollisionArgs = errors.New("collision probability arguments out of range")

// ArgsError reports arguments outside the domain of Row.
// Problem says which bound was broken.
type ArgsError struct {
	HandSize, Queues, Elephants int
	Problem                     string
}

// Error names all three arguments and the broken bound.
func (e *ArgsError) Error() string {
	return fmt.Sprintf("shuffle: hand size %d, queues %d, elephants %d: %s", e.HandSize, e.Queues, e.Elephants, e.Problem)
}

func (e *ArgsError) Unwrap() error { return errCollisionArgs }

func collisionArgsError(handSize, queues, elephants int, problem string) error {
	return &ArgsError{HandSize: handSize, Queues: queues, Elephants: elephants, Problem: problem}
}

// collisionProbability returns the probability that a mouse holding a
// uniformly random hand of handSize out of queues queues finds every queue
// of its hand also held by at least one of elephants elephants, each with an
// independent uniformly random hand of the same size
// (docs/spec/shuffle-sharding.md#collision-probability).
//
// The value is computed exactly (see collisionFraction) and rounded
// to the nearest float64 once. Arguments must satisfy 1 ≤ queues ≤
// MaxDeckSize, 1 ≤ handSize ≤ min(queues, MaxCollisionHandSize) and
// 0 ≤ elephants ≤ MaxElephants; otherwise the error is an *ArgsError.
// The entropy bound is deliberately not enforced, so that configurations a
// dealer would refuse can still be compared.
func collisionProbability(handSize, queues, elephants int) (float64, error) {
	num, den, err := collisionFraction(handSize, queues, elephants)
	if err != nil {
		return 0, err
	}
	// Divide without reducing the fraction first: for many elephants the
	// operands have hundreds of thousands of bits and the GCD that
	// big.Rat would run dominates the cost, while a quotient rounded to 53
	// bits only needs a short division. Operands are set at full
	// precision, so the single rounding of Quo is the only one.
	x := new(big.Float).SetInt(num)
	y := new(big.Float).SetInt(den)
	f, _ := new(big.Float).SetPrec(53).Quo(x, y).Float64()
	return f, nil
}

// collisionFraction validates the arguments and returns the unreduced
// numerator and denominator of the collision probability.
func collisionFraction(handSize, queues, elephants int) (num, den *big.Int, err error) {
	switch {
	case queues < 1 || queues > MaxDeckSize:
		return nil, nil, collisionArgsError(handSize, queues, elephants, fmt.Sprintf("queues must be in [1, %d]", MaxDeckSize))
	case handSize < 1 || handSize > queues:
		return nil, nil, collisionArgsError(handSize, queues, elephants, "hand size must be in [1, queues]")
	case handSize > MaxCollisionHandSize:
		return nil, nil, collisionArgsError(handSize, queues, elephants, fmt.Sprintf("hand size must be at most %d", MaxCollisionHandSize))
	case elephants < 0 || elephants > MaxElephants:
		return nil, nil, collisionArgsError(handSize, queues, elephants, fmt.Sprintf("elephants must be in [0, %d]", MaxElephants))
	}
	n, h := int64(queues), int64(handSize)
	exp := big.NewInt(int64(elephants))

	num = new(big.Int)
	var term, coef, b big.Int
	for j := int64(0); j <= h; j++ {
		// C(N-j, H) is 0 once N-j < H (hands over half the deck); Exp
		// keeps 0^0 = 1, which is what zero elephants need.
		b.Binomial(n-j, h)
		term.Exp(&b, exp, nil)
		coef.Binomial(h, j)
		term.Mul(&term, &coef)
		if j%2 == 0 {
			num.Add(num, &term)
		} else {
			num.Sub(num, &term)
		}
	}
	den = new(big.Int).Binomial(n, h)
	den.Exp(den, exp, nil)
	return num, den, nil
}
