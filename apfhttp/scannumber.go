package apfhttp

import "math"

// numberPart is where the scanner is in a number, as JSON spells one:
// an optional minus, an integer part without leading zeros, an optional
// fraction, an optional exponent.
type numberPart uint8

const (
	numStart    numberPart = iota // nothing read yet
	numMinus                      // after the leading '-'
	numZero                       // after an integer part "0"
	numInt                        // in the integer part's digits
	numDot                        // after '.'
	numFraction                   // in the fraction's digits
	numE                          // after 'e' or 'E'
	numExpSign                    // after the exponent's sign
	numExponent                   // in the exponent's digits

	numEnd // the byte read follows the number
	numBad // the byte read cannot be there
)

// numberScan is the number being read.
type numberScan struct {
	part numberPart
	// Its value, while it is an integer that fits an int64: that is all
	// metadata.remainingItemCount may be.
	negative bool
	integer  bool
	value    int64
}

// beginNumber starts a number, whose first byte number then reads.
func (s *listScanner) beginNumber() {
	s.num = numberScan{integer: true}
	s.state = stNumber
}

// number reads a number's bytes. A number has no closing byte: it ends
// at the first byte that cannot continue it, which the next state reads.
// A number always ends so, as it is always inside a container.
func (s *listScanner) number(p []byte, i int) int {
	for ; i < len(p); i++ {
		b := p[i]
		part := nextNumberPart(s.num.part, b)
		switch part {
		case numEnd:
			s.valueEnd(s.at(i), kindNumber)
			return i
		case numBad:
			return s.fail(p)
		case numMinus:
			s.num.negative = true
		case numZero:
		case numInt:
			s.num.addDigit(b)
		default: // a fraction or an exponent
			s.num.integer = false
		}
		s.num.part = part
	}
	return i
}

// nextNumberPart is the grammar of numbers: where byte b leads from part.
func nextNumberPart(part numberPart, b byte) numberPart {
	digit := '0' <= b && b <= '9'
	switch part {
	case numStart, numMinus:
		switch {
		case b == '-' && part == numStart:
			return numMinus
		case b == '0':
			return numZero
		case digit:
			return numInt
		}
		return numBad
	case numZero, numInt:
		switch {
		case digit && part == numInt:
			return numInt
		case b == '.':
			return numDot
		case b == 'e' || b == 'E':
			return numE
		}
		return numEnd
	case numDot, numFraction:
		switch {
		case digit:
			return numFraction
		case part == numDot:
			return numBad
		case b == 'e' || b == 'E':
			return numE
		}
		return numEnd
	case numE, numExpSign:
		switch {
		case digit:
			return numExponent
		case (b == '+' || b == '-') && part == numE:
			return numExpSign
		}
		return numBad
	case numExponent:
		if digit {
			return numExponent
		}
		return numEnd
	}
	return numBad
}

// addDigit appends a digit of the integer part to the value.
func (n *numberScan) addDigit(b byte) {
	d := int64(b - '0')
	if !n.integer || n.value > (math.MaxInt64-d)/10 {
		n.integer = false
		return
	}
	n.value = n.value*10 + d
}

// count returns the number as a count: a non-negative integer that fits
// an int64 (minus zero is zero).
func (n *numberScan) count() (int64, bool) {
	if !n.integer || (n.negative && n.value != 0) {
		return 0, false
	}
	return n.value, true
}
