package h1

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// requestView is what a handler sees of a request, as ParseRequest
// promises it, in a form that compares and prints.
func requestView(r *http.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%+q %+q %+q host=%+q cl=%d te=%+q close=%v uri=%+q\n",
		r.Method, r.URL.String(), r.Proto, r.Host, r.ContentLength, r.TransferEncoding, r.Close, r.RequestURI)
	for _, k := range slices.Sorted(maps.Keys(r.Header)) {
		fmt.Fprintf(&b, "%+q: %+q\n", k, r.Header[k])
	}
	return b.String()
}

// viewServer serves on loopback a handler that answers with the view of
// the request it got in an X-View field, and returns its address.
func viewServer(t testing.TB, maxHeaderBytes int) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-View", base64.StdEncoding.EncodeToString([]byte(requestView(r))))
		}),
		MaxHeaderBytes:    maxHeaderBytes,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { _ = s.Close() })
	return l.Addr().String()
}

var viewField = regexp.MustCompile(`\r\nX-View: ([A-Za-z0-9+/=]*)\r\n`)

// handlerSaw sends raw to the server at addr, half-closed, and returns
// the view of the request its handler got, called false when the
// handler was not called.
func handlerSaw(t testing.TB, addr string, raw []byte) (view string, called bool) {
	t.Helper()
	answer := exchange(t, addr, raw)
	m := viewField.FindSubmatch(answer)
	if m == nil {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(string(m[1]))
	if err != nil {
		t.Fatalf("X-View %q: %v", m[1], err)
	}
	return string(b), true
}

// exchange sends raw on a connection of its own, half-closes it, and
// returns all the server sends until it closes.
func exchange(t testing.TB, addr string, raw []byte) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(raw)
		_ = c.(*net.TCPConn).CloseWrite()
		errc <- err
	}()
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", clip(string(raw)), err)
	}
	<-errc // a server that answers before it reads all may refuse the rest
	// The server has closed: a reset ends the connection on both sides
	// at once, so that the fuzz tests' many connections leave no ports
	// waiting.
	_ = c.(*net.TCPConn).SetLinger(0)
	return b
}

// headOf is raw's first request head: up to and including the first
// empty line after the request line, lines ending in LF, a CR before it
// or not; raw whole when it has none.
func headOf(raw []byte) []byte {
	i := bytes.IndexByte(raw, '\n')
	if i < 0 {
		return raw
	}
	for start := i + 1; ; {
		j := bytes.IndexByte(raw[start:], '\n')
		if j < 0 {
			return raw
		}
		if line := raw[start : start+j]; len(line) == 0 || string(line) == "\r" {
			return raw[:start+j+1]
		}
		start += j + 1
	}
}

// checkParse checks ParseRequest on head against the server at addr
// (whose MaxHeaderBytes is maxHeaderBytes) given head alone: it succeeds
// if and only if the server calls its handler, and returns what the
// handler gets; it says whether it succeeded.
func checkParse(t *testing.T, addr string, maxHeaderBytes int, head []byte) bool {
	t.Helper()
	req, err := ParseRequest(head, maxHeaderBytes)
	view, called := handlerSaw(t, addr, head)
	switch {
	case err == nil && !called:
		t.Fatalf("ParseRequest(%q) took a request the server does not hand its handler:\n%s", clip(string(head)), requestView(req))
	case err != nil && called:
		t.Fatalf("ParseRequest(%q): %v; the server's handler got:\n%s", clip(string(head)), err, view)
	case err != nil:
		return false
	}
	if got := requestView(req); got != view {
		t.Fatalf("ParseRequest(%q):\n%s\nthe server's handler got:\n%s", clip(string(head)), got, view)
	}
	if req.Body != http.NoBody || req.RemoteAddr != "" || req.TLS != nil || req.Context() != context.Background() {
		t.Fatalf("ParseRequest(%q): body %v, remote address %q, TLS %v, context %v", clip(string(head)), req.Body, req.RemoteAddr, req.TLS, req.Context())
	}
	return true
}

// smallMaxHeaderBytes is the MaxHeaderBytes of the server the head size
// limit is checked against: its limit is 4096 more.
const smallMaxHeaderBytes = 100

// TestParseRequest: for every head, ParseRequest succeeds exactly when a
// Server sent that head calls its handler, and then returns the request
// the handler gets.
func TestParseRequest(t *testing.T) {
	addrs := map[int]string{0: viewServer(t, 0), smallMaxHeaderBytes: viewServer(t, smallMaxHeaderBytes)}
	limit := smallMaxHeaderBytes + 4096
	pad := func(n int) string {
		// A head of n bytes exactly.
		h := "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: \r\n\r\n"
		return strings.Replace(h, "X-Pad: ", "X-Pad: "+strings.Repeat("p", n-len(h)), 1)
	}
	for _, tc := range []struct {
		name string
		head string
		max  int
		ok   bool
	}{
		{"get", "GET /a?b=c HTTP/1.1\r\nHost: example\r\nAccept: */*\r\n\r\n", 0, true},
		{"lowercase fields", "GET / HTTP/1.1\r\nhost: example:8080\r\nx-a: 1\r\nX-A: 2\r\n\r\n", 0, true},
		{"bare lf", "GET / HTTP/1.1\nHost: x\nX-A: 1\n\n", 0, true},
		{"http/1.0", "GET /x HTTP/1.0\r\n\r\n", 0, true},
		{"http/1.0 keep-alive", "GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 0, true},
		{"connection close", "GET / HTTP/1.1\r\nHost: x\r\nConnection: Close\r\n\r\n", 0, true},
		{"head", "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", 0, true},
		{"post", "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\n", 0, true},
		{"chunked", "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 0, true},
		{"two equal lengths", "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 0, true},
		{"two lengths", "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 0, false},
		{"bad length", "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: five\r\n\r\n", 0, false},
		{"length and chunked", "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 0, true},
		{"gzip", "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 0, false},
		{"absolute form", "GET http://other:81/r?q HTTP/1.1\r\nHost: x\r\n\r\n", 0, true},
		{"connect", "CONNECT example:443 HTTP/1.1\r\n\r\n", 0, true},
		{"options", "OPTIONS /o HTTP/1.1\r\nHost: x\r\n\r\n", 0, true},
		{"options star", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 0, false},
		{"expect continue", "PUT /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n", 0, true},
		{"expect other", "PUT /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: teapot\r\n\r\n", 0, false},
		{"no host", "GET / HTTP/1.1\r\n\r\n", 0, false},
		{"empty host", "GET / HTTP/1.1\r\nHost:\r\n\r\n", 0, true},
		{"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 0, false},
		{"bad host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 0, false},
		{"ctl in host", "GET / HTTP/1.1\r\nHost: a\x01\r\n\r\n", 0, false},
		{"folded", "GET / HTTP/1.1\r\nHost: x\r\nX-F: a\r\n  b\r\n\r\n", 0, true},
		{"folded host", "GET / HTTP/1.1\r\nHost: x\r\n y\r\n\r\n", 0, false},
		{"obs-text", "GET / HTTP/1.1\r\nHost: x\r\nX-A: caf\xe9\r\n\r\n", 0, true},
		{"bad name", "GET / HTTP/1.1\r\nHost: x\r\nX A: 1\r\n\r\n", 0, false},
		{"ctl in value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x7fb\r\n\r\n", 0, false},
		{"http/2.0", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 0, false},
		{"h2 preface", "PRI * HTTP/2.0\r\n\r\n", 0, true},
		{"bad version", "GET / HTTP/1.10\r\nHost: x\r\n\r\n", 0, false},
		{"bad method", "G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 0, false},
		{"no version", "GET /\r\nHost: x\r\n\r\n", 0, false},
		{"leading crlf", "\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", 0, false},
		{"incomplete", "GET / HTTP/1.1\r\nHost: x\r\n", 0, false},
		{"no end", "GET / HTTP/1.1\r\nHost: x", 0, false},
		{"empty", "", 0, false},
		{"at the limit", pad(limit), smallMaxHeaderBytes, true},
		{"over the limit", pad(limit + 1), smallMaxHeaderBytes, false},
		{"default limit", pad(http.DefaultMaxHeaderBytes + 4096), 0, true},
		{"over the default limit", pad(http.DefaultMaxHeaderBytes + 4097), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if ok := checkParse(t, addrs[tc.max], tc.max, []byte(tc.head)); ok != tc.ok {
				t.Errorf("ParseRequest succeeded %v, want %v", ok, tc.ok)
			}
		})
	}
}

// TestSkipAfterPOST: a request sent after a POST may start with CRs and
// LFs (four at most), which the server drops; ParseRequest reads what
// is left as the server reads it.
func TestSkipAfterPOST(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{{"GET ", 0}, {"\r\nGET", 2}, {"\n\nGE", 2}, {"\r\n\r\n\r\nGET", 4}, {"\r\n", 2}, {"", 0}} {
		if got := SkipAfterPOST([]byte(tc.in)); got != tc.want {
			t.Errorf("SkipAfterPOST(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
	// What the server answers to a GET after a POST and a CRLF is what
	// it answers to the GET alone.
	_, ours := servers(t, testHandler())
	post := "POST /readbody HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi"
	get := "GET /request HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
	both := talk(t, ours, post+"\r\n"+get, true)
	alone := talk(t, ours, post+get, true)
	if both != alone {
		t.Errorf("with the CRLF:\n%q\nwithout:\n%q", both, alone)
	}
	after := []byte("\r\n" + get)
	if _, err := ParseRequest(after[SkipAfterPOST(after):], 0); err != nil {
		t.Error(err)
	}
}

// FuzzParseRequest: for any bytes, ParseRequest of the first head in them
// succeeds exactly when a Server sent that head calls its handler, and
// then returns the request the handler gets. The server's MaxHeaderBytes
// is small, so that heads reach its limit.
func FuzzParseRequest(f *testing.F) {
	for _, raw := range rawRequests {
		if len(raw) < 8<<10 {
			f.Add([]byte(raw))
		}
	}
	for _, raw := range []string{
		"GET / HTTP/1.1\nHost: x\n\n",
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
		"PUT / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue, x\r\nContent-Length: 1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("p", smallMaxHeaderBytes+4096-33) + "\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
	} {
		f.Add([]byte(raw))
	}
	addr := viewServer(f, smallMaxHeaderBytes)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 8<<10 {
			return
		}
		checkParse(t, addr, smallMaxHeaderBytes, headOf(raw))
	})
}

// serveConnAddr starts s on connections a listener of the test accepts:
// it reads up to preRead bytes of each (those that come within 100 ms),
// then hands the connection and those bytes to ServeConn. It returns the
// listener's address.
func serveConnAddr(t testing.TB, s *Server, preRead int) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, preRead)
				_ = nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				n, _ := io.ReadAtLeast(nc, buf, preRead)
				_ = nc.SetReadDeadline(time.Time{})
				s.ServeConn(context.Background(), Prepend(nc, buf[:n]))
			}()
		}
	}()
	t.Cleanup(func() { _ = l.Close(); _ = s.Close() })
	return l.Addr().String()
}

// TestServeConnAnswersAsServe: a connection served by ServeConn, with
// none, some or all of the client's bytes read beforehand and given back
// by Prepend, gets what the same connection served by Serve gets, for
// every raw request TestMatchesNetHTTP sends, whole and half-closed.
func TestServeConnAnswersAsServe(t *testing.T) {
	quiet := log.New(io.Discard, "", 0)
	_, served := servers(t, testHandler())
	preReads := []int{0, 1, 37, 2 << 20}
	addrs := make([]string, len(preReads))
	for i, n := range preReads {
		addrs[i] = serveConnAddr(t, &Server{Handler: testHandler(), ErrorLog: quiet, ReadHeaderTimeout: 10 * time.Second}, n)
	}
	for name, raw := range rawRequests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, half := range []bool{false, true} {
				want := talk(t, served, raw, half)
				got := make([]string, len(addrs))
				var wg sync.WaitGroup
				for i, addr := range addrs {
					wg.Go(func() {
						c, err := net.Dial("tcp", addr)
						if err != nil {
							got[i] = err.Error()
							return
						}
						got[i] = talkOn(c, raw, half)
					})
				}
				wg.Wait()
				for i, g := range got {
					if g != want {
						t.Errorf("half-closed %v, %d bytes read before: Serve answered:\n%q\nServeConn:\n%q", half, preReads[i], clip(want), clip(g))
					}
				}
			}
		})
	}
}

// connPair returns the two ends of a loopback TCP connection.
func connPair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	return client, server
}

// serveConnAsync runs ServeConn on c and returns a channel closed when
// it returns.
func serveConnAsync(s *Server, ctx context.Context, c net.Conn) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.ServeConn(ctx, c)
	}()
	return done
}

func waitFor(t *testing.T, what string, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not after 10 s", what)
	}
}

// TestServeConnShutdown: Shutdown waits for a request running on a
// connection ServeConn serves, which then closes; a connection given to
// ServeConn once Shutdown has begun is closed at once.
func TestServeConnShutdown(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	s := &Server{ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		_, _ = io.WriteString(w, "released")
	})}
	client, server := connPair(t)
	done := serveConnAsync(s, context.Background(), server)
	_, _ = io.WriteString(client, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	waitFor(t, "the handler's start", started)
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v while a request ran", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-shut:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return once the request was over")
	}
	waitFor(t, "ServeConn's return", done)
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(client)
	if err != nil || !bytes.HasPrefix(b, []byte("HTTP/1.1 200 OK\r\n")) || !bytes.Contains(b, []byte("\r\nConnection: close\r\n")) || !bytes.HasSuffix(b, []byte("released")) {
		t.Errorf("answer %q, %v", b, err)
	}

	client, server = connPair(t)
	waitFor(t, "ServeConn's return after Shutdown", serveConnAsync(s, context.Background(), server))
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := client.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("a connection given after Shutdown: read %d, %v; want EOF", n, err)
	}
}

// TestServeConnClose: Close closes a connection ServeConn serves, which
// then returns.
func TestServeConnClose(t *testing.T) {
	s := &Server{Handler: testHandler(), ErrorLog: log.New(io.Discard, "", 0)}
	client, server := connPair(t)
	done := serveConnAsync(s, context.Background(), server)
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	const req = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
	_, _ = io.WriteString(client, req)
	want := len(appendAnswerFor(t, req, 200, http.Header{}, "hello"))
	if n, err := io.ReadFull(client, make([]byte, want)); err != nil {
		t.Fatalf("read %d of the answer: %v", n, err)
	}
	_ = s.Close()
	waitFor(t, "ServeConn's return after Close", done)
	if n, err := client.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("after Close: read %d, %v; want EOF", n, err)
	}
}

// TestServeConnContext: the context given to ServeConn plays
// BaseContext's part, ConnContext's applied to it, and requests find the
// server and the local address in it as on Serve's connections.
func TestServeConnContext(t *testing.T) {
	type key string
	got := make(chan string, 1)
	s := &Server{
		ErrorLog: log.New(io.Discard, "", 0),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, key("conn"), c.RemoteAddr().String())
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			got <- fmt.Sprintf("%v %v %v %v", ctx.Value(key("base")), ctx.Value(key("conn")) == r.RemoteAddr,
				ctx.Value(http.ServerContextKey) != nil, ctx.Value(http.LocalAddrContextKey))
		}),
	}
	client, server := connPair(t)
	done := serveConnAsync(s, context.WithValue(context.Background(), key("base"), "b"), server)
	_, _ = io.WriteString(client, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.ReadAll(client)
	waitFor(t, "ServeConn's return", done)
	if seen, want := <-got, "b true true "+server.LocalAddr().String(); seen != want {
		t.Errorf("the request's context held %q, want %q", seen, want)
	}
}

// TestPrepend: the prepended bytes come first, then the connection's;
// CloseWrite does nothing on a connection without one.
func TestPrepend(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if Prepend(a, nil) != a {
		t.Error("Prepend of nothing is not the connection itself")
	}
	buf := []byte("abc")
	p := Prepend(a, buf)
	buf[0] = 'x'
	go func() { _, _ = io.WriteString(b, "def"); _ = b.Close() }()
	got, err := io.ReadAll(p)
	if string(got) != "abcdef" || err != nil {
		t.Errorf("read %q, %v", got, err)
	}
	if err := p.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Error(err)
	}
}

// appendAnswerFor is AppendAnswer for the request whose head is head,
// dated answerDate.
func appendAnswerFor(t testing.TB, head string, status int, h http.Header, body string) []byte {
	t.Helper()
	req, err := ParseRequest([]byte(head), 0)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := AppendAnswer(nil, req, status, h, []byte(body), answerDate)
	return out
}

// An answerCase is what the answer handler does for a request: it sets
// early and calls WriteHeader(103) when early is set, makes its header h, calls
// WriteHeader(status), Flush when flush is set, and Write(body).
type answerCase struct {
	early  http.Header
	h      http.Header
	status int
	flush  bool
	body   []byte
}

// answerCases holds the cases by the id in their request's path,
// /case/id.
var (
	answerCases sync.Map
	answerIDs   atomic.Int64
)

// newAnswerCase registers c and returns the path of its requests.
func newAnswerCase(t testing.TB, c *answerCase) string {
	id := strconv.FormatInt(answerIDs.Add(1), 10)
	answerCases.Store(id, c)
	t.Cleanup(func() { answerCases.Delete(id) })
	return "/case/" + id
}

func answerHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ping" {
			_, _ = io.WriteString(w, "pong")
			return
		}
		v, ok := answerCases.Load(strings.TrimPrefix(r.URL.Path, "/case/"))
		if !ok {
			panic("no case " + r.URL.Path)
		}
		c := v.(*answerCase)
		if c.early != nil {
			maps.Copy(w.Header(), c.early)
			w.WriteHeader(http.StatusEarlyHints)
		}
		// The header is h, whatever the informational answer's was.
		clear(w.Header())
		for k, vs := range c.h {
			w.Header()[k] = slices.Clone(vs)
		}
		w.WriteHeader(c.status)
		if c.flush {
			w.(http.Flusher).Flush()
		}
		_, _ = w.Write(c.body)
	})
}

// ping is the request sent after each case's: the server answers it
// unless it closed the connection after the case's answer.
const ping = "GET /ping HTTP/1.1\r\nHost: x\r\n\r\n"

// answerRequests are the requests a case's answer is written for, %s
// its path; a POST's body is sent after the head (the server reads what
// the handler leaves).
var answerRequests = []struct{ name, head, body string }{
	{"1.1", "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", ""},
	{"1.1 close", "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", ""},
	{"1.0", "GET %s HTTP/1.0\r\n\r\n", ""},
	{"1.0 keep-alive", "GET %s HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", ""},
	{"head", "HEAD %s HTTP/1.1\r\nHost: x\r\n\r\n", ""},
	{"head 1.0 keep-alive", "HEAD %s HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", ""},
	{"post", "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n", "abc"},
}

// The Date field as the server writes it, in http.TimeFormat.
var (
	dateField  = regexp.MustCompile(`\r\nDate: ([A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT)\r\n`)
	answerDate = time.Date(2031, time.March, 4, 5, 6, 7, 0, time.FixedZone("X", 3600))
)

// withoutDates is b without its Date fields (those in http.TimeFormat)
// and their values.
func withoutDates(b []byte) ([]byte, []string) {
	var dates []string
	for _, m := range dateField.FindAllSubmatch(b, -1) {
		dates = append(dates, string(m[1]))
	}
	return dateField.ReplaceAll(b, []byte("\r\n")), dates
}

// compareAnswers compares what the server wrote with what the functions
// did, but for the dates: the functions' are answerDate, the server's
// now, as many of each, in the same format.
func compareAnswers(t *testing.T, what string, got, want []byte) {
	t.Helper()
	g, gotDates := withoutDates(got)
	w, wantDates := withoutDates(want)
	if !bytes.Equal(g, w) {
		t.Errorf("%s: the server wrote\n%q\nthe functions\n%q", what, clip(string(got)), clip(string(want)))
		return
	}
	if len(gotDates) != len(wantDates) {
		t.Errorf("%s: dates %q, want %q", what, gotDates, wantDates)
		return
	}
	for i, d := range gotDates {
		if tm, err := http.ParseTime(d); err != nil || time.Since(tm) > time.Minute || time.Until(tm) > time.Minute {
			t.Errorf("%s: the server's date %q", what, d)
		}
		if wd := answerDate.UTC().Format(http.TimeFormat); wantDates[i] != wd {
			t.Errorf("%s: date %q, want %q", what, wantDates[i], wd)
		}
	}
}

// expectedAnswer is what the functions say the server writes for c on
// the request whose head is head, followed by ping's answer when the
// connection stays open.
func expectedAnswer(t *testing.T, head string, c *answerCase) []byte {
	t.Helper()
	req, err := ParseRequest([]byte(head), 0)
	if err != nil {
		t.Fatalf("ParseRequest(%q): %v", head, err)
	}
	var out []byte
	var chunked, closeAfter bool
	if c.early != nil {
		if out, chunked, closeAfter = AppendHead(out, req, http.StatusEarlyHints, c.early, answerDate); chunked || closeAfter {
			t.Fatalf("103: chunked %v, close after %v", chunked, closeAfter)
		}
	}
	if c.flush {
		out, chunked, closeAfter = AppendHead(out, req, c.status, c.h, answerDate)
		hasBody := req.Method != http.MethodHead && c.status != http.StatusNoContent && c.status != http.StatusNotModified
		switch {
		case chunked:
			if len(c.body) > 0 {
				out = fmt.Appendf(out, "%x\r\n%s\r\n", len(c.body), c.body)
			}
			out = append(out, "0\r\n\r\n"...)
		case hasBody:
			out = append(out, c.body...)
		}
	} else {
		out, closeAfter = AppendAnswer(out, req, c.status, c.h, c.body, answerDate)
	}
	if !closeAfter {
		out = append(out, appendAnswerFor(t, ping, 200, http.Header{}, "pong")...)
	}
	return out
}

// TestAppendHeadAndAnswer: for every status, header, body and request of
// a table, what a Server writes when its handler sets the header, calls
// WriteHeader and Flush, then Write (a reverse proxy's way), is
// AppendHead's and the body, chunked when AppendHead says so; what it
// writes when the handler only writes is AppendAnswer's; and the server
// closes the connection after the answer (it does not answer the request
// sent behind) exactly when they say so.
func TestAppendHeadAndAnswer(t *testing.T) {
	addr := viewlessServer(t)
	bodies := [][]byte{nil, {}, []byte("0123456789"), bytes.Repeat([]byte("<html>5000 "), 5000/11+1)[:5000]}
	headers := map[string]func(body []byte) http.Header{
		"none": func([]byte) http.Header { return http.Header{} },
		"type": func([]byte) http.Header { return http.Header{"Content-Type": {"application/json"}} },
		"length": func(b []byte) http.Header {
			return http.Header{"Content-Length": {strconv.Itoa(len(b))}, "Content-Type": {"text/plain"}}
		},
		"multi": func([]byte) http.Header {
			return http.Header{"X-Multi": {"a", "b"}, "Cache-Control": {"no-cache"}, "Vary": {"Accept", "Accept-Encoding"}}
		},
		"close":    func([]byte) http.Header { return http.Header{"Connection": {"close"}} },
		"encoding": func([]byte) http.Header { return http.Header{"Content-Encoding": {"gzip"}} },
		"date":     func([]byte) http.Header { return http.Header{"Date": {"yesterday"}} },
	}
	for _, status := range []int{200, 201, 204, 304, 404, 500} {
		for _, flush := range []bool{true, false} {
			t.Run(fmt.Sprintf("%d flush %v", status, flush), func(t *testing.T) {
				t.Parallel()
				for hname, h := range headers {
					for _, body := range bodies {
						c := &answerCase{h: h(body), status: status, flush: flush, body: body}
						path := newAnswerCase(t, c)
						for _, r := range answerRequests {
							head := fmt.Sprintf(r.head, path)
							got := exchange(t, addr, []byte(head+r.body+ping))
							compareAnswers(t, fmt.Sprintf("%s, header %s, body of %d", r.name, hname, len(body)), got, expectedAnswer(t, head, c))
						}
					}
				}
			})
		}
	}
	t.Run("early hints", func(t *testing.T) {
		t.Parallel()
		early := http.Header{"Link": {"</a.css>; rel=preload"}, "Content-Length": {"7"}}
		for _, flush := range []bool{true, false} {
			for _, status := range []int{200, 204} {
				h := http.Header{"Link": early["Link"], "Content-Type": {"text/css"}}
				c := &answerCase{early: early, h: h, status: status, flush: flush, body: []byte("a{b:c}")}
				path := newAnswerCase(t, c)
				for _, r := range answerRequests {
					head := fmt.Sprintf(r.head, path)
					got := exchange(t, addr, []byte(head+r.body+ping))
					compareAnswers(t, fmt.Sprintf("%s, %d, flush %v", r.name, status, flush), got, expectedAnswer(t, head, c))
				}
			}
		}
	})
}

// viewlessServer serves answerHandler on loopback and returns its
// address.
func viewlessServer(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: answerHandler(), ErrorLog: log.New(io.Discard, "", 0), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { _ = s.Close() })
	return l.Addr().String()
}

// fuzzStatuses are the statuses FuzzAppendAnswer picks from.
var fuzzStatuses = []int{200, 201, 204, 206, 304, 400, 404, 500, 503, 599, 103, 100}

// fuzzNames are the field names that make a difference to the server,
// which a name of one byte in a fuzzed header stands for.
var fuzzNames = []string{"Content-Length", "Transfer-Encoding", "Connection", "Content-Type", "Content-Encoding",
	"Trailer", "Date", "X-A", http.TrailerPrefix + "X-T", "X-T", "Upgrade", "content-length"}

// fuzzHeader is the header a spec describes: a field a line, "name:
// value", or a name alone for an empty value; a name of one byte is one
// of fuzzNames.
func fuzzHeader(spec string) http.Header {
	h := http.Header{}
	for line := range strings.SplitSeq(spec, "\n") {
		if line == "" {
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		if len(k) == 1 {
			k = fuzzNames[int(k[0])%len(fuzzNames)]
		}
		h[k] = append(h[k], strings.TrimPrefix(v, " "))
	}
	return h
}

// FuzzAppendAnswer: for any header, status, body and request, what
// AppendAnswer writes is what a Server writes, and what net/http's
// writes, when the handler sets the header, calls WriteHeader and Write;
// and the server closes the connection after it when AppendAnswer says
// so.
func FuzzAppendAnswer(f *testing.F) {
	f.Add(uint8(0), uint8(0), "Content-Type: text/plain\nX-A: 1\nX-A: 2", []byte("hello"))
	f.Add(uint8(2), uint8(4), "Content-Length: 5", []byte("hello"))
	f.Add(uint8(0), uint8(3), "Content-Length: 3", []byte("hello"))
	f.Add(uint8(0), uint8(2), "Connection: keep-alive\nContent-Length: 5", []byte("hello"))
	f.Add(uint8(4), uint8(1), "Content-Type: text/html\nETag: x", []byte{})
	f.Add(uint8(0), uint8(0), "Transfer-Encoding: chunked\nTrailer: X-T\nX-T: 1", bytes.Repeat([]byte("a"), 3000))
	f.Add(uint8(0), uint8(0), "Transfer-Encoding: identity", []byte("abc"))
	f.Add(uint8(0), uint8(0), "Bad Name: 1\nX-Nl: a\rb", []byte("<html>"))
	f.Add(uint8(10), uint8(0), "Link: <a>", []byte("x"))
	f.Add(uint8(0), uint8(3), "\x00: 12\n\x02: keep-alive\n\x05: X-T\n\x09: 1", []byte("hello"))
	f.Add(uint8(0), uint8(0), "\x01: identity\n\x00: 3\n\x08: v", []byte("abc"))
	theirs, ours := servers(f, answerHandler())
	f.Fuzz(func(t *testing.T, statusPick, requestPick uint8, spec string, body []byte) {
		if len(body) > 8<<10 || len(spec) > 2<<10 {
			return
		}
		c := &answerCase{h: fuzzHeader(spec), status: fuzzStatuses[int(statusPick)%len(fuzzStatuses)], body: body}
		r := answerRequests[int(requestPick)%len(answerRequests)]
		head := fmt.Sprintf(r.head, newAnswerCase(t, c))
		raw := []byte(head + r.body + ping)
		want := expectedAnswer(t, head, c)
		compareAnswers(t, fmt.Sprintf("%s, %d, %q, body %q", r.name, c.status, spec, clip(string(body))), exchange(t, ours, raw), want)
		g, _ := withoutDates(exchange(t, theirs, raw))
		if w, _ := withoutDates(want); !bytes.Equal(g, w) {
			t.Errorf("%s, %d, %q, body %q: net/http wrote\n%q\nAppendAnswer\n%q", r.name, c.status, spec, clip(string(body)), clip(string(g)), clip(string(w)))
		}
	})
}

// TestAppendHeadContinue: AppendHead with 100 and no header writes the
// 100 Continue the server sends a client that expects one when its
// handler first reads the body.
func TestAppendHeadContinue(t *testing.T) {
	const head = "PUT /readbody HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
	req, err := ParseRequest([]byte(head), 0)
	if err != nil {
		t.Fatal(err)
	}
	out, chunked, closeAfter := AppendHead(nil, req, http.StatusContinue, http.Header{}, answerDate)
	if chunked || closeAfter {
		t.Errorf("chunked %v, close after %v", chunked, closeAfter)
	}
	_, ours := servers(t, testHandler())
	c, err := net.Dial("tcp", ours)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(c, head)
	got := make([]byte, len(out))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, out) {
		t.Errorf("the server sent %q (%v), AppendHead %q", got, err, out)
	}
}

func BenchmarkParseRequest(b *testing.B) {
	head := []byte("GET /api/v1/namespaces/default/pods?limit=500 HTTP/1.1\r\nHost: example:6443\r\nUser-Agent: kubectl/v1.37.2\r\nAccept: application/json\r\nAuthorization: Bearer abc\r\n\r\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseRequest(head, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func benchmarkAnswer(b *testing.B, write func(dst []byte, req *http.Request, h http.Header) []byte) {
	req, err := ParseRequest([]byte("GET /api/v1/pods HTTP/1.1\r\nHost: x\r\n\r\n"), 0)
	if err != nil {
		b.Fatal(err)
	}
	h := http.Header{"Content-Type": {"application/json"}, "Audit-Id": {"0b0e0f3c-8f4e-4c7e-9b61-1d2f3c4b5a69"}, "Cache-Control": {"no-cache, private"}}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = write(buf[:0], req, h)
	}
}

func BenchmarkAppendAnswer(b *testing.B) {
	now, body := time.Now(), []byte(`{"kind":"PodList","apiVersion":"v1","items":[]}`)
	benchmarkAnswer(b, func(dst []byte, req *http.Request, h http.Header) []byte {
		out, _ := AppendAnswer(dst, req, 200, h, body, now)
		return out
	})
}

// TestPrefaceClosesAfter: the HTTP/2 preface goes to the handler, and
// the connection closes after its answer, as the functions say.
func TestPrefaceClosesAfter(t *testing.T) {
	req, err := ParseRequest([]byte("PRI * HTTP/2.0\r\n\r\n"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, closeAfter := AppendHead(nil, req, 200, http.Header{}, answerDate); !closeAfter {
		t.Error("AppendHead: the connection stays open")
	}
	if _, closeAfter := AppendAnswer(nil, req, 200, http.Header{}, nil, answerDate); !closeAfter {
		t.Error("AppendAnswer: the connection stays open")
	}
}
