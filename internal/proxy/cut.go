package proxy

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/apfproject/apf/request"
)

// A proxied answer can be cut after it has started: the request's
// deadline passes, the client goes away, the upstream breaks off, the
// server shuts down. The reverse proxy then aborts the answer (the client
// cannot take it for complete) and says only, through its error log,
// "read error during body copy" and the error, with nothing of the
// request. So the proxy hands the reverse proxy a writer of its own
// (answerWriter, pooled) that sees whether the answer started, how much
// of it was written and whether a write to the client failed; when the
// reverse proxy aborts, one line at warning level (information when the
// client went away, which is the client's business) names the method,
// the path, the user, the route, the reason, the bytes written and the
// time since the request reached the proxy. The reverse proxy's own line
// goes to the debug level.

// answerWriter is the writer the reverse proxy writes an answer to.
type answerWriter struct {
	http.ResponseWriter
	started  bool
	n        int64
	writeErr error
	start    time.Time
	// stall, when positive, bounds each write and flush to the client
	// (Options.StreamWriteTimeout): the write deadline is set before
	// each and cleared after it, since over HTTP/2 a stream's write
	// deadline is a timer that resets the stream when it fires, waiting
	// write or not, and would cut a stream idle between two events.
	stall time.Duration
	// due is the bound of the write or flush in progress; overdue is set
	// when one returned after its bound (its deadline may have fired).
	due     time.Time
	overdue bool

	// The direct path's forwarding of informational answers (forward.go):
	// trace, reset for each request, carries got1xx, made once for the
	// pooled writer; once the round trip has returned (roundTripDone, under
	// mu), a late one is dropped.
	trace         httptrace.ClientTrace
	got1xx        func(int, textproto.MIMEHeader) error
	mu            sync.Mutex
	roundTripDone bool
	// keep: the writer does not go back to the pool.
	keep bool
}

var answerWriters = sync.Pool{New: func() any { return new(answerWriter) }}

func newAnswerWriter(w http.ResponseWriter) *answerWriter {
	aw := answerWriters.Get().(*answerWriter)
	aw.ResponseWriter, aw.start = w, time.Now()
	return aw
}

// informational returns the function that passes an informational
// answer (103 Early Hints, say) from the upstream to the caller, as the
// reverse proxy does: with the upstream's header alone, which is then
// cleared (the final answer's header starts empty).
func (w *answerWriter) informational() func(int, textproto.MIMEHeader) error {
	if w.got1xx == nil {
		w.got1xx = func(code int, header textproto.MIMEHeader) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.roundTripDone {
				return nil
			}
			relayInformational(w.Header(), code, http.Header(header), w.WriteHeader)
			return nil
		}
	}
	return w.got1xx
}

// relayInformational writes an informational answer as the reverse proxy
// does: the upstream's header added to h, the caller's, for write; then h
// cleared, so that the final answer's header starts empty.
func relayInformational(h http.Header, code int, header http.Header, write func(int)) {
	for k, vs := range header {
		h[k] = append(h[k], vs...)
	}
	write(code)
	clear(h)
}

func (w *answerWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.started = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *answerWriter) Write(b []byte) (int, error) {
	w.started = true
	w.arm()
	n, err := w.ResponseWriter.Write(b)
	w.disarm()
	w.n += int64(n)
	w.failed(err)
	return n, err
}

// Flush is FlushError for callers that want an http.Flusher.
func (w *answerWriter) Flush() { _ = w.FlushError() }

// FlushError flushes what was written to the client, within the stall
// bound: the reverse proxy flushes a streamed answer after each write,
// and the flush is where a client that reads nothing blocks it.
func (w *answerWriter) FlushError() error {
	w.arm()
	err := http.NewResponseController(w.ResponseWriter).Flush()
	w.disarm()
	w.failed(err)
	return err
}

// arm gives the write to the client about to start stall from now.
func (w *answerWriter) arm() {
	if w.stall > 0 {
		w.due = time.Now().Add(w.stall)
		_ = http.NewResponseController(w.ResponseWriter).SetWriteDeadline(w.due)
	}
}

// disarm clears the bound once the write has returned.
func (w *answerWriter) disarm() {
	if w.stall > 0 {
		if !time.Now().Before(w.due) {
			w.overdue = true
		}
		_ = http.NewResponseController(w.ResponseWriter).SetWriteDeadline(time.Time{})
	}
}

func (w *answerWriter) failed(err error) {
	if err != nil && w.writeErr == nil {
		w.writeErr = err
	}
}

// Unwrap lets http.ResponseController (the reverse proxy's flushes, an
// upgrade's hijack) reach the writer beneath.
func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// settle runs when the reverse proxy is done with r, deferred: when it
// aborted an answer that had started, the cut is logged; the writer goes
// back to its pool and a panic goes on.
func (p *proxy) settle(w *answerWriter, r *http.Request) {
	v := recover()
	if v == http.ErrAbortHandler && w.started {
		p.logCut(w, r)
	}
	if !w.keep {
		got1xx := w.got1xx
		*w = answerWriter{got1xx: got1xx}
		answerWriters.Put(w)
	}
	if v != nil {
		panic(v)
	}
}

// logCut says which answer was cut, and why.
func (p *proxy) logCut(w *answerWriter, r *http.Request) {
	reason, level := cutReason(r.Context(), w.writeErr)
	if w.stall > 0 && (errors.Is(w.writeErr, os.ErrDeadlineExceeded) || w.overdue) {
		reason, level = fmt.Sprintf("the client took nothing of it for %v", w.stall), slog.LevelWarn
	}
	p.cutLine(r, reason, level, w.n, w.start)
}

// cutLine logs the cut of r's answer, n bytes of which had been written
// since start.
func (p *proxy) cutLine(r *http.Request, reason string, level slog.Level, n int64, start time.Time) {
	user := ""
	if u, ok := request.UserFrom(r.Context()); ok {
		user = u.Name
	}
	routeName := ""
	if a, ok := request.AttributesFrom(r.Context()); ok {
		routeName = a.Route.Name
	}
	p.o.Logger.Log(r.Context(), level, "proxied answer cut off",
		"method", r.Method, "path", r.URL.Path, "user", user, "route", routeName,
		"reason", reason, "bytes", n, "elapsed", time.Since(start).Round(time.Millisecond).String())
}

// cutReason tells why an answer was cut, from the request's context and
// the failed write to the client if there was one.
func cutReason(ctx context.Context, writeErr error) (string, slog.Level) {
	// At the deadline the server also closes the client's connection,
	// which may cancel the request before its deadline's own timer ends
	// it: the deadline is read, not only the context's error.
	dl, hasDeadline := ctx.Deadline()
	switch err := ctx.Err(); {
	case errors.Is(err, context.DeadlineExceeded), hasDeadline && !time.Now().Before(dl):
		return "the request timeout passed", slog.LevelWarn
	case err != nil:
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return "cancelled: " + cause.Error(), slog.LevelWarn
		}
		return "the client went away", slog.LevelInfo
	case writeErr != nil:
		return "the client went away: " + writeErr.Error(), slog.LevelInfo
	}
	return "the upstream's answer broke off", slog.LevelWarn
}

// errorLog is the reverse proxy's error log: its lines go to the logger
// at warning level, except the copy errors that logCut reports with the
// request's particulars, which go to the debug level.
func errorLog(l *slog.Logger) *log.Logger {
	return log.New(errorLogWriter{l}, "", 0)
}

type errorLogWriter struct{ l *slog.Logger }

func (e errorLogWriter) Write(b []byte) (int, error) {
	msg := strings.TrimSuffix(string(b), "\n")
	level := slog.LevelWarn
	if strings.Contains(msg, "error during body copy") {
		level = slog.LevelDebug
	}
	e.l.Log(context.Background(), level, msg)
	return len(b), nil
}
