package h1

// What a data path that reads and answers a connection's requests itself
// (an event loop) needs to do it exactly as Server would, and to hand a
// connection it does not serve over to Server: ParseRequest reads a
// request head as a connection does, AppendHead and AppendAnswer write
// answers as a response does (the same code, run into memory), and
// ServeConn serves a connection accepted elsewhere, Prepend giving back
// the bytes already read of it.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"
)

// errServedByServer is ParseRequest's answer for a request the server
// answers itself, without its handler.
var errServedByServer = errors.New("h1: the server answers this request itself")

// ParseRequest reads head, one request's line and header fields up to and
// including the empty line that ends them, as a connection of a Server
// whose MaxHeaderBytes is maxHeaderBytes reads a request (one sent after
// a POST once the bytes SkipAfterPOST counts are dropped), and returns
// the request its handler would get. The error is non-nil for every request
// the server would not hand its handler: those it refuses (400, 431, 501,
// 505: a malformed line or header, a missing or bad Host, an unsupported
// transfer encoding, a head longer than the limit, an incomplete head),
// and those it answers itself (an Expect other than 100-continue, 417;
// OPTIONS *). Serving such a request as Server does means handing the
// connection, and head, to ServeConn. The HTTP/2 preface (PRI *
// HTTP/2.0) goes to the handler, as on a connection, which closes after
// its answer (AppendHead and AppendAnswer say so).
//
// The request is what the handler sees, but for what belongs to the
// connection: its Body is http.NoBody (the caller reads the body the
// header announces, ContentLength or TransferEncoding), its RemoteAddr is
// empty, its TLS nil, its context context.Background(). Head's bytes are
// not kept.
//
// A head longer than the limit (maxHeaderBytes, http.DefaultMaxHeaderBytes
// when not positive, plus 4096) is refused, as on a connection's first
// request; the server may let a little more through when the request was
// sent behind another, already in its buffer with it.
func ParseRequest(head []byte, maxHeaderBytes int) (*http.Request, error) {
	if int64(len(head)) > headerLimit(maxHeaderBytes) {
		return nil, errTooLarge
	}
	if req, ok := parseCommon(head); ok {
		return req, nil
	}
	return parseGeneral(head)
}

// parseGeneral is ParseRequest for a head of any shape: net/http's reader,
// then the checks the server adds.
func parseGeneral(head []byte) (*http.Request, error) {
	br := newBufioReader(bytes.NewReader(head))
	defer putBufioReader(br)
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, err
	}
	if err := checkRequest(req, head); err != nil {
		return nil, err
	}
	if !expectationMet(req) || optionsStar(req) {
		return nil, errServedByServer
	}
	req.Body = http.NoBody
	return req, nil
}

// SkipAfterPOST is how many of b's first bytes a connection drops before
// it reads a request sent after a POST: the CRs and LFs among the first
// four (RFC 9112 section 2.2 lets a client end a POST's body with a
// CRLF). b is what the connection holds of that request, four bytes or
// more unless the client sent no more; before any other request nothing
// is dropped, and a leading empty line is a malformed request.
func SkipAfterPOST(b []byte) int {
	n := 0
	for _, c := range b[:min(len(b), 4)] {
		if c != '\r' && c != '\n' {
			break
		}
		n++
	}
	return n
}

// ServeConn serves c, a plain connection accepted by the caller, as Serve
// serves a connection its listener accepts, and returns once it is done
// (closed, or taken over by a handler's Hijack and the handler returned).
// ctx is what BaseContext would return for the listener: every request's
// context derives from it, through ConnContext when set. The connection
// counts among the server's: Shutdown waits for it to be idle or done,
// Close closes it; and ReadHeaderTimeout, IdleTimeout and the rest apply
// as to any. Once Shutdown or Close has begun, ServeConn closes c at once.
//
// c is read as it is: TLSConfig does not apply (a *tls.Conn is served
// over TLS, handshake first, as Serve serves its own). To serve a
// connection some bytes of which are already read, give Prepend(c,
// those bytes).
func (s *Server) ServeConn(ctx context.Context, c net.Conn) {
	s.mu.Lock()
	s.setUpLocked()
	s.mu.Unlock()
	sc, cctx, ok := s.newConn(s.withServer(ctx), c)
	if !ok {
		return
	}
	sc.serve(cctx)
}

// Prepend returns a connection whose reads return b (copied) first, then
// what c reads. It is c for all else: deadlines, writes, addresses and
// Close are c's, and its CloseWrite (which Server calls to end a
// connection politely) is c's when c has one, and does nothing when not.
// Reads of b's bytes do not wait and do not fail, whatever the read
// deadline.
func Prepend(c net.Conn, b []byte) net.Conn {
	if len(b) == 0 {
		return c
	}
	return &prepended{Conn: c, pending: bytes.Clone(b)}
}

// unprepended is the connection under Prepend's, or c.
func unprepended(c net.Conn) net.Conn {
	if p, ok := c.(*prepended); ok {
		return p.Conn
	}
	return c
}

// prepended is Prepend's connection. Its reads come one at a time from
// the server (its reader, or its watch of an idle client, never both at
// once), as net.Conn's contract lets them.
type prepended struct {
	net.Conn
	pending []byte
}

func (p *prepended) Read(b []byte) (int, error) {
	if len(p.pending) == 0 {
		return p.Conn.Read(b)
	}
	n := copy(b, p.pending)
	p.pending = p.pending[n:]
	if len(p.pending) == 0 {
		p.pending = nil
	}
	return n, nil
}

// CloseWrite half-closes c when it can.
func (p *prepended) CloseWrite() error {
	if cw, ok := p.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// AppendHead appends to dst what a Server writes for req when its
// handler sets the header h, calls WriteHeader(status) and then Flush at
// once, as a reverse proxy does with an answer of unknown length: the
// status line and header fields, up to and including the empty line, a
// Date dated now (unless h has one; the zero time is the clock's). req is
// the request as the handler got it (ParseRequest's), whose body the
// caller has read to its end (or will close the connection after the
// answer); h is not modified.
//
// The body then goes out as Server would send what the handler writes:
// chunked says it is to be chunked by the caller (HTTP/1.1, no
// Content-Length in h, a status with a body, not HEAD: each piece as a
// chunk, then the last chunk, "0\r\n\r\n", or with the trailers h
// declares); otherwise, when the answer has a body at all, it goes out
// as it is, as many bytes as h's Content-Length says, or until the
// connection closes when h has none. closeAfter says the server closes
// the connection after this answer (its header says Connection: close,
// or the request is HTTP/1.0 without keep-alive, or the body's end is
// the connection's); it closes it too after a body shorter than h's
// Content-Length.
//
// An informational status (1xx but 101) is written whole, its fields h's
// but Content-Length and Transfer-Encoding, with no Date, as
// WriteHeader(status) writes it at once; the final answer's head follows
// with another call, chunked and closeAfter coming from that one.
//
// The answer is a Server's whose keep-alives are on and that is not
// shutting down. Where a Server would log (an invalid Content-Length in
// h, or one beside another transfer encoding), AppendHead says nothing.
func AppendHead(dst []byte, req *http.Request, status int, h http.Header, now time.Time) (out []byte, chunked, closeAfter bool) {
	if out, chunked, ok := appendHeadFast(dst, req, status, h, now); ok {
		return out, chunked, false
	}
	return appendHeadGeneral(dst, req, status, h, now)
}

// appendHeadGeneral is AppendHead for an answer of any kind: the server's
// own answer code run into memory.
func appendHeadGeneral(dst []byte, req *http.Request, status int, h http.Header, now time.Time) (out []byte, chunked, closeAfter bool) {
	d := newDetached(dst, req, h, now)
	defer d.release()
	w := &d.w
	w.WriteHeader(status)
	if !w.wroteHeader {
		// Informational, out already.
		return d.out.b, false, false
	}
	w.w = newBuffer(chunkWriter{w})
	_ = w.FlushError()
	putBuffer(w.w)
	return d.out.b, w.chunking, w.closeAfter
}

// AppendAnswer appends to dst all a Server writes for req when its
// handler sets the header h, calls WriteHeader(status), Write(body) and
// returns without flushing: the header as the server completes it then
// (a Content-Length for a body of up to 2048 bytes, which it holds back;
// a Content-Type sniffed from the body when h has none; chunks for a
// longer body on HTTP/1.1 when h gives no length), and the body as the
// server frames it, or none (HEAD, a status without a body, a body
// longer than h's Content-Length, all of which the server does not
// write). closeAfter says the server closes the connection after it.
// req, now and the server assumed are as for AppendHead.
func AppendAnswer(dst []byte, req *http.Request, status int, h http.Header, body []byte, now time.Time) (out []byte, closeAfter bool) {
	d := newDetached(dst, req, h, now)
	defer d.release()
	w := &d.w
	w.w = newBuffer(chunkWriter{w})
	w.WriteHeader(status)
	_, _ = w.Write(body)
	w.finish()
	return d.out.b, !w.reusable()
}

// AppendEnd appends the end of a chunked answer whose head AppendHead
// wrote with header h: the last chunk, then the trailer (the fields h
// holds by now under the names its Trailer field declared, and those
// named with http.TrailerPrefix), as the server ends a chunked answer
// when its handler returns.
func AppendEnd(dst []byte, h http.Header) []byte {
	w := response{header: h, trailers: declaredTrailers(nil, h)}
	dst = append(dst, "0\r\n"...)
	if t := w.finalTrailers(); t != nil {
		var b bytes.Buffer
		_ = t.Write(&b)
		dst = append(dst, b.Bytes()...)
	}
	return append(dst, "\r\n"...)
}

// detached is a response written into memory rather than to a
// connection: AppendHead and AppendAnswer run the server's own answer
// code on it, its connection one whose client has sent its whole
// request.
type detached struct {
	c    conn
	body reqBody
	w    response
	out  sliceWriter
}

// detachedServer is the server a detached answer is written for: the
// defaults, keep-alives on, its log nowhere.
var detachedServer = &Server{ErrorLog: log.New(io.Discard, "", 0)}

var detachedPool = sync.Pool{New: func() any { return new(detached) }}

func newDetached(dst []byte, req *http.Request, h http.Header, now time.Time) *detached {
	d := detachedPool.Get().(*detached)
	d.out.b = dst
	d.c = conn{s: detachedServer, body: &d.body, bw: newBufioWriter(&d.out)}
	d.body = reqBody{rc: http.NoBody, c: &d.c, length: req.ContentLength}
	d.body.sawEOF.Store(true)
	d.w.start(&d.c, req, h)
	d.w.now, d.w.headerFixed = now, true
	return d
}

// release gives d back, keeping none of the caller's memory.
func (d *detached) release() {
	putBufioWriter(d.c.bw)
	d.c = conn{}
	d.body = reqBody{}
	d.w = response{}
	d.out.b = nil
	detachedPool.Put(d)
}

// sliceWriter appends what is written to b.
type sliceWriter struct{ b []byte }

func (s *sliceWriter) Write(p []byte) (int, error) {
	s.b = append(s.b, p...)
	return len(p), nil
}
