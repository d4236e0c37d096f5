package wire

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// scripted is an upstream that reads one request at a time and answers
// each with the next of its raw answers, on connections it counts: "close"
// closes the connection instead, "close:" and an answer closes it after
// the answer.
type scripted struct {
	ln      net.Listener
	answers chan string
	conns   atomic.Int32
	reqs    chan string // each request's head as received
}

func newScripted(t *testing.T) *scripted {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scripted{ln: ln, answers: make(chan string, 16), reqs: make(chan string, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			go s.serve(c)
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

func (s *scripted) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		tp := textproto.NewReader(br)
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		h, err := tp.ReadMIMEHeader()
		if err != nil {
			return
		}
		head := line
		if n, _ := strconv.Atoi(h.Get("Content-Length")); n > 0 {
			var b strings.Builder
			io.CopyN(&b, br, int64(n))
			head += " body=" + b.String()
		}
		s.reqs <- head
		a, ok := <-s.answers
		if !ok || a == "" {
			return
		}
		if a == "close" {
			return
		}
		last := strings.HasPrefix(a, "close:")
		if _, err := io.WriteString(c, strings.TrimPrefix(a, "close:")); err != nil || last {
			return
		}
	}
}

func (s *scripted) url() string { return "http://" + s.ln.Addr().String() }

func get(t *testing.T, tr *Transport, ctx context.Context, method, url string) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b), err
}

func TestFramings(t *testing.T) {
	s := newScripted(t)
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	cases := []struct {
		name, answer, body string
		length             int64
		trailer            http.Header
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", "hello", 5, nil},
		{"chunked with a trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n5;ext=1\r\nhello\r\n1\r\n!\r\n0\r\nX-Sum: 6\r\nX-Other: o\r\n\r\n",
			"hello!", -1, http.Header{"X-Sum": {"6"}, "X-Other": {"o"}}},
		{"empty", "HTTP/1.1 204 No Content\r\n\r\n", "", 0, nil},
		{"zero length", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "", 0, nil},
	}
	for _, c := range cases {
		s.answers <- c.answer
		resp, body, err := get(t, tr, context.Background(), "GET", s.url()+"/x?y=1")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		<-s.reqs
		if body != c.body || resp.ContentLength != c.length {
			t.Errorf("%s: body %q length %d", c.name, body, resp.ContentLength)
		}
		for k, v := range c.trailer {
			if got := resp.Trailer.Get(k); got != v[0] {
				t.Errorf("%s: trailer %s = %q, want %q", c.name, k, got, v[0])
			}
		}
		if resp.Header["Transfer-Encoding"] != nil || resp.Header["Trailer"] != nil {
			t.Errorf("%s: framing headers left in the header: %v", c.name, resp.Header)
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Errorf("%d connections for %d requests answered in full, want 1", n, len(cases))
	}
}

func TestHeadAndInformational(t *testing.T) {
	s := newScripted(t)
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	s.answers <- "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"
	resp, body, err := get(t, tr, context.Background(), "HEAD", s.url()+"/")
	if err != nil || body != "" || resp.ContentLength != 1234 {
		t.Fatalf("HEAD: %v %q %v", err, body, resp)
	}
	<-s.reqs
	var hints []int
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		hints = append(hints, code)
		return nil
	}})
	s.answers <- "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	_, body, err = get(t, tr, ctx, "GET", s.url()+"/")
	if err != nil || body != "ok" || len(hints) != 1 || hints[0] != 103 {
		t.Fatalf("103 then 200: %v %q %v", err, body, hints)
	}
	<-s.reqs
	if n := s.conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestMalformed: an answer that is not well-formed HTTP/1.1 is an error,
// and its connection is never used again.
func TestMalformed(t *testing.T) {
	cases := map[string]string{
		"protocol":            "HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n",
		"status":              "HTTP/1.1 20 OK\r\n\r\n",
		"folded":              "HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 0\r\n\r\n",
		"space before colon":  "HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n",
		"no colon":            "HTTP/1.1 200 OK\r\nbogus\r\n\r\n",
		"control character":   "HTTP/1.1 200 OK\r\nX-A: a\x01b\r\nContent-Length: 0\r\n\r\n",
		"two lengths":         "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
		"signed length":       "HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\na",
		"both framings":       "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"gzip then chunked":   "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
		"bad chunk size":      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
		"chunk past its size": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n",
		"cut short":           "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
		"bad trailer name":    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Content-Length\r\n\r\n0\r\n\r\n",
	}
	for name, answer := range cases {
		t.Run(name, func(t *testing.T) {
			s := newScripted(t)
			tr := &Transport{}
			defer tr.CloseIdleConnections()
			if name == "cut short" {
				answer = "close:" + answer
			}
			s.answers <- answer
			_, _, err := get(t, tr, context.Background(), "GET", s.url()+"/")
			if err == nil {
				t.Fatalf("no error for %q", answer)
			}
			<-s.reqs
			s.answers <- "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
			if _, body, err := get(t, tr, context.Background(), "GET", s.url()+"/"); err != nil || body != "ok" {
				t.Fatalf("the next request: %v %q", err, body)
			}
			if n := s.conns.Load(); n != 2 {
				t.Errorf("%d connections, want the failed one closed and a new one", n)
			}
		})
	}
}

// TestMoreThanAsked: an upstream that sends more than its answer is out of
// step: the connection is not used again.
func TestMoreThanAsked(t *testing.T) {
	s := newScripted(t)
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	s.answers <- "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nforged"
	if _, body, err := get(t, tr, context.Background(), "GET", s.url()+"/"); err != nil || body != "ok" {
		t.Fatalf("%v %q", err, body)
	}
	<-s.reqs
	s.answers <- "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nmine"
	if _, body, err := get(t, tr, context.Background(), "GET", s.url()+"/"); err != nil || body != "mine" {
		t.Fatalf("the next request got %q (%v), want its own answer", body, err)
	}
}

// TestStaleConnection: a pooled connection the upstream closed while it
// was idle costs a replayable request nothing; one that cannot be sent
// twice fails.
func TestStaleConnection(t *testing.T) {
	s := newScripted(t)
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	s.answers <- "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	if _, _, err := get(t, tr, context.Background(), "GET", s.url()+"/"); err != nil {
		t.Fatal(err)
	}
	<-s.reqs
	s.answers <- "close" // the upstream closes after reading the next request
	s.answers <- "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	if _, body, err := get(t, tr, context.Background(), "GET", s.url()+"/"); err != nil || body != "ok" {
		t.Fatalf("GET on a connection closed under it: %v %q", err, body)
	}
	<-s.reqs
	<-s.reqs
	s.answers <- "close"
	req, _ := http.NewRequest("POST", s.url()+"/", strings.NewReader("ab"))
	if _, err := tr.RoundTrip(req); err == nil {
		t.Fatal("POST on a connection closed under it: no error")
	}
}

// TestDeadline: the context's deadline and cancellation end a round trip
// blocked on a silent upstream, with the context's error.
func TestDeadline(t *testing.T) {
	s := newScripted(t)
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := get(t, tr, ctx, "GET", s.url()+"/")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("deadline: %v is not a timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("deadline of 200ms ended the round trip after %v", d)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, _, err = get(t, tr, ctx, "GET", s.url()+"/"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancellation: %v", err)
	}
	tr.ResponseHeaderTimeout = 100 * time.Millisecond
	_, _, err = get(t, tr, context.Background(), "GET", s.url()+"/")
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("response header timeout: %v", err)
	}
}

// TestAgainstNetHTTP: requests through a real net/http server, with
// bodies, headers and keep-alive, from several goroutines.
func TestAgainstNetHTTP(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen[r.Header.Get("X-Who")]++
		mu.Unlock()
		if r.Host == "" || r.Header.Get("User-Agent") != "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Body", string(b))
		if r.URL.Query().Get("stream") != "" {
			w.(http.Flusher).Flush() // chunked
		}
		io.WriteString(w, r.Method+" "+r.URL.RequestURI())
	}))
	defer srv.Close()
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				method, body := "GET", ""
				if i%2 == 1 {
					method, body = "PUT", "payload"
				}
				req, _ := http.NewRequest(method, srv.URL+"/a/b?stream="+strings.Repeat("1", i%3), strings.NewReader(body))
				if body == "" {
					req.Body, req.ContentLength = http.NoBody, 0
				}
				req.Header.Set("X-Who", "g")
				req.Header.Set("User-Agent", "")
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Errorf("goroutine %d request %d: %v", g, i, err)
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := method + " /a/b?stream=" + strings.Repeat("1", i%3)
				if err != nil || resp.StatusCode != 200 || string(b) != want || resp.Header.Get("X-Body") != body {
					t.Errorf("goroutine %d request %d: %d %q %v (X-Body %q)", g, i, resp.StatusCode, b, err, resp.Header.Get("X-Body"))
					return
				}
			}
		})
	}
	wg.Wait()
	if seen["g"] != 400 {
		t.Errorf("upstream saw %d requests, want 400", seen["g"])
	}
}

// TestRefusesBadRequests: what would not be one well-formed request on the
// wire is refused before anything is sent.
func TestRefusesBadRequests(t *testing.T) {
	tr := &Transport{}
	for name, mod := range map[string]func(*http.Request){
		"header value with CRLF": func(r *http.Request) { r.Header.Set("X-A", "a\r\nX-Injected: 1") },
		"header name with space": func(r *http.Request) { r.Header["X A"] = []string{"1"} },
		"method":                 func(r *http.Request) { r.Method = "GET /x" },
		"host":                   func(r *http.Request) { r.Host = "a b" },
	} {
		req, _ := http.NewRequest("GET", "http://127.0.0.1:1/", nil)
		mod(req)
		if _, err := tr.RoundTrip(req); err == nil || strings.Contains(err.Error(), "connect") {
			t.Errorf("%s: %v, want a refusal before dialing", name, err)
		}
	}
	req, _ := http.NewRequest("GET", "https://127.0.0.1:1/", nil)
	if Carries(req) {
		t.Error("carries https")
	}
	req, _ = http.NewRequest("POST", "http://127.0.0.1:1/", io.MultiReader(strings.NewReader("x")))
	if Carries(req) {
		t.Error("carries a body of unknown length")
	}
}
