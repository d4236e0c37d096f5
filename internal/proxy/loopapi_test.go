package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/proxy/pool"
	"github.com/apfproject/apf/internal/proxy/wire"
	"github.com/apfproject/apf/internal/testing/rawhttp"
)

// scriptUpstream is an upstream that records the exact bytes of every
// request (its head and Content-Length bytes of body) and answers each
// with the raw answer its script has for "METHOD /path" (a /prefix the
// path starts with aside; 599 for one it does not have): "close" closes
// the connection instead, "hold" answers nothing until the other side
// closes it. An answer of HTTP/1.0, with Connection: close or a 101 is
// followed by the close.
type scriptUpstream struct {
	url    string
	script map[string]string
	got    chan []byte
}

func newScriptUpstream(t *testing.T, script map[string]string) *scriptUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &scriptUpstream{url: "http://" + ln.Addr().String(), script: script, got: make(chan []byte, 64)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *scriptUpstream) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		raw, err := rawhttp.ReadRequest(br)
		if err != nil {
			return
		}
		s.got <- raw
		fields := strings.Fields(string(raw[:bytes.IndexByte(raw, '\n')]))
		path, _, _ := strings.Cut(fields[1], "?")
		a, ok := s.script[fields[0]+" "+strings.TrimPrefix(path, "/prefix")]
		if !ok {
			a = "HTTP/1.1 599 Not In The Script\r\nContent-Length: 0\r\n\r\n"
		}
		switch a {
		case "close":
			return
		case "hold":
			_, _ = io.Copy(io.Discard, br)
			return
		}
		if _, err := io.WriteString(c, a); err != nil {
			return
		}
		if strings.HasPrefix(a, "HTTP/1.0") || strings.Contains(a, "Connection: close") || strings.HasPrefix(a, "HTTP/1.1 101") {
			return
		}
	}
}

// received is what the upstream received for the next request, its header
// lines in order (the transport writes them in its map's order); "" when
// nothing came.
func (s *scriptUpstream) received() string {
	select {
	case b := <-s.got:
		return orderedHeader(b)
	case <-time.After(100 * time.Millisecond):
		return ""
	}
}

func orderedHeader(b []byte) string {
	head, body, _ := bytes.Cut(b, []byte("\r\n\r\n"))
	lines := strings.Split(string(head), "\r\n")
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
	out := lines[:2:2]
	for _, k := range keys {
		out = append(out, groups[k]...)
	}
	return strings.Join(out, "\r\n") + "\r\n\r\n" + string(body)
}

// journal is a ResponseWriter that keeps what is done to it: the
// informational answers, the status and header, whether the head was
// flushed before any byte of the body, the body, and the trailer.
type journal struct {
	h             http.Header
	informational []string
	code          int
	head          http.Header
	flushedHead   bool
	body          bytes.Buffer
	// aborted: the answer was cut, the client's connection aborted.
	aborted bool
}

func newJournal() *journal { return &journal{h: http.Header{}} }

func (j *journal) Header() http.Header { return j.h }

func (j *journal) WriteHeader(code int) {
	if code < 200 && code != http.StatusSwitchingProtocols {
		j.informational = append(j.informational, fmt.Sprint(code, " ", sortedHeader(j.h)))
		return
	}
	if j.code == 0 {
		j.code, j.head = code, j.h.Clone()
	}
}

func (j *journal) Write(b []byte) (int, error) {
	j.WriteHeader(http.StatusOK)
	return j.body.Write(b)
}

func (j *journal) Flush() {
	j.WriteHeader(http.StatusOK)
	if j.body.Len() == 0 {
		j.flushedHead = true
	}
}

// text is the journal, with the trailer as the server would send it: the
// announced names' values and the http.TrailerPrefix ones, as set once
// the handler is done.
func (j *journal) text() string {
	trailer := http.Header{}
	for _, v := range j.head["Trailer"] {
		for _, k := range strings.Split(v, ",") {
			k = http.CanonicalHeaderKey(strings.TrimSpace(k))
			if vs, ok := j.h[k]; ok {
				trailer[k] = vs
			}
		}
	}
	for k, vs := range j.h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			trailer[strings.TrimPrefix(k, http.TrailerPrefix)] = vs
		}
	}
	head := j.head.Clone()
	if t := head["Trailer"]; len(t) == 1 {
		// The announced names, in the map's order.
		names := strings.Split(t[0], ", ")
		slices.Sort(names)
		head["Trailer"] = []string{strings.Join(names, ", ")}
	}
	return fmt.Sprintf("informational %q\nstatus %d flushed head %v\nheader %s\nbody %q\ntrailer %s\naborted %v",
		j.informational, j.code, j.flushedHead, sortedHeader(head), j.body.String(), sortedHeader(trailer), j.aborted)
}

// logs keeps the proxy's log lines: level, message and attributes (but
// the error's text, which says whose error it is, and the time taken).
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logs) WithGroup(string) slog.Handler            { return l }
func (l *logs) Handle(_ context.Context, r slog.Record) error {
	line := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "error" && a.Key != "elapsed" {
			line += " " + a.String()
		}
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	return nil
}

func (l *logs) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	return out
}

// viaDirect answers r as a caller of Direct would, with the exported API,
// raw connections to the upstream, and w as the client's answer: it does
// what Direct's comment says, in the order it says.
func viaDirect(t *testing.T, d *Direct, r *http.Request, body []byte, w *journal) {
	t.Helper()
	start := time.Now()
	// The memory held another request before, as an exchange's does
	// between requests.
	ob := NewOutbound(r.Context())
	if _, ok := d.Outgoing(requestBefore(r.Context()), ob); !ok {
		t.Fatal("the request before does not take the direct path")
	}
	out, ok := d.Outgoing(r, ob)
	if !ok {
		t.Fatal("the request does not take the direct path")
	}
	call := d.Pick(out, ob)
	defer call.Done()
	fail := func(err error) {
		status, h, b := d.Fail(out, err)
		if status == 0 {
			return
		}
		for k, vs := range h {
			w.Header()[k] = vs
		}
		w.WriteHeader(status)
		_, _ = w.Write(b)
	}
	ctx := out.Context()
	deadline, _ := ctx.Deadline()
	var c net.Conn
	for {
		b, err := wire.AppendRequest(nil, out, body)
		if err != nil {
			t.Fatal(err)
		}
		dialer := net.Dialer{Timeout: DialTimeout, KeepAlive: DialKeepAlive}
		c, err = dialer.DialContext(ctx, "tcp", call.Addr())
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrUnreached, err)
			if call.Failed(err, false) != nil {
				continue
			}
			fail(err)
			return
		}
		defer c.Close()
		headDeadline := deadline
		if rht := d.Transport().ResponseHeaderTimeout; rht > 0 && time.Now().Add(rht).Before(deadline) {
			headDeadline = time.Now().Add(rht)
		}
		_ = c.SetDeadline(headDeadline)
		if _, err := c.Write(b); err != nil {
			call.Failed(err, true)
			fail(err)
			return
		}
		break
	}
	var in []byte
	buf := make([]byte, 32<<10)
	eof := false
	// more reads what comes next; false at the end of the connection.
	more := func() error {
		n, err := c.Read(buf)
		in = append(in, buf[:n]...)
		if err == io.EOF {
			eof = true
			return nil
		}
		return err
	}
	var res *http.Response
	var f wire.Framing
	informational := 0
	for res == nil {
		r1, n, fr, err := wire.ParseAnswerHead(in, out)
		if err == nil && n > 0 && r1.StatusCode < 200 && r1.StatusCode != http.StatusSwitchingProtocols {
			if informational == wire.MaxInformational {
				err = wire.ErrMalformed
			} else {
				informational++
				d.Informational(w.Header(), r1, w.WriteHeader)
				in = in[n:]
				continue
			}
		}
		if err == nil && n > 0 {
			res, f, in = r1, fr, in[n:]
			break
		}
		if err == nil && eof {
			err = ErrNoAnswer
		}
		if err == nil {
			if err = more(); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					err = fmt.Errorf("%w: %w", ErrTimeout, err)
				}
			}
		}
		if err != nil {
			call.Failed(err, true)
			fail(err)
			return
		}
	}
	call.Answered(res.StatusCode)
	_ = c.SetDeadline(deadline)
	rl, err := d.Answer(w.Header(), res)
	if err != nil {
		fail(err)
		return
	}
	w.WriteHeader(res.StatusCode)
	if rl.Stream {
		w.Flush()
	}
	written := int64(0)
	write := func(b []byte) {
		if len(b) > 0 {
			_, _ = w.Write(b)
			written += int64(len(b))
			if rl.Stream {
				w.Flush()
			}
		}
	}
	cut := func(readErr error) {
		d.Cut(r, written, start, readErr, nil)
		w.aborted = true
	}
	chunks := wire.NewChunked(res)
	left := f.Length
	for {
		switch f.Kind {
		case wire.NoBody:
			return
		case wire.Length:
			k := min(left, int64(len(in)))
			write(in[:k])
			in, left = in[k:], left-k
			if left == 0 {
				return
			}
		case wire.Chunks:
			for len(in) > 0 {
				n, data, done, err := chunks.Decode(in)
				in = in[n:]
				if err != nil {
					cut(err)
					return
				}
				write(data)
				if done {
					if d.Trailer(w.Header(), res, rl) {
						w.Flush()
					}
					return
				}
			}
		case wire.UntilClose:
			write(in)
			in = in[:0]
			if eof {
				return
			}
		}
		if eof {
			cut(io.ErrUnexpectedEOF)
			return
		}
		if err := more(); err != nil {
			cut(err)
			return
		}
	}
}

// requestBefore is a request with many header fields, on ctx.
func requestBefore(ctx context.Context) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://before.example/before/path?q=1", strings.NewReader("before"))
	for i := range 12 {
		r.Header.Set(fmt.Sprintf("X-Before-%d", i), "left over")
	}
	r.Header["User-Agent"] = []string{"before"}
	r.Header["Accept"] = []string{"text/before"}
	r.RemoteAddr = "192.0.2.9:9"
	return r.WithContext(ctx)
}

// TestDirectMatchesHandler sends each request to the handler and through
// Direct, and compares what the upstream received, what the client got
// and what was logged.
func TestDirectMatchesHandler(t *testing.T) {
	script := map[string]string{
		"GET /plain":    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello",
		"HEAD /plain":   "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n",
		"POST /plain":   "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
		"GET /hop":      "HTTP/1.1 200 OK\r\nConnection: X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nProxy-Authenticate: Basic\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 2\r\n\r\nok",
		"GET /pf":       "HTTP/1.1 200 OK\r\nX-Kubernetes-Pf-Flowschema-Uid: up\r\nX-Kubernetes-Pf-Prioritylevel-Uid: up\r\nX-Other: kept\r\nContent-Length: 2\r\n\r\nok",
		"GET /chunked":  "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n",
		"GET /trailer":  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum, X-Kubernetes-Pf-Prioritylevel-Uid\r\n\r\n4\r\nbody\r\n0\r\nX-Sum: 7\r\nX-Kubernetes-Pf-Prioritylevel-Uid: up\r\n\r\n",
		"GET /late":     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n4\r\nbody\r\n0\r\nX-Sum: 7\r\nX-Late: 8\r\n\r\n",
		"GET /early":    "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nafter",
		"DELETE /gone":  "HTTP/1.1 204 No Content\r\nX-A: b\r\n\r\n",
		"GET /same":     "HTTP/1.1 304 Not Modified\r\nEtag: \"x\"\r\n\r\n",
		"GET /events":   "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nContent-Length: 12\r\n\r\ndata: one\n\n\n",
		"GET /old":      "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the close",
		"GET /bad":      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
		"GET /closed":   "close",
		"GET /switch":   "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
		"GET /cut":      "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nabc",
		"GET /badchunk": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\n",
		"GET /hold":     "hold",
	}
	up := newScriptUpstream(t, script)
	log := &logs{}
	base := Options{Logger: slog.New(log), Credentials: func(*http.Request) string { return "Bearer caller" },
		DropResponseHeaders:   []string{"X-Kubernetes-PF-FlowSchema-UID", "X-Kubernetes-PF-PriorityLevel-UID"},
		ResponseHeaderTimeout: 2 * time.Second}

	single := func() Options {
		o := base
		o.Upstream = mustURL(t, up.url+"/prefix/?fixed=1")
		return o
	}
	refused := func() Options {
		o := base
		o.Upstream = mustURL(t, refusing(t))
		return o
	}
	timeout := func() Options {
		o := single()
		o.ResponseHeaderTimeout = 200 * time.Millisecond
		return o
	}
	dead := []string{refusing(t), refusing(t)}
	withPool := func(members ...string) func() Options {
		return func() Options {
			o := base
			o.Upstream = mustURL(t, members[0])
			tr, err := NewTransport(o)
			if err != nil {
				t.Fatal(err)
			}
			p, err := pool.New(pool.Options{Name: "test", Upstreams: members, Ejection: &pool.Ejection{ConsecutiveFailures: 1, Duration: time.Hour}},
				pool.Env{Transport: tr, Logger: slog.New(log)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			o.Transport = p
			return o
		}
	}
	cases := []struct {
		name, method, target, body string
		want                       int
		header                     http.Header
		o                          func() Options
	}{
		{name: "plain", want: 200, method: "GET", target: "/plain?limit=5", o: single},
		{name: "headers", want: 200, method: "GET", target: "/plain", o: single, header: http.Header{
			"Accept": {"application/json"}, "User-Agent": {"kubectl"}, "Connection": {"X-Private"}, "X-Private": {"s"},
			"X-Forwarded-For": {"6.6.6.6"}, "X-Remote-User": {"admin"}, "Te": {"trailers"}, "X-Kept": {"1", "2"}}},
		{name: "post", want: 201, method: "POST", target: "/plain", body: `{"kind":"Pod"}`, o: single, header: http.Header{"Content-Type": {"application/json"}}},
		{name: "hop by hop", want: 200, method: "GET", target: "/hop", o: single},
		{name: "pf headers dropped", want: 200, method: "GET", target: "/pf", o: single},
		{name: "chunked", want: 200, method: "GET", target: "/chunked", o: single},
		{name: "trailer", want: 200, method: "GET", target: "/trailer", o: single},
		{name: "trailer not announced", want: 200, method: "GET", target: "/late", o: single},
		{name: "head", want: 200, method: "HEAD", target: "/plain", o: single},
		{name: "no content", want: 204, method: "DELETE", target: "/gone", o: single},
		{name: "not modified", want: 304, method: "GET", target: "/same", o: single},
		{name: "early hints", want: 200, method: "GET", target: "/early", o: single},
		{name: "event stream", want: 200, method: "GET", target: "/events", o: single},
		{name: "until close", want: 200, method: "GET", target: "/old", o: single},
		{name: "malformed", want: 502, method: "GET", target: "/bad", o: single},
		{name: "closed before the answer", want: 502, method: "GET", target: "/closed", o: single},
		{name: "switch not asked for", want: 502, method: "GET", target: "/switch", o: single},
		{name: "cut", want: 200, method: "GET", target: "/cut", o: single},
		{name: "malformed chunk", want: 200, method: "GET", target: "/badchunk", o: single},
		{name: "refused", want: 502, method: "GET", target: "/plain", o: refused},
		{name: "header timeout", want: 504, method: "GET", target: "/hold", o: timeout},
		{name: "pool of one", want: 200, method: "GET", target: "/plain", o: withPool(up.url)},
		{name: "pool, one refusing", want: 201, method: "POST", target: "/plain", body: "x", o: withPool(dead[0], up.url)},
		{name: "pool, all refusing", want: 502, method: "GET", target: "/plain", o: withPool(dead...)},
	}
	// once sends the request one way: 0 the handler, 1 Direct.
	type outcome struct {
		got, sent string
		logged    []string
		members   []string
	}
	once := func(t *testing.T, way int, method, target, body string, header http.Header, o Options) outcome {
		h, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		d := Loop(h)
		if d == nil {
			t.Fatal("Loop: nil for a plain-HTTP upstream")
		}
		var rb io.Reader
		if body != "" {
			rb = strings.NewReader(body)
		}
		r := httptest.NewRequest(method, "http://api.example"+target, rb)
		for k, vs := range header {
			r.Header[k] = vs
		}
		// Served as a server serves it: an aborted answer panics.
		ctx := context.WithValue(r.Context(), http.ServerContextKey, &http.Server{})
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		r = r.WithContext(ctx)
		w := newJournal()
		w.h.Set("X-From-Front", "1")
		if way == 0 {
			func() {
				defer func() {
					if v := recover(); v != nil {
						if v != http.ErrAbortHandler {
							panic(v)
						}
						w.aborted = true
					}
				}()
				h.ServeHTTP(w, r)
			}()
		} else {
			viaDirect(t, d, r, []byte(body), w)
		}
		oc := outcome{got: w.text(), sent: up.received(), logged: log.take()}
		if p, ok := o.Transport.(*pool.Pool); ok {
			for _, m := range p.Members() {
				oc.members = append(oc.members, fmt.Sprintf("%s healthy=%v outstanding=%d dispatched=%d sent=%d failed=%d ejections=%d consecutive=%d",
					m.Upstream, m.Healthy, m.Outstanding, m.Dispatched, m.Sent, m.Failed, m.Ejections, m.ConsecutiveFailures))
			}
			if len(oc.members) > 1 {
				// Which member went first is the pool's choice: the
				// log names them in the order it names them.
				all := strings.Join(oc.logged, "\n")
				ms := p.Members()
				slices.SortFunc(ms, func(a, b pool.Member) int {
					return strings.Index(all, a.Upstream) - strings.Index(all, b.Upstream)
				})
				for i, m := range ms {
					for j := range oc.logged {
						oc.logged[j] = strings.ReplaceAll(oc.logged[j], m.Upstream, fmt.Sprint("member", i))
					}
				}
			}
		}
		return oc
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ways [2]outcome
			for way := range ways {
				for range 30 {
					ways[way] = once(t, way, c.method, c.target, c.body, c.header, c.o())
					// With a refusing member and a good one, the
					// refusing one is to be tried first.
					if c.name != "pool, one refusing" || strings.Contains(ways[way].members[0], "dispatched=1") {
						break
					}
				}
			}
			if !strings.Contains(ways[1].got, fmt.Sprintf("status %d ", c.want)) {
				t.Errorf("want the status %d:\n%s", c.want, ways[1].got)
			}
			if ways[0].got != ways[1].got {
				t.Errorf("the client got, from the handler:\n%s\nby Direct:\n%s", ways[0].got, ways[1].got)
			}
			if ways[0].sent != ways[1].sent {
				t.Errorf("the upstream received, from the handler:\n%q\nby Direct:\n%q", ways[0].sent, ways[1].sent)
			}
			if !slices.Equal(ways[0].logged, ways[1].logged) {
				t.Errorf("logged, by the handler:\n%q\nby Direct:\n%q", ways[0].logged, ways[1].logged)
			}
			if !slices.Equal(ways[0].members, ways[1].members) {
				t.Errorf("the pool, after the handler:\n%q\nafter Direct:\n%q", ways[0].members, ways[1].members)
			}
			for _, m := range ways[1].members {
				if !strings.Contains(m, "outstanding=0") {
					t.Errorf("left outstanding: %s", m)
				}
			}
			t.Logf("%s\nlogged %q\npool %q", ways[1].got, ways[1].logged, ways[1].members)
		})
	}
}

// refusing is the URL of a port nothing listens on.
func refusing(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestOutgoingAllocations: in memory used before, the outgoing request of a
// common request allocates nothing; in new memory every time, its request,
// URL and header are new.
func TestOutgoingAllocations(t *testing.T) {
	h, err := New(Options{Upstream: mustURL(t, "http://upstream.example")})
	if err != nil {
		t.Fatal(err)
	}
	d := Loop(h)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := httptest.NewRequest(http.MethodGet, "http://api.example/api/v1/pods?limit=5", nil).WithContext(ctx)
	r.Header["Accept"] = []string{"application/json"}
	r.Header["User-Agent"] = []string{"kubectl"}
	r.Header["Authorization"] = []string{"Bearer t"}
	ob := NewOutbound(ctx)
	outgoing := func(ob *Outbound) {
		if out, ok := d.Outgoing(r, ob); !ok || out.Header.Get("X-Forwarded-Host") != "api.example" {
			t.Fatalf("Outgoing: %v", ok)
		}
	}
	outgoing(ob)
	if got := testing.AllocsPerRun(100, func() { outgoing(ob) }); got != 0 {
		t.Errorf("in used memory: %v allocations, want none", got)
	}
	if got := testing.AllocsPerRun(100, func() { outgoing(NewOutbound(ctx)) }); got < 3 {
		t.Errorf("in new memory: %v allocations, want the request, its URL and its header at least", got)
	}
}
