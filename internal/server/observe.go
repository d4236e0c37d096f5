package server

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/request"
	"go.opentelemetry.io/otel/trace"
)

// The observer watches each request for the access log (accesslog.go) and
// the tracing (tracing.go), both off by default. When both are off the
// server's chain has none of these filters and the APF middleware no
// Record hook: observing costs nothing unless asked for.
//
// When one is on, the outermost filter (observer.wrap) allocates one
// observed per request. It holds the request's attributes, which it
// parses there for the edge filter (apfhttp.WithRequestAttributes finds
// them in the context and does not parse again, and authentication writes
// the user into them), the controller.Record that the APF middleware
// fills, the response's status and size, the upstream's address when the
// request is proxied, and the server span. Once the handler has returned,
// the span ends and the log line is written, from that one record.
type observer struct {
	log    *accessLog // nil: no access log
	tracer *tracer    // nil: no tracing
}

// newObserver builds what the options ask requests to be observed with:
// nil when nothing.
func newObserver(ctx context.Context, opts Options) (*observer, error) {
	log, err := newAccessLog(opts.AccessLog)
	if err != nil {
		return nil, err
	}
	tr, err := newTracer(ctx, opts.Tracing)
	if err != nil {
		_ = log.close()
		return nil, err
	}
	if log == nil && tr == nil {
		return nil, nil
	}
	return &observer{log: log, tracer: tr}, nil
}

// on says whether anything observes requests.
func (o *observer) on() bool { return o != nil && (o.log != nil || o.tracer != nil) }

// close closes the access log's file and flushes the spans.
func (o *observer) close() error {
	if o == nil {
		return nil
	}
	return errors.Join(o.log.close(), o.tracer.close())
}

// The server's chain takes the observer's filters through these, which
// give the handler unchanged, or no hook, when nothing observes: outer
// goes in front of everything, inner just inside APF (the execution of a
// request), proxied around the gateway's proxy, and recordHook is the
// APF middleware's Options.Record.

func (o *observer) outer(h http.Handler) http.Handler {
	if !o.on() {
		return h
	}
	return o.wrap(h)
}

func (o *observer) inner(h http.Handler) http.Handler {
	if o == nil || o.tracer == nil {
		return h
	}
	return o.tracer.execution(h)
}

func (o *observer) proxied(h http.Handler) http.Handler {
	if !o.on() {
		return h
	}
	return o.upstream(h)
}

func (o *observer) recordHook() func(*http.Request) *controller.Record {
	if !o.on() {
		return nil
	}
	return o.record
}

// observed is what is known of one request.
type observed struct {
	start time.Time
	// attrs are the request's attributes, when its path resolves
	// (parsed); authentication fills in the user.
	attrs  request.Attributes
	parsed bool
	// rec is filled by the APF middleware (apfhttp.Options.Record).
	rec controller.Record
	w   statusWriter
	// proxied is set when the request reaches the proxy, upstream when
	// the proxy has a connection to the upstream (the address it is
	// connected to).
	proxied  bool
	upstream atomic.Pointer[string]
	// span is the server span, nil without tracing.
	span trace.Span
	// latency is the time from start until the handler returned, aborted
	// whether it returned by panicking with http.ErrAbortHandler (the
	// response was cut off).
	latency time.Duration
	aborted bool
}

type observedKey struct{}

// observedFrom returns the observed of the request whose context ctx is,
// or nil.
func observedFrom(ctx context.Context) *observed {
	e, _ := ctx.Value(observedKey{}).(*observed)
	return e
}

// wrap is the outermost filter: it starts the observation, runs the
// chain, and ends it.
func (o *observer) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := &observed{start: time.Now()}
		e.w.ResponseWriter = w
		ctx := r.Context()
		// The edge filter's parse, done here so that the attributes
		// live in e. A path that does not resolve is left to the edge
		// filter, which answers it.
		if info, err := request.Parse(r.Method, r.URL.Path, r.URL.RawQuery); err == nil {
			e.attrs.Info, e.parsed = info, true
			ctx = request.WithAttributes(ctx, &e.attrs)
		}
		if o.tracer != nil {
			ctx = o.tracer.startServer(ctx, r, e)
		}
		ctx = context.WithValue(ctx, observedKey{}, e)
		defer o.end(e, r)
		next.ServeHTTP(&e.w, r.WithContext(ctx))
	})
}

// end ends the observation of a request whose handler has returned or is
// panicking. The only panic that gets here is http.ErrAbortHandler (the
// server's panic recovery, inside, answers every other one): the request
// is logged as aborted and the panic goes on.
func (o *observer) end(e *observed, r *http.Request) {
	p := recover()
	e.latency = time.Since(e.start)
	e.aborted = p != nil
	if o.tracer != nil {
		o.tracer.endServer(e, r)
	}
	if o.log != nil {
		o.log.write(e, r)
	}
	if p != nil {
		panic(p)
	}
}

// record is the APF middleware's Options.Record.
func (o *observer) record(r *http.Request) *controller.Record {
	if e := observedFrom(r.Context()); e != nil {
		return &e.rec
	}
	return nil
}

// upstream goes around the gateway's proxy: it marks the request as
// proxied and, for the access log, notes the address of the connection
// the proxy sends it on.
func (o *observer) upstream(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := observedFrom(r.Context())
		if e == nil {
			next.ServeHTTP(w, r)
			return
		}
		e.proxied = true
		if o.log != nil {
			ct := &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) {
				if ci.Conn != nil {
					a := ci.Conn.RemoteAddr().String()
					e.upstream.Store(&a)
				}
			}}
			r = r.WithContext(httptrace.WithClientTrace(r.Context(), ct))
		}
		next.ServeHTTP(w, r)
	})
}

// statusWriter keeps the status and size of the answer. It passes
// Flush and Hijack on, and Unwrap lets http.ResponseController reach the
// rest of the writer's abilities.
type statusWriter struct {
	http.ResponseWriter
	status   int
	bytes    int64
	hijacked bool
}

func (w *statusWriter) WriteHeader(code int) {
	// Informational answers other than 101 come before the real one.
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
		return
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
	}
	return c, rw, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// code is the status the caller got: 200 when the handler wrote nothing
// (net/http then answers 200), 0 for a hijacked connection.
func (w *statusWriter) code() int {
	switch {
	case w.hijacked:
		return 0
	case w.status == 0:
		return http.StatusOK
	}
	return w.status
}
