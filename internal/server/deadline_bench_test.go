package server

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/apfproject/apf/request"
)

// benchWriter is a ResponseWriter that keeps nothing but its header.
type benchWriter struct{ h http.Header }

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) WriteHeader(int)             {}
func (w *benchWriter) Write(b []byte) (int, error) { return len(b), nil }

// BenchmarkRequestDeadline: the request deadline in front of a handler
// that answers at once, in process, for a GET whose attributes the edge
// filter has parsed (the header holds the edge's Cache-Control, as in
// apf serve's chain): what the deadline costs a request that ends in
// time. cpu-ns/op is the process's CPU time (getrusage) per request.
func BenchmarkRequestDeadline(b *testing.B) {
	body := []byte(`{"kind":"Pod"}`)
	contentType := []string{"application/json"}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = contentType
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
	f := withRequestDeadline(time.Minute, slog.New(slog.DiscardHandler), h)
	req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/shop/pods/web", nil)
	info, err := request.Parse(req.Method, req.URL.Path, req.URL.RawQuery)
	if err != nil {
		b.Fatal(err)
	}
	req = req.WithContext(request.WithAttributes(req.Context(), &request.Attributes{Info: info}))
	w := &benchWriter{h: http.Header{}}
	cacheControl := []string{"no-cache, private"}
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		clear(w.h)
		w.h["Cache-Control"] = cacheControl
		f.ServeHTTP(w, req)
	}
	// The process's CPU time per request, which, unlike the time taken,
	// does not grow when other work on the machine takes the cores.
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
