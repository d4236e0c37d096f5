package apfhttp

import (
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/apfproject/apf/request"
	"github.com/apfproject/apf/workestimate"
)

// This file holds the HTTP side of learning object counts (see doc.go,
// "Learned object counts"): which requests can teach them, the writer
// that passes a list answer on while feeding it to a listScanner,
// and what a complete answer tells workestimate.Learned.

// learnable reports whether a request is a list whose answer can teach
// object counts: a list of a whole resource (all namespaces, or one),
// without selectors, and not a continuation of an earlier page (its first
// continue parameter, as request.Parse read it, is empty).
func learnable(info *request.Info) bool {
	return info.IsResourceRequest && info.Verb == request.VerbList &&
		info.Subresource == "" && info.Name == "" &&
		info.FieldSelector == "" && info.LabelSelector == "" &&
		!info.List.Continue
}

// listWriterPool recycles listWriters, so that a list request pays no
// allocation for its counting.
var listWriterPool = sync.Pool{New: func() any { return new(listWriter) }}

// serveList serves a learnable list with its body streaming through a
// listScanner, and tells l what a complete answer said.
func serveList(l *workestimate.Learned, next http.Handler, w http.ResponseWriter, r *http.Request, info *request.Info) {
	lw := listWriterPool.Get().(*listWriter)
	lw.ResponseWriter = w
	returned := false
	defer func() {
		// A handler that panics skips the rest, and its writer is not
		// reused; a decompressor it started is stopped.
		if !returned && lw.inf != nil {
			lw.inf.abort()
		}
	}()
	next.ServeHTTP(lw, r)
	returned = true
	lw.observe(l, info)
	lw.ResponseWriter = nil
	lw.status, lw.counting, lw.gzip, lw.inf = 0, false, false, nil
	lw.ic.Reset()
	listWriterPool.Put(lw)
}

// listWriter passes a list response through and counts its items on the
// way, when the response is a 200 in JSON, without content encoding or in
// gzip (decompressed on the side by an inflater).
type listWriter struct {
	http.ResponseWriter
	status   int  // the final status, once written; 0 before
	counting bool // the body goes through ic
	gzip     bool // ... through inf first
	inf      *inflater
	ic       listScanner
	// lastKey is the last resource key built for a resource of a named
	// group, kept to spare the next list of it the concatenation.
	lastKey string
}

// begin records the final status and decides whether to count the body.
func (w *listWriter) begin(code int) {
	w.status = code
	h := w.ResponseWriter.Header()
	w.counting = false
	if code != http.StatusOK || !isJSON(h["Content-Type"]) {
		return
	}
	switch enc := h["Content-Encoding"]; {
	case identityEncoding(enc):
		w.counting = true
	case gzipEncoding(enc):
		w.counting, w.gzip = true, true
	}
}

func (w *listWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.begin(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *listWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.begin(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	if w.counting {
		switch {
		case err != nil:
			// The client has not received the whole body; nor
			// will the counter.
			w.counting = false
		case w.gzip:
			if n == 0 {
				break
			}
			if w.inf == nil {
				w.inf = startInflater(&w.ic)
			}
			w.counting = w.inf.write(p[:n])
		default:
			w.ic.Write(p[:n])
		}
	}
	return n, err
}

func (w *listWriter) Flush() {
	if w.status == 0 {
		w.begin(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *listWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe tells l about a complete list answer. A first page counts
// when it says how many items remain; one that only hands out a continue
// token does not.
func (w *listWriter) observe(l *workestimate.Learned, info *request.Info) {
	if w.inf != nil {
		// Always wait for the decompressor, whatever the verdict.
		if !w.inf.finish() {
			w.counting = false
		}
	}
	if !w.counting || (w.gzip && w.inf == nil) {
		return
	}
	lc, ok := w.ic.result()
	if !ok || (lc.Continue && !lc.HasRemaining) {
		return
	}
	o := workestimate.ListObservation{
		Resource:  w.key(info.APIGroup, info.Resource),
		Namespace: info.Namespace,
		Count:     lc.Items,
		Items:     lc.Items,
		Bytes:     lc.Bytes,
		Complete:  true,
	}
	if lc.HasRemaining {
		o.Count = satAdd(lc.Items, lc.Remaining)
	}
	if lc.Table {
		// A table row is not the object it describes: its size says
		// nothing about the objects'.
		o.Items, o.Bytes = 0, 0
	}
	l.Observe(time.Now(), o)
}

// key returns workestimate.Key(group, resource) without building it again
// when it is the writer's last one.
func (w *listWriter) key(group, resource string) string {
	if group == "" {
		return resource
	}
	k := w.lastKey
	if n := len(resource); len(k) == n+1+len(group) && k[:n] == resource && k[n] == '.' && k[n+1:] == group {
		return k
	}
	w.lastKey = workestimate.Key(group, resource)
	return w.lastKey
}

// satAdd adds two non-negative counts, saturating.
func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// isJSON reports whether a Content-Type is application/json, with or
// without parameters.
func isJSON(v []string) bool {
	if len(v) == 0 {
		return false
	}
	mt, _, _ := strings.Cut(v[0], ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

// identityEncoding reports whether a Content-Encoding leaves the body as
// it is.
func identityEncoding(v []string) bool {
	return len(v) == 0 || v[0] == "" || strings.EqualFold(v[0], "identity")
}

// gzipEncoding reports whether a Content-Encoding is gzip alone.
func gzipEncoding(v []string) bool {
	return len(v) == 1 && strings.EqualFold(strings.TrimSpace(v[0]), "gzip")
}
