package h1

import (
	"net/http"
	"net/url"
	"strconv"

	"golang.org/x/net/http/httpguts"
)

// The common request head, read without net/http's reader.
//
// Nearly every request a gateway carries has one simple shape: an
// upper-case method, a path of ordinary characters with perhaps a query,
// HTTP/1.1, one Host, and a handful of fields whose names are letters,
// digits and dashes and whose values are printable ASCII, every line
// ended by CRLF. parseCommon reads exactly that shape, in one pass over
// the bytes and with one copy of them behind every string of the
// request, into the request ParseRequest would return, and declines
// anything else: an obs-fold, a bare LF, a byte outside those sets, a
// second Host or Content-Length, a Transfer-Encoding, Trailer or
// Expect field. A declined head is read by http.ReadRequest and checked
// as before, so what parseCommon accepts is a subset of what ParseRequest
// accepts, and on it the two agree field for field (FuzzParseCommon).

// maxCommonFields is the most header fields parseCommon reads; a head
// with more goes the general way.
const maxCommonFields = 32

// field is one header line of a head: the offsets of its name and of its
// value (trimmed) in the head.
type field struct {
	name, nameEnd, value, valueEnd int
}

// parseCommon returns the request ParseRequest returns for head, or false
// when head is not of the common shape.
func parseCommon(head []byte) (*http.Request, bool) {
	var fields [maxCommonFields]field
	n := len(head)
	if n < 4 || string(head[n-4:]) != "\r\n\r\n" {
		return nil, false
	}

	// The request line: METHOD SP origin-form SP HTTP/1.1 CRLF.
	i := 0
	for i < n && 'A' <= head[i] && head[i] <= 'Z' {
		i++
	}
	if i == 0 || i >= n || head[i] != ' ' {
		return nil, false
	}
	methodEnd := i
	i++
	target := i
	if i >= n || head[i] != '/' {
		return nil, false
	}
	query := -1
	for ; i < n && head[i] != ' '; i++ {
		c := head[i]
		if query < 0 {
			if c == '?' {
				query = i + 1
			} else if !pathByte[c] {
				return nil, false
			}
		} else if c < 0x21 || c > 0x7e {
			return nil, false
		}
	}
	targetEnd := i
	const proto = " HTTP/1.1\r\n"
	if n-i < len(proto) || string(head[i:i+len(proto)]) != proto {
		return nil, false
	}
	i += len(proto)

	// The fields, up to the empty line.
	nf, host := 0, -1
	for i < n-2 {
		if nf == maxCommonFields {
			return nil, false
		}
		f := &fields[nf]
		f.name = i
		for i < n && nameByte[head[i]] {
			i++
		}
		if i == f.name || i >= n || head[i] != ':' {
			return nil, false
		}
		f.nameEnd = i
		i++
		for i < n && (head[i] == ' ' || head[i] == '\t') {
			i++
		}
		f.value = i
		for i < n && (head[i] >= 0x20 && head[i] <= 0x7e || head[i] == '\t') {
			i++
		}
		if i+1 >= n || head[i] != '\r' || head[i+1] != '\n' {
			return nil, false
		}
		f.valueEnd = i
		for f.valueEnd > f.value && (head[f.valueEnd-1] == ' ' || head[f.valueEnd-1] == '\t') {
			f.valueEnd--
		}
		i += 2
		if f.nameEnd-f.name == 4 && asciiEqualFold(string(head[f.name:f.nameEnd]), "Host") {
			if host >= 0 {
				return nil, false
			}
			host = nf
		}
		nf++
	}
	if host < 0 {
		return nil, false
	}

	// One copy of the head backs every string the request holds.
	s := string(head)
	hostValue := s[fields[host].value:fields[host].valueEnd]
	if !httpguts.ValidHostHeader(hostValue) {
		return nil, false
	}
	// The request and its URL, made in one allocation.
	both := new(requestURL)
	req, u := &both.req, &both.url
	*req = http.Request{
		Method:     s[:methodEnd],
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		RequestURI: s[target:targetEnd],
		Host:       hostValue,
		Body:       http.NoBody,
	}
	u.Path = req.RequestURI
	if query >= 0 {
		u.Path = s[target : query-1]
		u.RawQuery = s[query:targetEnd]
		// "/p?" keeps an empty query; "/p??" has the query "?".
		u.ForceQuery = query == targetEnd
	}
	req.URL = u

	h := make(http.Header, nf-1)
	values := make([]string, nf-1)
	for k := range nf {
		if k == host {
			continue
		}
		f := &fields[k]
		name := canonicalName(s, head, f.name, f.nameEnd)
		v := s[f.value:f.valueEnd]
		if vv := h[name]; vv != nil {
			h[name] = append(vv, v)
			continue
		}
		vv := values[:1:1]
		values = values[1:]
		vv[0] = v
		h[name] = vv
	}
	req.Header = h

	// What net/http's reader does with the fields it read.
	if _, ok := h["Transfer-Encoding"]; ok {
		return nil, false
	}
	if _, ok := h["Trailer"]; ok {
		return nil, false
	}
	if _, ok := h["Expect"]; ok {
		return nil, false
	}
	if cl := h["Content-Length"]; cl != nil {
		if len(cl) > 1 {
			return nil, false
		}
		length, err := strconv.ParseUint(cl[0], 10, 63)
		if err != nil {
			return nil, false
		}
		req.ContentLength = int64(length)
	}
	if p := h["Pragma"]; len(p) > 0 && p[0] == "no-cache" {
		if _, ok := h["Cache-Control"]; !ok {
			h["Cache-Control"] = []string{"no-cache"}
		}
	}
	req.Close = httpguts.HeaderValuesContainsToken(h["Connection"], "close")
	return req, true
}

// canonicalName is the canonical form of the field name head[from:to]
// (whose bytes are letters, digits and dashes): a common name as a
// constant, a name already canonical as a piece of s (head's copy), any
// other copied.
func canonicalName(s string, head []byte, from, to int) string {
	var buf [64]byte
	name := head[from:to]
	if len(name) > len(buf) {
		return http.CanonicalHeaderKey(s[from:to])
	}
	b := buf[:len(name)]
	canonical := true
	upper := true
	for i, c := range name {
		switch {
		case upper && 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		case !upper && 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		canonical = canonical && c == name[i]
		b[i] = c
		upper = c == '-'
	}
	if common, ok := commonNames[string(b)]; ok {
		return common
	}
	if canonical {
		return s[from:to]
	}
	return string(b)
}

// commonNames holds the field names requests carry most, so that reading
// them allocates nothing.
var commonNames = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"Accept", "Accept-Encoding", "Accept-Language", "Audit-Id", "Authorization",
		"Cache-Control", "Connection", "Content-Length", "Content-Type", "Cookie",
		"If-Modified-Since", "If-None-Match", "Kubectl-Command", "Kubectl-Session",
		"Origin", "Pragma", "Referer", "Traceparent", "Tracestate", "User-Agent",
		"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip",
		"X-Request-Id",
	} {
		m[k] = k
	}
	return m
}()

// pathByte: the bytes a path may hold for parseCommon, those a URL's path
// keeps unescaped (so that its raw form is the path itself).
// nameByte: letters, digits and dashes.
var pathByte, nameByte = func() (p, n [256]bool) {
	for c := range 256 {
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		n[c] = alnum || c == '-'
		p[c] = alnum
	}
	for _, c := range []byte("-._~$&+,/:;=@") {
		p[c] = true
	}
	return p, n
}()

// requestURL is a request with its URL.
type requestURL struct {
	req http.Request
	url url.URL
}
