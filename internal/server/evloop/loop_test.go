//go:build linux

package evloop

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// gateFunc is a Gate of one function.
type gateFunc func(x *Exchange)

func (f gateFunc) Serve(x *Exchange) { f(x) }

// start serves on loopback with gate; handed gets the connections handed
// over (answered "handed" and closed).
func start(t *testing.T, gate Gate, tune func(*Server)) (addr string, s *Server, handed chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	handed = make(chan string, 16)
	s = &Server{Gate: gate, Workers: 2, HandOver: func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			handed <- "error: " + err.Error()
			return
		}
		handed <- req.Method + " " + req.RequestURI
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhanded")
	}}
	if tune != nil {
		tune(s)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close(); _ = ln.Close() })
	return ln.Addr().String(), s, handed
}

// answer is a whole answer with body b.
func answer(b string) []byte {
	return []byte("HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(b)) + "\r\n\r\n" + b)
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

func readBody(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPipelinedInTurn: requests sent together are answered in order, one
// at a time, each exchange starting when the one before has ended.
func TestPipelinedInTurn(t *testing.T) {
	var mu sync.Mutex
	active := 0
	addr, _, _ := start(t, gateFunc(func(x *Exchange) {
		mu.Lock()
		active++
		if active > 1 {
			t.Error("two exchanges at once on one connection")
		}
		mu.Unlock()
		target := x.Request().RequestURI
		if strings.HasSuffix(target, "later") {
			x.Wait(nil)
			go func() {
				time.Sleep(20 * time.Millisecond)
				x.Post(func() {
					mu.Lock()
					active--
					mu.Unlock()
					x.Reply(answer(target), false)
				})
			}()
			return
		}
		mu.Lock()
		active--
		mu.Unlock()
		x.Reply(answer(target+" "+string(x.Body())), false)
	}), nil)
	c, br := dial(t, addr)
	_, _ = io.WriteString(c, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2later HTTP/1.1\r\nHost: a\r\n\r\n"+
		"POST /3 HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nbody\r\nGET /4 HTTP/1.1\r\nHost: a\r\n\r\n")
	for _, want := range []string{"/1 ", "/2later", "/3 body", "/4 "} {
		if got := readBody(t, br); got != want {
			t.Fatalf("answer %q, want %q", got, want)
		}
	}
}

// TestHandsOver: a request the loop does not serve (HTTP/1.0, chunked, an
// Expect, an upgrade, a malformed head) goes with its connection and the
// bytes read to HandOver; so does one the gate hands over.
func TestHandsOver(t *testing.T) {
	addr, s, handed := start(t, gateFunc(func(x *Exchange) {
		if x.Request().URL.Path == "/gate-hands-over" {
			x.HandOver()
			return
		}
		x.Reply(answer("loop"), false)
	}), nil)
	for _, raw := range []string{
		"GET /old HTTP/1.0\r\n\r\n",
		"POST /chunked HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"POST /expect HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
		"GET /upgrade HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
		"GET /gate-hands-over HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /nohost HTTP/1.1\r\n\r\n",
	} {
		c, br := dial(t, addr)
		// A request the loop serves first: the hand-over comes after.
		_, _ = io.WriteString(c, "GET /first HTTP/1.1\r\nHost: a\r\n\r\n")
		if got := readBody(t, br); got != "loop" {
			t.Fatalf("first answer %q", got)
		}
		_, _ = io.WriteString(c, raw)
		if got := readBody(t, br); got != "handed" {
			t.Fatalf("%q: answer %q, want the hand-over's", raw, got)
		}
		got := <-handed
		want := strings.SplitN(raw, " HTTP", 2)[0]
		if strings.Contains(raw, "/nohost") {
			want = "GET /nohost"
		}
		if got != want {
			t.Errorf("handed over %q, want %q", got, want)
		}
	}
	if g, h := s.Counts(); h != 6 || g != 7 {
		t.Errorf("counts: gated %d, handed over %d; want 7 and 6", g, h)
	}
}

// relayFunc is a Relay that passes the upstream's bytes on whole, the
// answer over when it has n bytes.
type relayFunc struct {
	n      int
	got    int
	ended  chan error
	failed func(err error, reached, stale bool) Next
}

func (r *relayFunc) Answer(in []byte, eof bool, out []byte) (int, []byte, State, error) {
	take := min(len(in), r.n-r.got)
	r.got += take
	out = append(out, in[:take]...)
	if r.got == r.n {
		return take, out, Done, nil
	}
	return take, out, More, nil
}

func (r *relayFunc) Failed(err error, reached, stale bool) Next {
	if r.failed != nil {
		return r.failed(err, reached, stale)
	}
	return Next{Answer: answer("failed: " + err.Error())}
}

func (r *relayFunc) Ended(err error) { r.ended <- err }

// upstreamServer answers each request it reads with a fixed answer,
// closing the connection after the first when closeAfterOne.
func upstreamServer(t *testing.T, body string, closeAfterOne bool) (addr string, conns *int32mu) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	conns = &int32mu{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.add()
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					_, _ = c.Write(answer(body))
					if closeAfterOne {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), conns
}

type int32mu struct {
	mu sync.Mutex
	n  int
}

func (c *int32mu) add() { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *int32mu) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TestForwardKeepsConnections: answers are relayed, and the upstream
// connection is kept for the next request; an upstream that closes its
// kept connection makes the next attempt stale.
func TestForwardKeepsConnections(t *testing.T) {
	up, conns := upstreamServer(t, "from upstream", false)
	want := string(answer("from upstream"))
	ended := make(chan error, 16)
	addr, _, _ := start(t, gateFunc(func(x *Exchange) {
		x.Forward(up, []byte("GET / HTTP/1.1\r\nHost: up\r\n\r\n"), &relayFunc{n: len(want), ended: ended})
	}), func(s *Server) { s.MaxIdlePerHost = 4; s.Workers = 1 })
	c, br := dial(t, addr)
	for range 3 {
		_, _ = io.WriteString(c, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
		if got := readBody(t, br); got != "from upstream" {
			t.Fatalf("answer %q", got)
		}
		if err := <-ended; err != nil {
			t.Fatalf("ended with %v", err)
		}
	}
	if n := conns.get(); n != 1 {
		t.Errorf("%d upstream connections for 3 requests in turn, want 1", n)
	}

	up2, _ := upstreamServer(t, "once", true)
	want2 := string(answer("once"))
	stale := make(chan bool, 4)
	addr2, _, _ := start(t, gateFunc(func(x *Exchange) {
		x.Forward(up2, []byte("GET / HTTP/1.1\r\nHost: up\r\n\r\n"), &relayFunc{n: len(want2), ended: ended, failed: func(err error, reached, st bool) Next {
			stale <- st
			return Next{Addr: up2, Request: []byte("GET / HTTP/1.1\r\nHost: up\r\n\r\n"), Fresh: true}
		}})
	}), func(s *Server) { s.MaxIdlePerHost = 4; s.Workers = 1 })
	c2, br2 := dial(t, addr2)
	for range 2 {
		_, _ = io.WriteString(c2, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
		if got := readBody(t, br2); got != "once" {
			t.Fatalf("answer %q", got)
		}
		<-ended
		time.Sleep(50 * time.Millisecond) // the upstream's close arrives
	}
	select {
	case st := <-stale:
		t.Errorf("an attempt failed (stale %v); the loop should have dropped the closed idle connection", st)
	default:
	}
}

// TestClientGoneEnds: a client that goes away ends its exchange, whether
// it waits for the gate or for the upstream.
func TestClientGoneEnds(t *testing.T) {
	gone := make(chan struct{}, 1)
	ended := make(chan error, 1)
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	addr, _, _ := start(t, gateFunc(func(x *Exchange) {
		if x.Request().URL.Path == "/wait" {
			x.Wait(func() { gone <- struct{}{} })
			return
		}
		x.Forward(silent.Addr().String(), []byte("GET / HTTP/1.1\r\nHost: up\r\n\r\n"), &relayFunc{n: 100, ended: ended})
	}), nil)
	for _, p := range []string{"/wait", "/forward"} {
		c, _ := dial(t, addr)
		_, _ = io.WriteString(c, "GET "+p+" HTTP/1.1\r\nHost: a\r\n\r\n")
		time.Sleep(50 * time.Millisecond)
		_ = c.Close()
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting exchange did not end")
	}
	select {
	case err := <-ended:
		if !errors.Is(err, ErrClientGone) {
			t.Errorf("ended with %v, want ErrClientGone", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the forwarded exchange did not end")
	}
}

// TestTimers: SetTimer runs on the loop unless the exchange has ended; a
// head not whole within ReadHeaderTimeout closes the connection.
func TestTimers(t *testing.T) {
	addr, _, _ := start(t, gateFunc(func(x *Exchange) {
		x.Wait(nil)
		x.SetTimer(time.Now().Add(30*time.Millisecond), func() { x.Reply(answer("timer"), false) })
	}), func(s *Server) { s.ReadHeaderTimeout = 200 * time.Millisecond })
	c, br := dial(t, addr)
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if got := readBody(t, br); got != "timer" {
		t.Fatalf("answer %q", got)
	}
	c2, br2 := dial(t, addr)
	_, _ = io.WriteString(c2, "GET / HTTP/1.1\r\nHo")
	if _, err := br2.ReadByte(); err != io.EOF {
		t.Fatalf("a head left unfinished: read %v, want EOF", err)
	}
}

// TestTimerMovedLater: a connection's bound moved later than its timer
// (the head's short one, then the exchange's, then idle) holds at the
// later time: the timer, firing early, is set again.
func TestTimerMovedLater(t *testing.T) {
	addr, _, _ := start(t, gateFunc(func(x *Exchange) {
		x.Wait(nil)
		x.SetTimer(time.Now().Add(400*time.Millisecond), func() { x.Reply(answer("late"), false) })
	}), func(s *Server) {
		s.ReadHeaderTimeout = 50 * time.Millisecond
		s.IdleTimeout = 300 * time.Millisecond
	})
	c, br := dial(t, addr)
	start := time.Now()
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if got := readBody(t, br); got != "late" {
		t.Fatalf("answer %q", got)
	}
	if took := time.Since(start); took < 400*time.Millisecond {
		t.Errorf("answered after %v, before the exchange's timer", took)
	}
	answered := time.Now()
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle: read %v, want EOF", err)
	}
	if idle := time.Since(answered); idle < 250*time.Millisecond {
		t.Errorf("closed %v after the answer, before IdleTimeout", idle)
	}
}

// TestShutdownWaits: Shutdown waits for the exchange in progress, whose
// connection closes after its answer; then the loops stop.
func TestShutdownWaits(t *testing.T) {
	release := make(chan *Exchange, 1)
	addr, s, _ := start(t, gateFunc(func(x *Exchange) {
		x.Wait(nil)
		release <- x
	}), nil)
	c, br := dial(t, addr)
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	x := <-release
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with an exchange in progress", err)
	case <-time.After(100 * time.Millisecond):
	}
	x.Post(func() { x.Reply(answer("last"), false) })
	if got := readBody(t, br); got != "last" {
		t.Fatalf("answer %q", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after the last answer: %v, want EOF", err)
	}
}

// TestConnectionsGoRound: connections opened together are spread over the
// loops, not all held by the one that woke for the listener.
func TestConnectionsGoRound(t *testing.T) {
	addr, s, _ := start(t, gateFunc(func(x *Exchange) { x.Reply(answer("ok"), false) }), func(s *Server) { s.Workers = 2 })
	var conns []*bufio.Reader
	var cs []net.Conn
	for range 8 {
		c, br := dial(t, addr)
		cs = append(cs, c)
		conns = append(conns, br)
	}
	for i, c := range cs {
		_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
		if got := readBody(t, conns[i]); got != "ok" {
			t.Fatalf("answer %q", got)
		}
	}
	s.mu.Lock()
	loops := s.loops
	s.mu.Unlock()
	for i, l := range loops {
		if n := l.open.Load(); n != 4 {
			t.Errorf("loop %d holds %d of the 8 connections, want 4", i, n)
		}
	}
}
