package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apfproject/apf/internal/testing/rawhttp"
)

// rawUpstream records the exact bytes of each request it receives (its
// head up to the empty line, and Content-Length bytes of body) and answers
// each with an empty 200.
func rawUpstream(t *testing.T) (url string, got <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan []byte, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					raw, err := rawhttp.ReadRequest(br)
					if err != nil {
						return
					}
					ch <- raw
					if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String(), ch
}

// headerOrderFree is a request's bytes with its header lines sorted: the
// transport writes them in its header map's order, which is random.
// (The lines of one name stay in their order: one name's values are
// written one after the other.)
func headerOrderFree(b []byte) string {
	head, body, _ := bytes.Cut(b, []byte("\r\n\r\n"))
	lines := strings.Split(string(head), "\r\n")
	if len(lines) > 2 {
		// The request line and Host stay first.
		groups := map[string][]string{}
		for _, l := range lines[2:] {
			k, _, _ := strings.Cut(l, ":")
			groups[k] = append(groups[k], l)
		}
		keys := make([]string, 0, len(groups))
		for k := range groups {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		lines = lines[:2]
		for _, k := range keys {
			lines = append(lines, groups[k]...)
		}
	}
	return strings.Join(lines, "\r\n") + "\r\n\r\n" + string(body)
}

// TestAppendRequestMatchesTransport: AppendRequest's bytes are those
// Transport.RoundTrip writes for the same request, byte for byte when the
// header has one name at most (the order of several is the map's).
func TestAppendRequestMatchesTransport(t *testing.T) {
	base, got := rawUpstream(t)
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	cases := []struct {
		name, method, target, body string
		header                     http.Header
		mod                        func(*http.Request)
	}{
		{name: "get", method: "GET", target: "/api/v1/pods"},
		{name: "no method", method: "", target: "/x", mod: func(r *http.Request) { r.Method = "" }},
		{name: "query", method: "GET", target: "/api/v1/pods?limit=5&labelSelector=a%3Db"},
		{name: "escaped path", method: "GET", target: "/a%2Fb/c"},
		{name: "one header", method: "GET", target: "/x", header: http.Header{"Accept": {"application/json"}}},
		{name: "empty user agent", method: "GET", target: "/x", header: http.Header{"User-Agent": {""}}},
		{name: "user agent", method: "GET", target: "/x", header: http.Header{"User-Agent": {"kubectl/v1.33"}}},
		{name: "values trimmed", method: "GET", target: "/x", header: http.Header{"X-A": {"  a b\t", "\tc"}}},
		{name: "framing headers dropped", method: "GET", target: "/x", header: http.Header{"Host": {"evil"}, "Content-Length": {"9"}, "Trailer": {"X"}}},
		{name: "host", method: "GET", target: "/x", mod: func(r *http.Request) { r.Host = "api.example:6443" }},
		{name: "close", method: "GET", target: "/x", mod: func(r *http.Request) { r.Close = true }},
		{name: "connection close", method: "GET", target: "/x", header: http.Header{"Connection": {"close"}}},
		{name: "post", method: "POST", target: "/api/v1/namespaces/a/pods", body: `{"kind":"Pod"}`, header: http.Header{"Content-Type": {"application/json"}}},
		{name: "post without body", method: "POST", target: "/x"},
		{name: "put without body", method: "PUT", target: "/x"},
		{name: "patch", method: "PATCH", target: "/x", body: "[]"},
		{name: "delete with body", method: "DELETE", target: "/x", body: `{"propagationPolicy":"Background"}`},
		{name: "head", method: "HEAD", target: "/x"},
		{name: "largest body", method: "PUT", target: "/x", body: strings.Repeat("b", MaxBody)},
		{name: "many headers", method: "GET", target: "/x", header: http.Header{
			"Accept": {"application/json"}, "Authorization": {"Bearer t"}, "Impersonate-Group": {"a", "b", "c"},
			"X-Forwarded-For": {"10.0.0.1"}, "X-Forwarded-Host": {"api"}, "X-Forwarded-Proto": {"http"}, "User-Agent": {"k"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			newReq := func() *http.Request {
				var body io.Reader
				if c.body != "" {
					body = strings.NewReader(c.body)
				}
				method := c.method
				if method == "" {
					method = "GET"
				}
				r, err := http.NewRequest(method, base+c.target, body)
				if err != nil {
					t.Fatal(err)
				}
				for k, vs := range c.header {
					r.Header[k] = vs
				}
				if c.mod != nil {
					c.mod(r)
				}
				return r
			}
			mine, err := AppendRequest([]byte("kept"), newReq(), []byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(mine, []byte("kept")) {
				t.Fatalf("dst not appended to: %q", mine)
			}
			mine = mine[4:]
			if checked, err := AppendChecked(nil, newReq(), []byte(c.body)); err != nil || headerOrderFree(checked) != headerOrderFree(mine) {
				t.Fatalf("AppendChecked: %v\n%q\nAppendRequest:\n%q", err, checked, mine)
			}
			res, err := tr.RoundTrip(newReq())
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			theirs := <-got
			if len(c.header) <= 1 {
				if !bytes.Equal(mine, theirs) {
					t.Fatalf("AppendRequest:\n%q\nthe transport wrote:\n%q", mine, theirs)
				}
				return
			}
			if a, b := headerOrderFree(mine), headerOrderFree(theirs); a != b {
				t.Fatalf("AppendRequest:\n%q\nthe transport wrote:\n%q", a, b)
			}
		})
	}
}

// TestAppendRequestRefuses: what RoundTrip would not send, AppendRequest
// does not write.
func TestAppendRequestRefuses(t *testing.T) {
	cases := map[string]struct {
		mod  func(*http.Request)
		body string
	}{
		"https":                  {mod: func(r *http.Request) { r.URL.Scheme = "https" }},
		"connect":                {mod: func(r *http.Request) { r.Method = http.MethodConnect }},
		"expect":                 {mod: func(r *http.Request) { r.Header.Set("Expect", "100-continue") }},
		"upgrade":                {mod: func(r *http.Request) { r.Header.Set("Upgrade", "websocket") }},
		"transfer encoding":      {mod: func(r *http.Request) { r.TransferEncoding = []string{"chunked"} }},
		"trailer":                {mod: func(r *http.Request) { r.Trailer = http.Header{"X": nil} }},
		"body of unknown length": {mod: func(r *http.Request) { r.Body, r.ContentLength = io.NopCloser(strings.NewReader("x")), -1 }, body: "x"},
		"body too large":         {mod: func(r *http.Request) { r.ContentLength = MaxBody + 1 }, body: strings.Repeat("x", MaxBody+1)},
		"body shorter":           {mod: func(r *http.Request) { r.ContentLength = 3 }, body: "ab"},
		"body without length":    {body: "ab"},
		"header value with CRLF": {mod: func(r *http.Request) { r.Header.Set("X-A", "a\r\nX-Injected: 1") }},
		"header name":            {mod: func(r *http.Request) { r.Header["X A"] = []string{"1"} }},
		"method":                 {mod: func(r *http.Request) { r.Method = "GET /x" }},
		"host":                   {mod: func(r *http.Request) { r.Host = "a b" }},
	}
	for name, c := range cases {
		r, _ := http.NewRequest("POST", "http://127.0.0.1:1/", nil)
		if c.mod != nil {
			c.mod(r)
		}
		b, err := AppendRequest([]byte("x"), r, []byte(c.body))
		if err == nil || string(b) != "x" {
			t.Errorf("%s: %q, %v: want a refusal and nothing appended", name, b, err)
		}
		// AppendChecked leaves the method and the header fields to
		// Check, and refuses the rest.
		b, err = AppendChecked([]byte("x"), r, []byte(c.body))
		switch name {
		case "header value with CRLF", "header name", "method":
			if err != nil {
				t.Errorf("%s: AppendChecked: %v; it does not check again what Check did", name, err)
			}
		default:
			if err == nil || string(b) != "x" {
				t.Errorf("%s: AppendChecked: %q, %v: want a refusal and nothing appended", name, b, err)
			}
		}
	}
	r, _ := http.NewRequest("GET", "http://127.0.0.1:1/", nil)
	r.Header.Set("Expect", "100-continue")
	if Check(r) == nil {
		t.Error("Check takes a request with Expect")
	}
	r.Header.Del("Expect")
	r.ContentLength = 10
	if err := Check(r); err != nil {
		t.Errorf("Check refuses a body of 10 bytes: %v", err)
	}
}

// parseInPieces gives ParseAnswerHead the answer's first bytes, one more
// each time, and returns the first head it parses, and its length.
func parseInPieces(t *testing.T, answer string, req *http.Request) (*http.Response, int, Framing) {
	t.Helper()
	for i := 0; i <= len(answer); i++ {
		res, n, f, err := ParseAnswerHead([]byte(answer[:i]), req)
		if err != nil {
			t.Fatalf("%q: %v", answer[:i], err)
		}
		if n > 0 {
			if n != i {
				t.Fatalf("a head of %d bytes found in the first %d", n, i)
			}
			return res, n, f
		}
	}
	t.Fatalf("no head in %q", answer)
	return nil, 0, Framing{}
}

func TestParseAnswerHead(t *testing.T) {
	get, _ := http.NewRequest("GET", "http://u/", nil)
	head, _ := http.NewRequest("HEAD", "http://u/", nil)
	cases := []struct {
		name, answer string
		req          *http.Request
		status       int
		framing      Framing
		length       int64
		trailer      http.Header
		close        bool
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\n", get, 200, Framing{Kind: Length, Length: 5, KeepAlive: true}, 5, nil, false},
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 5\n\n", get, 200, Framing{Kind: Length, Length: 5, KeepAlive: true}, 5, nil, false},
		{"zero length", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", get, 200, Framing{Kind: NoBody, KeepAlive: true}, 0, nil, false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: x-sum, X-Other\r\n\r\n", get, 200, Framing{Kind: Chunks, KeepAlive: true}, -1,
			http.Header{"X-Sum": nil, "X-Other": nil}, false},
		{"until close", "HTTP/1.1 200 OK\r\n\r\n", get, 200, Framing{Kind: UntilClose}, -1, nil, true},
		{"http/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n", get, 200, Framing{Kind: Length, Length: 2}, 2, nil, false},
		{"connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n", get, 200, Framing{Kind: Length, Length: 2}, 2, nil, false},
		{"head", "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n", head, 200, Framing{Kind: NoBody, KeepAlive: true}, 1234, nil, false},
		{"no content", "HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n", get, 204, Framing{Kind: NoBody, KeepAlive: true}, 0, nil, false},
		{"not modified", "HTTP/1.1 304 Not Modified\r\n\r\n", get, 304, Framing{Kind: NoBody, KeepAlive: true}, 0, nil, false},
		{"switch", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", get, 101, Framing{Kind: UntilClose}, -1, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, _, f := parseInPieces(t, c.answer+"body after", c.req)
			if res.StatusCode != c.status || f != c.framing || res.ContentLength != c.length || res.Close != c.close || res.Body != nil || res.Request != c.req {
				t.Fatalf("%d %+v length %d close %v body %v", res.StatusCode, f, res.ContentLength, res.Close, res.Body)
			}
			if !reflect.DeepEqual(res.Trailer, c.trailer) {
				t.Errorf("trailer %v, want %v", res.Trailer, c.trailer)
			}
			if res.Header["Transfer-Encoding"] != nil || res.Header["Trailer"] != nil {
				t.Errorf("framing headers left: %v", res.Header)
			}
		})
	}
	t.Run("informational", func(t *testing.T) {
		a := "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
		var codes []int
		b := []byte(a)
		for {
			res, n, f, err := ParseAnswerHead(b, get)
			if err != nil || n == 0 {
				t.Fatalf("%v, n %d", err, n)
			}
			codes = append(codes, res.StatusCode)
			b = b[n:]
			if res.StatusCode >= 200 {
				if f.Kind != Length || string(b) != "ok" {
					t.Fatalf("%+v, rest %q", f, b)
				}
				break
			}
			if f != (Framing{}) {
				t.Fatalf("an informational answer with framing %+v", f)
			}
			if res.StatusCode == 103 && res.Header.Get("Link") != "</a>" {
				t.Fatalf("103's header %v", res.Header)
			}
		}
		if !slices.Equal(codes, []int{103, 100, 200}) {
			t.Fatalf("%v", codes)
		}
	})
	t.Run("size bound", func(t *testing.T) {
		line := "X-A: " + strings.Repeat("a", 1000) + "\r\n"
		status := "HTTP/1.1 200 OK\r\n"
		fill := DefaultMaxResponseHeaderBytes - len(status) - 2
		h := status + strings.Repeat(line, fill/len(line))
		h += "X-B: " + strings.Repeat("b", fill-(len(h)-len(status))-7) + "\r\n"
		exact := h + "\r\n"
		if len(exact) != DefaultMaxResponseHeaderBytes {
			t.Fatalf("built %d bytes", len(exact))
		}
		if _, n, _, err := ParseAnswerHead([]byte(exact), get); err != nil || n != len(exact) {
			t.Fatalf("a head of exactly the bound: n %d, %v", n, err)
		}
		over := h + "X"
		if _, n, _, err := ParseAnswerHead([]byte(over), get); err != nil || n != 0 {
			t.Fatalf("an unfinished head of the bound's size: n %d, %v", n, err)
		}
		over += "\r\n\r\n"
		if _, _, _, err := ParseAnswerHead([]byte(over), get); !errors.Is(err, ErrMalformed) {
			t.Fatalf("a head past the bound: %v", err)
		}
		if _, _, _, err := ParseAnswerHead([]byte(h+strings.Repeat("y", 10)), get); !errors.Is(err, ErrMalformed) {
			t.Fatalf("an unfinished head past the bound: %v", err)
		}
	})
	t.Run("early refusals", func(t *testing.T) {
		// Refused as soon as the line is in, without waiting for the
		// head's end.
		for _, a := range []string{"HTTP/1.1 2000 OK\r\n", "\r\n", "HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\n"} {
			if _, _, _, err := ParseAnswerHead([]byte(a), get); !errors.Is(err, ErrMalformed) {
				t.Errorf("%q: %v", a, err)
			}
		}
	})
}

// decodeInPieces decodes body given in pieces of size n (all at once for
// 0), and returns the data and whether it ended, or the error.
func decodeInPieces(d *Chunked, body string, n int) (data string, done bool, rest int, err error) {
	b := []byte(body)
	var out []byte
	for len(b) > 0 || n == 0 {
		piece := b
		if n > 0 && len(piece) > n {
			piece = piece[:n]
		}
		for {
			c, run, fin, err := d.Decode(piece)
			if err != nil {
				return string(out), false, 0, err
			}
			if !bytes.Equal(run, piece[c-len(run):c]) {
				panic("data not at the end of what was consumed")
			}
			out = append(out, run...)
			piece, b = piece[c:], b[c:]
			if fin {
				return string(out), true, len(b), nil
			}
			if len(piece) == 0 {
				break
			}
		}
		if n == 0 {
			break
		}
	}
	return string(out), false, 0, nil
}

func TestChunked(t *testing.T) {
	const body = "5;ext=1\r\nhello\r\n1 \r\n!\r\n10\r\n0123456789abcdef\r\n0\r\nX-Sum: 6\r\nX-Other: o\r\n\r\n"
	for _, n := range []int{0, 1, 2, 3, 7, 64} {
		res := &http.Response{Trailer: http.Header{"X-Sum": nil}}
		d := NewChunked(res)
		data, done, rest, err := decodeInPieces(d, body+"next", n)
		if err != nil || !done || data != "hello!0123456789abcdef" || rest != len("next") {
			t.Fatalf("pieces of %d: %q done %v rest %d %v", n, data, done, rest, err)
		}
		if want := (http.Header{"X-Sum": {"6"}, "X-Other": {"o"}}); !reflect.DeepEqual(res.Trailer, want) {
			t.Fatalf("pieces of %d: trailer %v", n, res.Trailer)
		}
		if c, run, fin, err := d.Decode([]byte("more")); c != 0 || run != nil || !fin || err != nil {
			t.Fatalf("Decode after the end: %d %q %v %v", c, run, fin, err)
		}
	}
	var d Chunked
	if _, done, _, err := decodeInPieces(&d, "2\r\nok\r\n0\r\nX-T: 1\r\n\r\n", 3); !done || err != nil || d.Trailer().Get("X-T") != "1" {
		t.Fatalf("without an answer: %v %v %v", done, err, d.Trailer())
	}
	d = Chunked{}
	if _, done, _, err := decodeInPieces(&d, "2\r\nok\r\n0\r\n\r\n", 1); !done || err != nil || d.Trailer() != nil {
		t.Fatalf("no trailer: %v %v %v", done, err, d.Trailer())
	}
	d = Chunked{}
	if data, done, _, err := decodeInPieces(&d, "5\r\nhel", 0); done || err != nil || data != "hel" {
		t.Fatalf("unfinished: %q %v %v", data, done, err)
	}
	for name, bad := range map[string]string{
		"bare LF after size":    "5\nhello\r\n0\r\n\r\n",
		"bare LF after data":    "5\r\nhello\n0\r\n\r\n",
		"bare LF in trailer":    "0\r\nX-A: 1\n\r\n",
		"CR in an extension":    "5;\r\r\nhello\r\n0\r\n\r\n",
		"CR after data":         "5\r\nhello\r\r\n0\r\n\r\n",
		"no size":               "\r\nhello\r\n0\r\n\r\n",
		"size not hex":          "5g\r\nhello\r\n0\r\n\r\n",
		"signed size":           "+5\r\nhello\r\n0\r\n\r\n",
		"size too long":         "0000000000000005\r\nhello\r\n0\r\n\r\n",
		"chunk past its size":   "2\r\nhello\r\n0\r\n\r\n",
		"framing line too long": strings.Repeat("0", 10) + ";" + strings.Repeat("e", maxChunkLine) + "\r\n",
		"folded trailer":        "0\r\nX-A: 1\r\n 2\r\n\r\n",
		"bad trailer field":     "0\r\nX A: 1\r\n\r\n",
	} {
		for _, n := range []int{0, 1, 5} {
			var d Chunked
			if _, _, _, err := decodeInPieces(&d, bad, n); !errors.Is(err, ErrMalformed) {
				t.Errorf("%s in pieces of %d: %v", name, n, err)
			}
		}
	}
	// A framing line of the longest length is taken.
	long := "5;" + strings.Repeat("e", maxChunkLine-5) + "\r\nhello\r\n0\r\n\r\n"
	d = Chunked{}
	if data, done, _, err := decodeInPieces(&d, long, 100); !done || err != nil || data != "hello" {
		t.Fatalf("a framing line of %d bytes: %q %v %v", maxChunkLine, data, done, err)
	}
}

// TestChunkedGiveBack: the data a reader did not take is decoded again.
func TestChunkedGiveBack(t *testing.T) {
	d := NewChunked(&http.Response{})
	b := []byte("5\r\nhello\r\n0\r\n\r\n")
	c, data, _, _ := d.Decode(b)
	if string(data) != "hello" {
		t.Fatalf("%q", data)
	}
	d.giveBack(3)
	c -= 3
	c2, data, _, _ := d.Decode(b[c:])
	if string(data) != "llo" || c2 != 3 {
		t.Fatalf("given back: %q (%d)", data, c2)
	}
	if _, _, done, err := d.Decode(b[c+c2:]); !done || err != nil {
		t.Fatalf("%v %v", done, err)
	}
}

// TestStaleRules: the rules a caller with its own connections applies to a
// failure on a connection it reused.
func TestStaleRules(t *testing.T) {
	get, _ := http.NewRequest("GET", "http://u/", nil)
	post, _ := http.NewRequest("POST", "http://u/", strings.NewReader("x"))
	keyed, _ := http.NewRequest("POST", "http://u/", nil)
	keyed.Header.Set("Idempotency-Key", "k")
	if !Resend(get, 0) || !Resend(get, 1) || Resend(get, 2) {
		t.Error("a GET is sent at most three times")
	}
	if Resend(post, 0) || Replayable(post) {
		t.Error("a POST with a body that cannot be had again is sent again")
	}
	if !Replayable(keyed) {
		t.Error("a POST with an idempotency key is not replayable")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Resend(get.WithContext(ctx), 0) {
		t.Error("sent again after its context ended")
	}
	if !Ended(io.EOF) || Ended(errors.New("x")) {
		t.Error("Ended")
	}
	u, _ := http.NewRequest("GET", "http://h/", nil)
	if Addr(u.URL) != "h:80" {
		t.Errorf("Addr %q", Addr(u.URL))
	}
}

// TestParseAnswerHeadInAllocations: in memory used before, a common answer
// costs one allocation, the copy of its head's text; without, the answer,
// its header map and its values besides.
func TestParseAnswerHeadInAllocations(t *testing.T) {
	head := []byte("HTTP/1.1 200 OK\r\nContent-Length: 1024\r\nContent-Type: application/json\r\nDate: Mon, 30 Nov 2026 20:31:12 GMT\r\n" +
		"Cache-Control: no-cache\r\nX-Request-Id: 0f2c\r\n\r\n")
	req, _ := http.NewRequest(http.MethodGet, "http://upstream/", nil)
	mem := new(AnswerMemory)
	parse := func(mem *AnswerMemory) {
		res, n, f, err := ParseAnswerHeadIn(head, req, mem)
		if err != nil || n != len(head) || f.Kind != Length || res.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("ParseAnswerHeadIn: %v, %d, %+v", err, n, f)
		}
	}
	parse(mem)
	if got := testing.AllocsPerRun(100, func() { parse(mem) }); got > 1 {
		t.Errorf("in used memory: %v allocations, want 1", got)
	}
	if got := testing.AllocsPerRun(100, func() { parse(nil) }); got < 4 {
		t.Errorf("without memory: %v allocations, want the answer, its map and values too", got)
	}
}
