package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMessageSize: how the event-floor relay frames requests and answers.
func TestMessageSize(t *testing.T) {
	for _, c := range []struct {
		msg     string
		request bool
		size    int
		bad     bool
	}{
		{msg: "GET / HTTP/1.1\r\nHost: a\r\n\r\n", request: true, size: 27},
		{msg: "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\n\r\n", request: true, size: 27},
		{msg: "GET / HTTP/1.1\r\nHost: a\r\n", request: true},
		{msg: "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhel", request: true},
		{msg: "POST / HTTP/1.1\r\ncontent-length: 5\r\n\r\nhello!", request: true, size: 43},
		{msg: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", size: 40},
		{msg: "HTTP/1.1 204 No Content\r\n\r\n", size: 27},
		{msg: "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", request: true, bad: true},
		{msg: "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", request: true, bad: true},
		{msg: "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", request: true, bad: true},
		{msg: "GET / HTTP/1.1\r\nno colon\r\n\r\n", request: true, bad: true},
		{msg: "GET /\r\n\r\n", request: true, bad: true},
		{msg: "GET / SPDY/3\r\n\r\n", request: true, bad: true},
		{msg: "ICY 200 OK\r\n\r\n", bad: true},
		{msg: "GET / HTTP/1.1\r\nX: " + strings.Repeat("a", 70<<10), request: true, bad: true},
	} {
		size, err := messageSize([]byte(c.msg), c.request)
		if (err != nil) != c.bad || size != c.size {
			t.Errorf("%.40q: %d, %v; want %d, error %v", c.msg, size, err, c.size, c.bad)
		}
	}
}

// TestEventRelay: the event-floor row's relay answers what the upstream
// answers, requests with bodies and pipelined ones included; refuses to
// frame what it does not by closing the connection; and stops.
func TestEventRelay(t *testing.T) {
	up := httptest.NewServer(upstreamHandler())
	defer up.Close()
	addr := freeAddr(t)
	stop, _, err := startEvents(addr, strings.TrimPrefix(up.URL, "http://"), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	for i := range 4 {
		var resp *http.Response
		if i%2 == 0 {
			resp, err = c.Get("http://" + addr + path)
		} else {
			resp, err = c.Post("http://"+addr+path, "text/plain", strings.NewReader("a body"))
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(body) != answerSize {
			t.Fatalf("request %d: %d, %d bytes, %v", i, resp.StatusCode, len(body), err)
		}
	}

	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(conn, "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(conn)
	for i := range 2 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("pipelined answer %d: %v", i, err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK || n != answerSize {
			t.Fatalf("pipelined answer %d: %d, %d bytes", i, resp.StatusCode, n)
		}
	}
	io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
	if n, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("a chunked request: read %d, %v; want the connection closed", n, err)
	}

	stop()
	if _, err := c.Get("http://" + addr + path); err == nil {
		t.Error("answered after stop")
	}
}

// TestEventGate: through the event-apf row's gate a request with the
// user's bearer token is classified and admitted, answered with the PF
// headers, and its seat given back once the answer is relayed, pipelined
// ones and those of a connection closed early included; one without a
// known token gets 401 in its turn.
func TestEventGate(t *testing.T) {
	up := httptest.NewServer(upstreamHandler())
	defer up.Close()
	addr, g := startGated(t, up, 600, 2)

	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	const ok = "GET /work HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer token-bench\r\n\r\n"
	io.WriteString(conn, ok+"GET /work HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nobody\r\n\r\n"+ok)
	br := bufio.NewReader(conn)
	for i, want := range []int{http.StatusOK, http.StatusUnauthorized, http.StatusOK} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("answer %d: %d, want %d", i, resp.StatusCode, want)
		}
		fs, pl := resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID"), resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID")
		if want == http.StatusOK && (fs != "bootstrap-fs-global-default" || pl != "bootstrap-pl-global-default") {
			t.Errorf("answer %d: PF headers %q, %q", i, fs, pl)
		}
	}
	// A request sent on, and the connection closed before its answer.
	other, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(other, ok)
	other.Close()

	executing := func() int {
		n := 0
		for _, lv := range g.ctrl.Levels() {
			n += lv.Queue.Stats().ExecutingRequests
		}
		return n
	}
	for deadline := time.Now().Add(5 * time.Second); executing() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests still hold seats", executing())
		}
	}
}

// TestEventGateQueues: on a level of one seat in front of an upstream
// that takes 100 ms, requests from four connections queue and are each
// answered in turn, while the loop goes on serving others (a request
// without a token is answered 401 at once); a client that leaves while
// its request waits takes nothing with it.
func TestEventGateQueues(t *testing.T) {
	const serviceTime = 100 * time.Millisecond
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(serviceTime)
		upstreamHandler().ServeHTTP(w, r)
	}))
	defer up.Close()
	addr, g := startGated(t, up, 12, 1) // global-default: 1 seat

	const ok = "GET /work HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer token-bench\r\n\r\n"
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return c, bufio.NewReader(c)
	}
	// One that leaves while it waits.
	gone, _ := dial()
	start := time.Now()
	conns := make([]net.Conn, 4)
	readers := make([]*bufio.Reader, 4)
	for i := range conns {
		conns[i], readers[i] = dial()
		defer conns[i].Close()
		io.WriteString(conns[i], ok)
	}
	io.WriteString(gone, ok)
	time.Sleep(10 * time.Millisecond)
	gone.Close()
	// The loop is not held by the waiters.
	other, br := dial()
	defer other.Close()
	io.WriteString(other, "GET /work HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a request without a token while others wait: %v, %v", resp, err)
	}
	// A loop that waited for each admission would answer it only after
	// three of the four had been served.
	if d := time.Since(start); d > 5*serviceTime/2 {
		t.Errorf("the 401 came after %v: the loop waited for the queued requests", d)
	}
	for i, br := range readers {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID") != "bootstrap-pl-global-default" {
			t.Fatalf("connection %d: %d, %q", i, resp.StatusCode, resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID"))
		}
	}
	if d := time.Since(start); d < 4*serviceTime {
		t.Errorf("four requests on one seat answered in %v: they did not wait for one another", d)
	}
	var st struct{ waiting, executing int }
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		st.waiting, st.executing = 0, 0
		for _, lv := range g.ctrl.Levels() {
			s := lv.Queue.Stats()
			st.waiting += s.WaitingRequests
			st.executing += s.ExecutingRequests
		}
		if st.waiting == 0 && st.executing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind: %+v", st)
		}
	}
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startGated starts workers event loops through a gate of limit seats in
// front of up, for the one user of token-bench, until the test ends.
func startGated(t *testing.T, up *httptest.Server, limit, workers int) (addr string, g *gate) {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("token-bench,bench,uid-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g, err := newGate(ctx, limit, tokens)
	if err != nil {
		t.Fatal(err)
	}
	addr = freeAddr(t)
	stop, _, err := startEvents(addr, strings.TrimPrefix(up.URL, "http://"), workers, g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr, g
}
