package proxy

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/apfproject/apf/internal/proxy/pool"
	"github.com/apfproject/apf/internal/proxy/wire"
)

// Direct is the proxy's direct path (forward.go) for a caller that moves
// the bytes itself: an event loop, which does its own non-blocking I/O to
// the client and to the upstream and cannot block a goroutine in a round
// trip or a body's read. The caller does the I/O; every decision about
// what is sent and what is answered is the proxy's, taken by the same
// code the handler runs, so that a request sends the upstream the same
// bytes and gets the caller the same answer either way.
//
// For a request r (with its deadline, as the handler's requests have one),
// the caller:
//
//  1. Outgoing(r): the request to send, or not ok: r goes to the handler
//     (New's) instead, which answers it in full (a refusal, an upgrade, a
//     stream, a request wire does not carry).
//  2. Pick(out): the upstream, the pool's member, with the pool's
//     accounting (Call). out is pointed at it.
//  3. wire.AppendRequest(buf, out, body): the bytes to write, body being
//     r's whole body (out.ContentLength bytes; wire carries at most
//     wire.MaxBody), on a connection to Call.Addr: one kept idle from an
//     earlier answer, or a new one. The transport's settings are
//     Transport's: a connection is dialled within DialTimeout and the
//     request's deadline (TCP keep-alive DialKeepAlive); the write and
//     the wait for the answer's head are bounded by the request's
//     deadline or ResponseHeaderTimeout from the moment the request has
//     its connection, whichever comes first; the body by the deadline.
//  4. The answer, as it arrives: wire.ParseAnswerHead, then its body by
//     the Framing it returns (a length, wire.Chunked, or until the close).
//     An informational answer (1xx but 101) goes to the client at once
//     through Informational, and the next head is parsed; after
//     wire.MaxInformational of them, another is wire.ErrMalformed.
//  5. Call.Answered(status) once the final head is parsed; Answer(h, res)
//     for the client's header h, then the status and h to the client, and
//     the body as Relay says; at the body's end, Trailer; then Call.Done.
//  6. A failure before the final head: Call.Failed(err, reached), which
//     may name another member to send the request to (back to 3); if not,
//     Fail(out, err) is the answer.
//
// What forward does besides, which the caller reproduces:
//
//   - A connection kept idle that fails before the first byte of the
//     answer, by its end (wire.Ended: closed, reset, EOF), whether while
//     the request is written or after, is taken for one the upstream closed
//     while it sat idle: the request is written again on a new connection
//     when wire.Resend(out, attempt) says so (at most three attempts), and
//     the pool sees none of this (one attempt, reached). Any other
//     failure is the attempt's.
//   - The connection goes back to the idle ones only when the answer was
//     read to its end, its Framing.KeepAlive, nothing arrived past its
//     end, and the request's context did not end meanwhile; it is closed
//     after any failure, an answer Answer refuses, an answer cut or not
//     read to its end, and when more than Transport.MaxIdlePerHost would
//     be idle. An idle connection is closed after Transport.IdleTimeout;
//     one idle for more than 100ms is checked before it is used again (a
//     read that finds the upstream's close, or bytes nobody asked for,
//     closes it instead).
//   - The body: an answer of unknown length or an event stream (Relay's
//     Stream) has its head flushed to the client at once and every piece
//     of its body as soon as it is read from the upstream (32 KiB at a
//     time at most); any other is written as it comes without a flush
//     of its own (the server sends it as its buffer fills and at the end).
//   - A body that breaks off (the upstream's connection ends, its framing
//     is malformed, the deadline passes, the client's connection fails)
//     once the head has gone to the client cuts the answer: the client's
//     connection is aborted so that the client cannot take the answer for
//     whole, Cut logs it, and the upstream's connection is closed; then
//     Call.Done.
//   - The request's context ends at its deadline (Err non-nil), and when
//     the client goes away (Canceled) or the server gives up on it (a
//     cause of its own): Call.Failed and Fail read it.
type Direct struct {
	p    *proxy
	wire *wire.Transport
	pool *pool.Pool
}

// The dialer's settings of the proxy's transport (Direct step 3).
const (
	DialTimeout   = 10 * time.Second
	DialKeepAlive = 30 * time.Second
)

// Loop returns the direct path of h, the handler New returned, for a
// caller that moves the bytes itself; nil when h is no such handler or
// when its transport is not one that sends the direct path's requests
// through package wire: a plain-HTTP upstream, alone or as the members of
// a pool (package pool) over New's transport. (A TLS upstream, another
// round tripper, a transport that routes requests to several pools are
// none.)
func Loop(h http.Handler) *Direct {
	p, ok := h.(*proxy)
	if !ok || p.viaReverseProxy || p.o.Upstream.Scheme != "http" {
		return nil
	}
	d := &Direct{p: p}
	switch tr := p.rp.Transport.(type) {
	case upgradeSplit:
		d.wire = tr.wire
	case *pool.Pool:
		us, ok := tr.Transport().(upgradeSplit)
		if !ok || tr.Base().Scheme != "http" {
			return nil
		}
		d.wire, d.pool = us.wire, tr
	default:
		return nil
	}
	return d
}

// Transport is the transport whose settings the caller applies: its
// ResponseHeaderTimeout, MaxResponseHeaderBytes (0: the default, which
// wire.ParseAnswerHead applies), IdleTimeout and MaxIdlePerHost (0: the
// defaults). Its connections are its own.
func (d *Direct) Transport() *wire.Transport { return d.wire }

// Outgoing is the request the direct path sends the upstream for r: the
// upstream's scheme, host and path prefix, the hop-by-hop and forwarding
// headers of the caller's dropped and the proxy's set, the identity
// headers of the proxy's mode. r is the request as a server hands it to
// the handler: its Method, URL, Host, Header, RemoteAddr, TLS,
// ContentLength, TransferEncoding, Body (when it has one) and a context
// with the request's deadline are what the direct path reads. ok is false
// when the handler would not send r by the direct path, or not through
// wire: r then goes to the handler. out's URL is its own (Pick points it
// at the member), its Body r's (the caller sends the body itself), its
// context r's.
//
// out lives in ob's memory, which the next Outgoing with ob fills again:
// the caller is done with out by then. r's context must be ob's.
func (d *Direct) Outgoing(r *http.Request, ob *Outbound) (out *http.Request, ok bool) {
	p := d.p
	r, refused := p.admit(r)
	if refused != nil || !p.direct(r, p.stall(r) > 0) {
		return nil, false
	}
	out = p.outgoingTo(r, ob)
	if wire.Check(out) != nil {
		return nil, false
	}
	return out, true
}

// Outbound is the memory of the requests Outgoing makes for a caller that
// sends them one at a time: the request, its URL, its header and the
// values the proxy adds, and Pick's Call with its pool's Try, made again
// for each, so that the common request allocates none of them. Its
// context is every request's.
type Outbound struct {
	blank, req *http.Request
	url        url.URL
	h          http.Header
	vals       [2]string
	// call and try are Pick's.
	call Call
	try  pool.Try
}

// NewOutbound returns memory for requests with the context ctx.
func NewOutbound(ctx context.Context) *Outbound {
	return &Outbound{blank: new(http.Request).WithContext(ctx), req: new(http.Request), h: make(http.Header)}
}

// Pick chooses the upstream out goes to, as the transport does, and points
// out's URL at it: the member of the proxy's pool it picks (and counts the
// request outstanding on), or the one upstream. out is Outgoing's, made in
// ob, and the Call is made in ob's memory too.
func (d *Direct) Pick(out *http.Request, ob *Outbound) *Call {
	c := &ob.call
	*c = Call{out: out}
	if d.pool != nil {
		c.try = d.pool.BeginIn(&ob.try, out)
		c.point()
	}
	return c
}

// Call is a request on its way to an upstream: the member of the proxy's
// pool it goes to now, with the pool's accounting, which sees from the
// calls below exactly what it sees from a round trip: the attempts, the
// answers by status and the failures by reason, the latency to the
// answer's head, the passive checks and the request outstanding until
// Done. Without a pool, it only names the upstream.
type Call struct {
	out *http.Request
	try *pool.Try
}

// point points out at the member.
func (c *Call) point() {
	if p := c.try.Point(c.out); p != c.out {
		c.out.URL = p.URL
	}
}

// Addr is the address to connect to: the member's host, port 80 by
// default.
func (c *Call) Addr() string { return wire.Addr(c.out.URL) }

// Upstream is the member, scheme://host ("" without a pool).
func (c *Call) Upstream() string { return c.try.Upstream() }

// Answered says that the member answered with status (the final head,
// parsed): the request stays outstanding on it until Done.
func (c *Call) Answered(status int) { c.try.End(true, status, nil) }

// Failed says that the attempt failed before the final head: reached says
// whether the request was handed a connection (an idle one, or one that
// connected), so that a byte of it may have been sent. It returns the
// Call, pointed (with out) at another member, when the request is to be
// sent there: it never reached this one, its context is still running,
// and a member is left to try. Otherwise nil, and Fail(out, err) is the
// answer.
func (c *Call) Failed(err error, reached bool) *Call {
	if c.try.End(reached, 0, err) {
		c.point()
		return c
	}
	return nil
}

// Done ends the request's hold on its member: the answer was read to its
// end, or abandoned (cut, refused by Answer, the client gone). After
// Failed returned nil, it does nothing; so do calls after the first.
func (c *Call) Done() { c.try.Release() }

// Relay is how forward relays an answer's body, once Answer has taken it.
type Relay struct {
	// Stream: the answer is flushed as it comes (the head at once, and
	// the body after every read from the upstream): one of unknown
	// length, or an event stream.
	Stream bool
	// Announced is the number of trailer names the answer announced,
	// which Answer listed in the client's Trailer header (0: none).
	// Only a chunked answer has a trailer; whether announced or not,
	// Trailer sets it once the body has ended.
	Announced int
}

// Answer makes forward's edits to the upstream's final answer res (as
// wire.ParseAnswerHead returns it, res.Request being out) and to h, the
// header the client's answer goes out with (what the layers in front set
// already): the hop-by-hop headers and those named by
// Options.DropResponseHeaders dropped from res, res's header then merged
// into h (values added to those h has), and res's trailer names announced
// in a Trailer header. The client's answer is res.StatusCode with h.
//
// An error is an answer forward refuses (a 101, a switch of protocols the
// request did not ask for): h is left as it was, the upstream's
// connection is closed, Call.Done, and the client gets Fail(out, err), a
// 502.
func (d *Direct) Answer(h http.Header, res *http.Response) (Relay, error) {
	announced, err := d.p.answerHeader(h, res)
	if err != nil {
		return Relay{}, err
	}
	return Relay{Stream: streams(res), Announced: announced}, nil
}

// Trailer sets in h, once the body has ended, res's trailer as forward
// sends it (res.Trailer as wire.Chunked made by wire.NewChunked(res) left
// it: the announced names and those that came): the names of
// Options.DropResponseHeaders dropped, and then, when all are the
// announced ones, under their own names, else every one under
// http.TrailerPrefix. It says whether there is one: the client's answer,
// which is chunked (Relay.Stream), ends with it.
func (d *Direct) Trailer(h http.Header, res *http.Response, rl Relay) bool {
	d.p.drop.from(res.Trailer)
	if len(res.Trailer) == 0 {
		return false
	}
	setTrailer(h, res.Trailer, rl.Announced)
	return true
}

// Informational relays an informational answer res (a 1xx other than 101)
// as forward does: res's header is added to h, the client's, write sends
// the status with h, and h is cleared: the final answer's header starts
// empty (what the layers in front had set included).
func (d *Direct) Informational(h http.Header, res *http.Response, write func(code int)) {
	relayInformational(h, res.StatusCode, res.Header, write)
}

// The failures a caller of Direct reports to Fail (and Call.Failed) when
// they are its own rather than a transport's error. Each is wrapped
// around the cause (fmt.Errorf("%w: %w", ErrUnreached, err)); any error
// may be, and ErrTimeout may be combined with ErrUnreached.
var (
	// ErrUnreached: no connection could be made (refused, unreachable,
	// the connect's own timeout with ErrTimeout). A 502, "could not be
	// reached" (a 504 with ErrTimeout), as for the transport's dial
	// errors.
	ErrUnreached = errors.New("the upstream could not be reached")
	// ErrTimeout: the wait ran out: for a connection, or for the answer's
	// head (the response header timeout, the request's deadline). A
	// 504.
	ErrTimeout error = timeoutError{}
	// ErrNoAnswer: the connection ended or was reset before the answer's
	// head was whole. A 502, "gave no valid answer", as for a malformed
	// answer (wire.ErrMalformed).
	ErrNoAnswer = errors.New("the upstream closed the connection before its answer")
)

// timeoutError is a timeout as net.Error says one.
type timeoutError struct{}

func (timeoutError) Error() string   { return "timed out waiting for the upstream" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// Fail is the answer forward gives the client for a request that failed
// with err before the final head, or whose answer Answer refused: the
// status, the header to set on the client's (each name replacing what the
// layers in front set) and the body; logged as forward logs it. out is
// the request Outgoing returned. An error after the request had a
// connection stands for the context's when the context has ended, as the
// transport's errors do (wire.ContextErr). A status of 0 is no answer at
// all: the client went away, nobody is listening.
//
// A failure to connect is ErrUnreached; a timeout ErrTimeout (or
// os.ErrDeadlineExceeded, context.DeadlineExceeded); a connection that
// ended or was reset ErrNoAnswer (or io.ErrUnexpectedEOF, ECONNRESET); an
// answer wire refused its wire.ErrMalformed error. Each gets what the
// transport's matching error gets.
func (d *Direct) Fail(out *http.Request, err error) (status int, h http.Header, body []byte) {
	if !errors.Is(err, ErrUnreached) && !errors.Is(err, errUnaskedSwitch) {
		err = wire.ContextErr(out.Context(), err)
	}
	w := failWriter{h: make(http.Header)}
	d.p.fail(&w, out, err)
	return w.code, w.h, w.body
}

// Cut logs the cut of r's answer as the handler logs an answer it aborts:
// written bytes of it had gone to the client since start (when the
// request reached the proxy); readErr is the failed read of the upstream's
// body, or writeErr the client's failed write, that cut it. r is the
// caller's request (not Outgoing's).
func (d *Direct) Cut(r *http.Request, written int64, start time.Time, readErr, writeErr error) {
	d.p.bodyReadFailed(readErr)
	reason, level := cutReason(r.Context(), writeErr)
	d.p.cutLine(r, reason, level, written, start)
}

// failWriter keeps what fail writes.
type failWriter struct {
	h    http.Header
	code int
	body []byte
}

func (w *failWriter) Header() http.Header { return w.h }

func (w *failWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *failWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	w.body = append(w.body, b...)
	return len(b), nil
}
