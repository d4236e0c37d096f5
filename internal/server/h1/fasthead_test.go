package h1

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// headCase is one call of AppendHead.
type headCase struct {
	req    *http.Request
	status int
	h      http.Header
	now    time.Time
	dst    []byte // what is appended to
}

func (c headCase) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s HTTP/%d.%d (Proto %q, Close %v, Connection %q), status %d, now %v, header:",
		c.req.Method, c.req.ProtoMajor, c.req.ProtoMinor, c.req.Proto, c.req.Close, c.req.Header["Connection"], c.status, c.now)
	for _, k := range slices.Sorted(maps.Keys(c.h)) {
		fmt.Fprintf(&b, " %q: %q", k, c.h[k])
	}
	return b.String()
}

// checkHead runs c through appendHeadFast and the server's code, and
// fails t unless the fast path declined or wrote what the server's code
// writes (out, chunked, closeAfter), leaving h and dst's bytes as they
// were. It says whether the fast path took the answer.
func checkHead(t testing.TB, c headCase) (taken bool) {
	t.Helper()
	before := deepCloneHeader(c.h)
	prefix := bytes.Clone(c.dst)
	// Copies of dst with the same capacity, so that neither call sees
	// the other's bytes.
	dstFor := func() []byte { return append(make([]byte, 0, cap(c.dst)), c.dst...) }

	fast, chunked, ok := appendHeadFast(dstFor(), c.req, c.status, c.h, c.now)
	if !equalHeader(c.h, before) {
		t.Fatalf("%v: appendHeadFast changed the header to %q", c, c.h)
	}
	if !ok {
		if !bytes.Equal(fast, prefix) {
			t.Fatalf("%v: appendHeadFast declined, returning %q for %q", c, fast, prefix)
		}
		return false
	}
	if !bytes.HasPrefix(fast, prefix) {
		t.Fatalf("%v: appendHeadFast lost dst: %q", c, fast)
	}
	want, wantChunked, wantClose := appendHeadGeneral(dstFor(), c.req, c.status, c.h, c.now)
	if c.now.IsZero() && !bytes.Equal(fast, want) {
		// Both read the clock: once more, in case a second has begun
		// between the two.
		want, wantChunked, wantClose = appendHeadGeneral(dstFor(), c.req, c.status, c.h, c.now)
	}
	if !bytes.Equal(fast, want) || chunked != wantChunked || wantClose {
		t.Fatalf("%v:\nappendHeadFast wrote\n%q, chunked %v, close after false\nthe server's code\n%q, chunked %v, close after %v",
			c, fast, chunked, want, wantChunked, wantClose)
	}
	return true
}

func deepCloneHeader(h http.Header) http.Header {
	if h == nil {
		return nil
	}
	c := make(http.Header, len(h))
	for k, vv := range h {
		c[k] = slices.Clone(vv)
		if vv != nil && c[k] == nil {
			c[k] = []string{}
		}
	}
	return c
}

func equalHeader(a, b http.Header) bool {
	return (a == nil) == (b == nil) && maps.EqualFunc(a, b, func(x, y []string) bool {
		return slices.Equal(x, y) && (x == nil) == (y == nil)
	})
}

// headRequest is a request as ParseRequest makes it, with the fields
// AppendHead reads set as given.
func headRequest(method string, major, minor int, closes bool, connection ...string) *http.Request {
	r := &http.Request{
		Method:     method,
		URL:        &url.URL{Path: "/api/v1/pods"},
		Proto:      fmt.Sprintf("HTTP/%d.%d", major, minor),
		ProtoMajor: major,
		ProtoMinor: minor,
		Close:      closes,
		Header:     http.Header{"Accept": {"application/json"}},
		Host:       "x",
		Body:       http.NoBody,
	}
	if len(connection) > 0 {
		r.Header["Connection"] = connection
	}
	return r
}

// upstreamHeader is an answer of kube-apiserver's, as the gateway relays
// it.
func upstreamHeader() http.Header {
	return http.Header{
		"Audit-Id":                          {"0b0e0f3c-8f4e-4c7e-9b61-1d2f3c4b5a69"},
		"Cache-Control":                     {"no-cache, private"},
		"Content-Type":                      {"application/json"},
		"Date":                              {"Tue, 04 Mar 2031 04:06:07 GMT"},
		"X-Kubernetes-Pf-Flowschema-Uid":    {"7d0b8f5e-3f0a-4c52-9a53-2f4c9e8b1a11"},
		"X-Kubernetes-Pf-Prioritylevel-Uid": {"1c3a5e7f-9b2d-4f6a-8c0e-2a4b6c8d0e1f"},
		"Content-Length":                    {"1834"},
	}
}

// withFields is h with the fields kv, name then value, set (a nil value for
// a name with no values); h itself is not changed.
func withFields(h http.Header, kv ...string) http.Header {
	h = deepCloneHeader(h)
	if h == nil {
		h = http.Header{}
	}
	for i := 0; i < len(kv); i += 2 {
		h[kv[i]] = append(h[kv[i]], kv[i+1])
	}
	return h
}

func withoutFields(h http.Header, names ...string) http.Header {
	h = deepCloneHeader(h)
	for _, k := range names {
		delete(h, k)
	}
	return h
}

// TestAppendHeadFastTaken: the answers a gateway relays most take the
// fast path, and it writes them as the server's code does.
func TestAppendHeadFastTaken(t *testing.T) {
	get := headRequest(http.MethodGet, 1, 1, false)
	up := upstreamHeader()
	many := http.Header{}
	for i := range maxFastFields {
		many[fmt.Sprintf("X-F%02d", 31-i)] = []string{strconv.Itoa(i)}
	}
	for _, c := range []struct {
		name string
		c    headCase
	}{
		{"list", headCase{req: get, status: 200, h: up, now: answerDate}},
		{"no date", headCase{req: get, status: 200, h: withoutFields(up, "Date"), now: answerDate}},
		{"chunked", headCase{req: get, status: 200, h: withoutFields(up, "Content-Length"), now: answerDate}},
		{"watch", headCase{req: get, status: 200, h: http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"no-cache, private"}, "Audit-Id": {"x"}}, now: answerDate}},
		{"not found", headCase{req: get, status: 404, h: withFields(withoutFields(up, "Content-Length"), "Content-Length", "228"), now: answerDate}},
		{"too many requests", headCase{req: headRequest(http.MethodPost, 1, 1, false, "keep-alive"), status: 429, h: withFields(up, "Retry-After", "1"), now: answerDate}},
		{"created", headCase{req: headRequest(http.MethodPost, 1, 1, false), status: 201, h: up, now: answerDate}},
		{"request closes in its second Connection value", headCase{req: headRequest(http.MethodGet, 1, 1, false, "keep-alive", "close"), status: 200, h: up, now: answerDate}},
		{"nil header", headCase{req: get, status: 200, now: answerDate}},
		{"empty header", headCase{req: get, status: 503, h: http.Header{}, now: answerDate}},
		{"several values", headCase{req: get, status: 200, h: withFields(up, "Warning", `299 - "a"`, "Warning", `299 - "b"`, "Vary", "Accept"), now: answerDate}},
		{"empty value", headCase{req: get, status: 200, h: withFields(up, "X-Empty", ""), now: answerDate}},
		{"inner spaces, bytes beyond ASCII", headCase{req: get, status: 200, h: withFields(up, "X-A", "a \t b", "X-B", "é\x00\x7f"), now: answerDate}},
		{"length zero", headCase{req: get, status: 200, h: withFields(withoutFields(up, "Content-Length"), "Content-Length", "0"), now: answerDate}},
		{"length with zeros", headCase{req: get, status: 200, h: withFields(withoutFields(up, "Content-Length"), "Content-Length", "00000000000000000000000012"), now: answerDate}},
		{"largest length", headCase{req: get, status: 200, h: withFields(withoutFields(up, "Content-Length"), "Content-Length", "9223372036854775807"), now: answerDate}},
		{"299", headCase{req: get, status: 299, h: up, now: answerDate}},
		{"599", headCase{req: get, status: 599, h: up, now: answerDate}},
		{"600", headCase{req: get, status: 600, h: up, now: answerDate}},
		{"999", headCase{req: get, status: 999, h: withoutFields(up, "Date"), now: answerDate}},
		{"205", headCase{req: get, status: 205, h: withoutFields(up, "Date"), now: answerDate}},
		{"clock", headCase{req: get, status: 200, h: withoutFields(up, "Date")}},
		{"year 1", headCase{req: get, status: 200, h: nil, now: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"year 0", headCase{req: get, status: 200, h: nil, now: time.Date(0, 12, 31, 23, 59, 59, 999, time.UTC)}},
		{"year 9999", headCase{req: get, status: 200, h: nil, now: time.Date(9999, 12, 31, 23, 59, 59, 0, time.FixedZone("Y", -7200))}},
		{"year 10000", headCase{req: get, status: 200, h: nil, now: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"year -1", headCase{req: get, status: 200, h: nil, now: time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC)}},
		{"most fields", headCase{req: get, status: 200, h: many, now: answerDate}},
		{"dst", headCase{req: get, status: 200, h: up, now: answerDate, dst: []byte("HTTP/1.1 100 Continue\r\n\r\n")}},
		{"dst with room", headCase{req: get, status: 200, h: up, now: answerDate, dst: append(make([]byte, 0, 4096), "xyz"...)}},
	} {
		if !checkHead(t, c.c) {
			t.Errorf("%s: appendHeadFast declined %v", c.name, c.c)
		}
	}
}

// TestHeadPieces: the names and values random cases count on the fast
// path taking are taken.
func TestHeadPieces(t *testing.T) {
	get := headRequest(http.MethodGet, 1, 1, false)
	for _, k := range headNames[:cleanNames] {
		v := "x"
		if k == "Content-Length" {
			v = "1"
		}
		if !checkHead(t, headCase{req: get, status: 200, h: http.Header{k: {v}}, now: answerDate}) {
			t.Errorf("name %q declined", k)
		}
	}
	for _, v := range headValues[:cleanValues] {
		if !checkHead(t, headCase{req: get, status: 200, h: http.Header{"X-A": {v}}, now: answerDate}) {
			t.Errorf("value %q declined", v)
		}
	}
}

// TestAppendHeadFastDeclined: whatever brings another of the server's
// rules into play is left to the server's code.
func TestAppendHeadFastDeclined(t *testing.T) {
	get := headRequest(http.MethodGet, 1, 1, false)
	up := upstreamHeader()
	cl := func(v string) http.Header {
		return withFields(withoutFields(up, "Content-Length"), "Content-Length", v)
	}
	many := http.Header{}
	for i := range maxFastFields + 1 {
		many[fmt.Sprintf("X-F%02d", i)] = []string{"1"}
	}
	noValues, noDate := withFields(up), withoutFields(up, "Date")
	noValues["X-None"], noDate["Date"] = []string{}, nil
	preface := headRequest("PRI", 1, 1, false)
	preface.Proto, preface.URL.Path, preface.Header = "HTTP/2.0", "*", nil
	for _, c := range []struct {
		name string
		c    headCase
	}{
		{"HTTP/1.0", headCase{req: headRequest(http.MethodGet, 1, 0, false), status: 200, h: up}},
		{"HTTP/1.0 keep-alive", headCase{req: headRequest(http.MethodGet, 1, 0, false, "keep-alive"), status: 200, h: up}},
		{"HTTP/1.2", headCase{req: headRequest(http.MethodGet, 1, 2, false), status: 200, h: up}},
		{"HTTP/2.0", headCase{req: headRequest(http.MethodGet, 2, 0, false), status: 200, h: up}},
		{"HEAD", headCase{req: headRequest(http.MethodHead, 1, 1, false), status: 200, h: up}},
		{"CONNECT", headCase{req: headRequest(http.MethodConnect, 1, 1, false), status: 200, h: up}},
		{"preface", headCase{req: preface, status: 200, h: up}},
		{"Close", headCase{req: headRequest(http.MethodGet, 1, 1, true), status: 200, h: up}},
		{"Connection: close", headCase{req: headRequest(http.MethodGet, 1, 1, false, "keep-alive, Close"), status: 200, h: up}},
		{"100", headCase{req: get, status: 100, h: up}},
		{"101", headCase{req: get, status: 101, h: withFields(up, "Upgrade", "websocket", "Connection", "Upgrade")}},
		{"103", headCase{req: get, status: 103, h: http.Header{"Link": {"</a>"}}}},
		{"199", headCase{req: get, status: 199, h: up}},
		{"204", headCase{req: get, status: 204, h: withoutFields(up, "Content-Length")}},
		{"304", headCase{req: get, status: 304, h: up}},
		{"too many fields", headCase{req: get, status: 200, h: many}},
		{"Connection", headCase{req: get, status: 200, h: withFields(up, "Connection", "keep-alive")}},
		{"Transfer-Encoding", headCase{req: get, status: 200, h: withFields(withoutFields(up, "Content-Length"), "Transfer-Encoding", "chunked")}},
		{"Trailer", headCase{req: get, status: 200, h: withFields(withoutFields(up, "Content-Length"), "Trailer", "X-T")}},
		{"trailer prefix", headCase{req: get, status: 200, h: withFields(withoutFields(up, "Content-Length"), http.TrailerPrefix+"X-T", "1")}},
		{"no values", headCase{req: get, status: 200, h: noValues}},
		{"no Date values", headCase{req: get, status: 200, h: noDate}},
		{"two lengths", headCase{req: get, status: 200, h: withFields(up, "Content-Length", "1834")}},
		{"empty length", headCase{req: get, status: 200, h: cl("")}},
		{"signed length", headCase{req: get, status: 200, h: cl("+5")}},
		{"minus zero", headCase{req: get, status: 200, h: cl("-0")}},
		{"negative length", headCase{req: get, status: 200, h: cl("-1")}},
		{"spaced length", headCase{req: get, status: 200, h: cl(" 5")}},
		{"length list", headCase{req: get, status: 200, h: cl("5, 5")}},
		{"length too large", headCase{req: get, status: 200, h: cl("9223372036854775808")}},
		{"length hex", headCase{req: get, status: 200, h: cl("0x10")}},
		{"lower-case name", headCase{req: get, status: 200, h: withFields(up, "x-a", "1")}},
		{"odd-case name", headCase{req: get, status: 200, h: withFields(up, "X-aB", "1")}},
		{"invalid name", headCase{req: get, status: 200, h: withFields(up, "X A", "1")}},
		{"empty name", headCase{req: get, status: 200, h: withFields(up, "", "1")}},
		{"name beyond ASCII", headCase{req: get, status: 200, h: withFields(up, "X-É", "1")}},
		{"CR", headCase{req: get, status: 200, h: withFields(up, "X-A", "a\rb")}},
		{"LF", headCase{req: get, status: 200, h: withFields(up, "X-A", "a\nb")}},
		{"leading space", headCase{req: get, status: 200, h: withFields(up, "X-A", " a")}},
		{"trailing tab", headCase{req: get, status: 200, h: withFields(up, "X-A", "a\t")}},
		{"space alone", headCase{req: get, status: 200, h: withFields(up, "X-A", " ")}},
	} {
		if checkHead(t, c.c) {
			t.Errorf("%s: appendHeadFast took %v", c.name, c.c)
		}
	}
	for _, status := range []int{-1, 0, 99, 1000} {
		if _, _, ok := appendHeadFast(nil, get, status, up, answerDate); ok {
			t.Errorf("status %d taken", status)
		}
	}
}

// TestAppendHeadFallsBack: AppendHead writes what the server's code
// writes, through the fast path or not.
func TestAppendHeadFallsBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		c := randomHeadCase(rng)
		got, chunked, closeAfter := AppendHead(slices.Clone(c.dst), c.req, c.status, c.h, c.now)
		want, wantChunked, wantClose := appendHeadGeneral(slices.Clone(c.dst), c.req, c.status, c.h, c.now)
		if !bytes.Equal(got, want) || chunked != wantChunked || closeAfter != wantClose {
			t.Fatalf("%v:\nAppendHead wrote\n%q, chunked %v, close after %v\nthe server's code\n%q, chunked %v, close after %v",
				c, got, chunked, closeAfter, want, wantChunked, wantClose)
		}
	}
}

// The pieces random and fuzzed cases are made of.
var (
	headMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "CONNECT", "OPTIONS", "PRI", "head", "get"}
	headProtos  = [][2]int{{1, 1}, {1, 1}, {1, 1}, {1, 0}, {1, 2}, {2, 0}, {0, 9}}
	headConns   = []string{"", "", "keep-alive", "close", "Close", "keep-alive, close", "closed", "upgrade", "x,close", "\tclose "}
	// headStatuses are the codes WriteHeader takes, common ones
	// first; a pick past them is a code of 100 to 999.
	headStatuses = []int{200, 200, 201, 404, 500, 204, 304, 100, 101, 103, 299, 599, 600, 999}
	// headNames: the first cleanNames are names the fast path takes.
	headNames = []string{
		"Content-Type", "Cache-Control", "Audit-Id", "X-Kubernetes-Pf-Flowschema-Uid", "X-Kubernetes-Pf-Prioritylevel-Uid",
		"Content-Length", "Date", "Etag", "Vary", "Warning", "Content-Encoding", "Retry-After", "X-A", "A", "Z", "Zz", "X-", "-",
		"Transfer-Encoding", "Connection", "Trailer", http.TrailerPrefix + "X-A", "Upgrade", "Keep-Alive", "Te",
		"content-length", "date", "connection", "transfer-encoding", "X-a", "x-A", "X A", "", "X\x80", "X:", "Content-length",
	}
	// headValues: the first cleanValues are values the fast path
	// takes (but for Content-Length's digits).
	headValues = []string{
		"", "0", "5", "007", "1834", "9223372036854775807", "00000000000000000000009223372036854775807",
		"Mon, 02 Jan 2006 15:04:05 GMT", "application/json", "no-cache, private", "x\x00y", "\x7f", "é", "a b", "a\tb",
		"+5", "-0", "-1", " 5", "5 ", "\t5", "5\t", "5,5", "0x1",
		"9223372036854775808", "99999999999999999999",
		"a\rb", "a\nb", "\r", "\n", "a\r\n", " ", "\t", "keep-alive", "close", "chunked", "identity", "upgrade", "X-A",
	}
)

const cleanNames, cleanValues = 18, 15

// randomHeadCase is a case of AppendHead made of the pieces above,
// often one of the common kind.
func randomHeadCase(rng *rand.Rand) headCase {
	pick := func(n int) int { return rng.IntN(n) }
	if pick(2) == 0 {
		return commonHeadCase(rng)
	}
	p := headProtos[pick(len(headProtos))]
	var conn []string
	for range pick(3) {
		conn = append(conn, headConns[pick(len(headConns))])
	}
	req := headRequest(headMethods[pick(len(headMethods))], p[0], p[1], pick(8) == 0, conn...)
	if pick(10) == 0 {
		req.Proto = "HTTP/2.0"
	}
	status := 100 + pick(900)
	if pick(2) == 0 {
		status = headStatuses[pick(len(headStatuses))]
	}
	var h http.Header
	switch pick(10) {
	case 0:
	case 1:
		h = http.Header{}
	case 2, 3, 4:
		h = upstreamHeader()
		if pick(2) == 0 {
			delete(h, "Content-Length")
		}
	default:
		h = http.Header{}
		for range pick(40) {
			k := headNames[pick(len(headNames))]
			if pick(4) == 0 {
				k = randomString(rng, "Aa-Zz0_.!:\x80 ", 1+pick(6))
			}
			for range pick(3) {
				v := headValues[pick(len(headValues))]
				if pick(4) == 0 {
					v = randomString(rng, "aZ 0\t\r\n,\x00é-", pick(8))
				}
				h[k] = append(h[k], v)
			}
			if _, ok := h[k]; !ok {
				h[k] = []string{}
			}
		}
	}
	now := answerDate
	switch pick(6) {
	case 0:
		now = time.Time{}
	case 1:
		now = time.Unix(rng.Int64N(1<<40)-1<<39, rng.Int64N(1e9)).In(time.FixedZone("Z", 3600*(pick(27)-13)))
	case 2:
		now = time.Unix(math.MinInt64/2+rng.Int64N(math.MaxInt64), 0)
	}
	var dst []byte
	switch pick(3) {
	case 1:
		dst = []byte("prefix")
	case 2:
		dst = append(make([]byte, 0, 64+pick(2048)), "prefix"...)
	}
	return headCase{req: req, status: status, h: h, now: now, dst: dst}
}

// commonHeadCase is a random case of the common kind, but for one
// change in four.
func commonHeadCase(rng *rand.Rand) headCase {
	pick := func(n int) int { return rng.IntN(n) }
	c := headCase{
		req:    headRequest([]string{"GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"}[pick(6)], 1, 1, false, headConns[pick(3)]),
		status: []int{200, 201, 202, 205, 299, 403, 404, 409, 429, 500, 503, 504, 599, 600, 777, 999}[pick(16)],
		h:      http.Header{},
		now:    time.Unix(rng.Int64N(1<<36), rng.Int64N(1e9)).In(time.FixedZone("Z", 3600*(pick(27)-13))),
	}
	if pick(8) == 0 {
		c.now = time.Time{}
	}
	for range pick(maxFastFields + 1) {
		k := headNames[pick(cleanNames)]
		if k == "Content-Length" && pick(2) == 0 {
			continue
		}
		for range 1 + pick(3) {
			c.h[k] = append(c.h[k], headValues[pick(cleanValues)])
		}
	}
	if cl := c.h["Content-Length"]; cl != nil {
		c.h["Content-Length"] = []string{strconv.FormatUint(rng.Uint64()>>pick(64), 10)}
	}
	if pick(4) == 0 {
		switch pick(4) {
		case 0:
			c.req = headRequest(headMethods[pick(len(headMethods))], 1, 1, false, headConns[pick(len(headConns))])
		case 1:
			c.status = 100 + pick(900)
		case 2:
			c.h[headNames[pick(len(headNames))]] = []string{headValues[pick(len(headValues))]}
		case 3:
			c.h[headNames[pick(cleanNames)]] = []string{headValues[pick(len(headValues))]}
		}
	}
	if pick(4) == 0 {
		// A field the server reads, with a value it acts on.
		f := headFramings[pick(len(headFramings))]
		c.h[f[0]] = append(c.h[f[0]], f[1])
	}
	if pick(2) == 0 {
		c.dst = append(make([]byte, 0, pick(4096)), "prefix"...)
	}
	return c
}

// headFramings are the fields that decide an answer's framing, or the
// connection's fate, with values that make a difference.
var headFramings = [][2]string{
	{"Connection", "close"}, {"Connection", "keep-alive"}, {"Connection", "Close"}, {"Connection", "x, close"},
	{"Connection", "upgrade"}, {"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "identity"},
	{"Transfer-Encoding", "gzip"}, {"Trailer", "X-A"}, {"Trailer", "Content-Length"}, {http.TrailerPrefix + "X-A", "1"},
	{"Content-Length", "+5"}, {"Content-Length", "-0"}, {"Content-Length", "5 "}, {"Content-Length", ""},
	{"Content-Length", "9223372036854775808"}, {"Content-Length", "5"}, {"Date", ""}, {"Date", " x"},
	{"Content-Type", ""}, {"connection", "close"}, {"content-length", "x"}, {"Upgrade", "websocket"},
}

func randomString(rng *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

// TestAppendHeadFastRandom: random cases, declined or written as the
// server's code writes them; many of them taken.
func TestAppendHeadFastRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	taken := 0
	for range n {
		if checkHead(t, randomHeadCase(rng)) {
			taken++
		}
	}
	if taken < n/10 {
		t.Errorf("%d of %d cases taken", taken, n)
	}
	t.Logf("%d of %d cases taken", taken, n)
}

// fuzzHeadCase is the case fuzzed bytes describe: picks from the pieces
// above, and spec, a header as fuzzHeader reads one but for a name alone
// (a name with no values), a value of one byte after '#' (one of
// headValues), a line of one byte after '!' (one of headFramings), and
// "\n" written as `\n` in a value.
func fuzzHeadCase(method, proto, conn uint8, closes bool, status uint16, spec string, unix int64, nsec uint32, dst uint8) headCase {
	p := headProtos[int(proto)%len(headProtos)]
	req := headRequest(headMethods[int(method)%len(headMethods)], p[0], p[1], closes)
	if proto&0x80 != 0 {
		req.Proto = "HTTP/2.0"
	}
	for c := conn; c != 0; c /= 16 {
		req.Header["Connection"] = append(req.Header["Connection"], headConns[int(c%16)%len(headConns)])
	}
	code := 100 + int(status)%900
	if status&0x8000 != 0 {
		code = headStatuses[int(status)%len(headStatuses)]
	}
	var h http.Header
	if spec != "nil" {
		h = http.Header{}
	}
	for line := range strings.SplitSeq(spec, "\n") {
		k, v, found := strings.Cut(line, ":")
		if line == "" || line == "nil" {
			continue
		}
		if len(line) == 2 && line[0] == '!' {
			f := headFramings[int(line[1])%len(headFramings)]
			h[f[0]] = append(h[f[0]], f[1])
			continue
		}
		if len(k) == 1 {
			k = headNames[int(k[0])%len(headNames)]
		}
		if !found {
			if _, ok := h[k]; !ok {
				h[k] = []string{}
			}
			continue
		}
		v = strings.TrimPrefix(v, " ")
		if len(v) == 2 && v[0] == '#' {
			v = headValues[int(v[1])%len(headValues)]
		}
		h[k] = append(h[k], strings.ReplaceAll(v, `\n`, "\n"))
	}
	var now time.Time
	if unix != 0 || nsec != 0 {
		now = time.Unix(unix, int64(nsec%1e9)).In(time.FixedZone("F", int(nsec%27)*3600-13*3600))
	}
	var b []byte
	if dst != 0 {
		b = append(make([]byte, 0, int(dst)*16), "prefix"...)
	}
	return headCase{req: req, status: code, h: h, now: now, dst: b}
}

// FuzzAppendHeadFast: for any request, status, header and time,
// appendHeadFast declines, or writes what the server's code writes.
func FuzzAppendHeadFast(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(0), false, uint16(200), "Content-Type: application/json\nAudit-Id: x\nContent-Length: 12", int64(1900000000), uint32(0), uint8(0))
	f.Add(uint8(0), uint8(0), uint8(0), false, uint16(0x8000), "\x00: #\x02\n\x06: Mon, 02 Jan 2006 15:04:05 GMT\nX-A: 1\nX-A: 2", int64(0), uint32(0), uint8(10))
	f.Add(uint8(1), uint8(0), uint8(2), false, uint16(199), "\x05: 7\n\x00:\n\x07", int64(-62135596800), uint32(5), uint8(1))
	f.Add(uint8(0), uint8(0), uint8(0), false, uint16(500), "X-A: a\\nb\nX-B: c\rd\nX-C:  e", int64(253402300799), uint32(0), uint8(0))
	f.Add(uint8(0), uint8(0), uint8(0), false, uint16(0x8003), "nil", int64(253402300800), uint32(0), uint8(0))
	f.Add(uint8(5), uint8(3), uint8(0x31), true, uint16(0x8005), "\x12: chunked\n\x13: keep-alive\n\x1a: 3", int64(1), uint32(1), uint8(0))
	f.Add(uint8(8), uint8(0x80), uint8(0), false, uint16(100), "", int64(0), uint32(0), uint8(0))
	f.Add(uint8(0), uint8(0), uint8(0), false, uint16(0x800c), "x-a: 1\nX-a: 2\nX A: 3\n\x05: #\x10\n\x05: 1", int64(-1), uint32(999999999), uint8(255))
	f.Add(uint8(0), uint8(0), uint8(0), false, uint16(200), "Content-Type: text/plain\n!\x00", int64(1), uint32(0), uint8(0))
	f.Add(uint8(1), uint8(0), uint8(0), false, uint16(0x8000), "\x00: #\x04\n!\x05\n\x13: #\x1a", int64(2), uint32(0), uint8(0))
	f.Fuzz(func(t *testing.T, method, proto, conn uint8, closes bool, status uint16, spec string, unix int64, nsec uint32, dst uint8) {
		if len(spec) > 4<<10 {
			return
		}
		checkHead(t, fuzzHeadCase(method, proto, conn, closes, status, spec, unix, nsec, dst))
	})
}

// TestAppendHTTPDate: the Date appendHTTPDate writes is AppendFormat's,
// in UTC, for any time.
func TestAppendHTTPDate(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	times := []time.Time{{}, answerDate, time.Unix(0, 0), time.Unix(-1, 0), time.Unix(math.MaxInt64/4, 0), time.Unix(math.MinInt64/4, 0),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 2, 29, 12, 0, 0, 0, time.FixedZone("W", -12*3600))}
	for range 10000 {
		times = append(times, time.Unix(rng.Int64N(400000*86400)-200000*86400, rng.Int64N(1e9)).In(time.FixedZone("R", 60*(rng.IntN(28*60)-14*60))))
	}
	for _, tm := range times {
		if got, want := appendHTTPDate([]byte("x"), tm), tm.UTC().AppendFormat([]byte("x"), http.TimeFormat); !bytes.Equal(got, want) {
			t.Fatalf("%v: %q, want %q", tm, got, want)
		}
	}
}

// TestAppendHeadFastAllocs: the fast path allocates nothing when dst has
// room, whether it reads the clock or not.
func TestAppendHeadFastAllocs(t *testing.T) {
	req := headRequest(http.MethodGet, 1, 1, false, "keep-alive")
	dst := make([]byte, 0, 4096)
	for _, c := range []struct {
		name string
		h    http.Header
		now  time.Time
	}{
		{"length", upstreamHeader(), answerDate},
		{"chunked", withoutFields(upstreamHeader(), "Content-Length", "Date"), answerDate},
		{"clock", withoutFields(upstreamHeader(), "Date"), time.Time{}},
	} {
		allocs := testing.AllocsPerRun(200, func() {
			if _, _, ok := appendHeadFast(dst, req, 200, c.h, c.now); !ok {
				t.Fatal("declined")
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations", c.name, allocs)
		}
		allocs = testing.AllocsPerRun(200, func() { AppendHead(dst, req, 200, c.h, c.now) })
		if allocs != 0 {
			t.Errorf("%s: AppendHead: %v allocations", c.name, allocs)
		}
	}
}

// BenchmarkAppendHead: an answer of the common kind, with a length and
// without; and one the fast path leaves to the server's code (its
// request asks to close).
func BenchmarkAppendHead(b *testing.B) {
	now := time.Now()
	for _, c := range []struct {
		name string
		req  *http.Request
		h    http.Header
	}{
		{"length", headRequest(http.MethodGet, 1, 1, false), upstreamHeader()},
		{"chunked", headRequest(http.MethodGet, 1, 1, false), withoutFields(upstreamHeader(), "Content-Length", "Date")},
		{"fallback", headRequest(http.MethodGet, 1, 1, false, "close"), upstreamHeader()},
	} {
		b.Run(c.name, func(b *testing.B) {
			buf := make([]byte, 0, 4096)
			b.ReportAllocs()
			for b.Loop() {
				buf, _, _ = AppendHead(buf[:0], c.req, 200, c.h, now)
			}
		})
	}
}
