package apfhttp

// captureSize is how many decoded bytes of a string the scanner keeps: more
// than the longest name it compares strings with ("remainingItemCount").
const captureSize = 24

// stringScan is the string being read.
type stringScan struct {
	key     bool // it is a member's key
	capture bool // its text matters: keep it
	// text holds the first captureSize decoded bytes of a captured
	// string, and n its decoded length, or captureSize+1 for any longer
	// string: one that equals none of the names it is compared with.
	text [captureSize]byte
	n    int
	// The \u escape being read: its digits so far and their value.
	hexDigits int
	hexValue  rune
}

// beginString starts a string after its opening quote.
func (s *listScanner) beginString(key, capture bool) {
	s.str.key, s.str.capture, s.str.n = key, capture, 0
	s.state = stString
}

// endsPlainText marks the bytes that end a run of a string's plain text:
// the quote, the backslash, and the control characters JSON forbids there.
var endsPlainText = func() (t [256]bool) {
	for b := range 0x20 {
		t[b] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// stringText reads a string's plain text up to its closing quote or a
// backslash. This is where most of a body is read, so the run is scanned
// with nothing but a table look-up per byte.
func (s *listScanner) stringText(p []byte, i int) int {
	j := i
	for j < len(p) && !endsPlainText[p[j]] {
		j++
	}
	if s.str.capture {
		s.str.keep(p[i:j]...)
	}
	if j == len(p) {
		return j
	}
	switch p[j] {
	case '"':
		s.stringEnd(s.at(j + 1))
	case '\\':
		s.state = stEscape
	default: // a control character
		return s.fail(p)
	}
	return j + 1
}

// escape reads the byte after a backslash.
func (s *listScanner) escape(p []byte, i int) int {
	var decoded byte
	switch b := p[i]; b {
	case '"', '\\', '/':
		decoded = b
	case 'b':
		decoded = '\b'
	case 'f':
		decoded = '\f'
	case 'n':
		decoded = '\n'
	case 'r':
		decoded = '\r'
	case 't':
		decoded = '\t'
	case 'u':
		s.str.hexDigits, s.str.hexValue = 0, 0
		s.state = stUnicode
		return i + 1
	default:
		return s.fail(p)
	}
	if s.str.capture {
		s.str.keep(decoded)
	}
	s.state = stString
	return i + 1
}

// unicodeEscape reads the four hex digits of a \u escape.
func (s *listScanner) unicodeEscape(p []byte, i int) int {
	for ; i < len(p); i++ {
		h := hexDigit(p[i])
		if h < 0 {
			return s.fail(p)
		}
		s.str.hexValue = s.str.hexValue<<4 | h
		if s.str.hexDigits++; s.str.hexDigits == 4 {
			if s.str.capture {
				s.str.keepRune(s.str.hexValue)
			}
			s.state = stString
			return i + 1
		}
	}
	return i
}

// hexDigit returns the value of a hex digit, or -1.
func hexDigit(b byte) rune {
	switch {
	case b >= '0' && b <= '9':
		return rune(b - '0')
	case b >= 'a' && b <= 'f':
		return rune(b-'a') + 10
	case b >= 'A' && b <= 'F':
		return rune(b-'A') + 10
	}
	return -1
}

// keep adds decoded bytes to a captured string.
func (t *stringScan) keep(b ...byte) {
	if t.n < len(t.text) {
		copy(t.text[t.n:], b)
	}
	t.n = min(t.n+len(b), len(t.text)+1)
}

// keepRune adds the character of a \u escape to a captured string. The
// names strings are compared with are ASCII, so a character beyond ASCII
// is kept as the one byte 0x80, which none of them holds: the string is
// then not empty and equals none of them, all that is asked of it.
func (t *stringScan) keepRune(r rune) {
	if r < 0x80 {
		t.keep(byte(r))
	} else {
		t.keep(0x80)
	}
}

// is reports whether the captured string is exactly name.
func (t *stringScan) is(name string) bool {
	return t.n == len(name) && string(t.text[:t.n]) == name
}

// stringEnd ends a string; after is the position just past its closing
// quote.
func (s *listScanner) stringEnd(after int64) {
	if s.str.key {
		s.keyRead()
		s.state = stColon
		return
	}
	s.valueEnd(after, kindString)
}
