// Package wire carries requests to an HTTP/1.1 upstream over connections
// it keeps, on the caller's goroutine.
//
// net/http's Transport keeps two goroutines on every connection, one
// writing requests and one reading answers, and hands each request and
// each answer between them and the caller through channels: three
// goroutines take turns for one round trip, and the connection's reader
// parses every header line through net/textproto's allocations. A gateway
// relaying small answers spent about a third of its processor time there.
// Here the caller writes the request and reads the answer's header itself;
// the body is read by whoever reads Response.Body (the reverse proxy, on
// the same goroutine), and the connection goes back to the pool the moment
// the body has been read to its end.
//
// What it carries (Carries): plain-HTTP requests with no body or a body of
// known length up to MaxBody, no Expect, no Upgrade and no trailer of their
// own. The rest (upgrades, streamed request bodies, TLS upstreams) goes to
// net/http, which reads the answer while it is still writing the request.
//
// Parsing is strict, since one misread answer would hand the rest of it to
// the next request on the connection, someone else's: a status line of
// HTTP/1.0 or HTTP/1.1 and three digits; header names of token characters,
// a colon right after them; no control characters in values; no line
// folding; Transfer-Encoding, if present, exactly "chunked", and never
// beside Content-Length; Content-Length digits only, repeated only with
// the same value; chunk sizes in hexadecimal with lines of bounded length.
// An answer that breaks any of these is an error (the reverse proxy answers
// 502), and its connection is closed, as is one that sent more than its
// answer.
//
// The format itself, requests written and answers read, works on byte
// slices (bytes.go), for this transport and for a caller that does its own
// socket I/O alike.
//
// A connection taken from the pool may have been closed by the upstream
// while it sat idle; a request that fails on one before any byte of an
// answer arrived is sent again on a new connection when sending it twice
// is harmless (no body, and an idempotent method or an Idempotency-Key), as
// net/http does.
package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Defaults of Transport's fields.
const (
	DefaultMaxIdlePerHost = 1000
	DefaultIdleTimeout    = 90 * time.Second
	// DefaultMaxResponseHeaderBytes bounds an answer's status line and
	// header together: net/http's transport's bound.
	DefaultMaxResponseHeaderBytes = 10 << 20
	// MaxBody is the largest request body carried here; a larger one
	// goes to net/http, which reads the upstream's answer while it
	// writes (an upstream may answer early and stop reading).
	MaxBody = 64 << 10
)

// Transport is an http.RoundTripper for what Carries accepts. Its zero
// value is ready to use.
type Transport struct {
	// DialContext opens connections; nil means a net.Dialer with a 10 s
	// timeout and 30 s TCP keep-alive.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxIdlePerHost bounds the idle connections kept to one address; 0
	// means DefaultMaxIdlePerHost.
	MaxIdlePerHost int
	// IdleTimeout closes a connection idle for that long; 0 means
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for an answer's header once
	// the request is written; 0 means the request's context alone.
	ResponseHeaderTimeout time.Duration
	// MaxResponseHeaderBytes bounds an answer's header; 0 means
	// DefaultMaxResponseHeaderBytes.
	MaxResponseHeaderBytes int

	mu      sync.Mutex
	idle    map[string][]*conn
	nidle   int
	reaping bool
}

// Carries says whether RoundTrip takes req.
func Carries(req *http.Request) bool {
	return carries(req, req.Body != nil && req.Body != http.NoBody)
}

// carries is Carries for req with a body or without.
func carries(req *http.Request, hasBody bool) bool {
	if req.URL == nil || req.URL.Scheme != "http" || req.Method == http.MethodConnect {
		return false
	}
	if hasBody && (req.ContentLength <= 0 || req.ContentLength > MaxBody) {
		return false
	}
	h := req.Header
	return len(req.Trailer) == 0 && h["Expect"] == nil && h["Upgrade"] == nil && len(req.TransferEncoding) == 0
}

// errNotCarried is RoundTrip's error for a request Carries refuses.
var errNotCarried = errors.New("wire: request not carried (Carries)")

// RoundTrip sends req and reads the answer's header.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, _, err := t.RoundTripReach(req)
	return resp, err
}

// RoundTripReach is RoundTrip, saying also whether the request was handed
// a connection (when it was not, not a byte of it was sent).
func (t *Transport) RoundTripReach(req *http.Request) (resp *http.Response, reached bool, err error) {
	if !Carries(req) {
		closeRequestBody(req)
		return nil, false, errNotCarried
	}
	if err := validRequest(req); err != nil {
		closeRequestBody(req)
		return nil, false, err
	}
	ctx := req.Context()
	addr := hostPort(req.URL)
	trace := httptrace.ContextClientTrace(ctx)
	for attempt := 0; ; attempt++ {
		c, err := t.get(ctx, addr, trace)
		if err != nil {
			closeRequestBody(req)
			return nil, reached, err
		}
		reached = true
		resp, err := c.roundTrip(req)
		if err == nil {
			return resp, true, nil
		}
		var s *staleError
		if !errors.As(err, &s) || !Resend(req, attempt) {
			if s != nil {
				err = s.err
			}
			return nil, true, err
		}
	}
}

// CloseIdleConnections closes the connections in the pool.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle, t.nidle = nil, 0
	t.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			c.nc.Close()
		}
	}
}

func closeRequestBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// hostPort is the address the URL's host names, port 80 by default.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// replayable says whether sending req a second time is harmless.
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	h := req.Header
	return h["Idempotency-Key"] != nil || h["X-Idempotency-Key"] != nil
}

// validRequest refuses what would not be one well-formed request on the
// wire: a method that is not a token, a host or a header that could end
// a line or hold a control character.
func validRequest(req *http.Request) error {
	if req.Method != "" && !validToken(req.Method) {
		return fmt.Errorf("wire: invalid method %q", req.Method)
	}
	if err := validHost(req); err != nil {
		return err
	}
	for k, vs := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("wire: invalid header field name %q", k)
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return fmt.Errorf("wire: invalid header field value for %q", k)
			}
		}
	}
	return nil
}

// validHost refuses a host that is empty or could end a line.
func validHost(req *http.Request) error {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if host == "" || !httpguts.ValidHostHeader(host) {
		return fmt.Errorf("wire: invalid host %q", host)
	}
	return nil
}

func validToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isTokenByte(s[i]) {
			return false
		}
	}
	return s != ""
}

// isTokenByte says whether c is an RFC 9110 tchar.
func isTokenByte(c byte) bool {
	return c < 0x80 && tokenTable[c]
}

var tokenTable = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// staleError is a failure on a pooled connection before any byte of an
// answer arrived: the upstream had most likely closed it while it was
// idle, and the request may be sent again.
type staleError struct{ err error }

func (e *staleError) Error() string { return e.err.Error() }
func (e *staleError) Unwrap() error { return e.err }

// conn is one connection to an upstream.
type conn struct {
	t      *Transport
	addr   string
	nc     net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	reused bool
	idleAt time.Time
	// deadline is the deadline set on nc, so that a round trip with the
	// same one (none) does not set it again.
	deadline time.Time
	// stop cancels the round trip's watch of its context; nil when the
	// context cannot be cancelled.
	stop func() bool
	// header holds an answer's header lines while they are read.
	header []byte
}

// get takes an idle connection to addr or dials a new one.
func (t *Transport) get(ctx context.Context, addr string, trace *httptrace.ClientTrace) (*conn, error) {
	if c := t.takeIdle(addr); c != nil {
		if trace != nil && trace.GotConn != nil {
			trace.GotConn(httptrace.GotConnInfo{Conn: c.nc, Reused: true, WasIdle: true, IdleTime: time.Since(c.idleAt)})
		}
		return c, nil
	}
	dial := t.DialContext
	if dial == nil {
		dial = defaultDialer.DialContext
	}
	if trace != nil && trace.ConnectStart != nil {
		trace.ConnectStart("tcp", addr)
	}
	nc, err := dial(ctx, "tcp", addr)
	if trace != nil && trace.ConnectDone != nil {
		trace.ConnectDone("tcp", addr, err)
	}
	if err != nil {
		return nil, err
	}
	c := &conn{t: t, addr: addr, nc: nc, br: bufio.NewReaderSize(nc, 4<<10), bw: bufio.NewWriterSize(nc, 4<<10)}
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: nc})
	}
	return c, nil
}

var defaultDialer = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}

// takeIdle pops the connection to addr that went idle last. One idle for
// longer than the idle timeout is closed instead; one idle for more than
// a moment is first checked for an end the upstream sent meanwhile.
func (t *Transport) takeIdle(addr string) *conn {
	for {
		t.mu.Lock()
		cs := t.idle[addr]
		if len(cs) == 0 {
			t.mu.Unlock()
			return nil
		}
		c := cs[len(cs)-1]
		cs[len(cs)-1] = nil
		t.idle[addr] = cs[:len(cs)-1]
		t.nidle--
		t.mu.Unlock()
		idle := time.Since(c.idleAt)
		if idle < t.idleTimeout() && (idle < quietCheck || c.alive()) {
			c.reused = true
			return c
		}
		c.nc.Close()
	}
}

// quietCheck is how long a connection sits idle before it is checked for
// an end the upstream sent meanwhile. Connections in steady use are taken
// again within it and skip the check's system call.
const quietCheck = 100 * time.Millisecond

// alive says whether nothing has arrived on an idle connection: an idle
// upstream connection that has something to read was closed by the
// upstream, or holds bytes nobody asked for.
func (c *conn) alive() bool {
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	quiet := false
	err = raw.Read(func(fd uintptr) bool {
		quiet = nothingToRead(fd)
		return true
	})
	return err == nil && quiet
}

func (t *Transport) idleTimeout() time.Duration {
	if t.IdleTimeout > 0 {
		return t.IdleTimeout
	}
	return DefaultIdleTimeout
}

// put returns a connection whose answer was read to its end.
func (t *Transport) put(c *conn) {
	max := t.MaxIdlePerHost
	if max <= 0 {
		max = DefaultMaxIdlePerHost
	}
	c.idleAt = time.Now()
	t.mu.Lock()
	if t.idle == nil {
		t.idle = make(map[string][]*conn)
	}
	cs := t.idle[c.addr]
	if len(cs) >= max {
		t.mu.Unlock()
		c.nc.Close()
		return
	}
	t.idle[c.addr] = append(cs, c)
	t.nidle++
	reap := !t.reaping
	t.reaping = true
	t.mu.Unlock()
	if reap {
		go t.reap()
	}
}

// reap closes the connections idle for longer than the idle timeout,
// checking every half of it; it ends when none is left idle.
func (t *Transport) reap() {
	every := t.idleTimeout() / 2
	for {
		time.Sleep(every)
		var old []*conn
		t.mu.Lock()
		for addr, cs := range t.idle {
			n := 0
			for n < len(cs) && time.Since(cs[n].idleAt) >= t.idleTimeout() {
				n++
			}
			if n > 0 {
				old = append(old, cs[:n]...)
				t.idle[addr] = append(cs[:0:0], cs[n:]...)
				t.nidle -= n
			}
		}
		done := t.nidle == 0
		if done {
			t.reaping = false
		}
		t.mu.Unlock()
		for _, c := range old {
			c.nc.Close()
		}
		if done {
			return
		}
	}
}

// aLongTimeAgo is a deadline in the past: set on a connection, it ends
// the reads and writes blocked on it.
var aLongTimeAgo = time.Unix(1, 0)

// interrupt ends what the round trip is blocked on: its context ended.
func (c *conn) interrupt() { _ = c.nc.SetDeadline(aLongTimeAgo) }

// setDeadline sets d on the connection unless it is set already.
func (c *conn) setDeadline(d time.Time) error {
	if d.Equal(c.deadline) {
		return nil
	}
	c.deadline = d
	return c.nc.SetDeadline(d)
}

// roundTrip writes req and reads the answer's header. On an error the
// connection is closed.
func (c *conn) roundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if ctx.Done() != nil {
		c.stop = context.AfterFunc(ctx, c.interrupt)
	}
	deadline, _ := ctx.Deadline()
	headerDeadline := deadline
	if rht := c.t.ResponseHeaderTimeout; rht > 0 {
		if d := time.Now().Add(rht); deadline.IsZero() || d.Before(deadline) {
			headerDeadline = d
		}
	}
	if err := c.setDeadline(headerDeadline); err != nil {
		return nil, c.fail(ctx, err)
	}
	closeAfter, err := c.writeRequest(req)
	if err != nil {
		if c.reused && !errors.Is(err, errBody) && connEnded(err) {
			err = &staleError{err}
		}
		return nil, c.fail(ctx, err)
	}
	resp, err := c.readResponse(req)
	if err != nil {
		return nil, c.fail(ctx, err)
	}
	if !headerDeadline.Equal(deadline) {
		if err := c.setDeadline(deadline); err != nil {
			resp.Body.Close()
			return nil, c.fail(ctx, err)
		}
	}
	if closeAfter {
		resp.Close = true
	}
	return resp, nil
}

// fail closes the connection after an error and gives the error to
// return: the context's when it ended (the deadline or the interruption
// is what made the connection fail).
func (c *conn) fail(ctx context.Context, err error) error {
	c.close()
	var s *staleError
	if errors.As(err, &s) {
		// Sent again, or given up on with the stale error itself.
		return err
	}
	return ContextErr(ctx, err)
}

// close ends the round trip's watch of its context and closes the
// connection.
func (c *conn) close() {
	if c.stop != nil {
		c.stop()
		c.stop = nil
	}
	c.nc.Close()
}

// release is called when an answer was read to its end: the connection
// goes back to the pool if it can carry another request.
func (c *conn) release(reusable bool) {
	if c.stop != nil {
		if !c.stop() {
			// The context ended: its deadline is set in the past.
			reusable = false
		}
		c.stop = nil
	}
	if !reusable || c.br.Buffered() > 0 {
		// An upstream that sent more than its answer is out of step
		// with its requests.
		c.nc.Close()
		return
	}
	c.t.put(c)
}

// connEnded says whether err is the connection's end: closed or reset
// by the peer.
func connEnded(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// errBody marks a failure reading the request's own body.
var errBody = errors.New("wire: reading the request body")

// writeRequest writes req's line, header and body. closeAfter is set when
// the request asks for the connection to close after the answer. The head
// is appended straight into the writer's free buffer.
func (c *conn) writeRequest(req *http.Request) (closeAfter bool, err error) {
	w := c.bw
	hasBody := req.Body != nil && req.Body != http.NoBody
	head, closeAfter := appendHead(w.AvailableBuffer(), req, hasBody)
	w.Write(head)
	if hasBody {
		n, err := io.CopyN(w, req.Body, req.ContentLength)
		req.Body.Close()
		if err != nil {
			if n < req.ContentLength && (err == io.EOF || !isWriteError(err)) {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return false, fmt.Errorf("%w: %w", errBody, err)
			}
			return false, err
		}
	}
	return closeAfter, w.Flush()
}

// isWriteError says whether err came from writing to the connection
// rather than reading the body.
func isWriteError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "write"
}

func appendInt(b []byte, n int64) []byte {
	if n == 0 {
		return append(b, '0')
	}
	var tmp [20]byte
	i := len(tmp)
	for n > 0 {
		i--
		tmp[i] = byte('0' + n%10)
		n /= 10
	}
	return append(b, tmp[i:]...)
}

// trimOWS trims spaces and tabs at both ends.
func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// bodyState is a response body's state: reading, or done (released or
// closed) once.
type bodyState struct{ done atomic.Bool }
