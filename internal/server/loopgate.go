package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apfproject/apf/apfhttp"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/internal/api/apistatus"
	"github.com/apfproject/apf/internal/api/discovery"
	"github.com/apfproject/apf/internal/auth/authn"
	"github.com/apfproject/apf/internal/auth/authz"
	"github.com/apfproject/apf/internal/debug/console"
	"github.com/apfproject/apf/internal/proxy"
	"github.com/apfproject/apf/internal/proxy/wire"
	"github.com/apfproject/apf/internal/server/evloop"
	"github.com/apfproject/apf/internal/server/h1"
	"github.com/apfproject/apf/internal/server/tlsrec"
	"github.com/apfproject/apf/request"
)

// loopGate is what the event loops (package evloop) do with a request on
// the main address of `apf serve --upstream`: the same as
// the handler chain (edge, deadline, authentication, APF, the proxy's
// direct path), for the common request, without a goroutine. Whatever
// else the chain does is left to it: a request the gate does not take is
// handed over, with its connection, to package h1 and the chain (takes).
//
// What it does is the chain's by construction wherever it can be: the
// same parse (h1.ParseRequest, request.ParseInto), the same authenticator,
// the same controller (AdmitFunc instead of Admit), the proxy's own
// outgoing request and answer edits (proxy.Direct), wire's request
// writer and answer parser, h1's answer heads, the same answers for a
// refusal, a rejection, a failed upstream and a deadline passed
// (apistatus, apfhttp.WriteNotAdmitted, proxy.Direct.Fail).
// TestLoopMatchesChain sends each kind of request both ways.
type loopGate struct {
	s      *Server
	direct *proxy.Direct
}

// loopsRefusal says why the loops cannot serve the main address of this
// configuration ("" when they can): what the chain does there that the
// gate does not (an access log, tracing, the adaptive limit, routes,
// authorization of proxied requests, an upstream wire does not reach).
func (s *Server) loopsRefusal() string {
	o := s.opts
	switch {
	case !o.EventLoops:
		return "--event-loops=false"
	case !evloop.Supported:
		return "not supported on this system"
	case o.Upstream == "":
		return "no upstream"
	case !o.EnablePriorityAndFairness:
		return "APF is off"
	case s.obs.on():
		return "the access log or tracing is on"
	case s.adaptive != nil:
		return "the adaptive limit is on"
	case s.routes != nil:
		return "gateway routes are configured"
	case o.AuthorizeProxied:
		return "proxied requests are authorized by apf"
	case s.direct == nil:
		return "the upstream is not one the direct path reaches"
	}
	return ""
}

// takes says whether the gate serves r itself, from what its line and
// header say: a path the chain routes elsewhere than the upstream (apf's
// own endpoints, discovery, the console, a self access review), a request
// that asks for an explanation or impersonates, go to the chain.
func (g *loopGate) takes(r *http.Request) bool {
	p := r.URL.Path
	if isOwnPath(p) || discovery.Discovery(p) || p == authz.SelfSubjectAccessReviewPath ||
		p == consoleDir || strings.HasPrefix(p, console.PathPrefix) {
		return false
	}
	h := r.Header
	if h[canonicalExplain] != nil {
		return false
	}
	for k := range h {
		if strings.HasPrefix(k, "Impersonate-") {
			return false
		}
	}
	return true
}

var canonicalExplain = http.CanonicalHeaderKey(apfhttp.ExplainHeader)

// Serve decides x's request.
func (g *loopGate) Serve(x *evloop.Exchange) {
	r := x.Request()
	if !g.takes(r) {
		x.HandOver()
		return
	}
	// The exchange holds the request's attributes and context.
	ex := newLoopExchange(g, x, r)
	a := ex.a
	if err := request.ParseInto(&a.Info, r.Method, r.URL.Path, r.URL.RawQuery); err != nil {
		ex.release()
		x.HandOver()
		return
	}
	if a.IsLongRunning(request.KubeAPIServer) || a.IsWatch() || a.Info.Verb == request.VerbList {
		// Held, streamed, or learned from (the chain counts a list's
		// objects as its answer passes).
		ex.release()
		x.HandOver()
		return
	}
	now := time.Now()
	ex.start = now
	u, err := g.s.authenticator.Authenticate(r)
	if err != nil {
		ex.reply(func(w http.ResponseWriter) { apistatus.Write(w, authn.UnauthorizedStatus()) })
		ex.release()
		return
	}
	a.User = *u
	a.Route.Plain = g.s.opts.profile() == bootstrap.ProfileService || g.s.discovery.Kind() == discovery.UpstreamOther
	d := g.s.opts.RequestTimeout
	if a.Info.Timeout > 0 && a.Info.Timeout < d {
		d = a.Info.Timeout
	}
	ex.deadline = now.Add(d)
	ex.dctx = deadlineContext{Context: x.Context(), at: ex.deadline}
	ctx := ex.ctx
	ex.r = r.WithContext(ctx)
	out, ok := g.direct.Outgoing(ex.r, ex.ob)
	if !ok {
		ex.release()
		x.HandOver()
		return
	}
	ex.out = out
	x.SetTimer(ex.deadline, ex.expireFn)
	ex.admit(ctx)
}

// deadlineContext is a connection's context with a request's deadline:
// the controller bounds a queued request's wait by it, and the proxy's
// answer to a failure reads it. The loop's timer keeps the deadline
// itself (loopExchange.expire).
type deadlineContext struct {
	context.Context
	at time.Time
}

func (c *deadlineContext) Deadline() (time.Time, bool) { return c.at, true }

func (c *deadlineContext) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.at) {
		return context.DeadlineExceeded
	}
	return nil
}

// loopExchange is one request through the gate. It is used again for
// another request once nothing refers to it any more (release): when the
// loop's exchange has ended and the admission has been heard.
type loopExchange struct {
	attrs request.Attributes
	dctx  deadlineContext
	// kept is what the exchange keeps between requests.
	kept

	g        *loopGate
	x        *evloop.Exchange
	r        *http.Request
	a        *request.Attributes
	out      *http.Request
	start    time.Time
	deadline time.Time

	// state tells an admission decided inside AdmitFunc (1) from one
	// decided after it returned (2); t and err are the decision.
	state atomic.Int32
	t     *controller.Ticket
	err   error

	call *proxy.Call
	// attempts counts the times the request was sent again on a fresh
	// connection for a stale one.
	attempts int
	// res is the upstream's final answer, relay how its body goes.
	res   *http.Response
	relay proxy.Relay
	// answered: the member's final head came (Call.Answered).
	answered bool
	body     bodyReader
	ended    bool
}

// kept is the part of a loopExchange that serves every request it is
// used for: made once, or grown and then reset between requests.
type kept struct {
	// ctx is the request's context: dctx with attrs. It is made once,
	// with ob, the memory of the outgoing request, which is the
	// context's.
	ctx context.Context
	ob  *proxy.Outbound
	// answers is the memory the upstream's answers are parsed in.
	answers *wire.AnswerMemory
	// request is what goes to the upstream.
	request []byte
	// h is the header of the client's answer, the PF headers first.
	h http.Header
	// expireFn and heardCB are expire and heard bound once.
	expireFn func()
	heardCB  func(*controller.Ticket, error)
}

// loopExchanges keeps the gate's exchanges between requests: with its
// request buffer and the answer's header map, an exchange is most of what
// a request through the loops would otherwise allocate, and most of the
// collector's work.
var loopExchanges sync.Pool

// maxKeptRequest is the largest request buffer an exchange keeps.
const maxKeptRequest = 16 << 10

func init() {
	loopExchanges.New = func() any {
		ex := new(loopExchange)
		ex.expireFn = ex.expire
		ex.heardCB = ex.heard
		ex.ctx = request.WithAttributes(&ex.dctx, &ex.attrs)
		ex.ob = proxy.NewOutbound(ex.ctx)
		ex.answers = new(wire.AnswerMemory)
		return ex
	}
}

func newLoopExchange(g *loopGate, x *evloop.Exchange, r *http.Request) *loopExchange {
	ex := loopExchanges.Get().(*loopExchange)
	ex.g, ex.x, ex.r = g, x, r
	ex.a = &ex.attrs
	return ex
}

// release gives ex back to the pool. The caller is the last one to refer
// to it: the loop's exchange has ended or was handed over (no Relay call
// comes after), and the admission was never asked or has been heard.
func (ex *loopExchange) release() {
	k := ex.kept
	clear(k.h)
	k.request = k.request[:0]
	if cap(k.request) > maxKeptRequest {
		k.request = nil // a large body's: not kept for the small requests after
	}
	*ex = loopExchange{kept: k}
	loopExchanges.Put(ex)
}

// admit asks the controller, without blocking the loop.
func (ex *loopExchange) admit(ctx context.Context) {
	ex.g.s.ctl.AdmitFunc(ctx, ex.a, nil, ex.heardCB)
	if ex.state.CompareAndSwap(0, 2) {
		// Queued. A client that goes away meanwhile ends ctx, and with
		// it the wait; heard gives back a seat that comes all the same.
		ex.x.Wait(nil)
		return
	}
	ex.decided(ex.t, ex.err)
}

// heard is AdmitFunc's callback: a decision within it is the loop's to
// take when AdmitFunc returns, a later one is posted to the loop.
func (ex *loopExchange) heard(t *controller.Ticket, err error) {
	if ex.state.Load() != 2 {
		ex.t, ex.err = t, err
		if ex.state.CompareAndSwap(0, 1) {
			return
		}
	}
	ok := ex.x.Post(func() {
		if ex.x.Ended() {
			// Answered meanwhile (the deadline), or the client left.
			if t != nil {
				t.Done()
			}
			ex.release()
			return
		}
		ex.decided(t, err)
	})
	if !ok && t != nil {
		t.Done()
	}
}

// decided sends the request on under t, or answers err.
func (ex *loopExchange) decided(t *controller.Ticket, err error) {
	if err != nil {
		ex.reply(func(w http.ResponseWriter) { apfhttp.WriteNotAdmitted(w, ex.r, err) })
		ex.release()
		return
	}
	ex.t = t
	if ex.h == nil {
		ex.h = http.Header{}
	}
	ex.h[canonicalFlowSchemaUID], ex.h[canonicalPriorityLevelUID] = t.UIDValues()
	ex.call = ex.g.direct.Pick(ex.out, ex.ob)
	if ex.request == nil {
		// Room for a request head of common size and a small body.
		ex.request = make([]byte, 0, 2048)
	}
	// Outgoing checked the request (wire.Check); Pick changed only its URL.
	b, aerr := wire.AppendChecked(ex.request[:0], ex.out, ex.x.Body())
	if aerr != nil {
		ex.call.Failed(aerr, false)
		ex.call.Done()
		t.Done()
		next := ex.failure(aerr)
		ex.x.Reply(next.Answer, next.Close)
		ex.release()
		return
	}
	ex.request = b
	ex.x.Forward(ex.call.Addr(), b, ex)
}

// reply answers with what write writes, behind the header the chain's
// edge sets first (Cache-Control).
func (ex *loopExchange) reply(write func(http.ResponseWriter)) {
	w := newLoopRecorder()
	w.h["Cache-Control"] = noCache
	write(w)
	b, closeAfter := h1.AppendAnswer(nil, ex.r, w.code, w.h, w.body, time.Now())
	ex.x.Reply(b, closeAfter)
}

// expire is the deadline: the chain's 504 when nothing was answered yet
// (the upstream's answer, if it comes, is dropped with its connection),
// the answer cut when it had begun.
func (ex *loopExchange) expire() {
	if ex.res != nil {
		ex.x.Abort(context.DeadlineExceeded)
		return
	}
	if ex.call != nil {
		ex.call.Failed(context.DeadlineExceeded, ex.x.Reached())
	}
	ex.reply(func(w http.ResponseWriter) { apistatus.WriteTimeout(w) })
}

// Answer reads the upstream's answer (evloop.Relay): its head, as the
// chain writes it to the client, then its body as it comes.
func (ex *loopExchange) Answer(in []byte, eof bool, out []byte) (int, []byte, evloop.State, error) {
	consumed := 0
	for ex.res == nil {
		res, n, framing, err := wire.ParseAnswerHeadIn(in[consumed:], ex.out, ex.answers)
		if err != nil || n == 0 {
			return consumed, out, evloop.More, err
		}
		consumed += n
		if res.StatusCode < 200 && res.StatusCode != http.StatusSwitchingProtocols {
			// Informational: to the client at once; the final head
			// follows.
			ex.body.informational++
			if ex.body.informational > wire.MaxInformational {
				return consumed, out, evloop.More, wire.ErrMalformed
			}
			ex.g.direct.Informational(ex.h, res, func(code int) {
				out, _, _ = h1.AppendHead(out, ex.r, code, ex.h, time.Now())
			})
			continue
		}
		ex.call.Answered(res.StatusCode)
		ex.answered = true
		rl, err := ex.g.direct.Answer(ex.h, res)
		if err != nil {
			return consumed, out, evloop.More, err
		}
		var closeAfter bool
		out, ex.body.chunked, closeAfter = h1.AppendHead(out, ex.r, res.StatusCode, ex.h, time.Now())
		if closeAfter {
			ex.x.CloseAfter()
		}
		ex.res, ex.relay = res, rl
		ex.body.framing, ex.body.left = framing, framing.Length
		if framing.Kind == wire.Chunks {
			ex.body.chunks = wire.NewChunked(res)
		}
	}
	n, out, state, err := ex.body.read(ex, in[consumed:], eof, out)
	return consumed + n, out, state, err
}

// Failed answers what the proxy answers for the same failure, or sends
// the request again: on a fresh connection for a stale one, or to the
// pool's next member.
func (ex *loopExchange) Failed(err error, reached, stale bool) evloop.Next {
	if stale && wire.Resend(ex.out, ex.attempts) {
		ex.attempts++
		return evloop.Next{Addr: ex.call.Addr(), Request: ex.request, Fresh: true}
	}
	err = proxyError(err)
	if ex.answered {
		// An answer the proxy refuses (Direct.Answer): the member did
		// answer, and the attempt is over.
		ex.call.Done()
		return ex.failure(err)
	}
	if next := ex.call.Failed(err, reached); next != nil {
		b, aerr := wire.AppendChecked(ex.request[:0], ex.out, ex.x.Body())
		if aerr == nil {
			ex.request = b
			return evloop.Next{Addr: next.Addr(), Request: b}
		}
		err = aerr
	}
	ex.call.Done()
	return ex.failure(err)
}

// failure is the proxy's answer to err.
func (ex *loopExchange) failure(err error) evloop.Next {
	code, h, body := ex.g.direct.Fail(ex.out, err)
	if code == 0 {
		return evloop.Next{Close: true}
	}
	if ex.h == nil {
		ex.h = http.Header{}
	}
	for k, v := range h {
		ex.h[k] = v
	}
	b, closeAfter := h1.AppendAnswer(nil, ex.r, code, ex.h, body, time.Now())
	return evloop.Next{Answer: b, Close: closeAfter}
}

// proxyError is the proxy's name for one of the loop's failures.
func proxyError(err error) error {
	switch {
	case errors.Is(err, evloop.ErrConnectTimeout):
		return fmt.Errorf("%w: %w: %w", proxy.ErrUnreached, proxy.ErrTimeout, err)
	case errors.Is(err, evloop.ErrConnect):
		return fmt.Errorf("%w: %w", proxy.ErrUnreached, err)
	case errors.Is(err, evloop.ErrHeaderTimeout):
		return fmt.Errorf("%w: %w", proxy.ErrTimeout, err)
	case errors.Is(err, evloop.ErrUpstreamClosed), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("%w: %w", proxy.ErrNoAnswer, err)
	}
	return err
}

// Ended gives the seats back, ends the request's hold on its member, and
// logs an answer cut.
func (ex *loopExchange) Ended(err error) {
	if ex.ended {
		return
	}
	ex.ended = true
	if ex.res != nil && err != nil {
		var readErr, writeErr error
		switch {
		case errors.Is(err, evloop.ErrClientWrite), errors.Is(err, evloop.ErrClientGone):
			writeErr = err
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, http.ErrServerClosed):
		default:
			readErr = proxyError(err)
		}
		ex.g.direct.Cut(ex.r, ex.body.written, ex.start, readErr, writeErr)
	}
	if ex.call != nil {
		ex.call.Done()
	}
	if ex.t != nil {
		ex.t.Done()
	}
	ex.release()
}

var (
	canonicalFlowSchemaUID    = http.CanonicalHeaderKey(apfhttp.FlowSchemaUIDHeader)
	canonicalPriorityLevelUID = http.CanonicalHeaderKey(apfhttp.PriorityLevelUIDHeader)
)

// bodyReader relays an upstream answer's body as it comes: as it is when
// the client's answer has a length, in chunks when it is chunked.
type bodyReader struct {
	framing wire.Framing
	left    int64
	chunks  *wire.Chunked
	// chunked: the client's answer is chunked; written counts the body's
	// bytes sent on; informational the 1xx answers before the final one.
	chunked       bool
	written       int64
	informational int
}

func (b *bodyReader) read(ex *loopExchange, in []byte, eof bool, out []byte) (int, []byte, evloop.State, error) {
	keep := evloop.Done
	if !b.framing.KeepAlive {
		keep = evloop.DoneClose
	}
	switch b.framing.Kind {
	case wire.NoBody:
		return 0, b.end(ex, out), keep, nil
	case wire.Length:
		n := min(int64(len(in)), b.left)
		out = b.data(out, in[:n])
		b.left -= n
		if b.left == 0 {
			return int(n), b.end(ex, out), keep, nil
		}
		return int(n), out, evloop.More, nil
	case wire.Chunks:
		consumed := 0
		for {
			n, data, done, err := b.chunks.Decode(in[consumed:])
			consumed += n
			if err != nil {
				return consumed, out, evloop.More, err
			}
			out = b.data(out, data)
			if done {
				return consumed, b.end(ex, out), keep, nil
			}
			if consumed == len(in) {
				return consumed, out, evloop.More, nil
			}
		}
	default: // until the upstream closes
		out = b.data(out, in)
		if eof {
			return len(in), b.end(ex, out), evloop.DoneClose, nil
		}
		return len(in), out, evloop.More, nil
	}
}

// data appends a run of the body as the client's answer carries it.
func (b *bodyReader) data(out, data []byte) []byte {
	if len(data) == 0 {
		return out
	}
	b.written += int64(len(data))
	if !b.chunked {
		return append(out, data...)
	}
	out = strconv.AppendInt(out, int64(len(data)), 16)
	out = append(out, "\r\n"...)
	out = append(out, data...)
	return append(out, "\r\n"...)
}

// end appends the end of the client's answer: the last chunk and the
// trailer of a chunked one.
func (b *bodyReader) end(ex *loopExchange, out []byte) []byte {
	if !b.chunked {
		return out
	}
	ex.g.direct.Trailer(ex.h, ex.res, ex.relay)
	return h1.AppendEnd(out, ex.h)
}

// loopRecorder keeps what a handler function writes, for h1.AppendAnswer.
type loopRecorder struct {
	h    http.Header
	code int
	body []byte
}

func newLoopRecorder() *loopRecorder { return &loopRecorder{h: http.Header{}} }

func (w *loopRecorder) Header() http.Header { return w.h }

func (w *loopRecorder) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *loopRecorder) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	w.body = append(w.body, b...)
	return len(b), nil
}

// spare is the processor loopProcessors adds, once per process.
var spare struct {
	once  sync.Once
	loops int
}

// loopProcessors returns how many loops to run, one for each processor
// the process started with (GOMAXPROCS), and gives the runtime one
// processor more than that. A loop waits for its connections in
// epoll_wait, a system call, and while every processor is held by a
// goroutine in a system call, the runtime's monitor takes each one back
// within about 20 µs and hands it to another thread, which finds nothing
// to run and sleeps again; with a processor to spare none is taken, and the
// spare one runs what is not a loop (connections handed over, timers, the
// collector). Measured at 5,000 requests a second on two cores: 81 µs of
// CPU a request instead of 102, the latency unchanged (docs/benchmarks.md).
func loopProcessors() int {
	spare.once.Do(func() {
		spare.loops = runtime.GOMAXPROCS(0)
		runtime.GOMAXPROCS(spare.loops + 1)
	})
	return spare.loops
}

// loopServer is the event loops of the main address (main), with h1s
// serving the connections they hand over; nil when the loops do not
// serve this configuration or this listener (said in the log once).
func (s *Server) loopServer(main bool, l net.Listener, h1s *h1.Server, base context.Context) *evloop.Server {
	if !main {
		return nil
	}
	why := s.loopsRefusal()
	if _, ok := l.(*net.TCPListener); why == "" && !ok {
		why = "the listener is not TCP"
	}
	if why != "" {
		if s.opts.EventLoops && s.opts.Upstream != "" {
			s.log.Info("event loops off", "reason", why)
		}
		return nil
	}
	tr := s.direct.Transport()
	ev := &evloop.Server{
		Gate:              &loopGate{s: s, direct: s.direct},
		HandOver:          func(c net.Conn) { h1s.ServeConn(base, c) },
		BaseContext:       base,
		MaxHeaderBytes:    h1s.MaxHeaderBytes,
		ReadHeaderTimeout: h1s.ReadHeaderTimeout,
		IdleTimeout:       h1s.IdleTimeout,
		// The proxy's transport's settings, which its connections keep.
		DialTimeout:           proxy.DialTimeout,
		ResponseHeaderTimeout: tr.ResponseHeaderTimeout,
		UpstreamIdleTimeout:   cmp.Or(tr.IdleTimeout, wire.DefaultIdleTimeout),
		MaxIdlePerHost:        cmp.Or(tr.MaxIdlePerHost, wire.DefaultMaxIdlePerHost),
		Logf:                  func(format string, args ...any) { s.log.Warn(fmt.Sprintf(format, args...)) },
		Workers:               loopProcessors(),
	}
	s.log.Info("event loops on", "loops", ev.Workers, "GOMAXPROCS", runtime.GOMAXPROCS(0))
	s.loops.Store(ev)
	return ev
}

// takeTLS has h1s, which accepts and handshakes, give ev the connections
// the loops carry on: TLS 1.3 that chose HTTP/1.x (package tlsrec says
// which it can). The others stay with h1s (and HTTP/2 goes on to
// net/http's server). tlsCfg is the configuration h1s handshakes with.
func takeTLS(ev *evloop.Server, h1s *h1.Server, tlsCfg *tls.Config) {
	h1s.TLSConfig = tlsrec.Config(tlsCfg)
	h1s.TakeTLS = func(tc *tls.Conn) bool {
		p, ok := tlsrec.Take(tc)
		if !ok {
			return false
		}
		state := tc.ConnectionState()
		return ev.Adopt(tc.NetConn().(*tlsrec.Capture).Conn, p, &state)
	}
}

// loopsAndH1 serves a listener on event loops, and the connections they
// hand over on h1.
type loopsAndH1 struct {
	ev *evloop.Server
	h1 *h1.Server
	ln net.Listener
}

func (s *loopsAndH1) Serve(l net.Listener) error { return s.ev.Serve(l) }

// Shutdown stops accepting and waits for the loops' connections and the
// handed-over ones to finish.
func (s *loopsAndH1) Shutdown(ctx context.Context) error {
	_ = s.ln.Close()
	err := s.ev.Shutdown(ctx)
	if err2 := s.h1.Shutdown(ctx); err == nil {
		err = err2
	}
	return err
}

func (s *loopsAndH1) Close() error {
	_ = s.ln.Close()
	_ = s.ev.Close()
	return s.h1.Close()
}
