package listscan

// state is where the Scanner is in the JSON grammar: what the next byte
// may be.
type state uint8

const (
	stValue        state = iota // a value is due (the zero state: a body begins with one)
	stValueOrClose              // after '[': a value or ']'
	stKeyOrClose                // after '{': a key or '}'
	stKey                       // after ',' in an object: a key
	stColon                     // after a key: ':'
	stAfterValue                // after a value in a container: ',' or the closer
	stDone                      // the top-level object is closed: whitespace only
	stFailed                    // not a list: the rest is ignored
	stString                    // inside a string (string.go)
	stEscape                    // after a backslash in a string
	stUnicode                   // in the four hex digits of a \u escape
	stNumber                    // inside a number (number.go)
	stLiteral                   // inside true, false or null (literal.go)
)

// valueKind tells apart the values whose end means something to list.go.
type valueKind uint8

const (
	kindOther valueKind = iota // an object, an array, true or false
	kindString
	kindNumber
	kindNull
)

// Scanner reads one JSON body, given in chunks, and tells whether it is a
// list response and what it counts (see the package documentation). The
// zero value is ready to read a body; Reset makes it so again.
type Scanner struct {
	scan         // all that Reset clears
	nest nesting // the open containers
}

// scan is the Scanner's state apart from the nesting bits, which Reset
// need not clear.
type scan struct {
	state  state
	offset int64 // where in the body the current chunk begins
	next   int64 // where in the body the next chunk begins
	str    stringScan
	num    numberScan
	lit    literalScan
	list   listState
}

// Reset readies the Scanner for another body.
func (s *Scanner) Reset() {
	s.scan = scan{}
	s.nest.depth, s.nest.inArray = 0, false // the bits are never read above the depth
}

// Write feeds the next chunk of the body. It never fails: a body that is
// not a list makes Result say so.
func (s *Scanner) Write(p []byte) (int, error) {
	s.offset = s.next
	s.next += int64(len(p))
	// Each state function reads from p[i] on, as far as its state goes
	// (to the end of a token or of p), and returns where it stopped.
	// Punctuation hands over directly to the function that reads what
	// must follow it (a colon's value, a comma's key or value, a quote's
	// string): that spares this switch, an indirect jump the processor
	// mispredicts often, on the commonest steps. The hand-overs never
	// come back round (a token's end always returns here), so the stack
	// stays a few calls deep.
	for i := 0; i < len(p); {
		switch s.state {
		case stValue, stValueOrClose:
			i = s.value(p, i)
		case stKeyOrClose, stKey:
			i = s.key(p, i)
		case stColon:
			i = s.colon(p, i)
		case stAfterValue:
			i = s.afterValue(p, i)
		case stString:
			i = s.stringText(p, i)
		case stEscape:
			i = s.escape(p, i)
		case stUnicode:
			i = s.unicodeEscape(p, i)
		case stNumber:
			i = s.number(p, i)
		case stLiteral:
			i = s.literal(p, i)
		case stDone:
			i = s.trailing(p, i)
		default: // stFailed
			return len(p), nil
		}
	}
	return len(p), nil
}

// at is the position in the body of p[i], p being the current chunk.
func (s *Scanner) at(i int) int64 { return s.offset + int64(i) }

// fail gives up on the body; it returns len(p), where the reading of p
// stops.
func (s *Scanner) fail(p []byte) int {
	s.state = stFailed
	return len(p)
}

// isSpace reports whether b is JSON whitespace.
func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// skipSpace returns the index of the first byte from p[i] on that is not
// whitespace, or len(p).
func skipSpace(p []byte, i int) int {
	for i < len(p) && isSpace(p[i]) {
		i++
	}
	return i
}

// value reads the first byte of a value: it opens a container or starts
// a string, number or literal. Right after '[' it also takes the ']' of an
// empty array.
func (s *Scanner) value(p []byte, i int) int {
	if i = skipSpace(p, i); i == len(p) {
		return i
	}
	b := p[i]
	if b == ']' && s.state == stValueOrClose {
		return s.close(p, i)
	}
	if !s.valueBegins(b, s.at(i)) {
		return s.fail(p)
	}
	switch b {
	case '{':
		return s.open(p, i, false)
	case '[':
		return s.open(p, i, true)
	case '"':
		s.beginString(false, s.capturesValue())
		return s.stringText(p, i+1)
	case 't', 'f', 'n':
		s.beginLiteral(b)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		s.beginNumber()
		return i // number reads the first byte too
	default:
		return s.fail(p)
	}
	return i + 1
}

// open opens the container whose opening bracket is p[i].
func (s *Scanner) open(p []byte, i int, array bool) int {
	if !s.nest.push(array) {
		return s.fail(p)
	}
	if array {
		s.state = stValueOrClose
	} else {
		s.state = stKeyOrClose
	}
	return i + 1
}

// close closes the innermost container with the closing bracket p[i],
// which must match its opener, and ends it as a value.
func (s *Scanner) close(p []byte, i int) int {
	if !s.nest.pop(p[i] == ']') {
		return s.fail(p)
	}
	s.valueEnd(s.at(i+1), kindOther)
	return i + 1
}

// key reads the opening quote of a member's key. Right after '{' it also
// takes the '}' of an empty object.
func (s *Scanner) key(p []byte, i int) int {
	if i = skipSpace(p, i); i == len(p) {
		return i
	}
	switch b := p[i]; {
	case b == '"':
		s.beginString(true, s.capturesKey())
		return s.stringText(p, i+1)
	case b == '}' && s.state == stKeyOrClose:
		return s.close(p, i)
	}
	return s.fail(p)
}

// colon reads the colon between a key and its value.
func (s *Scanner) colon(p []byte, i int) int {
	if i = skipSpace(p, i); i == len(p) {
		return i
	}
	if p[i] != ':' {
		return s.fail(p)
	}
	s.state = stValue
	return s.value(p, i+1)
}

// afterValue reads what follows a value inside a container: a comma, or
// the container's closer.
func (s *Scanner) afterValue(p []byte, i int) int {
	if i = skipSpace(p, i); i == len(p) {
		return i
	}
	switch p[i] {
	case ',':
		if s.nest.inArray {
			s.state = stValue
			return s.value(p, i+1)
		}
		s.state = stKey
		return s.key(p, i+1)
	case ']', '}':
		return s.close(p, i)
	}
	return s.fail(p)
}

// trailing reads what follows the top-level object: whitespace only.
func (s *Scanner) trailing(p []byte, i int) int {
	if i = skipSpace(p, i); i == len(p) {
		return i
	}
	return s.fail(p)
}

// valueEnd ends a value (a container's once it has been closed); after is
// the position just past its last byte. What follows is a comma or a
// closer, but for the top-level object (see valueEnds).
func (s *Scanner) valueEnd(after int64, kind valueKind) {
	s.state = stAfterValue
	s.valueEnds(after, kind)
}
