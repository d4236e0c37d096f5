package apfhttp

// The list scanner (scan*.go) counts the items of a Kubernetes list
// response while the body streams past, without keeping or decoding any of
// it, for the learned object counts (learn.go).
//
// # What it recognises
//
// A list response is a JSON object whose "items" member is an array:
//
//	{"kind":"PodList","apiVersion":"v1",
//	 "metadata":{"resourceVersion":"7","continue":"…","remainingItemCount":900},
//	 "items":[{…},{…}]}
//
// When its "kind" is "Table" (the server-side printing form) and it has a
// "rows" array, the rows are counted instead. A listScanner is given the
// body in chunks (Write) split anywhere — inside a key, an escape, a number
// or a literal — and result reports, once the body is over:
//
//   - Items: the elements of the array, and Bytes: the bytes they span,
//     each from its first byte to its last (whitespace and commas between
//     elements are not counted);
//   - Remaining: metadata.remainingItemCount, when it is a non-negative
//     integer that fits an int64;
//   - Continue: whether metadata.continue is a non-empty string;
//   - Table: whether the rows of a Table were counted.
//
// The answers are exactly what encoding/json makes of the body: a body
// counts when json.Valid accepts it and its value is an object with such
// an array, and the figures are those of decoding the object into a
// map[string]json.RawMessage and its members into Go values. So a repeated
// member replaces the earlier one, keys are compared after their escapes
// are decoded ("it\u0065ms" is "items"), "items": null is an empty list,
// and members nested deeper (an item's own "metadata") mean nothing.
//
// # When it gives up
//
// The first byte that rules the body out puts the scanner in a failed
// state in which it ignores the rest: a syntax error, a control character
// in a string, a top-level value that is not an object, nesting deeper
// than maxListDepth, anything but whitespace after the object. A body
// that is valid but not a list (no array where one is due), or that is cut
// short, is seen only by result, which then reports no list.
//
// # Why it never allocates
//
// The scanner is a state machine that reads one byte after another and can
// stop after any of them: the state says what the next byte may be (a
// value, a key, a colon, a comma or a closer, the next byte of a string,
// escape, number or literal), so a chunk boundary needs nothing carried
// over but the state itself. Its whole memory is the fixed-size
// listScanner: the state, the nesting depth with one bit per open container (object or
// array, to check closers against openers without recursion), a small
// buffer holding the start of the one string whose text matters at the
// moment (a key of the top-level or metadata object, the kind, the
// continue token), and the value of the number being read. The bodies it
// reads are never copied. A listScanner is under 1.5 KiB, mostly the
// nesting bits; it lives in a list writer (learn.go), and the writers are
// pooled and Reset it between bodies.
//
// # Limits
//
//   - maxListDepth (10000, as encoding/json) open containers at most; a
//     deeper body is no list.
//   - Strings are compared on their decoded text, of which the scanner
//     keeps the first 24 bytes (captureSize), more than every name that
//     matters has; a longer string matches none of them, and a continue
//     token of any length counts as set.
//   - Positions, counts and sizes are int64. A remainingItemCount beyond
//     an int64 is not reported, as encoding/json refuses to decode it.
//
// # Organisation
//
//   - scan.go: the listScanner, the loop that hands each byte to the
//     function of the current state, and the states between tokens
//     (a value is due, a key, a colon, a comma or closer, trailing space).
//   - scanstring.go, scannumber.go, scanliteral.go: one construct each,
//     with its own sub-states.
//   - scannesting.go: the stack of open containers, one bit per level.
//   - scanlist.go: the meaning — which member of the top-level object is
//     being read, the counted array, the metadata — and result.
//
// The scanner uses the standard library only, and knows nothing of HTTP
// or of work estimation: learn.go feeds it, and tells workestimate what it
// found.

// scanState is where the scanner is in the JSON grammar: what the next
// byte may be.
type scanState uint8

const (
	stValue        scanState = iota // a value is due (the zero state: a body begins with one)
	stValueOrClose                  // after '[': a value or ']'
	stKeyOrClose                    // after '{': a key or '}'
	stKey                           // after ',' in an object: a key
	stColon                         // after a key: ':'
	stAfterValue                    // after a value in a container: ',' or the closer
	stDone                          // the top-level object is closed: whitespace only
	stFailed                        // not a list: the rest is ignored
	stString                        // inside a string (scanstring.go)
	stEscape                        // after a backslash in a string
	stUnicode                       // in the four hex digits of a \u escape
	stNumber                        // inside a number (scannumber.go)
	stLiteral                       // inside true, false or null (scanliteral.go)
)

// valueKind tells apart the values whose end means something to scanlist.go.
type valueKind uint8

const (
	kindOther valueKind = iota // an object, an array, true or false
	kindString
	kindNumber
	kindNull
)

// listScanner reads one JSON body, given in chunks, and tells whether it
// is a list response and what it counts (see the top of this file). The
// zero value is ready to read a body; Reset makes it so again.
type listScanner struct {
	scan         // all that Reset clears
	nest nesting // the open containers
}

// scan is the scanner's state apart from the nesting bits, which Reset
// need not clear.
type scan struct {
	state  scanState
	offset int64 // where in the body the current chunk begins
	next   int64 // where in the body the next chunk begins
	str    stringScan
	num    numberScan
	lit    literalScan
	list   listState
}

// Reset readies the scanner for another body.
func (s *listScanner) Reset() {
	s.scan = scan{}
	s.nest.depth, s.nest.inArray = 0, false // the bits are never read above the depth
}

// Write feeds the next chunk of the body. It never fails: a body that is
// not a list makes result say so.
func (s *listScanner) Write(p []byte) (int, error) {
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
func (s *listScanner) at(i int) int64 { return s.offset + int64(i) }

// fail gives up on the body; it returns len(p), where the reading of p
// stops.
func (s *listScanner) fail(p []byte) int {
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
func (s *listScanner) value(p []byte, i int) int {
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
func (s *listScanner) open(p []byte, i int, array bool) int {
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
func (s *listScanner) close(p []byte, i int) int {
	if !s.nest.pop(p[i] == ']') {
		return s.fail(p)
	}
	s.valueEnd(s.at(i+1), kindOther)
	return i + 1
}

// key reads the opening quote of a member's key. Right after '{' it also
// takes the '}' of an empty object.
func (s *listScanner) key(p []byte, i int) int {
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
func (s *listScanner) colon(p []byte, i int) int {
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
func (s *listScanner) afterValue(p []byte, i int) int {
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
func (s *listScanner) trailing(p []byte, i int) int {
	if i = skipSpace(p, i); i == len(p) {
		return i
	}
	return s.fail(p)
}

// valueEnd ends a value (a container's once it has been closed); after is
// the position just past its last byte. What follows is a comma or a
// closer, but for the top-level object (see valueEnds).
func (s *listScanner) valueEnd(after int64, kind valueKind) {
	s.state = stAfterValue
	s.valueEnds(after, kind)
}
