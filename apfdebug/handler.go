package apfdebug

import (
	"bytes"
	"net/http"
	"strconv"
)

// PathPrefix is the path under which the dumps are served. Mount Handler
// there, for example mux.Handle(PathPrefix, Handler(src)).
const PathPrefix = "/debug/api_priority_and_fairness/"

// The dump paths, upstream's three. There are no others.
const (
	PathPriorityLevels = PathPrefix + "dump_priority_levels"
	PathQueues         = PathPrefix + "dump_queues"
	PathRequests       = PathPrefix + "dump_requests"
)

// queryIncludeRequestDetails is the dump_requests query parameter that, with
// any non-empty value, adds the request-detail columns.
const queryIncludeRequestDetails = "includeRequestDetails"

// Source supplies the rows of the dumps. Each method is called once per HTTP
// request and should return a consistent snapshot. The controller implements
// it.
type Source interface {
	DumpPriorityLevels() []PriorityLevel
	DumpQueues() []Queue
	DumpRequests(includeDetails bool) []Request
}

// Handler serves the three dumps of src at their full paths (PathPriorityLevels,
// PathQueues, PathRequests). Other paths get 404, methods other than GET and
// HEAD get 405. The body is text/plain.
//
// The dump is rendered into memory first, so a failure while writing to the
// client cannot leave a half-aligned table and Content-Length is exact.
func Handler(src Source) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var render func(*bytes.Buffer) error
		switch r.URL.Path {
		case PathPriorityLevels:
			render = func(b *bytes.Buffer) error { return WritePriorityLevels(b, src.DumpPriorityLevels()) }
		case PathQueues:
			render = func(b *bytes.Buffer) error { return WriteQueues(b, src.DumpQueues()) }
		case PathRequests:
			details := r.URL.Query().Get(queryIncludeRequestDetails) != ""
			render = func(b *bytes.Buffer) error { return WriteRequests(b, src.DumpRequests(details), details) }
		default:
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
			return
		}
		var body bytes.Buffer
		if err := render(&body); err != nil {
			// Writing to a bytes.Buffer does not fail; keep the check so a
			// future writer change cannot serve a truncated table silently.
			http.Error(w, "rendering dump: "+err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Length", strconv.Itoa(body.Len()))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(body.Bytes())
		}
	})
}
