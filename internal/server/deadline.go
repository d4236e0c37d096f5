package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apfproject/apf/internal/api/apistatus"
	"github.com/apfproject/apf/request"
)

// withRequestDeadline gives every request that is not long-running a
// deadline, as kube-apiserver's request timeout does: the `timeout` query
// parameter when it is a valid positive duration no longer than the
// server's --request-timeout, the request timeout otherwise. The deadline
// covers the whole request: the APF wait (whose limit is a quarter of the
// time left, at most a minute), the handler and, in the gateway, the
// upstream's answer, so an upstream that stalls in the middle of a response
// cannot hold a seat past it. Watches, exec and the other long-running
// requests get none.
//
// The deadline is kept whatever the client does, as kube-apiserver's
// timeout filter keeps it (its WithTimeoutForNonLongRunningRequests). The
// request's context ends there, which stops a handler that waits (for
// the upstream, etcd, a queue); but a handler blocked writing to a client
// that reads nothing, or reading a body the client does not send, is
// not woken by its context, and it holds the request's seats until it
// returns. So when the deadline passes the filter also ends the
// request's exchange with the client (timedWriter.expire): an answer
// already started is cut, its pending writes fail (an HTTP/1 connection
// is closed, an HTTP/2 stream reset) and the handler's return re-raises
// http.ErrAbortHandler; an answer not yet started becomes the API
// server's 504 Timeout Status, whatever the handler writes afterwards,
// and a body still being read fails. The handler returns, and the APF
// filter inside gives the seats back.
//
// It reads the request's attributes from its context, where the edge
// filter (apfhttp.WithRequestAttributes) put them: the timeout parameter
// is Info.Timeout. A request without attributes is parsed here. A
// gateway's route (request.Route, routes.go) may make a request
// long-running, or give it a timeout of its own instead of the server's,
// which the timeout parameter may shorten as it shortens the server's.
func withRequestDeadline(limit time.Duration, log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		longRunning, asked, routed := deadlineOf(r)
		if longRunning {
			next.ServeHTTP(w, r)
			return
		}
		d := limit
		if routed > 0 {
			d = routed
		}
		if asked > 0 && asked < d {
			d = asked
		}
		serveWithDeadline(next, w, r, d, log)
	})
}

// serveWithDeadline runs a request that is not long-running with its
// deadline d from now. It is out of line so that its frame, which holds
// the deadline's state, is not part of the filter's frame that a watch
// keeps on its stack while it is held.
//
//go:noinline
func serveWithDeadline(next http.Handler, w http.ResponseWriter, r *http.Request, d time.Duration, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(r.Context(), d)
	defer cancel()
	tw := newTimedWriter(w, r, ctx, log)
	tw.timer.Reset(d)
	defer tw.finish()
	next.ServeHTTP(tw, r.WithContext(ctx))
}

// timedWriters keeps the writers of requests that ended in time, each
// with its stopped timer, so that a request pays for neither: a writer
// whose deadline passed is not reused (its timer's function may still be
// running, and the HTTP/2 grace period may still look at it).
var timedWriters = sync.Pool{New: func() any {
	tw := new(timedWriter)
	tw.timer = time.AfterFunc(time.Hour, tw.expire)
	tw.timer.Stop()
	return tw
}}

// deadlineOf says whether the request is long-running and which timeout
// it asks for, from its attributes or, without them, parsed here; a
// request that cannot be parsed counts as long-running (it gets no
// deadline: the filters after this one refuse it). Kept out of line so
// that a parsed request.Info never takes room in the filter's frame,
// which stays on the stack while a watch is held (the room counts
// towards whether the runtime can shrink that stack).
//
//go:noinline
func deadlineOf(r *http.Request) (longRunning bool, timeout, routeTimeout time.Duration) {
	if a, ok := request.AttributesFrom(r.Context()); ok {
		return a.IsLongRunning(request.KubeAPIServer), a.Info.Timeout, a.Route.Timeout
	}
	info, err := request.Parse(r.Method, r.URL.Path, r.URL.RawQuery)
	if err != nil {
		return true, 0, 0
	}
	return request.KubeAPIServer.IsLongRunning(&info), info.Timeout, 0
}

// The state of a request's answer, as timedWriter sees it.
const (
	// answerNone: nothing written yet.
	answerNone int32 = iota
	// answerStarted: the status line and header are written (or being
	// written): after the deadline the answer can only be cut.
	answerStarted
	// answerHijacked: the handler took the connection over (an
	// upgrade); at the deadline the connection is closed.
	answerHijacked
	// answerTimedOut: the deadline passed before anything was written;
	// the handler's writes are dropped and the filter answers 504.
	answerTimedOut
)

// timeoutAnswerWrite bounds the write of the 504 (a client that reads
// nothing cannot keep the goroutine that writes it; the seats are back
// by then). A client that reads at all takes the answer's few hundred
// bytes at once.
const timeoutAnswerWrite = 5 * time.Second

// aLongTimeAgo is a deadline in the past: set on a connection or an
// HTTP/2 stream, it fails the reads or writes pending there at once.
var aLongTimeAgo = time.Unix(1, 0)

// timedWriter is the ResponseWriter the handlers of a request with a
// deadline write to. On the path of a request that ends in time it costs
// no allocation (writers and their timers are pooled), an atomic load per
// write (a compare-and-swap for the first), the timer's start and stop,
// and a look at the header the filters in front have set (kept, to
// answer a timeout with it).
//
// expire runs on the timer's goroutine while the handler runs on its
// own: state, which both change by compare-and-swap, decides between
// them whether the answer had started, and mu keeps expire from acting
// once finish has begun (the connection then serves the next request).
type timedWriter struct {
	http.ResponseWriter
	req *http.Request
	// ctx is the request's context with its deadline: an answer the
	// handler starts once it has expired is too late, even if the timer
	// has not fired yet (the context's own timer may fire first).
	ctx context.Context
	// deadline is ctx's: an answer that starts at or after it is too
	// late, whether or not the context's timer has run yet.
	deadline time.Time
	log      *slog.Logger
	timer    *time.Timer
	state    atomic.Int32

	mu sync.Mutex
	// ended: the handler has returned; expire must leave the
	// connection alone.
	ended bool
	// closeAfter: a read deadline was set on an HTTP/1 connection,
	// which then cannot serve another request.
	closeAfter bool
	// hijacked is the connection the handler took over.
	hijacked net.Conn

	// The header as the filters in front of this one set it, to answer
	// a timeout with: in apf serve's chain, the edge's Cache-Control
	// alone (kept without copying the header), any other in a copy.
	cacheControl []string
	outer        http.Header
}

// newTimedWriter returns a writer for w from the pool, its timer stopped:
// the caller starts it.
func newTimedWriter(w http.ResponseWriter, r *http.Request, ctx context.Context, log *slog.Logger) *timedWriter {
	tw := timedWriters.Get().(*timedWriter)
	tw.ResponseWriter, tw.req, tw.ctx, tw.log = w, r, ctx, log
	tw.deadline, _ = ctx.Deadline()
	if h := w.Header(); len(h) > 0 {
		if v, ok := h["Cache-Control"]; ok && len(h) == 1 {
			tw.cacheControl = v
		} else {
			tw.outer = h.Clone()
		}
	}
	return tw
}

// start marks the answer started, unless the deadline passed first.
func (w *timedWriter) start() bool {
	switch w.state.Load() {
	case answerStarted, answerHijacked:
		return true
	case answerTimedOut:
		return false
	}
	// The clock decides, not the context: timers that fire at about the
	// same moment run in no set order on a busy machine, and the
	// transport's wait for the upstream's headers, which by default
	// ends a moment after the deadline, may wake the proxy first. Its
	// answer (a 504 of its own) would then start the answer an instant
	// before expire, which cuts a started answer, and the client would
	// get a closed connection instead of the deadline's 504.
	if w.ctx.Err() == context.DeadlineExceeded || !time.Now().Before(w.deadline) {
		w.state.CompareAndSwap(answerNone, answerTimedOut)
		return false
	}
	// Only expire changes the state from another goroutine, and only
	// from answerNone to answerTimedOut.
	return w.state.CompareAndSwap(answerNone, answerStarted)
}

func (w *timedWriter) WriteHeader(code int) {
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		// An informational answer comes before the answer.
		if w.state.Load() != answerTimedOut {
			w.ResponseWriter.WriteHeader(code)
		}
		return
	}
	if w.start() {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *timedWriter) Write(b []byte) (int, error) {
	if w.state.Load() != answerStarted && !w.start() {
		return 0, http.ErrHandlerTimeout
	}
	return w.ResponseWriter.Write(b)
}

// Flush, FlushError and Hijack are the writer's own, so that
// http.ResponseController finds them here rather than on the writer
// underneath (Unwrap), which would start or take over the answer
// without this one knowing.

func (w *timedWriter) Flush() { _ = w.FlushError() }

func (w *timedWriter) FlushError() error {
	if !w.start() {
		return http.ErrHandlerTimeout
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *timedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state.Load() == answerTimedOut || w.ctx.Err() == context.DeadlineExceeded {
		return nil, nil, http.ErrHandlerTimeout
	}
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.state.Store(answerHijacked)
		w.hijacked = c
	}
	return c, rw, err
}

// Unwrap lets http.ResponseController reach the rest of the underlying
// writer's abilities (deadlines, full duplex).
func (w *timedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// expire runs when the deadline passes (the context ends at the same
// moment): it ends the request's exchange with the client, so that the
// handler returns even if it is blocked on the client.
func (w *timedWriter) expire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	rc := http.NewResponseController(w.ResponseWriter)
	switch {
	case w.state.CompareAndSwap(answerNone, answerTimedOut):
		// Nothing is written, so the handler is not blocked writing;
		// it may be reading a body the client holds back. A read
		// deadline fails that read. On HTTP/1 it also fails the
		// connection's read of what follows, so the connection is
		// closed after the 504; so it is set only when there is a
		// body. (On HTTP/2 it ends the stream's body alone.)
		if w.req.ProtoMajor >= 2 || w.req.ContentLength != 0 {
			_ = rc.SetReadDeadline(aLongTimeAgo)
			w.closeAfter = w.req.ProtoMajor < 2
		}
	case w.state.Load() == answerStarted && w.req.ProtoMajor < 2:
		// The answer is cut, and net/http closes the connection once
		// the handler has returned. Closing its socket now fails a
		// write or read blocked on it. (A past write deadline would
		// too, but then the TLS connection's close spends up to 5 s
		// trying to send its closing alert into the full socket.)
		if c := connOf(w.req); c != nil {
			_ = c.Close()
			return
		}
		_ = rc.SetWriteDeadline(aLongTimeAgo)
		_ = rc.SetReadDeadline(aLongTimeAgo)
	case w.state.Load() == answerHijacked:
		// An upgrade that is not long-running ends at the deadline
		// too: a handler relaying it may be blocked on the client.
		// (Under TLS the socket beneath is closed, for the reason
		// above.)
		if tc, ok := w.hijacked.(*tls.Conn); ok {
			_ = tc.NetConn().Close()
		} else {
			_ = w.hijacked.Close()
		}
	case w.state.Load() == answerStarted:
		// HTTP/2: a past write deadline resets the stream at once,
		// which fails the handler's pending and later writes; a past
		// read deadline ends its body. A client that reads nothing
		// of the whole connection does not take the reset either: if
		// the handler is still blocked a moment later, the connection
		// is closed (its every stream is stalled anyway).
		_ = rc.SetWriteDeadline(aLongTimeAgo)
		_ = rc.SetReadDeadline(aLongTimeAgo)
		if c := connOf(w.req); c != nil {
			time.AfterFunc(streamResetGrace, func() {
				w.mu.Lock()
				defer w.mu.Unlock()
				if !w.ended {
					_ = c.Close()
				}
			})
		}
	}
}

// streamResetGrace is how long a stream reset at the deadline has to
// reach the client and free the handler before the connection is closed.
const streamResetGrace = 250 * time.Millisecond

type connKey struct{}

// connContext is the http.Server's ConnContext: it keeps each
// connection in the context of its requests, where expire finds it.
func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// connOf is the socket a request came on (under TLS, the connection
// beneath it), nil if the server did not say (connContext).
func connOf(r *http.Request) net.Conn {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}

// finish runs when the handler has returned or is panicking. When the
// deadline did not pass, it only stops the timer. Otherwise the
// answer is settled as kube-apiserver settles it: one not started is the
// 504 Timeout Status, one started is aborted (http.ErrAbortHandler: the
// HTTP/1 connection is closed, the HTTP/2 stream reset) so that the
// client cannot take it for complete. A handler's panic after the
// deadline is logged, the answer settled all the same.
func (w *timedWriter) finish() {
	if w.timer.Stop() && w.ctx.Err() != context.DeadlineExceeded && w.state.Load() != answerTimedOut {
		// expire never ran and never will, and the handler did not
		// start its answer after the deadline (start goes by the
		// clock, ahead of both timers): the writer is free.
		*w = timedWriter{timer: w.timer}
		timedWriters.Put(w)
		return
	}
	// The deadline has passed: the context's own timer may have fired
	// (and the handler returned because its context ended) before
	// expire ran, which then does nothing.
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
	p := recover()
	if p != nil && p != http.ErrAbortHandler {
		w.log.Error("handler panic after the request deadline", "method", w.req.Method, "path", w.req.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	}
	switch w.state.Load() {
	case answerNone, answerTimedOut:
		w.answerTimeout()
	case answerStarted:
		panic(http.ErrAbortHandler)
	default: // hijacked
		if p != nil {
			panic(p)
		}
	}
}

// answerTimeout writes the 504 (apistatus.WriteTimeout) with the header
// the filters in front of this one set, and none of what the handler set.
func (w *timedWriter) answerTimeout() {
	h := w.ResponseWriter.Header()
	clear(h)
	for k, v := range w.outer {
		h[k] = v
	}
	if w.cacheControl != nil {
		h["Cache-Control"] = w.cacheControl
	}
	if w.closeAfter {
		h.Set("Connection", "close")
	}
	_ = http.NewResponseController(w.ResponseWriter).SetWriteDeadline(time.Now().Add(timeoutAnswerWrite))
	apistatus.WriteTimeout(w.ResponseWriter)
}
