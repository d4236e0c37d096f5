package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/testing/testpki"
)

// testHandler answers by path, in the ways handlers answer.
func testHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		switch p := r.URL.Path; {
		case p == "/hello":
			_, _ = io.WriteString(w, "hello")
		case p == "/empty":
		case p == "/json":
			h.Set("Content-Type", "application/json")
			h.Add("X-Multi", "a")
			h.Add("X-Multi", "b")
			_, _ = io.WriteString(w, `{"kind":"Pod"}`)
		case p == "/sniff":
			_, _ = io.WriteString(w, "<html><body>hi</body></html>")
		case p == "/big":
			for i := range 100 {
				fmt.Fprintf(w, "%099d\n", i)
			}
		case p == "/bigwrite":
			_, _ = w.Write([]byte(strings.Repeat("z", 10000)))
		case p == "/flush":
			_, _ = io.WriteString(w, "one")
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "two")
		case strings.HasPrefix(p, "/status/"):
			code, _ := strconv.Atoi(p[len("/status/"):])
			h.Set("X-Status", "yes")
			w.WriteHeader(code)
			_, _ = io.WriteString(w, "x")
		case p == "/cl":
			h.Set("Content-Length", "5")
			_, _ = io.WriteString(w, "hello")
		case p == "/cl-short":
			h.Set("Content-Length", "10")
			_, _ = io.WriteString(w, "hello")
		case p == "/cl-long":
			h.Set("Content-Length", "2")
			_, err := io.WriteString(w, "hello")
			h.Set("X-Late", fmt.Sprint(err))
		case p == "/trailer":
			h.Set("Trailer", "X-Sum")
			_, _ = io.WriteString(w, "body")
			h.Set("X-Sum", "7")
			h.Set(http.TrailerPrefix+"X-Late", "8")
		case p == "/early":
			h.Set("Link", "</a.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			_, _ = io.WriteString(w, "after")
		case p == "/close":
			h.Set("Connection", "close")
			_, _ = io.WriteString(w, "bye")
		case p == "/readbody":
			b, err := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%d %v %q", len(b), err, b)
		case p == "/ignorebody":
			_, _ = io.WriteString(w, "ignored")
		case p == "/closebody":
			_ = r.Body.Close()
			_, _ = io.WriteString(w, "closed")
		case p == "/abort":
			_, _ = io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		case p == "/hijack":
			c, bw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			_, _ = bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi")
			_ = bw.Flush()
			_ = c.Close()
		case p == "/te-identity":
			h.Set("Transfer-Encoding", "identity")
			_, _ = io.WriteString(w, "ident")
		case p == "/newline":
			h["X-Bad"] = []string{"a\r\nb", " spaced "}
			_, _ = io.WriteString(w, "ok")
		case p == "/tls":
			if r.TLS == nil {
				_, _ = io.WriteString(w, "plain")
				break
			}
			fmt.Fprintf(w, "tls %x %q complete=%v", r.TLS.Version, r.TLS.NegotiatedProtocol, r.TLS.HandshakeComplete)
		case p == "/request":
			fmt.Fprintf(w, "%s %s %s host=%q cl=%d te=%q close=%v\n", r.Method, r.RequestURI, r.Proto, r.Host, r.ContentLength, r.TransferEncoding, r.Close)
			keys := make([]string, 0, len(r.Header))
			for k := range r.Header {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				fmt.Fprintf(w, "%s: %q\n", k, r.Header[k])
			}
		default:
			http.NotFound(w, r)
		}
	})
}

// servers starts net/http's server and this package's on loopback with
// the same handler, and returns their addresses.
func servers(t testing.TB, h http.Handler) (nethttp, ours string) {
	return serversTLS(t, h, nil)
}

// serverTLS is a TLS configuration with a certificate for loopback.
func serverTLS(t testing.TB) *tls.Config {
	ca := testpki.NewCA(t, "h1-test")
	cert := ca.Issue(t, "127.0.0.1", nil, x509.ExtKeyUsageServerAuth)
	return &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
}

// serversTLS is servers, serving TLS with cfg unless it is nil.
func serversTLS(t testing.TB, h http.Handler, cfg *tls.Config) (nethttp, ours string) {
	t.Helper()
	quiet := log.New(io.Discard, "", 0)
	l1, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s1 := &http.Server{Handler: h, ErrorLog: quiet, ReadHeaderTimeout: 10 * time.Second}
	s2 := &Server{Handler: h, ErrorLog: quiet, ReadHeaderTimeout: 10 * time.Second, TLSConfig: cfg}
	if cfg != nil {
		l1 = tls.NewListener(l1, cfg)
	}
	go func() { _ = s1.Serve(l1) }()
	go func() { _ = s2.Serve(l2) }()
	t.Cleanup(func() { _ = s1.Close(); _ = s2.Close() })
	return l1.Addr().String(), l2.Addr().String()
}

var dateLine = regexp.MustCompile(`Date: [^\r\n]*\r\n`)

// talk sends raw on a connection of its own, half-closes it when half is
// set, and returns all the server sent until it closed (or went quiet),
// Date lines out.
func talk(t testing.TB, addr, raw string, half bool) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return talkOn(c, raw, half)
}

// clientTLS asks for HTTP/1.1 by ALPN and trusts any certificate.
var clientTLS = &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}

// talkTLS is talk over TLS.
func talkTLS(t testing.TB, addr, raw string, half bool) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, clientTLS)
	if err != nil {
		t.Fatal(err)
	}
	return talkOn(c, raw, half)
}

func talkOn(c net.Conn, raw string, half bool) string {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		return "write error"
	}
	if half {
		_ = c.(interface{ CloseWrite() error }).CloseWrite()
	}
	var out strings.Builder
	br := bufio.NewReader(c)
	for {
		// A connection kept open ends the exchange once the server has
		// said nothing for a while: long enough for a busy machine.
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		b, err := br.ReadByte()
		if err != nil {
			break
		}
		out.WriteByte(b)
	}
	return dateLine.ReplaceAllString(out.String(), "")
}

const host = "Host: example\r\n"

// rawRequests are the requests both servers get, each on a connection of
// its own; several hold more than one request.
var rawRequests = map[string]string{
	"hello":              "GET /hello HTTP/1.1\r\n" + host + "\r\n",
	"two on one":         "GET /hello HTTP/1.1\r\n" + host + "\r\nGET /json HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"empty":              "GET /empty HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"json":               "GET /json HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"sniff":              "GET /sniff HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"big":                "GET /big HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"big write":          "GET /bigwrite HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"flush":              "GET /flush HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"204":                "GET /status/204 HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"304":                "GET /status/304 HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"404":                "GET /status/404 HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"unknown status":     "GET /status/599 HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"cl":                 "GET /cl HTTP/1.1\r\n" + host + "\r\nGET /hello HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"cl short":           "GET /cl-short HTTP/1.1\r\n" + host + "\r\nGET /hello HTTP/1.1\r\n" + host + "\r\n",
	"cl long":            "GET /cl-long HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"trailer":            "GET /trailer HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"early hints":        "GET /early HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"handler close":      "GET /close HTTP/1.1\r\n" + host + "\r\nGET /hello HTTP/1.1\r\n" + host + "\r\n",
	"head":               "HEAD /hello HTTP/1.1\r\n" + host + "\r\nHEAD /json HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"head big":           "HEAD /big HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"http/1.0":           "GET /hello HTTP/1.0\r\n\r\n",
	"http/1.0 keepalive": "GET /cl HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /hello HTTP/1.0\r\n\r\n",
	"http/1.0 big":       "GET /big HTTP/1.0\r\n\r\n",
	"post read":          "POST /readbody HTTP/1.1\r\n" + host + "Content-Length: 5\r\n\r\nhelloGET /hello HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"post crlf after":    "POST /readbody HTTP/1.1\r\n" + host + "Content-Length: 5\r\n\r\nhello\r\nGET /hello HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"post chunked":       "POST /readbody HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\nGET /hello HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"post unread":        "POST /ignorebody HTTP/1.1\r\n" + host + "Content-Length: 5\r\n\r\nhelloGET /hello HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"post closed":        "POST /closebody HTTP/1.1\r\n" + host + "Content-Length: 5\r\n\r\nhelloGET /hello HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"post big unread":    "POST /ignorebody HTTP/1.1\r\n" + host + "Content-Length: 300000\r\n\r\n" + strings.Repeat("b", 300000) + "GET /hello HTTP/1.1\r\n" + host + "\r\n",
	"expect continue":    "POST /readbody HTTP/1.1\r\n" + host + "Content-Length: 5\r\nExpect: 100-continue\r\n\r\nhello",
	"expect unread":      "POST /ignorebody HTTP/1.1\r\n" + host + "Content-Length: 5\r\nExpect: 100-continue\r\n\r\n",
	"expect other":       "POST /readbody HTTP/1.1\r\n" + host + "Content-Length: 5\r\nExpect: teapot\r\n\r\nhello",
	"abort":              "GET /abort HTTP/1.1\r\n" + host + "\r\nGET /hello HTTP/1.1\r\n" + host + "\r\n",
	"hijack":             "GET /hijack HTTP/1.1\r\n" + host + "\r\n",
	"te identity":        "GET /te-identity HTTP/1.1\r\n" + host + "\r\n",
	"header newline":     "GET /newline HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"request":            "GET /request?a=1 HTTP/1.1\r\n" + host + "X-A: 1\r\nX-A: 2\r\nx-lower: v\r\nConnection: close\r\n\r\n",
	"absolute form":      "GET http://other/request HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"no host":            "GET /hello HTTP/1.1\r\n\r\n",
	"empty host":         "GET /request HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n",
	"two hosts":          "GET /request HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n",
	"bad host":           "GET /hello HTTP/1.1\r\nHost: a b\r\n\r\n",
	"http/2.0":           "GET /hello HTTP/2.0\r\n" + host + "\r\n",
	"http/3.1":           "GET /hello HTTP/3.1\r\n" + host + "\r\n",
	"bad version":        "GET /hello HTTP/1.10\r\n" + host + "\r\n",
	"bad line":           "GET /hello\r\n" + host + "\r\n",
	"bad method":         "G(T /hello HTTP/1.1\r\n" + host + "\r\n",
	"te gzip":            "POST /readbody HTTP/1.1\r\n" + host + "Transfer-Encoding: gzip\r\n\r\n",
	"cl and te":          "POST /readbody HTTP/1.1\r\n" + host + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"two cls":            "POST /readbody HTTP/1.1\r\n" + host + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
	"bad chunk":          "POST /readbody HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
	"folded":             "GET /request HTTP/1.1\r\n" + host + "X-F: a\r\n b\r\nConnection: close\r\n\r\n",
	"bad header name":    "GET /hello HTTP/1.1\r\n" + host + "X A: 1\r\n\r\n",
	"ctl in value":       "GET /hello HTTP/1.1\r\n" + host + "X-A: a\x01b\r\n\r\n",
	"huge header":        "GET /hello HTTP/1.1\r\n" + host + "X-Big: " + strings.Repeat("a", 1<<20+5000) + "\r\n\r\n",
	"pri":                "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	"tls":                "GET /tls HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"options star":       "OPTIONS * HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"connect":            "CONNECT example:443 HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
	"garbage":            "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03",
}

// TestMatchesNetHTTP sends every raw request to net/http's server and to
// this one, the same handler behind both, and compares all that comes
// back on the connection, but the Date lines.
func TestMatchesNetHTTP(t *testing.T) {
	theirs, ours := servers(t, testHandler())
	compareAll(t, theirs, ours, talk)
}

// compareAll sends every raw request, whole and half-closed, to both
// servers with say, and compares what comes back.
func compareAll(t *testing.T, theirs, ours string, say func(testing.TB, string, string, bool) string) {
	for name, raw := range rawRequests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, half := range []bool{false, true} {
				want := say(t, theirs, raw, half)
				got := say(t, ours, raw, half)
				if got != want {
					t.Errorf("half-closed %v: net/http answered:\n%q\nthis server:\n%q", half, clip(want), clip(got))
				}
			}
		})
	}
}

// TestMatchesNetHTTPOverTLS is TestMatchesNetHTTP over TLS, HTTP/1.1
// negotiated by ALPN; a client that speaks plain HTTP to the TLS port, or
// anything else but TLS, gets what net/http gives it.
func TestMatchesNetHTTPOverTLS(t *testing.T) {
	theirs, ours := serversTLS(t, testHandler(), serverTLS(t))
	compareAll(t, theirs, ours, talkTLS)
	for name, raw := range map[string]string{"plain http": rawRequests["hello"], "plain garbage": "\x00\x01hello\r\n\r\n"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := talk(t, theirs, raw, true)
			got := talk(t, ours, raw, true)
			if got != want {
				t.Errorf("net/http answered:\n%q\nthis server:\n%q", want, got)
			}
		})
	}
	if got := talkTLS(t, ours, rawRequests["tls"], false); !strings.HasSuffix(got, `tls 304 "http/1.1" complete=true`) {
		t.Errorf("the handler saw %q", got)
	}
}

// TestTLSNextProto: a connection that negotiates h2 is handed over, its
// handshake done; without a taker, it is closed.
func TestTLSNextProto(t *testing.T) {
	cfg := serverTLS(t)
	take := func(c *tls.Conn) {
		_, _ = fmt.Fprintf(c, "taken %q", c.ConnectionState().NegotiatedProtocol)
		_ = c.Close()
	}
	for _, taker := range []bool{true, false} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := &Server{Handler: testHandler(), TLSConfig: cfg, ErrorLog: log.New(io.Discard, "", 0)}
		if taker {
			s.TLSNextProto = map[string]func(*tls.Conn){"h2": take}
		}
		go func() { _ = s.Serve(l) }()
		c, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, err := io.ReadAll(c)
		_ = c.Close()
		_ = s.Close()
		want := `taken "h2"`
		if !taker {
			want = ""
		}
		if string(b) != want || err != nil {
			t.Errorf("taker %v: read %q, %v; want %q", taker, b, err, want)
		}
	}
}

// TestShutdownClosesSilentConnections: a connection that has said
// nothing for newIdleAfter (not even its TLS handshake) does not hold
// Shutdown until its header's timeout, as with net/http.
func TestShutdownClosesSilentConnections(t *testing.T) {
	for name, cfg := range map[string]*tls.Config{"plain": nil, "tls": serverTLS(t)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			s := &Server{Handler: testHandler(), TLSConfig: cfg, ReadHeaderTimeout: time.Minute, ErrorLog: log.New(io.Discard, "", 0)}
			go func() { _ = s.Serve(l) }()
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			time.Sleep(100 * time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), 3*newIdleAfter)
			defer cancel()
			start := time.Now()
			if err := s.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v after %v", err, time.Since(start))
			}
		})
	}
}

func clip(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "..."
	}
	return s
}

// TestClientGoneCancelsALongRequest: a request that runs past watchDelay
// has its context cancelled when its client closes the connection (as
// net/http cancels every request's); the next request on a connection
// whose client sent it early is read whole, the byte the watch read ahead
// included.
func TestClientGoneCancelsALongRequest(t *testing.T) {
	cancelled := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/wait":
			select {
			case <-r.Context().Done():
				cancelled <- context.Cause(r.Context())
			case <-time.After(10 * time.Second):
				cancelled <- nil
			}
		case "/slow":
			time.Sleep(3 * watchDelay)
			_, _ = io.WriteString(w, "slow")
		default:
			_, _ = io.WriteString(w, "fast "+r.URL.Path)
		}
	})
	_, ours := servers(t, h)
	t.Run("gone", func(t *testing.T) {
		c, err := net.Dial("tcp", ours)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(c, "GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
		time.Sleep(2 * watchDelay)
		_ = c.Close()
		select {
		case err := <-cancelled:
			if err == nil {
				t.Fatal("the request ran on after its client left")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the handler did not return")
		}
	})
	t.Run("pipelined", func(t *testing.T) {
		got := talk(t, ours, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", false)
		if !strings.Contains(got, "\r\n\r\nslowHTTP/1.1 200 OK") || !strings.HasSuffix(got, "fast /next") {
			t.Errorf("answers:\n%q", got)
		}
	})
	t.Run("sent while the first runs", func(t *testing.T) {
		c, err := net.Dial("tcp", ours)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
		time.Sleep(2 * watchDelay)
		_, _ = io.WriteString(c, "GET /next HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, _ := io.ReadAll(c)
		got := dateLine.ReplaceAllString(string(b), "")
		if !strings.Contains(got, "\r\n\r\nslowHTTP/1.1 200 OK") || !strings.HasSuffix(got, "fast /next") {
			t.Errorf("answers:\n%q", got)
		}
	})
}

// FuzzMatchesNetHTTP sends any bytes to both servers, the test handler
// behind each, half-closed, and compares what comes back: this server
// refuses what net/http's refuses, in the same words, and answers the
// rest the same way.
func FuzzMatchesNetHTTP(f *testing.F) {
	for _, raw := range rawRequests {
		if len(raw) < 4096 {
			f.Add([]byte(raw))
		}
	}
	theirs, ours := servers(f, testHandler())
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 64<<10 {
			return
		}
		want := talk(t, theirs, string(raw), true)
		got := talk(t, ours, string(raw), true)
		if got != want {
			t.Errorf("for %q\nnet/http answered:\n%q\nthis server:\n%q", clip(string(raw)), clip(want), clip(got))
		}
	})
}

// TestBodyOutlivesTheHeaderTimeout: ReadHeaderTimeout bounds the header
// alone; a body that takes longer to arrive is read whole.
func TestBodyOutlivesTheHeaderTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: testHandler(), ReadHeaderTimeout: 200 * time.Millisecond, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = s.Serve(l) }()
	defer s.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "POST /readbody HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhe")
	time.Sleep(600 * time.Millisecond)
	_, _ = io.WriteString(c, "llo")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, _ := io.ReadAll(c)
	if !strings.HasSuffix(string(b), `5 <nil> "hello"`) {
		t.Errorf("answer:\n%q", b)
	}
}
