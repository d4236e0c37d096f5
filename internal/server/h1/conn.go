package h1

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// watchDelay is how long a request runs before its connection is watched
// for the client going away: net/http watches from the start, with a
// goroutine for every request. Most requests are over well before this,
// even on a server at full load (tens of milliseconds at most between
// arrival and answer), and one that waits longer (in an APF queue, for a
// slow upstream) is cancelled within it of its client leaving.
const watchDelay = 50 * time.Millisecond

// aLongTimeAgo is a deadline in the past: it fails a pending read at once.
var aLongTimeAgo = time.Unix(1, 0)

// The states of a connection, for Shutdown.
const (
	stateNew int32 = iota // no request read yet
	stateActive
	stateIdle
)

// newIdleAfter is how long a connection may stay new (say nothing, or not
// finish its TLS handshake) before Shutdown takes it for idle and closes
// it: net/http's rule, which a client that connects and then sends its
// request at once never meets.
const newIdleAfter = 5 * time.Second

// conn is one client connection, served one request at a time.
type conn struct {
	s          *Server
	nc         net.Conn
	remoteAddr string
	born       time.Time // when accepted, for Shutdown's rule on new connections
	// tlsState is the TLS connection's, nil over plain TCP; every
	// request of the connection points at it (http.Request.TLS).
	tlsState   *tls.ConnectionState
	lr         limitReader
	br         *bufio.Reader
	bw         *bufio.Writer
	cw         errWriter
	werr       error
	hijacked   bool // the connection is the handler's, or TLSNextProto's
	state      atomic.Int32
	lastMethod string
	// body is the current request's body; header is its header block,
	// as read, for what http.ReadRequest does not keep.
	body   *reqBody
	header []byte

	// The watch for the client going away: watchTimer starts it once a
	// request has run watchDelay; mu guards the rest.
	watchTimer *time.Timer
	mu         sync.Mutex
	running    bool // a request's handler runs
	watching   bool
	watchDone  chan struct{}
	cancel     context.CancelFunc // the running request's
	gone       bool               // the watch saw the connection end
}

// limitReader reads from the connection, at most n bytes while a
// request's header is read, and records them for the header's scan.
type limitReader struct {
	c      *conn
	n      int64
	record bool
	// stash is a byte the watch read ahead.
	stash    byte
	hasStash bool
}

func (r *limitReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	var n int
	var err error
	if r.hasStash && len(p) > 0 {
		p[0], r.hasStash, n = r.stash, false, 1
	} else {
		n, err = r.c.nc.Read(p)
	}
	r.n -= int64(n)
	if r.record {
		r.c.header = append(r.c.header, p[:n]...)
	}
	return n, err
}

// errWriter writes to the connection and keeps the first error, which
// also cancels the running request (its client is gone).
type errWriter struct{ c *conn }

func (w errWriter) Write(p []byte) (int, error) {
	n, err := w.c.nc.Write(p)
	if err != nil && w.c.werr == nil {
		w.c.werr = err
		w.c.mu.Lock()
		if w.c.cancel != nil {
			w.c.cancel()
		}
		w.c.mu.Unlock()
	}
	return n, err
}

var (
	errTooLarge    = errors.New("http: request too large")
	errMissHost    = statusError{http.StatusBadRequest, "missing required Host header"}
	errBadHost     = statusError{http.StatusBadRequest, "malformed Host header"}
	errVersion     = statusError{http.StatusHTTPVersionNotSupported, "unsupported protocol version"}
	errHeaderName  = statusError{http.StatusBadRequest, "invalid header name"}
	errHeaderValue = statusError{http.StatusBadRequest, "invalid header value"}
	bufioReaders   sync.Pool
	bufioWriters   sync.Pool
)

// statusError is a refusal answered with its code and text.
type statusError struct {
	code int
	text string
}

func (e statusError) Error() string { return http.StatusText(e.code) + ": " + e.text }

func (c *conn) serve(ctx context.Context) {
	defer c.close()
	defer func() {
		if v := recover(); v != nil && v != http.ErrAbortHandler {
			buf := make([]byte, 64<<10)
			buf = buf[:runtime.Stack(buf, false)]
			c.s.logf("http: panic serving %v: %v\n%s", c.remoteAddr, v, buf)
		}
	}()
	if tc, ok := c.nc.(*tls.Conn); ok && !c.handshake(ctx, tc) {
		return
	}
	// The connection's own context, as net/http's: each request's
	// context is a child of it, so that requests register with their
	// connection's context rather than all with the server's.
	ctx, cancelConn := context.WithCancel(ctx)
	defer cancelConn()
	c.lr.c = c
	c.cw.c = c
	c.br = newBufioReader(&c.lr)
	c.bw = newBufioWriter(c.cw)
	br := c.br
	c.watchTimer = time.AfterFunc(time.Hour, c.startWatch)
	c.watchTimer.Stop()
	if d := c.s.ReadHeaderTimeout; d > 0 {
		_ = c.nc.SetReadDeadline(time.Now().Add(d))
	}
	for {
		req, err := c.readRequest(br)
		c.state.Store(stateActive)
		if c.s.inShutdown.Load() {
			return
		}
		if err != nil {
			c.refuse(err)
			return
		}
		w, req, ok := c.prepare(ctx, req)
		if !ok {
			return
		}
		c.run(w, req)
		if c.hijacked {
			return
		}
		w.finish()
		_ = c.nc.SetWriteDeadline(time.Time{})
		if !w.reusable() || c.gone {
			if w.limitHit || c.body.closedEarly() {
				c.closeWriteAndWait()
			}
			return
		}
		c.state.Store(stateIdle)
		if c.s.inShutdown.Load() {
			return
		}
		if d := c.s.idleTimeout(); d > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(d))
		} else {
			_ = c.nc.SetReadDeadline(time.Time{})
		}
		if _, err := br.Peek(4); err != nil {
			return
		}
		c.state.Store(stateActive)
		if d := c.s.ReadHeaderTimeout; d > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(d))
		} else {
			_ = c.nc.SetReadDeadline(time.Time{})
		}
	}
}

// handshake runs the TLS handshake, bounded by ReadHeaderTimeout (as
// net/http bounds it by the least of its timeouts), and says whether the
// connection goes on to HTTP/1.x here: not when the handshake failed (a
// client that spoke plain HTTP gets net/http's 400 in plain text), nor
// when it negotiated another protocol, whose TLSNextProto function takes
// the connection over (without one, the connection closes).
func (c *conn) handshake(ctx context.Context, tc *tls.Conn) bool {
	if d := c.s.ReadHeaderTimeout; d > 0 {
		dl := time.Now().Add(d)
		_ = tc.SetReadDeadline(dl)
		_ = tc.SetWriteDeadline(dl)
	}
	if err := tc.HandshakeContext(ctx); err != nil {
		reason := err.Error()
		if re, ok := err.(tls.RecordHeaderError); ok && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
			_, _ = io.WriteString(re.Conn, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
			_ = re.Conn.Close()
			reason = "client sent an HTTP request to an HTTPS server"
		}
		c.s.logf("http: TLS handshake error from %s: %v", c.remoteAddr, reason)
		return false
	}
	_ = tc.SetReadDeadline(time.Time{})
	_ = tc.SetWriteDeadline(time.Time{})
	state := tc.ConnectionState()
	c.tlsState = &state
	switch proto := state.NegotiatedProtocol; proto {
	case "", "http/1.1", "http/1.0":
		if c.s.TakeTLS != nil && c.s.TakeTLS(tc) {
			c.s.forget(c)
			c.hijacked = true
			return false
		}
		return true
	default:
		if fn := c.s.TLSNextProto[proto]; fn != nil {
			c.s.forget(c)
			c.hijacked = true
			fn(tc)
		}
		return false
	}
}

// looksLikeHTTP says whether a TLS record's header is the start of a
// plain HTTP request.
func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return true
	}
	return false
}

// readRequest reads the next request's line and header.
func (c *conn) readRequest(br *bufio.Reader) (*http.Request, error) {
	c.lr.n = headerLimit(c.s.MaxHeaderBytes)
	if c.lastMethod == http.MethodPost {
		peek, _ := br.Peek(4)
		_, _ = br.Discard(SkipAfterPOST(peek))
	}
	// What is buffered already, then what is read, make the header
	// block the scan looks at.
	buffered, _ := br.Peek(br.Buffered())
	c.header = append(c.header[:0], buffered...)
	c.lr.record = true
	req, err := http.ReadRequest(br)
	c.lr.record = false
	if err != nil {
		if c.lr.n <= 0 {
			return nil, errTooLarge
		}
		return nil, err
	}
	c.lr.n = 1<<63 - 1
	// The header's time bound is over: the body takes as long as the
	// handler lets it (net/http's way without a ReadTimeout).
	_ = c.nc.SetReadDeadline(time.Time{})
	c.lastMethod = req.Method
	if err := checkRequest(req, c.header); err != nil {
		return nil, err
	}
	if cap(c.header) > 64<<10 {
		c.header = nil
	}
	return req, nil
}

// headerLimit is how many bytes a connection reads for a request's line
// and header before it answers 431, for a server's MaxHeaderBytes (as
// net/http counts: 4096 more than the setting, whose default is
// http.DefaultMaxHeaderBytes).
func headerLimit(maxHeaderBytes int) int64 {
	if maxHeaderBytes <= 0 {
		maxHeaderBytes = http.DefaultMaxHeaderBytes
	}
	return int64(maxHeaderBytes) + 4096
}

// checkRequest refuses what http.ReadRequest lets through and the server
// does not serve: another protocol version than 1.x (but the HTTP/2
// preface), a missing or malformed Host, a bad header name or value.
// block is the request's head as read (Host lines are not in
// req.Header).
func checkRequest(req *http.Request, block []byte) error {
	if req.ProtoMajor != 1 && !isH2Preface(req) {
		return errVersion
	}
	hosts, first, hostsValid := hostLines(block)
	if req.ProtoAtLeast(1, 1) && hosts == 0 && !isH2Preface(req) && req.Method != http.MethodConnect {
		return errMissHost
	}
	if hosts == 1 && !httpguts.ValidHostHeader(string(first)) {
		return errBadHost
	}
	// What net/http's reader lets through and its server refuses: a
	// space in a name (before the colon), in any header.
	for k, vs := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return errHeaderName
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return errHeaderValue
			}
		}
	}
	if !hostsValid {
		return errHeaderValue
	}
	return nil
}

// refuse answers a request that could not be read, as net/http words it,
// or says nothing to a client that went away.
func (c *conn) refuse(err error) {
	const headers = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	var se statusError
	var ne net.Error
	var oe *net.OpError
	switch {
	case err == errTooLarge:
		const msg = "431 Request Header Fields Too Large"
		_, _ = io.WriteString(c.nc, "HTTP/1.1 "+msg+headers+msg)
		c.closeWriteAndWait()
	case strings.HasPrefix(err.Error(), "unsupported transfer encoding"):
		_, _ = fmt.Fprintf(c.nc, "HTTP/1.1 %d %s%sUnsupported transfer encoding", http.StatusNotImplemented, http.StatusText(http.StatusNotImplemented), headers)
	case err == io.EOF, errors.As(err, &ne) && ne.Timeout(), errors.As(err, &oe) && oe.Op == "read":
		// The client went away, or said nothing in time.
	case errors.As(err, &se):
		_, _ = fmt.Fprintf(c.nc, "HTTP/1.1 %d %s: %s%s%d %s: %s", se.code, http.StatusText(se.code), se.text, headers, se.code, http.StatusText(se.code), se.text)
	default:
		const msg = "400 Bad Request"
		_, _ = io.WriteString(c.nc, "HTTP/1.1 "+msg+headers+msg)
	}
}

// prepare makes the request ready for its handler: its context, its
// body, its writer; ok false when it is answered here (an expectation
// other than 100-continue).
func (c *conn) prepare(ctx context.Context, req *http.Request) (*response, *http.Request, bool) {
	rctx, cancel := context.WithCancel(ctx)
	req = req.WithContext(rctx)
	req.RemoteAddr = c.remoteAddr
	req.TLS = c.tlsState
	c.body = &reqBody{rc: req.Body, c: c, length: req.ContentLength}
	if req.Body == http.NoBody || req.ContentLength == 0 {
		c.body.sawEOF.Store(true)
	}
	w := new(response)
	w.start(c, req, make(http.Header))
	w.w = newBuffer(chunkWriter{w})
	c.mu.Lock()
	c.cancel, c.running, c.gone = cancel, true, false
	c.mu.Unlock()
	if hasToken(req.Header.Get("Expect"), "100-continue") {
		if req.ProtoAtLeast(1, 1) && req.ContentLength != 0 {
			c.body.expectContinue, c.body.canContinue = true, true
		}
	} else if !expectationMet(req) {
		w.header.Set("Connection", "close")
		w.WriteHeader(http.StatusExpectationFailed)
		w.finish()
		c.end()
		return nil, nil, false
	}
	req.Body = c.body
	return w, req, true
}

// run calls the handler, its client watched once it has run watchDelay.
func (c *conn) run(w *response, req *http.Request) {
	defer c.end()
	c.watchTimer.Reset(watchDelay)
	if optionsStar(req) {
		// net/http answers OPTIONS * itself.
		w.Header().Set("Content-Length", "0")
		if req.ContentLength != 0 {
			_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, req.Body, 4<<10))
		}
		return
	}
	c.s.Handler.ServeHTTP(w, req)
}

// end ends the running request: the watch stops, the context is
// cancelled.
func (c *conn) end() {
	c.stopWatching()
	c.mu.Lock()
	cancel := c.cancel
	c.cancel, c.running = nil, false
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// startWatch starts the watch for the client going away, unless the
// request is over, its body is still to be read (the connection is then
// the handler's to read), or more of the client's bytes are buffered.
func (c *conn) startWatch() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running || c.watching || c.hijacked || !c.body.sawEOF.Load() || c.lr.hasStash || c.br.Buffered() > 0 {
		return
	}
	c.watching = true
	c.watchDone = make(chan struct{})
	go c.watch(c.cancel, c.watchDone)
}

// watch reads one byte ahead: a byte is kept for the next request (a
// client that sends it before the answer), the end of the connection
// cancels the request.
func (c *conn) watch(cancel context.CancelFunc, done chan struct{}) {
	defer close(done)
	var b [1]byte
	n, err := c.nc.Read(b[:])
	c.mu.Lock()
	defer c.mu.Unlock()
	if n == 1 {
		c.lr.stash, c.lr.hasStash = b[0], true
	}
	var ne net.Error
	if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
		c.gone = true
		cancel()
	}
}

// stopWatching stops the timer and a watch that runs, and waits for it.
func (c *conn) stopWatching() {
	c.watchTimer.Stop()
	c.mu.Lock()
	watching, done := c.watching, c.watchDone
	c.mu.Unlock()
	if !watching {
		return
	}
	_ = c.nc.SetReadDeadline(aLongTimeAgo)
	<-done
	_ = c.nc.SetReadDeadline(time.Time{})
	c.mu.Lock()
	c.watching = false
	c.mu.Unlock()
}

// closeWriteAndWait flushes, half-closes and waits a moment before the
// close, so that the client reads the answer before a reset (net/http's
// way with a client that may still be sending).
func (c *conn) closeWriteAndWait() {
	if c.bw != nil {
		_ = c.bw.Flush()
	}
	if tc, ok := c.nc.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	}
	time.Sleep(500 * time.Millisecond)
}

func (c *conn) close() {
	if c.watchTimer != nil {
		c.watchTimer.Stop()
	}
	if c.hijacked {
		// The buffers are the hijacker's now.
		return
	}
	c.s.forget(c)
	if c.bw != nil {
		_ = c.bw.Flush()
		putBufioWriter(c.bw)
	}
	if c.br != nil {
		putBufioReader(c.br)
	}
	_ = c.nc.Close()
}

// reqBody is a request's body as the handler reads it: it sends the 100
// Continue a client waiting for one needs, notes the end, and closes
// without reading what is left (the server drains a little of it after
// the handler, or closes the connection).
type reqBody struct {
	rc             io.ReadCloser
	c              *conn
	mu             sync.Mutex
	sawEOF         atomic.Bool
	closed         bool
	expectContinue bool
	canContinue    bool
	// length is the body's Content-Length (-1: chunked), read what the
	// handler read of it; early, closed with more left than is drained.
	length, read int64
	early        bool
}

func (b *reqBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return 0, http.ErrBodyReadAfterClose
	}
	if b.canContinue {
		b.canContinue = false
		_, _ = b.c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		_ = b.c.bw.Flush()
	}
	b.mu.Unlock()
	n, err := b.rc.Read(p)
	b.read += int64(n)
	if b.ended(err) {
		b.sawEOF.Store(true)
	}
	return n, err
}

// Close drains what is left when that is little (at most
// maxPostHandlerRead), so that the connection can serve the next
// request, as net/http does; with more left, it reads none of it and the
// connection closes after the answer. (net/http reads a chunked body to
// its end however long it is; here at most maxPostHandlerRead of it.)
func (b *reqBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	switch {
	case b.sawEOF.Load():
	case b.expectContinue && b.canContinue:
		// Nothing was asked of the client: nothing is read.
	case b.length >= 0 && b.length-b.read > maxPostHandlerRead:
		b.early = true
	default:
		n, err := io.CopyN(io.Discard, b.rc, maxPostHandlerRead)
		if b.ended(err) {
			b.sawEOF.Store(true)
		}
		if n == maxPostHandlerRead {
			b.early = true
		}
	}
	return nil
}

// ended says whether a read that returned err reached the body's end, as
// net/http counts it: its end, or for a body of known length the
// connection's (a body cut short, answered ErrUnexpectedEOF). A chunked
// body cut short has not ended: the connection will not serve another
// request.
func (b *reqBody) ended(err error) bool {
	return err == io.EOF || err == io.ErrUnexpectedEOF && b.length >= 0
}

// closedEarly says whether the handler closed the body before its end.
func (b *reqBody) closedEarly() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.early
}

// hostLines counts the Host lines of a header block, returns the first
// one's value and says whether every value is a valid field value. A
// folded line (one that starts with a space or a tab) continues the
// value before it, joined by one space, as net/textproto reads it.
func hostLines(block []byte) (n int, first []byte, valid bool) {
	// The request line first.
	i := bytes.IndexByte(block, '\n')
	if i < 0 {
		return 0, nil, true
	}
	block = block[i+1:]
	var values [][]byte
	inHost := false
	for len(block) > 0 {
		line := block
		if i := bytes.IndexByte(block, '\n'); i >= 0 {
			line, block = block[:i], block[i+1:]
		} else {
			block = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 {
			break
		}
		switch {
		case line[0] == ' ' || line[0] == '\t':
			if inHost {
				v := values[len(values)-1]
				v = append(append(v[:len(v):len(v)], ' '), bytes.Trim(line, " \t")...)
				values[len(values)-1] = v
			}
		case len(line) >= 5 && line[4] == ':' && bytes.EqualFold(line[:4], hostName):
			values = append(values, bytes.TrimRight(line[5:], " \t"))
			inHost = true
		default:
			inHost = false
		}
	}
	valid = true
	for i, v := range values {
		// The value starts after the spaces that follow the colon.
		values[i] = bytes.TrimLeft(v, " \t")
		valid = valid && validFieldValue(values[i])
	}
	if len(values) > 0 {
		first = values[0]
	}
	return len(values), first, valid
}

// expectationMet says whether the server serves req as to its Expect
// header: none, or 100-continue; another is answered 417.
func expectationMet(req *http.Request) bool {
	e := req.Header.Get("Expect")
	return e == "" || hasToken(e, "100-continue")
}

// optionsStar says whether req is OPTIONS *, which the server answers
// itself, as net/http does.
func optionsStar(req *http.Request) bool {
	return req.RequestURI == "*" && req.Method == http.MethodOptions
}

func isH2Preface(r *http.Request) bool {
	return r.Method == "PRI" && len(r.Header) == 0 && r.URL.Path == "*" && r.Proto == "HTTP/2.0"
}

func newBufioReader(r io.Reader) *bufio.Reader {
	if v := bufioReaders.Get(); v != nil {
		br := v.(*bufio.Reader)
		br.Reset(r)
		return br
	}
	return bufio.NewReaderSize(r, 4096)
}

func putBufioReader(br *bufio.Reader) {
	br.Reset(nil)
	bufioReaders.Put(br)
}

func newBufioWriter(w io.Writer) *bufio.Writer {
	if v := bufioWriters.Get(); v != nil {
		bw := v.(*bufio.Writer)
		bw.Reset(w)
		return bw
	}
	return bufio.NewWriterSize(w, 4096)
}

func putBufioWriter(bw *bufio.Writer) {
	bw.Reset(nil)
	bufioWriters.Put(bw)
}

var hostName = []byte("host")

// validFieldValue is httpguts.ValidHeaderFieldValue for bytes.
func validFieldValue(v []byte) bool {
	for _, c := range v {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
