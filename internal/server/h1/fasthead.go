package h1

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// The head of a common answer, written directly.
//
// AppendHead runs the server's whole answer code into memory (a pooled
// detached connection and buffered writer, WriteHeader, FlushError,
// appendHeader), because that code settles the framing of any answer to
// any request, and AppendHead has to write what the server writes. A
// gateway relays mostly one kind of answer, though: a final status with
// a body, to a keep-alive HTTP/1.1 request, with a header an upstream
// sent (canonical names, clean values, a Content-Length or none). For
// that kind the server's rules reduce to a few facts, and the head is:
//
//   - the status line, appendStatusLine's for HTTP/1.1;
//   - every field of h, names in byte order (the server sorts them so),
//     each value of a name on a line of its own, in h's order, as it is;
//   - a Date dated now (the clock's for the zero time) when h has none,
//     after h's fields: the server adds it last when it adds it;
//   - "Transfer-Encoding: chunked" when h has no Content-Length (the
//     server chunks a body of unknown length for an HTTP/1.1 client), and
//     nothing more when h has a valid one, which goes out with h's other
//     fields and frames the body;
//   - the empty line;
//
// and the connection stays open after the answer. appendHeadFast writes
// that head and nothing else: whatever would bring another of the
// server's rules into play, it declines (ok false), leaving the answer to
// the server's own code, so that its output cannot differ from
// AppendHead's. It declines:
//
//   - a request other than HTTP/1.1 (1.0 closes, or keeps alive on its
//     own terms, and never chunks);
//   - HEAD (no body, so no chunking); CONNECT (whose success turns the
//     connection into a tunnel: not a common answer, and kept out of the
//     model); PRI (the HTTP/2 preface, which the server recognizes by its
//     Proto string, whatever ProtoMajor and ProtoMinor say, and closes
//     after);
//   - a request that asks to close: req.Close, or "close" among the
//     tokens of its Connection field's first value, which is the one the
//     server reads (it closes after the answer and says so in it);
//   - a status below 200 (informational ones are written at once,
//     without a Date; 101 takes the connection over), 204 and 304
//     (neither has a body, so fields are dropped and nothing is chunked),
//     and one above 999 (WriteHeader refuses it);
//   - a header of more than maxFastFields names, sorted here in an array
//     on the stack;
//   - a name that is not a valid field name in canonical form: the server
//     drops invalid names silently, and recognizes its own fields only
//     by their canonical spelling; declining every other spelling keeps
//     the model from having to know which lookups are exact;
//   - a name with no values (present, so it counts, but nothing to write);
//   - Transfer-Encoding, Connection and Trailer (each changes the framing
//     or the connection's fate), and names with http.TrailerPrefix (not
//     valid field names, so declined with them);
//   - a Content-Length other than a single value of decimal digits that
//     fits an int64 (the server takes a sign too, and keeps an invalid
//     one in the header while it chunks the body);
//   - a value the server would change: one with a CR or an LF (replaced
//     by spaces), or beginning or ending with a space or a tab (trimmed).
//
// The Server assumed is AppendHead's: keep-alives on, not shutting down,
// the request's body read to its end.

// maxFastFields is the most field names appendHeadFast takes: more than
// an upstream's answer usually carries, few enough to sort on the stack.
const maxFastFields = 32

// fastField is one name of the header appendHeadFast writes, with its
// values.
type fastField struct {
	name   string
	values []string
}

// appendHeadFast appends to dst what AppendHead appends for an answer of
// the common kind (above), and says whether the body is chunked; the
// connection stays open after it. ok false means the answer is not of
// that kind, and dst is returned as it came. It allocates nothing when
// dst has room for the head, and does not modify h.
func appendHeadFast(dst []byte, req *http.Request, status int, h http.Header, now time.Time) (out []byte, chunked, ok bool) {
	if req.ProtoMajor != 1 || req.ProtoMinor != 1 || req.Close {
		return dst, false, false
	}
	switch req.Method {
	case http.MethodHead, http.MethodConnect, "PRI":
		return dst, false, false
	}
	// req.Header.Get("Connection"), without Get's canonicalizing of a
	// name already canonical.
	if conn := req.Header["Connection"]; len(conn) > 0 && hasToken(conn[0], "close") {
		return dst, false, false
	}
	if status < 200 || status > 999 || status == http.StatusNoContent || status == http.StatusNotModified {
		return dst, false, false
	}
	if len(h) > maxFastFields {
		return dst, false, false
	}
	var fields [maxFastFields]fastField
	n := 0
	hasLength, hasDate := false, false
	size := 0 // of the fields' lines
	for name, values := range h {
		if len(values) == 0 || !canonicalFieldName(name) || n == len(fields) {
			return dst, false, false
		}
		switch name {
		case "Content-Length":
			if len(values) != 1 || !plainLength(values[0]) {
				return dst, false, false
			}
			hasLength = true
		case "Date":
			hasDate = true
		case "Transfer-Encoding", "Connection", "Trailer":
			return dst, false, false
		}
		for _, v := range values {
			if !plainValue(v) {
				return dst, false, false
			}
			size += len(name) + len(": ") + len(v) + len("\r\n")
		}
		fields[n] = fastField{name, values}
		n++
	}
	sortFields(fields[:n])

	if text := http.StatusText(status); text != "" {
		size += len("HTTP/1.1 200 ") + len(text) + len("\r\n")
	} else {
		size += len("HTTP/1.1 600 status code 600\r\n")
	}
	if !hasDate {
		size += len("Date: Mon, 02 Jan 2006 15:04:05 GMT\r\n")
	}
	if !hasLength {
		size += len("Transfer-Encoding: chunked\r\n")
	}
	size += len("\r\n")
	// Room for the whole head at once, when dst lacks it.
	dst = slices.Grow(dst, size)

	dst = appendStatusLine(dst, true, status)
	for _, f := range fields[:n] {
		for _, v := range f.values {
			dst = append(dst, f.name...)
			dst = append(dst, ": "...)
			dst = append(dst, v...)
			dst = append(dst, "\r\n"...)
		}
	}
	if !hasDate {
		if now.IsZero() {
			now = time.Now()
		}
		dst = append(dst, "Date: "...)
		dst = appendHTTPDate(dst, now)
		dst = append(dst, "\r\n"...)
	}
	if !hasLength {
		dst = append(dst, "Transfer-Encoding: chunked\r\n"...)
	}
	return append(dst, "\r\n"...), !hasLength, true
}

// sortFields puts fields in the order of their names, bytewise, the
// order the server writes names in (names are distinct: a map's keys).
// An insertion sort, in place: a handful of fields, in a map's order.
func sortFields(fields []fastField) {
	for i := 1; i < len(fields); i++ {
		f := fields[i]
		j := i
		for ; j > 0 && nameAfter(fields[j-1].name, f.name); j-- {
			fields[j] = fields[j-1]
		}
		fields[j] = f
	}
}

// nameAfter says whether field name a sorts after b, bytewise: a > b,
// decided on the first bytes when they differ, as they mostly do.
func nameAfter(a, b string) bool {
	if a != "" && b != "" && a[0] != b[0] {
		return a[0] > b[0]
	}
	return a > b
}

// canonicalFieldName says whether name is a valid field name (a token)
// spelled as http.CanonicalHeaderKey spells it: a letter upper case at
// the start and after a hyphen, lower case elsewhere.
func canonicalFieldName(name string) bool {
	if name == "" {
		return false
	}
	want := nameUpper
	for i := 0; i < len(name); i++ {
		c := name[i]
		if nameBytes[c]&want == 0 {
			return false
		}
		want = nameLower
		if c == '-' {
			want = nameUpper
		}
	}
	return true
}

// nameBytes says where each byte may stand in a canonical field name:
// nameUpper where a letter is upper case (the start, after a hyphen),
// nameLower elsewhere; both for a token's bytes other than letters,
// neither for bytes outside tokens.
var nameBytes = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case !httpguts.IsTokenRune(rune(c)):
		case 'A' <= c && c <= 'Z':
			t[c] = nameUpper
		case 'a' <= c && c <= 'z':
			t[c] = nameLower
		default:
			t[c] = nameUpper | nameLower
		}
	}
	return t
}()

const (
	nameUpper uint8 = 1 << iota
	nameLower
)

// plainLength says whether v is a Content-Length the server takes as it
// is: decimal digits alone (leading zeros allowed), at most
// math.MaxInt64.
func plainLength(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	const maxLength = "9223372036854775807"
	v = strings.TrimLeft(v, "0")
	return len(v) < len(maxLength) || len(v) == len(maxLength) && v <= maxLength
}

// plainValue says whether the server writes field value v unchanged: no
// line break to replace, no space or tab to trim at either end.
func plainValue(v string) bool {
	if v == "" {
		return true
	}
	if c := v[0]; c == ' ' || c == '\t' {
		return false
	}
	if c := v[len(v)-1]; c == ' ' || c == '\t' {
		return false
	}
	return strings.IndexByte(v, '\n') < 0 && strings.IndexByte(v, '\r') < 0
}

// appendHTTPDate appends t in http.TimeFormat, in UTC, as t's
// AppendFormat does, without reading the layout each time; years outside
// 0 to 9999, which the layout writes otherwise, go through AppendFormat.
func appendHTTPDate(dst []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(dst, http.TimeFormat)
	}
	hour, minute, second := t.Clock()
	const (
		days   = "SunMonTueWedThuFriSat"
		months = "JanFebMarAprMayJunJulAugSepOctNovDec"
	)
	d := 3 * int(t.Weekday())
	m := 3 * (int(month) - 1)
	return append(dst,
		days[d], days[d+1], days[d+2], ',', ' ',
		'0'+byte(day/10), '0'+byte(day%10), ' ',
		months[m], months[m+1], months[m+2], ' ',
		'0'+byte(year/1000), '0'+byte(year/100%10), '0'+byte(year/10%10), '0'+byte(year%10), ' ',
		'0'+byte(hour/10), '0'+byte(hour%10), ':',
		'0'+byte(minute/10), '0'+byte(minute%10), ':',
		'0'+byte(second/10), '0'+byte(second%10), ' ', 'G', 'M', 'T')
}
