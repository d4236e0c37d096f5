package apfhttp

import (
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/request"
)

// Explanations of single requests (docs/spec/explain.md).
//
// A caller that sends ExplainHeader: 1 asks what APF did with its request.
// When Options.Explain allows it, the answer carries ExplanationHeader:
// the FlowSchema and its precedence, the priority level, the flow
// distinguisher, the queue chosen out of the flow's hand and the hand, how
// long the request waited, the seats it took, and the estimated and
// actual execution time. Everyone else's request is served as if the
// header had not been sent.
//
// Nothing of this runs for a request that does not ask: with
// Options.Explain unset the middleware tests one nil function, and with it
// set it looks the request header up once. The work (a Record when the
// server keeps none, the hand, the header's text, a writer around the
// response) is done for the requests that asked and were allowed.
const (
	// ExplainHeader is the request header that asks for an explanation:
	// "1" or "true" (in any case) asks, anything else does not.
	ExplainHeader = "X-APF-Explain"
	// ExplanationHeader is the response header that carries it: an
	// RFC 8941 structured-field Dictionary (docs/spec/explain.md#the-header).
	ExplanationHeader = "X-APF-Explanation"
)

var (
	canonicalExplainHeader     = http.CanonicalHeaderKey(ExplainHeader)
	canonicalExplanationHeader = http.CanonicalHeaderKey(ExplanationHeader)
)

// asksExplanation reports whether a request asks for an explanation.
func asksExplanation(h http.Header) bool {
	v := h[canonicalExplainHeader]
	if len(v) == 0 {
		return false
	}
	s := strings.TrimSpace(v[0])
	return s == "1" || strings.EqualFold(s, "true")
}

// explaining is what the middleware keeps for a request whose explanation
// it sends: made only for such a request.
type explaining struct {
	c *controller.Controller
	// attrs is a copy of the request's attributes (a pointer to them
	// would make the middleware's stack copy escape for every request).
	attrs request.Attributes
	// rec is the request's Record: the server's own when it keeps one,
	// else own.
	rec *controller.Record
	own controller.Record
	// dispatched is when the middleware had the request's ticket, on the
	// wall clock: the execution the header tells is measured from there.
	dispatched time.Time
}

// header sets the explanation on h; execution is the time the request
// has executed so far (ignored for a rejection).
func (e *explaining) header(h http.Header, execution time.Duration) {
	hand := e.c.Hand(&e.attrs, e.rec)
	h[canonicalExplanationHeader] = []string{formatExplanation(e.rec, hand, execution)}
}

// explainWriter sets the explanation on the response at the first sign of
// output, with the execution time up to then: the header must leave
// before the body, so an answer the handler computes before it writes
// tells all of its execution, and a streamed one what passed until its
// first byte (docs/spec/explain.md#execution-time).
type explainWriter struct {
	http.ResponseWriter
	e    *explaining
	sent bool
}

func (w *explainWriter) set() {
	if w.sent {
		return
	}
	w.sent = true
	w.e.header(w.ResponseWriter.Header(), time.Since(w.e.dispatched))
}

func (w *explainWriter) WriteHeader(code int) {
	w.set()
	w.ResponseWriter.WriteHeader(code)
}

func (w *explainWriter) Write(b []byte) (int, error) {
	w.set()
	return w.ResponseWriter.Write(b)
}

func (w *explainWriter) Flush() {
	w.set()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *explainWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// maxExplainedName bounds each name the header holds (a user name used as
// the flow distinguisher can be anything an authenticator accepts).
const maxExplainedName = 256

// formatExplanation is the value of ExplanationHeader for a Record that
// Admit filled: an RFC 8941 Dictionary, in this order (absent members are
// left out):
//
//	outcome             token: dispatched, exempt or rejected
//	reason              token: queue-full, concurrency-limit or time-out (rejected)
//	retry-after         integer: the Retry-After sent, in seconds (rejected)
//	flow-schema         string: the FlowSchema that matched
//	precedence          integer: its matchingPrecedence
//	priority-level      string: its priority level
//	distinguisher       string: the flow distinguisher (levels with several queues)
//	queue               integer: the queue chosen out of the hand (queuing levels)
//	hand                inner list of integers: the flow's hand, in dealing order
//	queued              boolean: whether the request waited in that queue
//	wait                string: the time from arrival to dispatch or rejection
//	initial-seats       integer: seats taken while it executed
//	final-seats         integer: seats held after it, for additional-latency
//	additional-latency  string: how long the final seats are held
//	estimated-execution string: the execution time fair queuing assumed
//	execution           string: the execution time, up to the answer's header (not rejected)
//
// Strings of printable ASCII are sf-strings; any other name is an RFC 9651
// Display String (%"..." with its UTF-8 percent-encoded). Durations are in
// Go's notation ("1.5ms", "250us"), which time.ParseDuration reads. hand is nil
// when it is unknown (see controller.Controller.Hand).
func formatExplanation(rec *controller.Record, hand []int, execution time.Duration) string {
	b := make([]byte, 0, 320)
	b = append(b, "outcome="...)
	b = append(b, rec.Outcome.String()...)
	rejected := rec.Outcome == controller.OutcomeRejected
	if rejected {
		b = append(b, ", reason="...)
		b = append(b, rec.Reason.String()...)
		b = append(b, ", retry-after="...)
		b = strconv.AppendInt(b, int64(rec.RetryAfter), 10)
	}
	b = appendSFString(append(b, ", flow-schema="...), rec.FlowSchema)
	b = strconv.AppendInt(append(b, ", precedence="...), int64(rec.MatchingPrecedence), 10)
	b = appendSFString(append(b, ", priority-level="...), rec.PriorityLevel)
	if rec.FlowDistinguisher != "" {
		b = appendSFString(append(b, ", distinguisher="...), rec.FlowDistinguisher)
	}
	if rec.Queue >= 0 {
		b = strconv.AppendInt(append(b, ", queue="...), int64(rec.Queue), 10)
		if hand != nil {
			b = append(b, ", hand=("...)
			for i, q := range hand {
				if i > 0 {
					b = append(b, ' ')
				}
				b = strconv.AppendInt(b, int64(q), 10)
			}
			b = append(b, ')')
		}
		if rec.Queued {
			b = append(b, ", queued"...)
		} else {
			b = append(b, ", queued=?0"...)
		}
	}
	b = appendSFDuration(append(b, ", wait="...), rec.Wait)
	b = strconv.AppendInt(append(b, ", initial-seats="...), int64(rec.Seats.InitialSeats), 10)
	b = strconv.AppendInt(append(b, ", final-seats="...), int64(rec.Seats.FinalSeats), 10)
	b = appendSFDuration(append(b, ", additional-latency="...), rec.Seats.AdditionalLatency)
	b = appendSFDuration(append(b, ", estimated-execution="...), controller.EstimatedExecution)
	if !rejected {
		b = appendSFDuration(append(b, ", execution="...), execution)
	}
	return string(b)
}

// appendSFDuration appends d as an sf-string in Go's notation, with "us"
// for microseconds: an sf-string holds only ASCII, and time.ParseDuration
// reads both.
func appendSFDuration(b []byte, d time.Duration) []byte {
	b = append(b, '"')
	b = append(b, strings.Replace(d.String(), "µ", "u", 1)...)
	return append(b, '"')
}

// appendSFString appends s, cut at maxExplainedName bytes (on a rune
// boundary), as an sf-string when it is printable ASCII and as a Display
// String otherwise.
func appendSFString(b []byte, s string) []byte {
	if len(s) > maxExplainedName {
		n := maxExplainedName
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			plain = false
			break
		}
	}
	if plain {
		b = append(b, '"')
		for i := 0; i < len(s); i++ {
			if c := s[i]; c == '"' || c == '\\' {
				b = append(b, '\\')
			}
			b = append(b, s[i])
		}
		return append(b, '"')
	}
	const hex = "0123456789abcdef"
	b = append(b, '%', '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' || c == '"' || c < 0x20 || c > 0x7e {
			b = append(b, '%', hex[c>>4], hex[c&15])
			continue
		}
		b = append(b, c)
	}
	return append(b, '"')
}
