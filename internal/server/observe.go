package server

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
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
	// gateway says that requests may be proxied: the access log then
	// notes the address of each request's upstream connection.
	gateway bool
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
	return &observer{log: log, tracer: tr, gateway: opts.Upstream != ""}, nil
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
	// caller is the name the caller authenticated as, when it
	// impersonates the user of attrs (impersonation.go); "" otherwise.
	caller string
	// rec is filled by the APF middleware (apfhttp.Options.Record).
	rec controller.Record
	w   statusWriter
	// proxied is set when the request reaches the proxy, upstream when
	// the proxy has a connection to the upstream (the address it is
	// connected to).
	proxied  bool
	upstream atomic.Pointer[string]
	// conns tells upstream the connections of the request's outgoing
	// calls (the proxy's, and any other made with its context).
	conns httptrace.ClientTrace
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
		if o.gateway {
			e.conns.GotConn = e.gotConn
			ctx = httptrace.WithClientTrace(ctx, &e.conns)
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

// gotConn notes the address of the connection an outgoing call of the
// request got.
func (e *observed) gotConn(ci httptrace.GotConnInfo) {
	if ci.Conn != nil {
		e.upstream.Store(addrText(ci.Conn.RemoteAddr()))
	}
}

// addrTexts remembers the text of the upstream addresses, which the
// proxy's pooled connections give again and again: a connection's
// address is one value for its life, so its text is made once. The map
// is dropped when it holds many (connections come and go).
var addrTexts struct {
	sync.Mutex
	m map[*net.TCPAddr]*string
}

func addrText(addr net.Addr) *string {
	a, ok := addr.(*net.TCPAddr)
	if !ok {
		s := addr.String()
		return &s
	}
	addrTexts.Lock()
	defer addrTexts.Unlock()
	if p, ok := addrTexts.m[a]; ok {
		return p
	}
	if addrTexts.m == nil || len(addrTexts.m) >= 4096 {
		addrTexts.m = make(map[*net.TCPAddr]*string)
	}
	s := a.String()
	addrTexts.m[a] = &s
	return &s
}

// upstream goes around the gateway's proxy: it marks the request as
// proxied, so that the access log names the upstream connection the
// proxy used (see gotConn).
func (o *observer) upstream(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e := observedFrom(r.Context()); e != nil {
			e.proxied = true
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
