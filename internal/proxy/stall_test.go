package proxy

import (
	"bufio"
	"bytes"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// A streamed answer without a deadline (a watch) to a client that reads
// its header and then nothing: each write to the client is bounded by
// StreamWriteTimeout, so the stream is cut, the upstream's request ends
// and the handler returns, instead of all three waiting for the client to
// close its connection. A client that reads keeps its stream, however
// long it idles between events; and the connection's next answer is not
// cut by a deadline the stream left behind.
func TestStalledStreamReaderIsCut(t *testing.T) {
	upstreamDone := make(chan struct{}, 4)
	event := bytes.Repeat([]byte("e"), 16<<10)
	up := front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/plain" {
			_, _ = w.Write([]byte("plain"))
			return
		}
		defer func() { upstreamDone <- struct{}{} }()
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := 0; ; i++ {
			if r.URL.Query().Get("idle") != "" && i > 0 {
				// Idle longer than the bound, then a last event.
				time.Sleep(1500 * time.Millisecond)
				_, _ = w.Write([]byte("last"))
				return
			}
			if _, err := w.Write(event); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
	}))
	logs := &lockedLog{}
	handlerDone := make(chan struct{}, 4)
	h := newProxy(t, Options{Upstream: mustURL(t, up.URL), StreamWriteTimeout: 500 * time.Millisecond, Logger: logs.logger()})
	px := front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { handlerDone <- struct{}{} }()
		h.ServeHTTP(w, r)
	}))

	conn, err := net.Dial("tcp", strings.TrimPrefix(px.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = conn.Write([]byte("GET /api/v1/pods?watch=1 HTTP/1.1\r\nHost: apf\r\n\r\n"))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp // the header read, the client reads nothing more
	for what, ch := range map[string]chan struct{}{"the proxy's handler": handlerDone, "the upstream's request": upstreamDone} {
		select {
		case <-ch:
		case <-time.After(15 * time.Second):
			t.Fatalf("%s still runs 15 s after the client stopped reading", what)
		}
	}
	if !strings.Contains(logs.String(), "the client took nothing of it for 500ms") {
		t.Errorf("the cut is not logged with its reason:\n%s", logs.String())
	}

	// A client that reads: an idle stream outlives the bound, and the
	// same connection then serves a plain answer whole, past the last
	// write's bound (a deadline left on the connection would fail it).
	conn2, err := net.Dial("tcp", strings.TrimPrefix(px.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	br2 := bufio.NewReader(conn2)
	get := func(path string) string {
		t.Helper()
		_ = conn2.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := conn2.Write([]byte("GET " + path + " HTTP/1.1\r\nHost: apf\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br2, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer resp.Body.Close()
		var body bytes.Buffer
		if _, err := body.ReadFrom(resp.Body); err != nil {
			t.Fatalf("%s: %v after %d bytes", path, err, body.Len())
		}
		return body.String()
	}
	if got := get("/api/v1/pods?watch=1&idle=1"); !strings.HasSuffix(got, "last") {
		t.Fatalf("a stream idle past the bound to a reading client ends %q", got[max(0, len(got)-8):])
	}
	time.Sleep(700 * time.Millisecond)
	if got := get("/plain"); got != "plain" {
		t.Fatalf("the next answer on the connection: %q", got)
	}
}

// lockedLog is a log the test reads while handlers write it.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *lockedLog) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// Over HTTP/2 a stream's write deadline is a timer that resets the stream
// when it fires, whether or not a write is waiting: a stream idle between
// two events for longer than StreamWriteTimeout, to a client that reads
// everything, is not cut.
func TestIdleHTTP2StreamOutlivesTheBound(t *testing.T) {
	up := front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("first"))
		_ = http.NewResponseController(w).Flush()
		time.Sleep(1500 * time.Millisecond)
		_, _ = w.Write([]byte("last"))
	}))
	h := newProxy(t, Options{Upstream: mustURL(t, up.URL), StreamWriteTimeout: 500 * time.Millisecond, Logger: quietLogger()})
	px := tlsUpstream(t, h, nil)
	resp, err := px.Client().Get(px.URL + "/api/v1/pods?watch=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("the client spoke %s, want HTTP/2", resp.Proto)
	}
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil || body.String() != "firstlast" {
		t.Fatalf("a stream idle past the bound over HTTP/2: %q, %v", body.String(), err)
	}
}
