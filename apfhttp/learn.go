package apfhttp

import (
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/apfproject/apf/request"
	"github.com/apfproject/apf/workestimate"
)

// This file holds itemCounter, the streaming scanner that reads list
// responses on their way to the client (see doc.go, "Learned object
// counts").
//
// The scanner is a JSON validator driven one byte at a time by an explicit
// state, so that a body can arrive in chunks split anywhere, even inside a
// key, an escape or a number, and nothing is ever buffered. Nesting is kept
// as a depth and one bit per level (object or array), which bounds it
// without recursion and still checks that brackets match. Only a few
// places carry meaning: the keys of the top-level object, the elements of
// its "items" (or a Table's "rows") array, the "kind" string, and two keys
// of the "metadata" object. Everything deeper is validated and skipped.

// maxScanDepth bounds nesting, as in encoding/json: a deeper document is
// not counted.
const maxScanDepth = 10000

// scanState is where the scanner is in the JSON grammar.
type scanState uint8

const (
	sValue      scanState = iota // a value is due
	sValueOrEnd                  // after '[': a value or ']'
	sKeyOrEnd                    // after '{': a key or '}'
	sKey                         // after ',' in an object: a key
	sColon                       // after a key: ':'
	sAfter                       // after a value inside a container: ',' or the closer
	sDone                        // the top-level object is closed: whitespace only
	sFail                        // not a list; the rest is ignored
	sString                      // inside a string
	sEsc                         // after a backslash in a string
	sHex                         // inside the four hex digits of \u
	sNumMinus                    // after a leading '-'
	sNumZero                     // after a leading '0'
	sNumInt                      // in the integer digits
	sNumDot                      // after '.'
	sNumFrac                     // in the fraction digits
	sNumE                        // after 'e' or 'E'
	sNumESign                    // after the exponent's sign
	sNumExp                      // in the exponent digits
	sLiteral                     // inside true, false or null
)

// What a key of the top-level object announces.
const (
	fOther uint8 = iota
	fKind
	fItems
	fRows
	fMetadata
)

// What a key of the metadata object announces.
const (
	mOther uint8 = iota
	mRemaining
	mContinue
)

// What the container at depth 2 (a value of the top-level object) is.
const (
	cOther uint8 = iota
	cItems
	cRows
	cMetadata
)

// The kinds of value valueEnd tells apart.
const (
	vOther uint8 = iota
	vString
	vNumber
	vNull
)

// listCount is what a list response says about its items.
type listCount struct {
	// Items is the number of elements of the counted array, Bytes the
	// bytes they span (each from its first byte to its last).
	Items, Bytes int64
	// Remaining is metadata.remainingItemCount, when HasRemaining.
	Remaining    int64
	HasRemaining bool
	// Continue says metadata.continue is a non-empty string.
	Continue bool
	// Table says the counted array is the rows of a Table.
	Table bool
}

// arrayCount is the count of one candidate array.
type arrayCount struct {
	present      bool
	items, bytes int64
}

// scanVars is the scanner's state apart from its nesting bits.
type scanVars struct {
	state scanState
	depth int
	pos   int64 // bytes consumed before the current chunk

	// The string being scanned.
	strKey  bool // it is a key
	capture bool // its decoded bytes go to buf
	buf     [24]byte
	bufLen  int
	bufOver bool // it decoded to more than len(buf) bytes
	hexN    int
	hexVal  rune

	// The literal being matched, and how much of it has been.
	lit    string
	litPos int

	// A number being read as metadata.remainingItemCount.
	numTrack bool
	numOK    bool
	numNeg   bool
	numVal   int64

	// Meaning.
	field     uint8 // of the top-level value being scanned
	metaField uint8 // of the metadata value being scanned
	cont2     uint8 // of the container open at depth 2
	elemStart int64 // where the current element of a counted array began

	kindTable    bool
	items, rows  arrayCount
	remaining    int64
	hasRemaining bool
	hasContinue  bool
}

// itemCounter counts the items of a JSON list response fed to it in chunks
// (Write). It keeps no part of the body and does not allocate. The zero
// value is ready; reset makes it so again.
type itemCounter struct {
	v scanVars
	// arrays has bit d set when the container at depth d+1 is an array.
	arrays [(maxScanDepth + 63) / 64]uint64
}

// reset readies the counter for another body.
func (c *itemCounter) reset() { c.v = scanVars{} }

// strSpecial marks the bytes that end the plain run of a string: the
// quote, the backslash and the control characters JSON forbids there.
var strSpecial = func() (t [256]bool) {
	for b := range 0x20 {
		t[b] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// Write feeds the next chunk of the body. It never fails: a body that is
// not a list makes result report so.
func (c *itemCounter) Write(p []byte) (int, error) {
	c.feed(p)
	return len(p), nil
}

// fail gives up on the body.
func (c *itemCounter) fail() { c.v.state = sFail }

// feed runs the state machine over one chunk.
func (c *itemCounter) feed(p []byte) {
	v := &c.v
	base := v.pos
	v.pos += int64(len(p))
	i := 0
	for i < len(p) {
		switch v.state {
		case sFail:
			return

		case sString:
			j := i
			if v.capture {
				for j < len(p) && !strSpecial[p[j]] {
					c.captureByte(p[j])
					j++
				}
			} else {
				for j < len(p) && !strSpecial[p[j]] {
					j++
				}
			}
			i = j
			if i == len(p) {
				return
			}
			switch p[i] {
			case '"':
				i++
				c.stringEnd(base + int64(i))
			case '\\':
				v.state = sEsc
				i++
			default: // a control character
				c.fail()
				return
			}

		case sEsc:
			var d byte
			switch p[i] {
			case '"', '\\', '/':
				d = p[i]
			case 'b':
				d = '\b'
			case 'f':
				d = '\f'
			case 'n':
				d = '\n'
			case 'r':
				d = '\r'
			case 't':
				d = '\t'
			case 'u':
				v.state, v.hexN, v.hexVal = sHex, 0, 0
				i++
				continue
			default:
				c.fail()
				return
			}
			if v.capture {
				c.captureByte(d)
			}
			v.state = sString
			i++

		case sHex:
			h := hexDigit(p[i])
			if h < 0 {
				c.fail()
				return
			}
			v.hexVal = v.hexVal<<4 | h
			v.hexN++
			i++
			if v.hexN == 4 {
				if v.capture {
					if v.hexVal < 0x80 {
						c.captureByte(byte(v.hexVal))
					} else {
						// Not ASCII: enough to tell the string
						// is not empty and matches no key of
						// interest.
						c.captureByte(0x80)
					}
				}
				v.state = sString
			}

		case sValue, sValueOrEnd:
			b := p[i]
			if isSpace(b) {
				i++
				continue
			}
			if b == ']' && v.state == sValueOrEnd {
				if !c.pop(true) {
					return
				}
				i++
				c.valueEnd(base+int64(i), vOther)
				continue
			}
			if !c.valueStart(b, base+int64(i)) {
				return
			}
			i++

		case sKeyOrEnd, sKey:
			b := p[i]
			if isSpace(b) {
				i++
				continue
			}
			switch {
			case b == '"':
				v.strKey = true
				v.capture = v.depth == 1 || (v.depth == 2 && v.cont2 == cMetadata)
				v.bufLen, v.bufOver = 0, false
				v.state = sString
				i++
			case b == '}' && v.state == sKeyOrEnd:
				if !c.pop(false) {
					return
				}
				i++
				c.valueEnd(base+int64(i), vOther)
			default:
				c.fail()
				return
			}

		case sColon:
			b := p[i]
			if isSpace(b) {
				i++
				continue
			}
			if b != ':' {
				c.fail()
				return
			}
			v.state = sValue
			i++

		case sAfter:
			b := p[i]
			if isSpace(b) {
				i++
				continue
			}
			switch b {
			case ',':
				if c.topIsArray() {
					v.state = sValue
				} else {
					v.state = sKey
				}
				i++
			case '}', ']':
				if !c.pop(b == ']') {
					return
				}
				i++
				c.valueEnd(base+int64(i), vOther)
			default:
				c.fail()
				return
			}

		case sDone:
			if !isSpace(p[i]) {
				c.fail()
				return
			}
			i++

		case sLiteral:
			if p[i] != v.lit[v.litPos] {
				c.fail()
				return
			}
			v.litPos++
			i++
			if v.litPos == len(v.lit) {
				kind := vOther
				if v.lit == "null" {
					kind = vNull
				}
				c.valueEnd(base+int64(i), kind)
			}

		case sNumMinus:
			switch b := p[i]; {
			case b == '0':
				v.state = sNumZero
			case b >= '1' && b <= '9':
				c.numDigit(b)
				v.state = sNumInt
			default:
				c.fail()
				return
			}
			i++

		case sNumZero, sNumInt:
			b := p[i]
			switch {
			case b >= '0' && b <= '9' && v.state == sNumInt:
				c.numDigit(b)
				i++
			case b == '.':
				v.numOK = false
				v.state = sNumDot
				i++
			case b == 'e' || b == 'E':
				v.numOK = false
				v.state = sNumE
				i++
			default:
				// The number ended before b, which the next
				// state reads.
				c.valueEnd(base+int64(i), vNumber)
			}

		case sNumDot:
			if b := p[i]; b < '0' || b > '9' {
				c.fail()
				return
			}
			v.state = sNumFrac
			i++

		case sNumFrac:
			b := p[i]
			switch {
			case b >= '0' && b <= '9':
				i++
			case b == 'e' || b == 'E':
				v.state = sNumE
				i++
			default:
				c.valueEnd(base+int64(i), vNumber)
			}

		case sNumE:
			switch b := p[i]; {
			case b == '+' || b == '-':
				v.state = sNumESign
			case b >= '0' && b <= '9':
				v.state = sNumExp
			default:
				c.fail()
				return
			}
			i++

		case sNumESign:
			if b := p[i]; b < '0' || b > '9' {
				c.fail()
				return
			}
			v.state = sNumExp
			i++

		case sNumExp:
			if b := p[i]; b >= '0' && b <= '9' {
				i++
				continue
			}
			c.valueEnd(base+int64(i), vNumber)
		}
	}
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

// captureByte appends a decoded byte of the string being captured.
func (c *itemCounter) captureByte(b byte) {
	v := &c.v
	if v.bufLen < len(v.buf) {
		v.buf[v.bufLen] = b
		v.bufLen++
	} else {
		v.bufOver = true
	}
}

// captured reports whether the captured string is exactly s.
func (c *itemCounter) captured(s string) bool {
	v := &c.v
	return !v.bufOver && string(v.buf[:v.bufLen]) == s
}

// numDigit adds a digit to the number being tracked, if any.
func (c *itemCounter) numDigit(b byte) {
	v := &c.v
	if !v.numTrack || !v.numOK {
		return
	}
	d := int64(b - '0')
	if v.numVal > (1<<63-1-d)/10 {
		v.numOK = false
		return
	}
	v.numVal = v.numVal*10 + d
}

// push opens a container.
func (c *itemCounter) push(array bool) bool {
	v := &c.v
	if v.depth >= maxScanDepth {
		c.fail()
		return false
	}
	d := v.depth
	if array {
		c.arrays[d/64] |= 1 << (d % 64)
	} else {
		c.arrays[d/64] &^= 1 << (d % 64)
	}
	v.depth++
	return true
}

// topIsArray reports whether the innermost open container is an array.
func (c *itemCounter) topIsArray() bool {
	d := c.v.depth - 1
	return c.arrays[d/64]&(1<<(d%64)) != 0
}

// pop closes the innermost container, which must be of the closer's kind.
func (c *itemCounter) pop(array bool) bool {
	if c.v.depth == 0 || c.topIsArray() != array {
		c.fail()
		return false
	}
	c.v.depth--
	return true
}

// valueStart begins the value whose first byte b is at absolute position
// at. It reports false when b cannot begin one (or not here).
func (c *itemCounter) valueStart(b byte, at int64) bool {
	v := &c.v
	switch v.depth {
	case 0:
		if b != '{' {
			c.fail()
			return false
		}
	case 1:
		switch b {
		case '[':
			switch v.field {
			case fItems:
				v.items = arrayCount{present: true}
				v.cont2 = cItems
			case fRows:
				v.rows = arrayCount{present: true}
				v.cont2 = cRows
			default:
				v.cont2 = cOther
			}
		case '{':
			v.cont2 = cOther
			if v.field == fMetadata {
				v.cont2 = cMetadata
			}
		}
	case 2:
		switch v.cont2 {
		case cItems:
			v.items.items++
			v.elemStart = at
		case cRows:
			v.rows.items++
			v.elemStart = at
		}
	}
	switch {
	case b == '{':
		if !c.push(false) {
			return false
		}
		v.state = sKeyOrEnd
	case b == '[':
		if !c.push(true) {
			return false
		}
		v.state = sValueOrEnd
	case b == '"':
		v.strKey = false
		v.capture = (v.depth == 1 && v.field == fKind) ||
			(v.depth == 2 && v.cont2 == cMetadata && v.metaField == mContinue)
		v.bufLen, v.bufOver = 0, false
		v.state = sString
	case b == '-' || (b >= '0' && b <= '9'):
		v.numTrack = v.depth == 2 && v.cont2 == cMetadata && v.metaField == mRemaining
		v.numOK, v.numNeg, v.numVal = true, b == '-', 0
		switch {
		case b == '-':
			v.state = sNumMinus
		case b == '0':
			v.state = sNumZero
		default:
			c.numDigit(b)
			v.state = sNumInt
		}
	case b == 't':
		v.lit, v.litPos, v.state = "true", 1, sLiteral
	case b == 'f':
		v.lit, v.litPos, v.state = "false", 1, sLiteral
	case b == 'n':
		v.lit, v.litPos, v.state = "null", 1, sLiteral
	default:
		c.fail()
		return false
	}
	return true
}

// stringEnd ends a string; after is the position just past its quote.
func (c *itemCounter) stringEnd(after int64) {
	v := &c.v
	if !v.strKey {
		c.valueEnd(after, vString)
		return
	}
	v.state = sColon
	if !v.capture {
		return
	}
	if v.depth == 1 {
		v.field = fOther
		switch {
		case c.captured("items"):
			// A repeated key replaces the earlier value, as when
			// decoding into a map.
			v.field, v.items = fItems, arrayCount{}
		case c.captured("rows"):
			v.field, v.rows = fRows, arrayCount{}
		case c.captured("kind"):
			v.field, v.kindTable = fKind, false
		case c.captured("metadata"):
			v.field, v.hasRemaining, v.hasContinue = fMetadata, false, false
		}
		return
	}
	v.metaField = mOther
	switch {
	case c.captured("remainingItemCount"):
		v.metaField, v.hasRemaining = mRemaining, false
	case c.captured("continue"):
		v.metaField, v.hasContinue = mContinue, false
	}
}

// valueEnd ends a value at the current depth (a container has already
// been popped); after is the position just past its last byte.
func (c *itemCounter) valueEnd(after int64, kind uint8) {
	v := &c.v
	switch v.depth {
	case 0:
		v.state = sDone
		return
	case 1:
		switch v.field {
		case fKind:
			v.kindTable = kind == vString && c.captured("Table")
		case fItems:
			if kind == vNull {
				v.items.present = true
			}
		case fRows:
			if kind == vNull {
				v.rows.present = true
			}
		}
	case 2:
		switch v.cont2 {
		case cItems:
			v.items.bytes += after - v.elemStart
		case cRows:
			v.rows.bytes += after - v.elemStart
		case cMetadata:
			switch {
			case v.metaField == mRemaining && kind == vNumber:
				if v.numOK && (!v.numNeg || v.numVal == 0) {
					v.remaining, v.hasRemaining = v.numVal, true
				}
			case v.metaField == mContinue && kind == vString:
				v.hasContinue = v.bufLen > 0 || v.bufOver
			}
		}
	}
	v.state = sAfter
}

// result reports what the body fed so far says, and whether it is a
// whole, well-formed list: a JSON object with an "items" array (or, when
// its kind is "Table", a "rows" array; a null counts as empty).
func (c *itemCounter) result() (listCount, bool) {
	v := &c.v
	if v.state != sDone {
		return listCount{}, false
	}
	arr := v.items
	table := false
	if v.kindTable && v.rows.present {
		arr, table = v.rows, true
	}
	if !arr.present {
		return listCount{}, false
	}
	lc := listCount{Items: arr.items, Bytes: arr.bytes, Continue: v.hasContinue, Table: table}
	if v.hasRemaining {
		lc.Remaining, lc.HasRemaining = v.remaining, true
	}
	return lc, true
}

// learnable reports whether a request is a list whose answer can teach
// object counts: a list of a whole resource (all namespaces, or one),
// without selectors, and not a continuation of an earlier page.
func learnable(info *request.Info, rawQuery string) bool {
	return info.IsResourceRequest && info.Verb == request.VerbList &&
		info.Subresource == "" && info.Name == "" &&
		info.FieldSelector == "" && info.LabelSelector == "" &&
		!hasContinue(rawQuery)
}

// hasContinue reports whether the query's first continue parameter is not
// empty, reading it as the API server does. Plain queries are scanned in
// place; one with percent escapes or semicolons goes through
// url.ParseQuery.
func hasContinue(raw string) bool {
	if strings.ContainsAny(raw, "%;") {
		values, _ := url.ParseQuery(raw)
		return values.Get("continue") != ""
	}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if key, value, _ := strings.Cut(pair, "="); key == "continue" {
			return value != ""
		}
	}
	return false
}

// listWriterPool recycles listWriters, so that a list request pays no
// allocation for its counting.
var listWriterPool = sync.Pool{New: func() any { return new(listWriter) }}

// serveList serves a learnable list with its body streaming through an
// itemCounter, and tells l what a complete answer said.
func serveList(l *workestimate.Learned, next http.Handler, w http.ResponseWriter, r *http.Request, info *request.Info) {
	lw := listWriterPool.Get().(*listWriter)
	lw.ResponseWriter = w
	returned := false
	defer func() {
		// A handler that panics skips the rest, and its writer is not
		// reused; a decompressor it started is stopped.
		if !returned && lw.inf != nil {
			lw.inf.abort()
		}
	}()
	next.ServeHTTP(lw, r)
	returned = true
	lw.observe(l, info)
	lw.ResponseWriter = nil
	lw.status, lw.counting, lw.gzip, lw.inf = 0, false, false, nil
	lw.ic.reset()
	listWriterPool.Put(lw)
}

// listWriter passes a list response through and counts its items on the
// way, when the response is a 200 in JSON, without content encoding or in
// gzip (decompressed on the side by an inflater).
type listWriter struct {
	http.ResponseWriter
	status   int  // the final status, once written; 0 before
	counting bool // the body goes through ic
	gzip     bool // ... through inf first
	inf      *inflater
	ic       itemCounter
	// lastKey is the last resource key built for a resource of a named
	// group, kept to spare the next list of it the concatenation.
	lastKey string
}

// begin records the final status and decides whether to count the body.
func (w *listWriter) begin(code int) {
	w.status = code
	h := w.ResponseWriter.Header()
	w.counting = false
	if code != http.StatusOK || !isJSON(h["Content-Type"]) {
		return
	}
	switch enc := h["Content-Encoding"]; {
	case identityEncoding(enc):
		w.counting = true
	case gzipEncoding(enc):
		w.counting, w.gzip = true, true
	}
}

func (w *listWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.begin(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *listWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.begin(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	if w.counting {
		switch {
		case err != nil:
			// The client has not received the whole body; nor
			// will the counter.
			w.counting = false
		case w.gzip:
			if n == 0 {
				break
			}
			if w.inf == nil {
				w.inf = startInflater(&w.ic)
			}
			w.counting = w.inf.write(p[:n])
		default:
			w.ic.feed(p[:n])
		}
	}
	return n, err
}

func (w *listWriter) Flush() {
	if w.status == 0 {
		w.begin(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *listWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe tells l about a complete list answer. A first page counts
// when it says how many items remain; one that only hands out a continue
// token does not.
func (w *listWriter) observe(l *workestimate.Learned, info *request.Info) {
	if w.inf != nil {
		// Always wait for the decompressor, whatever the verdict.
		if !w.inf.finish() {
			w.counting = false
		}
	}
	if !w.counting || (w.gzip && w.inf == nil) {
		return
	}
	lc, ok := w.ic.result()
	if !ok || (lc.Continue && !lc.HasRemaining) {
		return
	}
	o := workestimate.ListObservation{
		Resource:  w.key(info.APIGroup, info.Resource),
		Namespace: info.Namespace,
		Count:     lc.Items,
		Items:     lc.Items,
		Bytes:     lc.Bytes,
		Complete:  true,
	}
	if lc.HasRemaining {
		o.Count = satAdd(lc.Items, lc.Remaining)
	}
	if lc.Table {
		// A table row is not the object it describes: its size says
		// nothing about the objects'.
		o.Items, o.Bytes = 0, 0
	}
	l.Observe(time.Now(), o)
}

// key returns workestimate.Key(group, resource) without building it again
// when it is the writer's last one.
func (w *listWriter) key(group, resource string) string {
	if group == "" {
		return resource
	}
	k := w.lastKey
	if n := len(resource); len(k) == n+1+len(group) && k[:n] == resource && k[n] == '.' && k[n+1:] == group {
		return k
	}
	w.lastKey = workestimate.Key(group, resource)
	return w.lastKey
}

// satAdd adds two non-negative counts, saturating.
func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// isJSON reports whether a Content-Type is application/json, with or
// without parameters.
func isJSON(v []string) bool {
	if len(v) == 0 {
		return false
	}
	mt, _, _ := strings.Cut(v[0], ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

// identityEncoding reports whether a Content-Encoding leaves the body as
// it is.
func identityEncoding(v []string) bool {
	return len(v) == 0 || v[0] == "" || strings.EqualFold(v[0], "identity")
}

// gzipEncoding reports whether a Content-Encoding is gzip alone.
func gzipEncoding(v []string) bool {
	return len(v) == 1 && strings.EqualFold(strings.TrimSpace(v[0]), "gzip")
}
