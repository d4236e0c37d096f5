package apfhttp

// literalScan is the literal (true, false or null) being read.
type literalScan struct {
	word string // the whole literal
	read int    // how many of its bytes have been read
}

// beginLiteral starts the literal whose first byte is b ('t', 'f' or 'n').
func (s *listScanner) beginLiteral(b byte) {
	switch b {
	case 't':
		s.lit.word = "true"
	case 'f':
		s.lit.word = "false"
	default:
		s.lit.word = "null"
	}
	s.lit.read = 1
	s.state = stLiteral
}

// literal reads the rest of a literal, which must be spelt exactly.
func (s *listScanner) literal(p []byte, i int) int {
	for ; i < len(p); i++ {
		if p[i] != s.lit.word[s.lit.read] {
			return s.fail(p)
		}
		if s.lit.read++; s.lit.read == len(s.lit.word) {
			kind := kindOther
			if s.lit.word == "null" {
				kind = kindNull
			}
			s.valueEnd(s.at(i+1), kind)
			return i + 1
		}
	}
	return i
}
