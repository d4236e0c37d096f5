package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/apfproject/apf/controller"
)

// AccessLogOptions configures the access log: one structured line per
// request, off by default.
type AccessLogOptions struct {
	// Destination is where the lines go (--access-log): "stderr", or the
	// path of a file they are appended to (created with mode 0600: the
	// lines name users). Empty: no access log.
	Destination string
	// Format is "text" (slog's key=value lines, the default) or "json"
	// (--access-log-format).
	Format string
	// Sample is the fraction of requests logged, from 0 to 1
	// (--access-log-sample), apart from the 429 and 5xx answers, which
	// are always logged up to ErrorRate lines a second.
	Sample float64
	// ErrorRate bounds the lines of 429 and 5xx answers, in lines a
	// second (--access-log-error-rate, a token bucket whose burst is one
	// second's worth); the number left out is reported in the next line
	// written. 0 or less: no 429 or 5xx line.
	ErrorRate int
	// Writer, when set, receives the lines instead of Destination (for
	// tests and programs that embed the server).
	Writer io.Writer
}

// AccessLogFormats are the values of --access-log-format.
var AccessLogFormats = []string{"text", "json"}

// DefaultAccessLogOptions: off; when on, text, every request, at most
// 100 lines a second of 429s and 5xx.
func DefaultAccessLogOptions() AccessLogOptions {
	return AccessLogOptions{Format: "text", Sample: 1, ErrorRate: 100}
}

func (o *AccessLogOptions) enabled() bool { return o.Destination != "" || o.Writer != nil }

func (o *AccessLogOptions) check() error {
	switch o.Format {
	case "", "text", "json":
	default:
		return fmt.Errorf("--access-log-format %q: must be text or json", o.Format)
	}
	if !(o.Sample >= 0 && o.Sample <= 1) {
		return fmt.Errorf("--access-log-sample %v: must be a fraction from 0 to 1", o.Sample)
	}
	return nil
}

// accessLog writes the lines. What a line holds:
//
//   - msg "HTTP", at level INFO below 400, WARN for 4xx, ERROR for 5xx;
//   - verb (the Kubernetes verb: get, list, watch, create, ...), method,
//     path, query (the known Kubernetes parameters as sent, the value of
//     any other replaced by REDACTED), user (who authenticated; as in
//     kube-apiserver's audit events) and impersonatedUser (whom it acted
//     as, when it impersonated), userAgent, srcIP, status
//     (or hijacked=true for an upgraded connection, aborted=true for an
//     answer cut off), bytes, latency;
//   - requestID (the caller's X-Request-Id), audit-ID (the caller's
//     Audit-ID, or the one the upstream answered with), upstream (the
//     address the proxy sent the request to), traceID (when the request
//     is traced);
//   - kube-apiserver's APF keys, with its formats (strings cut at 64
//     bytes, durations as Go writes them): apf_pl, apf_fs, apf_iseats,
//     apf_fseats, apf_additionalLatency, and apf_execution_time (every
//     request that ran; a watch's initial phase) or apf_init_latency (a
//     watch);
//   - apf's own: apf_outcome (dispatched, exempt, rejected), apf_reason
//     (why a request was rejected), apf_queue (the queue chosen from the
//     hand, absent when the level has none), apf_queue_wait, apf_fd (the
//     flow distinguisher, when the level uses one), and apf_explain, the
//     X-APF-Explanation the caller got, when it asked for one and was
//     allowed (docs/spec/explain.md);
//   - dropped: how many 429/5xx lines the rate bound left out since the
//     line before, when there are any.
//
// No header is logged but the user agent and the two ids, so neither an
// Authorization header nor a websocket's bearer token protocol can reach
// the log; a query is logged with only the values of parameters known
// not to carry secrets.
type accessLog struct {
	h       slog.Handler
	file    *bufferedFile // the file opened for Destination, closed by close
	sample  float64
	limiter *rate.Limiter // nil: no 429 or 5xx line
	now     func() time.Time
	dropped atomic.Int64
}

// newAccessLog opens the access log, or returns nil when it is off.
func newAccessLog(o AccessLogOptions) (*accessLog, error) {
	if !o.enabled() {
		return nil, nil
	}
	l := &accessLog{sample: o.Sample, now: time.Now}
	w := o.Writer
	if w == nil {
		switch o.Destination {
		case "stderr", "-":
			w = os.Stderr
		default:
			f, err := os.OpenFile(o.Destination, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				return nil, fmt.Errorf("--access-log: %w", err)
			}
			l.file = newBufferedFile(f)
			w = l.file
		}
	}
	// Every line is written, whatever the server's own log level.
	l.h = newLineHandler(w, o.Format == "json")
	if o.ErrorRate > 0 {
		l.limiter = rate.NewLimiter(rate.Limit(o.ErrorRate), o.ErrorRate)
	}
	return l, nil
}

func (l *accessLog) close() error {
	if l == nil || l.file == nil {
		return nil
	}
	return l.file.Close()
}

// keep decides whether the line of a request answered with status is
// written: 429s and 5xx (and aborted answers) within the rate bound,
// the rest as sampled.
func (l *accessLog) keep(status int, aborted bool) bool {
	if status == http.StatusTooManyRequests || status >= 500 || aborted {
		if l.limiter != nil && l.limiter.AllowN(l.now(), 1) {
			return true
		}
		l.dropped.Add(1)
		return false
	}
	return l.sample >= 1 || (l.sample > 0 && rand.Float64() < l.sample)
}

// durationText writes a duration as Go does (and kube-apiserver's log),
// without allocating for the common zero.
func durationText(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	return d.String()
}

// headerValue is the first value of a header under its canonical name,
// looked up without canonicalizing it again.
func headerValue(h http.Header, canonical string) string {
	if v := h[canonical]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// maxLogField is how much of a name or header value a line holds, as
// kube-apiserver cuts APF's names in its log.
const maxLogField = 64

func truncateField(s string) string {
	if len(s) > maxLogField {
		return s[:maxLogField]
	}
	return s
}

// write writes the line of a request that is over, if it is kept.
func (l *accessLog) write(e *observed, r *http.Request) {
	status := e.w.code()
	if !l.keep(status, e.aborted) {
		return
	}
	level := slog.LevelInfo
	switch {
	case status >= 500 || e.aborted:
		level = slog.LevelError
	case status >= 400:
		level = slog.LevelWarn
	}
	buf := attrPool.Get().(*[]slog.Attr)
	attrs := (*buf)[:0]
	verb := e.attrs.Info.Verb
	if !e.parsed {
		verb = strings.ToLower(r.Method)
	}
	attrs = append(attrs,
		slog.String("verb", verb),
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
	)
	if r.URL.RawQuery != "" {
		attrs = append(attrs, slog.String("query", redactQuery(r.URL.RawQuery)))
	}
	if e.caller != "" {
		// As kube-apiserver's audit says it: who authenticated, and
		// whom it acted as.
		attrs = append(attrs, slog.String("user", e.caller), slog.String("impersonatedUser", e.attrs.User.Name))
	} else if u := e.attrs.User.Name; u != "" {
		attrs = append(attrs, slog.String("user", u))
	}
	attrs = append(attrs,
		slog.String("userAgent", truncateField(headerValue(r.Header, "User-Agent"))),
		slog.String("srcIP", r.RemoteAddr),
	)
	if e.w.hijacked {
		attrs = append(attrs, slog.Bool("hijacked", true))
	} else {
		attrs = append(attrs, slog.Int("status", status))
	}
	if e.aborted {
		attrs = append(attrs, slog.Bool("aborted", true))
	}
	attrs = append(attrs,
		slog.Int64("bytes", e.w.bytes),
		slog.String("latency", durationText(e.latency)),
	)
	if id := headerValue(r.Header, "X-Request-Id"); id != "" {
		attrs = append(attrs, slog.String("requestID", truncateField(id)))
	}
	auditID := headerValue(r.Header, "Audit-Id")
	if auditID == "" && e.proxied {
		auditID = headerValue(e.w.Header(), "Audit-Id")
	}
	if auditID != "" {
		attrs = append(attrs, slog.String("audit-ID", truncateField(auditID)))
	}
	if e.proxied {
		up := ""
		if p := e.upstream.Load(); p != nil {
			up = *p
		}
		attrs = append(attrs, slog.String("upstream", up))
	}
	if e.span != nil {
		if sc := e.span.SpanContext(); sc.IsValid() {
			attrs = append(attrs, slog.String("traceID", sc.TraceID().String()))
		}
	}
	attrs = appendAPF(attrs, &e.rec, e.parsed && e.attrs.IsWatch())
	if e.w.ResponseWriter != nil {
		if v := headerValue(e.w.Header(), canonicalExplanationHeader); v != "" {
			attrs = append(attrs, slog.String("apf_explain", v))
		}
	}
	if n := l.dropped.Swap(0); n > 0 {
		attrs = append(attrs, slog.Int64("dropped", n))
	}
	// One group without a key, which the handler writes inline: the
	// record then holds one attribute and copies none. The record goes
	// to the handler directly, without the source position a Logger
	// would look up for it.
	rec := slog.NewRecord(e.start.Add(e.latency), level, "HTTP", 0)
	rec.AddAttrs(slog.Attr{Value: slog.GroupValue(attrs...)})
	_ = l.h.Handle(context.Background(), rec)
	clear(attrs)
	*buf = attrs
	attrPool.Put(buf)
}

// attrPool holds the attribute slices of lines being written: the
// handlers are done with them when LogAttrs returns.
var attrPool = sync.Pool{New: func() any {
	s := make([]slog.Attr, 0, 40)
	return &s
}}

// appendAPF appends the APF keys of a record: kube-apiserver's, then
// apf's own. Nothing for a request APF did not handle.
func appendAPF(attrs []slog.Attr, rec *controller.Record, watch bool) []slog.Attr {
	if rec.Outcome == controller.OutcomeNone {
		return attrs
	}
	attrs = append(attrs,
		slog.String("apf_pl", truncateField(rec.PriorityLevel)),
		slog.String("apf_fs", truncateField(rec.FlowSchema)),
		slog.Int("apf_iseats", rec.Estimate.InitialSeats),
		slog.Int("apf_fseats", rec.Estimate.FinalSeats),
		slog.String("apf_additionalLatency", durationText(rec.Estimate.AdditionalLatency)),
	)
	if rec.Outcome != controller.OutcomeRejected {
		if watch {
			attrs = append(attrs, slog.String("apf_init_latency", durationText(rec.Execution)))
		}
		attrs = append(attrs, slog.String("apf_execution_time", durationText(rec.Execution)))
	}
	attrs = append(attrs, slog.String("apf_outcome", rec.Outcome.String()))
	if rec.Outcome == controller.OutcomeRejected {
		attrs = append(attrs, slog.String("apf_reason", rec.Reason.String()))
	}
	if rec.Queue >= 0 {
		attrs = append(attrs, slog.Int("apf_queue", rec.Queue))
	}
	attrs = append(attrs, slog.String("apf_queue_wait", durationText(rec.Wait)))
	if rec.FlowDistinguisher != "" {
		attrs = append(attrs, slog.String("apf_fd", truncateField(rec.FlowDistinguisher)))
	}
	return attrs
}

// loggedParams are the query parameters whose values the access log
// keeps: Kubernetes' list, watch, write and log options, none of which
// carries a secret. The values of all others (a token some client puts in
// a query, an exec's command) are replaced by REDACTED.
var loggedParams = map[string]bool{
	"watch": true, "limit": true, "continue": true, "resourceVersion": true, "resourceVersionMatch": true,
	"labelSelector": true, "fieldSelector": true, "timeout": true, "timeoutSeconds": true,
	"allowWatchBookmarks": true, "sendInitialEvents": true, "pretty": true,
	"dryRun": true, "fieldManager": true, "fieldValidation": true, "force": true,
	"gracePeriodSeconds": true, "propagationPolicy": true, "orphanDependents": true,
	"container": true, "follow": true, "previous": true, "sinceSeconds": true, "tailLines": true,
	"timestamps": true, "limitBytes": true, "stdin": true, "stdout": true, "stderr": true, "tty": true,
}

// maxLoggedQuery bounds the query a line holds.
const maxLoggedQuery = 1024

// plainName says whether a query parameter's name looks like one: up to
// 64 letters, digits, '-', '_' and '.'.
func plainName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// redactQuery returns a raw query with the value of every parameter not
// in loggedParams replaced by REDACTED, in the order sent, cut at
// maxLoggedQuery bytes.
func redactQuery(raw string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		k, _, hasValue := strings.Cut(part, "=")
		name, err := url.QueryUnescape(k)
		if err == nil && loggedParams[name] {
			b.WriteString(part)
		} else {
			// The name of a parameter apf does not know is kept only
			// when it looks like one and has a value: a bare word could
			// be a token.
			if err == nil && hasValue && plainName(name) {
				b.WriteString(k)
			} else {
				b.WriteString("REDACTED")
			}
			if hasValue {
				b.WriteString("=REDACTED")
			}
		}
		if b.Len() > maxLoggedQuery {
			break
		}
	}
	s := b.String()
	if len(s) > maxLoggedQuery {
		s = s[:maxLoggedQuery] + "..."
	}
	return s
}
