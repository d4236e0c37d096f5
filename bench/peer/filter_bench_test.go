package peer

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/apiserver/pkg/storage"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
)

// The filter benchmarks put a whole HTTP admission filter in front of a
// handler that does nothing, and time one request through it: request
// info, an authenticated user, classification, work estimation,
// admission and release. Each implementation is built once per
// BenchmarkPeer run and shared by the filter-* and http-loopback
// scenarios:
//
//   - upstream: k8s.io/apiserver's WithPriorityAndFairness over its APF
//     controller (StartUpstream, bootstrap configuration, 600 seats) and
//     its work estimator;
//   - semaphore: a plain max-in-flight limiter of 600 slots, the cheapest
//     admission there is, so that the price of fairness is visible;
//   - apf: apfhttp.Middleware over a controller.Controller, registered by
//     filter_apf_bench_test.go;
//   - bare (http-loopback only): the empty handler with no filter at all;
//   - headers (http-loopback only): the two X-Kubernetes-PF-* response
//     headers and nothing else;
//   - floor (http-loopback only): what every APF filter in this rig pays
//     before it admits anything, the stand-in authentication and the two
//     headers;
//   - floor-again (http-loopback only): the floor measured against itself,
//     whose floor-ratio is the rig's own error on that run.
//
// Request info and the user are put in the request context by upstream's
// WithRequestInfo and a stand-in for authentication for the upstream and
// semaphore chains, which read them from there.

const (
	// filterPath is the one request every filter benchmark makes: a GET
	// of a namespaced pod, which the bootstrap configuration classifies
	// to global-default (one seat, no list or watch estimate).
	filterPath = "/api/v1/namespaces/default/pods/p"

	// semaphoreSlots is the semaphore baseline's capacity: kube-apiserver's
	// default total (400 read-only + 200 mutating).
	semaphoreSlots = 600

	// loopbackClients is how many keep-alive clients the http-loopback
	// scenario runs at once.
	loopbackClients = 64

	// headerFlowSchemaUID and headerPriorityLevelUID are the two headers
	// every classified response carries
	// (docs/spec/requests.md#response-headers).
	headerFlowSchemaUID    = "X-Kubernetes-PF-FlowSchema-UID"
	headerPriorityLevelUID = "X-Kubernetes-PF-PriorityLevel-UID"
)

// benchUser is the authenticated user every filter request is made as.
var benchUser = &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}

// noopHandler is the handler behind every filter: it writes nothing, so the
// response is an empty 200.
var noopHandler = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})

// filterImpl is one way of admitting HTTP requests.
type filterImpl struct {
	name string
	// pfHeaders says whether responses must carry the X-Kubernetes-PF-*
	// headers.
	pfHeaders bool
	// build returns next behind the implementation's filter chain and a
	// function releasing what it started.
	build func(tb testing.TB, next http.Handler) (http.Handler, func())
}

// filterImpls are the implementations the filter scenarios compare. apf
// joins them from filter_apf_bench_test.go.
var filterImpls = []filterImpl{
	{name: "upstream", pfHeaders: true, build: buildUpstreamFilter},
	{name: "semaphore", build: buildSemaphoreFilter},
}

// bareImpl is the unfiltered handler, a baseline for http-loopback only.
var bareImpl = filterImpl{
	name:  "bare",
	build: func(_ testing.TB, next http.Handler) (http.Handler, func()) { return next, func() {} },
}

// headersImpl sets both PF headers to fixed values and does nothing else:
// the cost, in this rig, of the two headers the spec requires on every
// classified response, for both the server that writes them and the client
// that reads them.
var headersImpl = filterImpl{
	name:      "headers",
	pfHeaders: true,
	build: func(_ testing.TB, next http.Handler) (http.Handler, func()) {
		return withPFHeaders(next), func() {}
	},
}

// floorImpl adds the stand-in for authentication (the user put in the
// request context, where the upstream and apf chains find it) to
// headersImpl: what every APF filter in this rig pays before it admits
// anything.
var floorImpl = filterImpl{
	name:      "floor",
	pfHeaders: true,
	build: func(_ testing.TB, next http.Handler) (http.Handler, func()) {
		return withBenchUser(withPFHeaders(next)), func() {}
	},
}

// floorAgainImpl is floorImpl under another name, so that it is measured
// against the floor like an APF filter: its floor-ratio is the rig's own
// error, what a filter costing nothing would score on the same run.
var floorAgainImpl = filterImpl{
	name:      "floor-again",
	pfHeaders: true,
	build:     floorImpl.build,
}

// The PF header names as net/http keys them, canonicalized once rather
// than per request.
var (
	canonicalFlowSchemaUID    = http.CanonicalHeaderKey(headerFlowSchemaUID)
	canonicalPriorityLevelUID = http.CanonicalHeaderKey(headerPriorityLevelUID)
)

// withPFHeaders sets both PF headers to the values apf and upstream send
// for the benchmark's request, with values shared by every request.
func withPFHeaders(next http.Handler) http.Handler {
	fs := []string{"uid-fs-global-default"}
	pl := []string{"uid-pl-global-default"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h[canonicalFlowSchemaUID] = fs
		h[canonicalPriorityLevelUID] = pl
		next.ServeHTTP(w, r)
	})
}

// withBenchUser stands in for authentication: it puts benchUser in the
// request context, where upstream's filters look for the user.
func withBenchUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(apirequest.WithUser(r.Context(), benchUser)))
	})
}

// withUpstreamRequestInfo is the outermost layer of the upstream and
// semaphore chains: request info, then the user.
func withUpstreamRequestInfo(next http.Handler) http.Handler {
	return genericapifilters.WithRequestInfo(withBenchUser(next), upstreamRequestInfoFactory)
}

// buildUpstreamFilter assembles upstream's chain as kube-apiserver does
// with APF enabled: request info, authentication (the stand-in), then
// WithPriorityAndFairness with upstream's work estimator, in front of next.
func buildUpstreamFilter(tb testing.TB, next http.Handler) (http.Handler, func()) {
	tb.Helper()
	u, err := StartUpstream(UpstreamConfig{
		FlowSchemas:    upstreamFlowSchemas(),
		PriorityLevels: upstreamPriorityLevels(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	ctl := u.Controller()
	// No object counts are known (every list would get the default
	// estimate) and no watch is interested in anything; the benchmark's
	// GET needs neither.
	noCount := func(string) (storage.Stats, error) {
		return storage.Stats{}, fcrequest.ObjectCountNotFoundErr
	}
	noWatchers := func(*apirequest.RequestInfo) int { return 0 }
	estimator := fcrequest.NewWorkEstimator(noCount, noWatchers, fcrequest.DefaultWorkEstimatorConfig(), ctl.GetMaxSeats)
	// kube-apiserver passes a quarter of its 60 s request timeout.
	const waitLimit = 15 * time.Second
	apf := genericfilters.WithPriorityAndFairness(next, upstreamLongRunning, ctl, estimator, waitLimit)
	return withUpstreamRequestInfo(apf), u.Stop
}

// semaphoreFilter is the plainest limiter: a fixed number of slots, no
// classification, no queue. It follows the shape of a max-in-flight
// filter: it needs request info and a user, lets long-running requests
// through, and when full serves system:masters anyway and refuses anyone
// else with a 429.
type semaphoreFilter struct {
	slots chan struct{}
	next  http.Handler
}

func buildSemaphoreFilter(_ testing.TB, next http.Handler) (http.Handler, func()) {
	f := &semaphoreFilter{slots: make(chan struct{}, semaphoreSlots), next: next}
	return withUpstreamRequestInfo(f), func() {}
}

func (f *semaphoreFilter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ri, okInfo := apirequest.RequestInfoFrom(ctx)
	u, okUser := apirequest.UserFrom(ctx)
	if !okInfo || !okUser {
		http.Error(w, "no request info or user", http.StatusInternalServerError)
		return
	}
	if upstreamLongRunning(r, ri) {
		f.next.ServeHTTP(w, r)
		return
	}
	select {
	case f.slots <- struct{}{}:
		defer func() { <-f.slots }()
	default:
		privileged := false
		for _, g := range u.GetGroups() {
			if g == user.SystemPrivilegedGroup {
				privileged = true
				break
			}
		}
		if !privileged {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
			return
		}
	}
	f.next.ServeHTTP(w, r)
}

// discardWriter is the ResponseWriter of the in-process scenarios, the
// same for every implementation: it keeps the status and the headers and
// throws the body away, so that the writer itself costs next to nothing.
type discardWriter struct {
	header http.Header
	status int
}

func newDiscardWriter() *discardWriter { return &discardWriter{header: make(http.Header, 4)} }

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}

// code is the status the client would see: 200 if nothing was written.
func (w *discardWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// reset makes the writer ready for the next request.
func (w *discardWriter) reset() {
	clear(w.header)
	w.status = 0
}

// newFilterRequest is the benchmark's request, made once per goroutine and
// reused: the filters derive their own copies with WithContext. Its context
// can be cancelled (it ends with the test), as a server's request context
// can, so that filters deriving wait contexts from it pay for that as they
// would in a server.
func newFilterRequest(tb testing.TB) *http.Request {
	return httptest.NewRequestWithContext(tb.Context(), http.MethodGet, filterPath, nil)
}

// checkFilterResponse fails unless a response has status 200 and, when
// pfHeaders, both X-Kubernetes-PF-* headers.
func checkFilterResponse(tb testing.TB, im filterImpl, status int, h http.Header) {
	tb.Helper()
	if status != http.StatusOK {
		tb.Fatalf("%s: status %d, want 200", im.name, status)
	}
	if !im.pfHeaders {
		return
	}
	for _, k := range []string{headerFlowSchemaUID, headerPriorityLevelUID} {
		if _, ok := h[http.CanonicalHeaderKey(k)]; !ok {
			tb.Fatalf("%s: response lacks %s (headers %v)", im.name, k, h)
		}
	}
}

// serveOnce sends one filterPath request through h, checks the response,
// and returns its headers.
func serveOnce(tb testing.TB, im filterImpl, h http.Handler) http.Header {
	tb.Helper()
	w := newDiscardWriter()
	h.ServeHTTP(w, newFilterRequest(tb))
	checkFilterResponse(tb, im, w.code(), w.header)
	return w.header
}

// filterChains builds each implementation's chain at most once, on first
// use, and releases them all at the end.
type filterChains struct {
	built map[string]http.Handler
	stops []func()
}

func (c *filterChains) get(tb testing.TB, im filterImpl) http.Handler {
	tb.Helper()
	if h, ok := c.built[im.name]; ok {
		return h
	}
	h, stop := im.build(tb, noopHandler)
	if c.built == nil {
		c.built = map[string]http.Handler{}
	}
	c.built[im.name] = h
	c.stops = append(c.stops, stop)
	return h
}

func (c *filterChains) stop() {
	for _, s := range c.stops {
		s()
	}
	c.built, c.stops = nil, nil
}

// benchFilters runs the filter scenarios under BenchmarkPeer: filter-*
// in-process for each filter implementation, http-loopback also for the
// bare handler and the headers and floor baselines.
func benchFilters(b *testing.B) {
	var chains filterChains
	before := runtime.NumGoroutine()
	defer func() {
		chains.stop()
		if !waitFor(func() bool { return runtime.NumGoroutine() <= before }) {
			b.Errorf("filter scenarios left %d goroutines behind", runtime.NumGoroutine()-before)
		}
	}()
	scenarios := []struct {
		name  string
		impls []filterImpl
		run   func(*testing.B, filterImpl, http.Handler)
	}{
		{"filter-uncontended", filterImpls, benchFilterUncontended},
		{"filter-parallel", filterImpls, benchFilterParallel},
		{"http-loopback", append([]filterImpl{bareImpl, headersImpl, floorImpl, floorAgainImpl}, filterImpls...), benchHTTPLoopback},
	}
	for _, sc := range scenarios {
		b.Run(sc.name, func(b *testing.B) {
			for _, im := range sc.impls {
				b.Run(im.name, func(b *testing.B) { sc.run(b, im, chains.get(b, im)) })
			}
		})
	}
}

// benchFilterUncontended: one goroutine sends the request through the chain
// again and again; nothing ever waits.
func benchFilterUncontended(b *testing.B, im filterImpl, h http.Handler) {
	serveOnce(b, im, h)
	w := newDiscardWriter()
	r := newFilterRequest(b)
	b.ReportAllocs()
	for b.Loop() {
		w.reset()
		h.ServeHTTP(w, r)
		if w.status != 0 && w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
}

// benchFilterParallel: as uncontended, from GOMAXPROCS goroutines at once;
// the 600 seats (20 of them global-default's nominal share, more by
// borrowing) are never all taken.
func benchFilterParallel(b *testing.B, im filterImpl, h http.Handler) {
	serveOnce(b, im, h)
	var failed atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := newDiscardWriter()
		r := newFilterRequest(b)
		for pb.Next() {
			w.reset()
			h.ServeHTTP(w, r)
			if w.status != 0 && w.status != http.StatusOK {
				failed.Add(1)
			}
		}
	})
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d requests failed", n)
	}
}

// loopbackBurst is how many requests the http-loopback scenario sends
// through one server before switching to the other: 16 per client.
const loopbackBurst = 16 * loopbackClients

// benchHTTPLoopback serves the chain on 127.0.0.1 and has loopbackClients
// keep-alive clients share b.N requests, each client sending its next
// request as soon as the previous response is read; connections are opened
// (and a response checked) before the timer starts. It reports req/s.
//
// Throughput over loopback swings with whatever else the machine does, so
// for a filtered chain it also serves b.N requests through an unfiltered
// server of its own, in alternating bursts of loopbackBurst requests with
// the timer stopped during the unfiltered ones, and reports bare-ratio:
// the filtered chain's throughput over the unfiltered one's, both measured
// under the same conditions. An APF filter (one that sends the PF headers,
// other than the baselines) is measured the same way against the floor
// baseline too, floor-ratio: what it keeps of what any APF filter in this
// rig could keep.
func benchHTTPLoopback(b *testing.B, im filterImpl, h http.Handler) {
	rig := newLoopbackRig(b, im, h)
	defer rig.close()
	var bare, floor *loopbackRig
	if im.name != bareImpl.name {
		bare = newLoopbackRig(b, bareImpl, noopHandler)
		defer bare.close()
	}
	if im.pfHeaders && im.name != headersImpl.name && im.name != floorImpl.name {
		fh, stop := floorImpl.build(b, noopHandler)
		defer stop()
		floor = newLoopbackRig(b, floorImpl, fh)
		defer floor.close()
	}
	// The rigs take turns going first, so that none of them always runs
	// right after another one's burst (whose garbage, timers and parked
	// connections it would otherwise be the one to meet).
	var took, bareTook, floorTook time.Duration
	turns := []func(n int){func(n int) {
		b.StartTimer()
		took += rig.burst(b, n)
		b.StopTimer()
	}}
	if bare != nil {
		turns = append(turns, func(n int) { bareTook += bare.burst(b, n) })
	}
	if floor != nil {
		turns = append(turns, func(n int) { floorTook += floor.burst(b, n) })
	}
	b.ResetTimer()
	b.StopTimer()
	for i, left := 0, b.N; left > 0; i++ {
		n := min(left, loopbackBurst)
		left -= n
		for k := range turns {
			turns[(i+k)%len(turns)](n)
		}
	}
	b.ReportMetric(float64(b.N)/took.Seconds(), "req/s")
	if bare != nil {
		b.ReportMetric(bareTook.Seconds()/took.Seconds(), "bare-ratio")
	}
	if floor != nil {
		b.ReportMetric(floorTook.Seconds()/took.Seconds(), "floor-ratio")
	}
}

// loopbackRig is an httptest server on 127.0.0.1 and a client transport
// keeping loopbackClients connections to it alive.
type loopbackRig struct {
	im     filterImpl
	srv    *httptest.Server
	tr     *http.Transport
	client *http.Client
	url    string
}

// newLoopbackRig starts a server in front of h and opens the clients'
// connections with one concurrent round of requests, each checked: status
// 200 and, when im.pfHeaders, both X-Kubernetes-PF-* headers.
func newLoopbackRig(tb testing.TB, im filterImpl, h http.Handler) *loopbackRig {
	tb.Helper()
	srv := httptest.NewServer(h)
	tr := &http.Transport{
		MaxIdleConns:        2 * loopbackClients,
		MaxIdleConnsPerHost: 2 * loopbackClients,
		DisableCompression:  true,
		IdleConnTimeout:     time.Minute,
	}
	rig := &loopbackRig{
		im:     im,
		srv:    srv,
		tr:     tr,
		client: &http.Client{Transport: tr, Timeout: 30 * time.Second},
		url:    srv.URL + filterPath,
	}
	var (
		wg      sync.WaitGroup
		warmErr atomic.Pointer[string]
	)
	fail := func(msg string) { warmErr.CompareAndSwap(nil, &msg) }
	for range loopbackClients {
		wg.Go(func() {
			status, hdr := rig.do()
			switch {
			case status != http.StatusOK:
				fail(im.name + ": warm-up request failed")
			case im.pfHeaders && (hdr.Values(headerFlowSchemaUID) == nil || hdr.Values(headerPriorityLevelUID) == nil):
				fail(im.name + ": response lacks the X-Kubernetes-PF-* headers")
			}
		})
	}
	wg.Wait()
	if msg := warmErr.Load(); msg != nil {
		rig.close()
		tb.Fatal(*msg)
	}
	return rig
}

// do sends one request and reads the whole response; it reports the
// status and headers, or status 0 on a transport error.
func (r *loopbackRig) do() (int, http.Header) {
	req, err := http.NewRequest(http.MethodGet, r.url, nil)
	if err != nil {
		return 0, nil
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header
}

// burst has loopbackClients clients send n requests in all, each sending
// its next as soon as it has read the previous response, and returns how
// long that took. Every request must get a 200.
func (r *loopbackRig) burst(tb testing.TB, n int) time.Duration {
	tb.Helper()
	var (
		next, failed atomic.Int64
		wg           sync.WaitGroup
	)
	t0 := time.Now()
	for range min(n, loopbackClients) {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if status, _ := r.do(); status != http.StatusOK {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(t0)
	if f := failed.Load(); f > 0 {
		tb.Fatalf("%s: %d of %d requests failed", r.im.name, f, n)
	}
	return took
}

// close shuts the server and the client's connections down.
func (r *loopbackRig) close() {
	r.tr.CloseIdleConnections()
	r.srv.Close()
}

// TestFilterChains checks, cheaply, what the filter benchmarks rely on:
// each chain answers the benchmark request with 200 and, for the APF
// implementations, the two X-Kubernetes-PF-* headers, carrying the UIDs of
// the configured global-default objects (not imagined ones); and a
// few requests over loopback succeed.
func TestFilterChains(t *testing.T) {
	var chains filterChains
	defer chains.stop()
	for _, im := range append([]filterImpl{bareImpl}, filterImpls...) {
		t.Run(im.name, func(t *testing.T) {
			h := chains.get(t, im)
			hdr := serveOnce(t, im, h)
			if im.pfHeaders {
				if got, want := hdr.Get(headerFlowSchemaUID), "uid-fs-global-default"; got != want {
					t.Errorf("flow schema UID %q, want %q", got, want)
				}
				if got, want := hdr.Get(headerPriorityLevelUID), "uid-pl-global-default"; got != want {
					t.Errorf("priority level UID %q, want %q", got, want)
				}
			}
			rig := newLoopbackRig(t, im, h)
			defer rig.close()
			rig.burst(t, 2*loopbackClients)
		})
	}
}
