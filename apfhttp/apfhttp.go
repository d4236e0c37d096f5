package apfhttp

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/request"
	"github.com/apfproject/apf/workestimate"
)

// Header names set on every classified response
// (docs/spec/requests.md#response-headers).
const (
	FlowSchemaUIDHeader    = "X-Kubernetes-PF-FlowSchema-UID"
	PriorityLevelUIDHeader = "X-Kubernetes-PF-PriorityLevel-UID"
)

// The same names in net/http's canonical form, the keys an http.Header
// holds them under (and what goes on the wire, as with upstream).
var (
	canonicalFlowSchemaUIDHeader    = http.CanonicalHeaderKey(FlowSchemaUIDHeader)
	canonicalPriorityLevelUIDHeader = http.CanonicalHeaderKey(PriorityLevelUIDHeader)
)

// userFromRequest is the default Options.User: the user the
// authentication layer stored with request.WithUser.
func userFromRequest(r *http.Request) (request.User, bool) { return request.UserFrom(r.Context()) }

// Options configures Middleware.
type Options struct {
	// User returns the authenticated (and impersonated) user; nil means
	// request.UserFrom on the request context.
	User func(*http.Request) (request.User, bool)
	// LongRunning tells long-running requests apart. The zero value is
	// kube-apiserver's rule, for a Kubernetes-style API; in front of any
	// other service use request.Service, under which only a route makes
	// a request long-running: kube-apiserver's long-running paths and
	// queries would otherwise let a client skip APF by choosing them.
	LongRunning request.LongRunningPolicy
	// ObjectCounts, when set, learns object counts from the complete JSON
	// list responses that pass through (see "Learned object counts" in
	// the package documentation). It is normally also the controller's
	// Config.ObjectCounts, so that later lists are priced by what earlier
	// ones returned. nil learns nothing.
	ObjectCounts *workestimate.Learned
	// Record, when set, returns the record of what APF does with a request
	// (controller.Record), for an access log, a trace or a response header
	// to read once the request is done; nil, or a nil record, records
	// nothing. The middleware fills it through controller.AdmitRecord, and
	// the Ticket's Done adds the execution time before the handler's
	// return reaches the filters in front.
	Record func(*http.Request) *controller.Record
	// Explain, when set, decides whether a request that asks for an
	// explanation (ExplainHeader) gets one (ExplanationHeader): it is
	// called with the request and its user only for a request that asks,
	// before admission, and should allow exactly the callers that may read
	// the debug dumps. nil explains nothing and costs nothing.
	Explain func(r *http.Request, u request.User) bool
	// Hold, when set, is asked before a request that a server's route
	// made long-running (request.Route.LongRunning) runs, once APF has
	// admitted it and the PF headers are set: it may refuse the request,
	// answering it itself (a cap on held requests, say), or accept it and
	// return what to call when the request ends. The ticket says where
	// the request was classified. nil holds every such request.
	Hold func(w http.ResponseWriter, r *http.Request, t *controller.Ticket) (release func(), ok bool)
}

// internalError is upstream's answer to a request without request info or
// user.
func internalError(w http.ResponseWriter, r *http.Request) {
	http.Error(w, fmt.Sprintf("Internal Server Error: %q", r.RequestURI), http.StatusInternalServerError)
}

// unresolvedPath is kube-apiserver's answer, from its request-info
// filter, to a path it cannot resolve (a verb in the path with nothing
// after it): the plain-text 500 of internalError, naming why, with the
// characters that could make markup of the path escaped.
func unresolvedPath(w http.ResponseWriter, r *http.Request) {
	msg := fmt.Sprintf("Internal Server Error: %q: failed to create RequestInfo: unable to determine kind and namespace from url, %v", r.RequestURI, r.URL)
	http.Error(w, markupEscaper.Replace(msg), http.StatusInternalServerError)
}

// markupEscaper escapes what kube-apiserver escapes in the plain-text
// errors it builds from a request.
var markupEscaper = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;")

// WithRequestAttributes returns next behind the filter that parses each
// request once, as a Kubernetes API server would (request.Parse), and puts
// the result in its context (request.WithAttributes), where the filters
// after it find it: Middleware, MaxInflight and whatever else the server
// runs (a deadline, authentication, authorization). Put it in front of
// them all. A request whose context already holds attributes passes
// unchanged; a path that cannot be resolved gets upstream's 500. If the
// context already names a user (request.WithUser), the attributes start
// with it.
//
// Without this filter the others still work: each one then parses the
// request itself.
func WithRequestAttributes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if _, ok := request.AttributesFrom(ctx); ok {
			next.ServeHTTP(w, r)
			return
		}
		a, err := parseAttributes(r)
		if err != nil {
			unresolvedPath(w, r)
			return
		}
		if u, ok := request.UserFrom(ctx); ok {
			a.User = u
		}
		next.ServeHTTP(w, r.WithContext(request.WithAttributes(ctx, a)))
	})
}

// parseAttributes returns new attributes holding the request parsed, out
// of line (see "One parse" in the package documentation).
//
//go:noinline
func parseAttributes(r *http.Request) (*request.Attributes, error) {
	a := &request.Attributes{}
	if err := request.ParseInto(&a.Info, r.Method, r.URL.Path, r.URL.RawQuery); err != nil {
		return nil, err
	}
	return a, nil
}

// attributes returns the attributes WithRequestAttributes stored in the
// request's context or, when there are none, the request parsed into
// *local, which keeps a filter used on its own from allocating. A path
// that cannot be resolved gets upstream's 500 and ok false.
//
//go:noinline
func attributes(w http.ResponseWriter, r *http.Request, local *request.Attributes) (a *request.Attributes, ok bool) {
	if a, ok := request.AttributesFrom(r.Context()); ok {
		return a, true
	}
	if err := request.ParseInto(&local.Info, r.Method, r.URL.Path, r.URL.RawQuery); err != nil {
		internalError(w, r)
		return nil, false
	}
	return local, true
}

// tooManyRequests writes upstream's 429.
func tooManyRequests(w http.ResponseWriter, retryAfter int) {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
}

// Middleware returns the APF filter.
func Middleware(c *controller.Controller, opts Options) func(http.Handler) http.Handler {
	userOf := opts.User
	if userOf == nil {
		userOf = userFromRequest
	}
	policy := opts.LongRunning
	learned := opts.ObjectCounts
	recordOf := opts.Record
	explainTo := opts.Explain
	hold := opts.Hold
	return func(next http.Handler) http.Handler {
		return &apfFilter{c: c, userOf: userOf, policy: policy, learned: learned, recordOf: recordOf, explainTo: explainTo, hold: hold, next: next}
	}
}

// apfFilter is Middleware's handler. Requests whose attributes the edge
// filter stored take serve directly; the others are parsed first by
// serveUnparsed, out of line, so that the room for their attributes is
// not reserved in the frame of every request (see "One parse" in the
// package documentation).
type apfFilter struct {
	c         *controller.Controller
	userOf    func(*http.Request) (request.User, bool)
	policy    request.LongRunningPolicy
	learned   *workestimate.Learned
	recordOf  func(*http.Request) *controller.Record
	explainTo func(*http.Request, request.User) bool
	hold      func(http.ResponseWriter, *http.Request, *controller.Ticket) (func(), bool)
	next      http.Handler
}

func (m *apfFilter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a, ok := request.AttributesFrom(r.Context()); ok {
		m.serve(w, r, a)
		return
	}
	m.serveUnparsed(w, r)
}

// serveUnparsed serves a request without stored attributes, parsed into
// a local value (the filter used on its own does not allocate for them).
//
//go:noinline
func (m *apfFilter) serveUnparsed(w http.ResponseWriter, r *http.Request) {
	var local request.Attributes
	a, ok := attributes(w, r, &local)
	if !ok {
		return
	}
	m.serve(w, r, a)
}

// newExplaining starts the explanation of a request (explain.go), out of
// line: the copy of the attributes it takes would otherwise be built in
// serve's frame.
//
//go:noinline
func newExplaining(c *controller.Controller, a *request.Attributes, rec *controller.Record) *explaining {
	ex := &explaining{c: c, attrs: *a, rec: rec}
	if ex.rec == nil {
		ex.rec = &ex.own
	}
	return ex
}

// serve applies APF to a request with its attributes.
func (m *apfFilter) serve(w http.ResponseWriter, r *http.Request, a *request.Attributes) {
	c, userOf, policy, learned, recordOf, explainTo, next := m.c, m.userOf, m.policy, m.learned, m.recordOf, m.explainTo, m.next
	user, ok := userOf(r)
	if !ok {
		internalError(w, r)
		return
	}
	// The user classified is the one the attributes carry on.
	a.User = user
	if policy == request.Service {
		// Nor a watch: the filters after this one read it too.
		a.Route.Plain = true
	}
	// A request a route made long-running is admitted as a watch is.
	watch, routed := a.IsWatch(), a.Route.LongRunning
	if !watch && !routed && a.IsLongRunning(policy) {
		next.ServeHTTP(w, r)
		return
	}
	var rec *controller.Record
	if recordOf != nil {
		rec = recordOf(r)
	}
	// A request that asks for its explanation, and may have it
	// (explain.go): everything else passes these two tests.
	var ex *explaining
	if explainTo != nil && asksExplanation(r.Header) && explainTo(r, user) {
		ex = newExplaining(c, a, rec)
		rec = ex.rec
	}
	t, err := c.AdmitRecord(r.Context(), a, rec)
	if err != nil {
		notAdmitted(w, r, err, ex)
		return
	}
	// Set under the canonical names, with the ticket's shared
	// values: Header.Set would canonicalize and allocate each time.
	h := w.Header()
	h[canonicalFlowSchemaUIDHeader], h[canonicalPriorityLevelUIDHeader] = t.UIDValues()
	if ex != nil {
		ex.dispatched = time.Now()
		ew := &explainWriter{ResponseWriter: w, e: ex}
		// A handler that writes nothing is answered by net/http
		// after it returns: the header goes with that answer.
		defer ew.set()
		w = ew
	}
	if routed && !watch {
		serveHeld(m.hold, next, w, r, t)
		return
	}
	if !watch {
		defer t.Done()
		if learned != nil && learnable(&a.Info) {
			serveList(learned, next, w, r, &a.Info)
			return
		}
		next.ServeHTTP(w, r)
		return
	}
	serveWatch(c, next, w, r, &a.Info, t)
}

// WriteNotAdmitted answers a request the controller did not admit, as
// Middleware does: upstream's 429 with Retry-After and the PF headers for
// a rejection (controller.RejectedError), its 500 for any other error. It
// is for a server that admits requests itself (Controller.AdmitFunc).
func WriteNotAdmitted(w http.ResponseWriter, r *http.Request, err error) { notAdmitted(w, r, err, nil) }

// notAdmitted answers a request Admit did not admit: upstream's 429 with
// the PF headers for a rejection, its 500 otherwise. It and serveWatch
// are out of line: the paths most requests do not take keep their locals
// out of serve's frame.
//
//go:noinline
func notAdmitted(w http.ResponseWriter, r *http.Request, err error, ex *explaining) {
	var rej *controller.RejectedError
	if !errors.As(err, &rej) {
		internalError(w, r)
		return
	}
	h := w.Header()
	h.Set(FlowSchemaUIDHeader, rej.FlowSchemaUID)
	h.Set(PriorityLevelUIDHeader, rej.PriorityLevelUID)
	if ex != nil {
		ex.header(h, 0)
	}
	tooManyRequests(w, rej.RetryAfter)
}

// serveWatch runs an admitted watch: it counts among the watches in
// progress until it ends, and its seats go back at its first output.
//
//go:noinline
func serveWatch(c *controller.Controller, next http.Handler, w http.ResponseWriter, r *http.Request, info *request.Info, t *controller.Ticket) {
	defer c.Watches().Register(info)()
	ww := &watchWriter{ResponseWriter: w, t: t}
	defer ww.release()
	next.ServeHTTP(ww, r)
}

// serveHeld runs an admitted request that a route made long-running: as a
// watch, its seats go back at its first output; it is held, against the
// caps of hold, until it ends.
//
//go:noinline
func serveHeld(hold func(http.ResponseWriter, *http.Request, *controller.Ticket) (func(), bool), next http.Handler, w http.ResponseWriter, r *http.Request, t *controller.Ticket) {
	if hold != nil {
		release, ok := hold(w, r, t)
		if !ok {
			t.Done()
			return
		}
		if release != nil {
			defer release()
		}
	}
	ww := &watchWriter{ResponseWriter: w, t: t}
	defer ww.release()
	next.ServeHTTP(ww, r)
}

// watchWriter ends a watch's initial phase at the first sign of output.
type watchWriter struct {
	http.ResponseWriter
	t *controller.Ticket
}

func (w *watchWriter) release() {
	if w.t != nil {
		t := w.t
		w.t = nil
		t.Done()
	}
}

func (w *watchWriter) WriteHeader(code int) {
	w.release()
	w.ResponseWriter.WriteHeader(code)
}

func (w *watchWriter) Write(b []byte) (int, error) {
	w.release()
	return w.ResponseWriter.Write(b)
}

func (w *watchWriter) Flush() {
	w.release()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *watchWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// MaxInflight is the filter for when APF is disabled
// (docs/spec/requests.md#max-in-flight-filter): at most readOnly requests
// with verbs get, list and watch, and at most mutating others, execute at
// once; 0 leaves that class unlimited. Long-running requests bypass it,
// members of system:masters are served even when it is full, and the rest get
// a 429 with Retry-After 1. The user comes from request.UserFrom. With both
// limits 0 it returns the handler unchanged.
func MaxInflight(readOnly, mutating int) func(http.Handler) http.Handler {
	if readOnly <= 0 && mutating <= 0 {
		return func(h http.Handler) http.Handler { return h }
	}
	var ro, mu chan struct{}
	if readOnly > 0 {
		ro = make(chan struct{}, readOnly)
	}
	if mutating > 0 {
		mu = make(chan struct{}, mutating)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var local request.Attributes
			a, ok := attributes(w, r, &local)
			if !ok {
				return
			}
			if a.IsLongRunning(request.KubeAPIServer) {
				next.ServeHTTP(w, r)
				return
			}
			sem := ro
			switch a.Info.Verb {
			case request.VerbGet, request.VerbList, request.VerbWatch:
			default:
				sem = mu
			}
			if sem == nil {
				next.ServeHTTP(w, r)
				return
			}
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			default:
				if u, ok := request.UserFrom(r.Context()); ok && isMaster(u) {
					break
				}
				tooManyRequests(w, 1)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func isMaster(u request.User) bool {
	for _, g := range u.Groups {
		if g == request.SystemMastersGroup {
			return true
		}
	}
	return false
}
