package sim

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// An audit log is read one line at a time, and a line is one JSON
// object, but a line's size is not bounded: at the Request and
// RequestResponse levels an event carries the request's and the
// response's bodies (requestObject, responseObject), and the response to
// a list of a whole cluster's pods is hundreds of megabytes on one line.
// A replay needs none of the bodies, so lineReader scans each line as a
// stream, checking that it is well-formed JSON, copies the members of the
// top-level object other than the bodies into a small buffer, and lets
// the bodies pass without keeping them. What it keeps is bounded by
// maxKept, so reading costs time linear in the log's size and memory
// independent of it. A line that breaks off (a syntax error, a raw
// newline inside a string, the end of the input) ends at its newline,
// and the next line is read afresh: one bad line costs itself only.

const (
	// maxKept bounds the members of one event kept for decoding: the
	// event without its bodies. Real events keep a few hundred bytes to
	// a few kilobytes (annotations, user extras); a megabyte is not an
	// audit event.
	maxKept = 1 << 20
	// maxDepth bounds the nesting of a line's JSON, as encoding/json
	// bounds it.
	maxDepth = 10000
)

// bodyMembers are the members lineReader drops: the bodies that the
// Request and RequestResponse levels add to an event.
var bodyMembers = [...]string{"requestObject", "responseObject"}

// errTooLarge is why a line whose kept members exceed maxKept is skipped.
var errTooLarge = fmt.Errorf("the event without its bodies is over %d bytes", maxKept)

// syntaxError is what is wrong with a line that is not JSON.
type syntaxError struct {
	msg string
	col int64
}

func (e *syntaxError) Error() string { return fmt.Sprintf("column %d: %s", e.col, e.msg) }

// lineReader reads the lines of one audit log.
type lineReader struct {
	r    *bufio.Reader
	line int64 // the number of the line being read (1-based)
	col  int64 // bytes read of the current line
	eol  bool  // the current line's newline (or the input's end) was read
	kept []byte
	key  []byte
}

// newLineReader reads r, decompressing it first when it starts with
// gzip's magic number (an archived .gz log; concatenated gzip members
// read as one stream, as gzip -d reads them).
func newLineReader(r io.Reader) (*lineReader, io.Closer, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var closer io.Closer
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		br, closer = bufio.NewReaderSize(zr, 64<<10), zr
	}
	return &lineReader{r: br}, closer, nil
}

// next reads the next non-blank line. It returns the line's top-level
// object without its bodies (valid until the next call), or skip, what
// makes the line unusable (a *syntaxError, errTooLarge, or errNotObject
// for JSON that is not an object). err is io.EOF at the end of the input,
// or the input's own error.
func (lr *lineReader) next() (obj []byte, skip, err error) {
	for {
		lr.line++
		lr.col, lr.eol = 0, false
		c, err := lr.nonSpace()
		if err == io.EOF && lr.col == 0 {
			return nil, nil, io.EOF
		}
		if err != nil && err != io.EOF {
			return nil, nil, err
		}
		if c == '\n' || err == io.EOF {
			continue // blank line
		}
		obj, skip, err := lr.object(c)
		if err != nil {
			return nil, nil, err
		}
		if skip == nil || skip == errNotObject {
			// Nothing but blanks may follow the value on its line.
			if c, err := lr.nonSpace(); err != nil && err != io.EOF {
				return nil, nil, err
			} else if err == nil && c != '\n' {
				skip = lr.unexpected(c, "after the JSON value")
			}
		}
		if skip != nil {
			if err := lr.skipLine(); err != nil {
				return nil, nil, err
			}
			return nil, skip, nil
		}
		return obj, nil, nil
	}
}

// errNotObject is why a line holding JSON other than an object is skipped.
var errNotObject = errors.New("the line is JSON but not an object")

// object reads a line's value, first byte c: an object's members other
// than the bodies go to lr.kept; any other value is checked and refused.
func (lr *lineReader) object(c byte) ([]byte, error, error) {
	lr.kept = lr.kept[:0]
	if c != '{' {
		if skip, err := lr.valueFrom(c, false, 1); skip != nil || err != nil {
			return nil, skip, err
		}
		return nil, errNotObject, nil
	}
	lr.kept = append(lr.kept, '{')
	c, err := lr.nonSpace()
	if err != nil || c == '}' {
		if err != nil {
			return lr.broken(err)
		}
		return append(lr.kept, '}'), nil, nil
	}
	for {
		if c != '"' {
			return nil, lr.unexpected(c, "where a member's name should be"), nil
		}
		lr.key = append(lr.key[:0], '"')
		if skip, err := lr.str(&lr.key); skip != nil || err != nil {
			return nil, skip, err
		}
		if c, err = lr.nonSpace(); err != nil {
			return lr.broken(err)
		}
		if c != ':' {
			return nil, lr.unexpected(c, "after a member's name"), nil
		}
		keep := !isBody(lr.key)
		if keep {
			if len(lr.kept) > 1 {
				lr.kept = append(lr.kept, ',')
			}
			lr.kept = append(lr.kept, lr.key...)
			lr.kept = append(lr.kept, ':')
		}
		if skip, err := lr.value(keep, 1); skip != nil || err != nil {
			return nil, skip, err
		}
		if len(lr.kept) > maxKept {
			return nil, errTooLarge, nil
		}
		if c, err = lr.nonSpace(); err != nil {
			return lr.broken(err)
		}
		switch c {
		case ',':
			if c, err = lr.nonSpace(); err != nil {
				return lr.broken(err)
			}
		case '}':
			return append(lr.kept, '}'), nil, nil
		default:
			return nil, lr.unexpected(c, "after a member"), nil
		}
	}
}

// isBody reports whether a quoted member name is one of bodyMembers.
func isBody(quoted []byte) bool {
	for _, m := range bodyMembers {
		if len(quoted) == len(m)+2 && string(quoted[1:len(quoted)-1]) == m {
			return true
		}
	}
	return false
}

// broken turns a read error inside a line into what next answers: the
// end of the input cuts the line short (a skip); any other error is the
// input's.
func (lr *lineReader) broken(err error) ([]byte, error, error) {
	if err == io.EOF {
		return nil, lr.syntax("the line ends inside its JSON"), nil
	}
	return nil, nil, err
}

// value reads one JSON value, appending it to lr.kept when keep is set.
func (lr *lineReader) value(keep bool, depth int) (skip, err error) {
	c, err := lr.nonSpace()
	if err != nil {
		_, skip, err = lr.broken(err)
		return skip, err
	}
	return lr.valueFrom(c, keep, depth)
}

// valueFrom reads the value whose first byte c was just read.
func (lr *lineReader) valueFrom(c byte, keep bool, depth int) (skip, err error) {
	if depth > maxDepth {
		return lr.syntax("nested too deeply"), nil
	}
	var dst *[]byte
	if keep {
		dst = &lr.kept
		lr.kept = append(lr.kept, c)
	}
	switch {
	case c == '"':
		return lr.str(dst)
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		c, err := lr.nonSpace()
		if err != nil {
			_, skip, err = lr.broken(err)
			return skip, err
		}
		if c == end {
			if keep {
				lr.kept = append(lr.kept, c)
			}
			return nil, nil
		}
		for {
			if end == '}' {
				if c != '"' {
					return lr.unexpected(c, "where a member's name should be"), nil
				}
				if keep {
					lr.kept = append(lr.kept, c)
				}
				if skip, err := lr.str(dst); skip != nil || err != nil {
					return skip, err
				}
				if c, err = lr.nonSpace(); err != nil {
					_, skip, err = lr.broken(err)
					return skip, err
				}
				if c != ':' {
					return lr.unexpected(c, "after a member's name"), nil
				}
				if keep {
					lr.kept = append(lr.kept, c)
				}
				if skip, err := lr.value(keep, depth+1); skip != nil || err != nil {
					return skip, err
				}
			} else if skip, err := lr.valueFrom(c, keep, depth+1); skip != nil || err != nil {
				return skip, err
			}
			if keep && len(lr.kept) > maxKept {
				return errTooLarge, nil
			}
			if c, err = lr.nonSpace(); err != nil {
				_, skip, err = lr.broken(err)
				return skip, err
			}
			if keep {
				lr.kept = append(lr.kept, c)
			}
			if c == end {
				return nil, nil
			}
			if c != ',' {
				return lr.unexpected(c, "inside a value"), nil
			}
			if c, err = lr.nonSpace(); err != nil {
				_, skip, err = lr.broken(err)
				return skip, err
			}
		}
	case c == '-' || c >= '0' && c <= '9':
		return lr.number(dst)
	case c == 't':
		return lr.literal("rue", dst)
	case c == 'f':
		return lr.literal("alse", dst)
	case c == 'n':
		return lr.literal("ull", dst)
	}
	return lr.unexpected(c, "where a value should be"), nil
}

// str reads the rest of a string whose opening quote was read (and, when
// dst is set, appended to it), appending the rest to dst.
func (lr *lineReader) str(dst *[]byte) (skip, err error) {
	for {
		// The plain bytes already buffered go in one step; the
		// quote, escapes and control characters one by one.
		buf, err := lr.r.Peek(max(lr.r.Buffered(), 1))
		if len(buf) == 0 && err != nil {
			lr.eol = true
			_, skip, err = lr.broken(err)
			return skip, err
		}
		if len(buf) > 0 {
			n := 0
			for n < len(buf) && buf[n] != '"' && buf[n] != '\\' && buf[n] >= 0x20 {
				n++
			}
			if n > 0 {
				if dst != nil {
					if *dst = append(*dst, buf[:n]...); len(*dst) > maxKept {
						return errTooLarge, nil
					}
				}
				_, _ = lr.r.Discard(n)
				lr.col += int64(n)
			}
		}
		c, err := lr.byte()
		if err != nil {
			_, skip, err = lr.broken(err)
			return skip, err
		}
		if dst != nil {
			if *dst = append(*dst, c); len(*dst) > maxKept {
				return errTooLarge, nil
			}
		}
		switch {
		case c == '"':
			return nil, nil
		case c < 0x20:
			if c == '\n' {
				return lr.syntax("the line ends inside a string"), nil
			}
			return lr.syntax(fmt.Sprintf("control character %q inside a string", c)), nil
		case c == '\\':
			e, err := lr.byte()
			if err != nil {
				_, skip, err = lr.broken(err)
				return skip, err
			}
			if dst != nil {
				*dst = append(*dst, e)
			}
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for range 4 {
					h, err := lr.byte()
					if err != nil {
						_, skip, err = lr.broken(err)
						return skip, err
					}
					if !isHex(h) {
						return lr.unexpected(h, "in a \\u escape"), nil
					}
					if dst != nil {
						*dst = append(*dst, h)
					}
				}
			default:
				if e == '\n' {
					return lr.syntax("the line ends inside a string"), nil
				}
				return lr.syntax(fmt.Sprintf("invalid escape \\%c", e)), nil
			}
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number reads the rest of a number whose first byte was read. The
// grammar is checked loosely (a kept number is checked again when it is
// decoded; a dropped one is never used).
func (lr *lineReader) number(dst *[]byte) (skip, err error) {
	for {
		c, err := lr.byte()
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' {
			if dst != nil {
				if *dst = append(*dst, c); len(*dst) > maxKept {
					return errTooLarge, nil
				}
			}
			continue
		}
		lr.unread()
		return nil, nil
	}
}

// literal reads the rest of true, false or null.
func (lr *lineReader) literal(rest string, dst *[]byte) (skip, err error) {
	for i := range len(rest) {
		c, err := lr.byte()
		if err != nil {
			_, skip, err = lr.broken(err)
			return skip, err
		}
		if c != rest[i] {
			return lr.unexpected(c, "inside a literal"), nil
		}
		if dst != nil {
			*dst = append(*dst, c)
		}
	}
	return nil, nil
}

// byte reads the line's next byte.
func (lr *lineReader) byte() (byte, error) {
	c, err := lr.r.ReadByte()
	if err != nil {
		lr.eol = true
		return 0, err
	}
	lr.col++
	if c == '\n' {
		lr.eol = true
	}
	return c, nil
}

// unread gives back the last byte read.
func (lr *lineReader) unread() {
	_ = lr.r.UnreadByte()
	lr.col--
	lr.eol = false
}

// nonSpace reads the next byte that is not a space, tab or carriage
// return (a newline ends the line, so it is not blank here).
func (lr *lineReader) nonSpace() (byte, error) {
	for {
		c, err := lr.byte()
		if err != nil || (c != ' ' && c != '\t' && c != '\r') {
			return c, err
		}
	}
}

// unexpected makes the syntax error of byte c, read where it cannot be.
func (lr *lineReader) unexpected(c byte, where string) error {
	if c == '\n' {
		return lr.syntax("the line ends inside its JSON")
	}
	return lr.syntax(fmt.Sprintf("%q %s", c, where))
}

// syntax makes a syntax error at the current column.
func (lr *lineReader) syntax(msg string) error {
	return &syntaxError{msg: msg, col: lr.col}
}

// skipLine discards the rest of the current line, if its newline was not
// read yet, without keeping it.
func (lr *lineReader) skipLine() error {
	for !lr.eol {
		b, err := lr.r.ReadSlice('\n')
		lr.col += int64(len(b))
		switch {
		case err == nil:
			lr.eol = true
		case err == io.EOF:
			return nil
		case errors.Is(err, bufio.ErrBufferFull):
		default:
			return err
		}
	}
	return nil
}
