package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/pflag"

	"github.com/apfproject/apf/apfdebug"
	"github.com/apfproject/apf/capacity"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/internal/debug/console"
	"github.com/apfproject/apf/request"
)

// The gateway's adaptive server concurrency limit
// (--adaptive-concurrency-limit, docs/spec/adaptive-limit.md): the
// controller's limit follows the upstream's latency and overload answers
// between a floor and a ceiling, instead of the sum of the two
// --max-*-inflight flags. Every request the gateway proxies that APF
// admitted and that is not long-running (a watch included) is observed
// when its response headers are written: its time from dispatch, its
// seats and what the upstream answered. apf's own endpoints are never
// observed: their latency is apf's, not the upstream's.

// flagAdaptiveConcurrencyLimit names the flag.
const flagAdaptiveConcurrencyLimit = "adaptive-concurrency-limit"

// AdaptiveLimitDumpPath is where the server serves what the adaptive
// limit knows, beside the APF dumps.
const AdaptiveLimitDumpPath = apfdebug.PathPrefix + "adaptive_limit"

func (o *Options) addAdaptiveFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.AdaptiveConcurrencyLimit, flagAdaptiveConcurrencyLimit, o.AdaptiveConcurrencyLimit,
		"with --upstream, learn the server concurrency limit from the upstream, between FLOOR and CEILING seats (`FLOOR:CEILING`), instead of taking the sum of the two --max-*-inflight flags: "+
			"it follows the time to response headers of the proxied requests that are not long-running, per seat, and their overload answers (5xx, 429, timeouts), starting at the floor (docs/spec/adaptive-limit.md). With --shared-concurrency-limit the replicas divide CEILING (and FLOOR in the same parts), each learning under its share")
}

// checkAdaptive parses --adaptive-concurrency-limit into
// o.adaptiveConfig and refuses the combinations it cannot work in.
func (o *Options) checkAdaptive() error {
	o.adaptiveConfig = nil
	if o.AdaptiveConcurrencyLimit == "" {
		return nil
	}
	cfg, err := capacity.ParseBounds(o.AdaptiveConcurrencyLimit)
	if err != nil {
		return fmt.Errorf("--%s %q: %w", flagAdaptiveConcurrencyLimit, o.AdaptiveConcurrencyLimit, err)
	}
	switch {
	case o.Upstream == "":
		return fmt.Errorf("--%s learns the limit from the upstream's answers: it needs --upstream", flagAdaptiveConcurrencyLimit)
	case !o.EnablePriorityAndFairness:
		return fmt.Errorf("--%s sets APF's server concurrency limit: it needs --enable-priority-and-fairness", flagAdaptiveConcurrencyLimit)
	}
	o.adaptiveConfig = &cfg
	return nil
}

// newAdaptive makes the controller's limit adaptive, registers its
// metrics and serves its dump; nothing without the flag.
func (s *Server) newAdaptive(mux *http.ServeMux) error {
	cfg := s.opts.adaptiveConfig
	if cfg == nil {
		return nil
	}
	a, err := s.ctl.NewAdaptive(*cfg)
	if err != nil {
		return fmt.Errorf("--%s: %w", flagAdaptiveConcurrencyLimit, err)
	}
	if err := a.Register(s.promReg); err != nil {
		return err
	}
	s.adaptive = a
	// An exact pattern: it wins over the dumps' prefix.
	mux.HandleFunc(AdaptiveLimitDumpPath, s.serveAdaptiveLimit)
	return nil
}

// adaptiveRecordKey is the context key of the Record the APF middleware
// fills for the adaptive limit when the observer (which has one of its
// own) is off.
type adaptiveRecordKey struct{}

// recordHook is the APF middleware's Options.Record: the observer's
// record, or, with the adaptive limit on and the observer off, the one
// adaptiveRecords put in the context; nil when neither reads one, so that
// nothing is recorded.
func (s *Server) recordHook() func(*http.Request) *controller.Record {
	if h := s.obs.recordHook(); h != nil || s.adaptive == nil {
		return h
	}
	return func(r *http.Request) *controller.Record {
		rec, _ := r.Context().Value(adaptiveRecordKey{}).(*controller.Record)
		return rec
	}
}

// adaptiveRecords gives each request a Record for the APF middleware to
// fill, when the adaptive limit needs one and the observer does not give
// one already.
func (s *Server) adaptiveRecords(next http.Handler) http.Handler {
	if s.adaptive == nil || s.obs.recordHook() != nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), adaptiveRecordKey{}, &controller.Record{})))
	})
}

// observeUpstream puts the proxy behind the writer that tells the
// adaptive limit of each answer; the proxy unchanged without it.
func (s *Server) observeUpstream(proxy http.Handler) http.Handler {
	a, recordOf := s.adaptive, s.recordHook()
	if a == nil || recordOf == nil {
		return proxy
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := recordOf(r)
		if rec == nil || (rec.Outcome != controller.OutcomeDispatched && rec.Outcome != controller.OutcomeExempt) {
			// Not admitted by APF: long-running (exec, a proxy
			// connection) or not through APF at all.
			proxy.ServeHTTP(w, r)
			return
		}
		if attrs, ok := request.AttributesFrom(r.Context()); ok && (attrs.IsWatch() || attrs.Route.LongRunning) {
			// A watch's time is its client's, and so is that of a
			// request a gateway route made long-running (a long
			// poll's answer starts when its event comes).
			proxy.ServeHTTP(w, r)
			return
		}
		ow := &observingWriter{ResponseWriter: w, a: a, r: r,
			dispatched: rec.Arrival.Add(rec.Wait), seats: max(rec.Seats.InitialSeats, 1)}
		proxy.ServeHTTP(ow, r)
	})
}

// observingWriter tells the adaptive limit of the answer when its status
// is written, once. A handler that writes nothing (the caller went away:
// nobody is answered) is not observed.
type observingWriter struct {
	http.ResponseWriter
	a          *controller.Adaptive
	r          *http.Request
	dispatched time.Time
	seats      int
	done       bool
}

func (w *observingWriter) WriteHeader(code int) {
	// Informational answers come before the real one.
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.observe(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *observingWriter) Write(b []byte) (int, error) {
	w.observe(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

func (w *observingWriter) Flush() {
	w.observe(http.StatusOK)
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *observingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *observingWriter) observe(code int) {
	if w.done {
		return
	}
	w.done = true
	out, ok := upstreamOutcome(code, w.r.Context())
	if ok {
		w.a.Observe(time.Since(w.dispatched), w.seats, out)
	}
}

// upstreamOutcome is what an answer of the proxy says of the upstream:
// a 504 (the upstream sent no headers in time, or said so itself) timed
// out; another 5xx or a 429 is an overload answer; anything else is an
// answer, whose latency is a sample. An answer written after apf gave up
// on the request for a reason of its own (shutting down) says nothing of
// the upstream, and is not observed (ok false).
func upstreamOutcome(code int, ctx context.Context) (out capacity.Outcome, ok bool) {
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return 0, false
	}
	switch {
	case code == http.StatusGatewayTimeout:
		return capacity.TimedOut, true
	case code >= 500 || code == http.StatusTooManyRequests:
		return capacity.Overloaded, true
	}
	return capacity.Answered, true
}

// adaptiveLimitDump is the document of AdaptiveLimitDumpPath: what the
// law knows, its bounds, and the limits of the levels derived from the
// limit in force.
type adaptiveLimitDump struct {
	Limit       int                 `json:"limitSeats"`
	Floor       int                 `json:"floorSeats"`
	Ceiling     int                 `json:"ceilingSeats"`
	BaselineSec float64             `json:"baselineLatencySeconds"`
	SampledSec  float64             `json:"sampledLatencySeconds"`
	Gradient    float64             `json:"gradient"`
	Tolerance   float64             `json:"tolerance"`
	Measuring   bool                `json:"measuring,omitempty"`
	Levels      []sharedBudgetLevel `json:"levels"`
}

// serveAdaptiveLimit writes the adaptive limit's state as JSON.
func (s *Server) serveAdaptiveLimit(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	st := s.adaptive.Status()
	d := adaptiveLimitDump{Limit: st.Limit, Floor: st.Floor, Ceiling: st.Ceiling,
		BaselineSec: st.Baseline.Seconds(), SampledSec: st.Sampled.Seconds(), Gradient: st.Gradient, Tolerance: st.Tolerance, Measuring: st.Probing,
		Levels: levelLimits(s.ctl)}
	body, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(body, '\n'))
}

// consoleAdaptive is the learned limit as the console shows it, nil when
// the limit is static.
func (s *Server) consoleAdaptive() *console.AdaptiveLimit {
	if s.adaptive == nil {
		return nil
	}
	st := s.adaptive.Status()
	return &console.AdaptiveLimit{
		LimitSeats: st.Limit, FloorSeats: st.Floor, CeilingSeats: st.Ceiling,
		BaselineSeconds: st.Baseline.Seconds(), SampledSeconds: st.Sampled.Seconds(),
		Measuring: st.Probing,
	}
}
