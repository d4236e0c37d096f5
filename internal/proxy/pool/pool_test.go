package pool

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/apfproject/apf/internal/proxy/wire"
)

// upstream is a stand-in member that counts what it gets.
type upstream struct {
	*httptest.Server
	hits    atomic.Int64
	handler atomic.Value // http.HandlerFunc
}

func newUpstream(t *testing.T, h http.HandlerFunc) *upstream {
	t.Helper()
	u := &upstream{}
	u.handler.Store(h)
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			u.hits.Add(1)
		}
		u.handler.Load().(http.HandlerFunc)(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

func ok(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	fmt.Fprintf(w, "%s %s", r.URL.Path, b)
}

// refusing is the URL of a port nothing listens on.
func refusing(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// testTransport makes the transport of newPool's pools.
var testTransport = func() http.RoundTripper { return &http.Transport{} }

func newPool(t *testing.T, o Options, reg prometheus.Registerer) *Pool {
	t.Helper()
	if o.Name == "" {
		o.Name = "test"
	}
	env := Env{Transport: testTransport()}
	if reg != nil {
		m, err := NewMetrics(reg)
		if err != nil {
			t.Fatal(err)
		}
		env.Metrics = m
	}
	p, err := New(o, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func get(t *testing.T, p *Pool, path string, body string) (*http.Response, error) {
	t.Helper()
	method := http.MethodGet
	if body != "" {
		method = http.MethodPost
	}
	req, err := http.NewRequest(method, "http://pool"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Body, req.ContentLength = &serverBody{r: strings.NewReader(body)}, int64(len(body))
	}
	return p.RoundTrip(req)
}

// serverBody is a request body as a server hands it over: once closed,
// it cannot be read.
type serverBody struct {
	mu     sync.Mutex
	r      io.Reader
	closed bool
}

func (b *serverBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errors.New("read on a closed body")
	}
	return b.r.Read(p)
}

func (b *serverBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewRefusesBadOptions(t *testing.T) {
	tr := Env{Transport: &http.Transport{}}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Upstreams: []string{"http://a"}}, "needs a name"},
		{Options{Name: "p"}, "no upstreams"},
		{Options{Name: "p", Upstreams: []string{"ftp://a"}}, "http:// or https://"},
		{Options{Name: "p", Upstreams: []string{"http://a", "http://a"}}, "listed twice"},
		{Options{Name: "p", Upstreams: []string{"http://a", "https://b"}}, "one scheme and path prefix"},
		{Options{Name: "p", Upstreams: []string{"http://a/x", "http://b/y"}}, "one scheme and path prefix"},
		{Options{Name: "p", Upstreams: []string{"http://a"}, HealthCheck: &HealthCheck{}}, "must start with /"},
		{Options{Name: "p", Upstreams: []string{"http://a"}, HealthCheck: &HealthCheck{Path: "/h", Interval: time.Second, Timeout: 2 * time.Second}}, "exceeds its interval"},
		{Options{Name: "p", Upstreams: []string{"http://a"}, Ejection: &Ejection{ConsecutiveFailures: -1}}, "must not be negative"},
	} {
		_, err := New(tc.o, tr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error with %q", tc.o, err, tc.want)
		}
	}
}

// A request goes to the member with the fewest outstanding requests: with
// one request held on each of two members, the next goes to the third.
func TestLeastOutstanding(t *testing.T) {
	release := make(chan struct{})
	hold := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-release
		}
	}
	us := []*upstream{newUpstream(t, hold), newUpstream(t, hold), newUpstream(t, hold)}
	defer close(release)
	p := newPool(t, Options{Upstreams: []string{us[0].URL, us[1].URL, us[2].URL}}, nil)
	for round := 0; round < 3; round++ {
		// Three held requests, one on each member whatever the ties.
		var held []*http.Response
		for i := 0; i < 3; i++ {
			resp, err := get(t, p, "/hold", "")
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, resp)
		}
		for _, m := range p.Members() {
			if m.Outstanding != 1 {
				t.Fatalf("round %d: outstanding %+v, want one held request on each member", round, p.Members())
			}
		}
		// Free the second member: the next requests all go there while
		// it has the fewest.
		held[1].Body.Close()
		var free string
		for _, m := range p.Members() {
			if m.Outstanding == 0 {
				free = m.Upstream
			}
		}
		resp, err := get(t, p, "/hold", "")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range p.Members() {
			if m.Upstream == free && m.Outstanding != 1 {
				t.Fatalf("round %d: the request did not go to the free member %s: %+v", round, free, p.Members())
			}
		}
		resp.Body.Close()
		held[0].Body.Close()
		held[2].Body.Close()
	}
	for _, m := range p.Members() {
		if m.Outstanding != 0 {
			t.Errorf("outstanding after every body closed: %+v", m)
		}
	}
}

// Ties are broken at random: sequential requests (never more than one
// outstanding) spread over every member.
func TestTiesSpread(t *testing.T) {
	us := []*upstream{newUpstream(t, ok), newUpstream(t, ok), newUpstream(t, ok)}
	p := newPool(t, Options{Upstreams: []string{us[0].URL, us[1].URL, us[2].URL}}, nil)
	for i := 0; i < 300; i++ {
		resp, err := get(t, p, "/x", "")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	for i, u := range us {
		if n := u.hits.Load(); n < 50 {
			t.Errorf("member %d got %d of 300 sequential requests, want a fair share", i, n)
		}
	}
}

// A member that refuses connections never got the request: it is sent to
// another member, body and all, and the caller sees no error.
func TestRetryWhenNeverReached(t *testing.T) {
	good := newUpstream(t, ok)
	reg := prometheus.NewRegistry()
	dead := refusing(t)
	p := newPool(t, Options{Upstreams: []string{dead, good.URL}}, reg)
	for i := 0; i < 50; i++ {
		resp, err := get(t, p, "/post", fmt.Sprintf("body-%d", i))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if got, want := readAll(t, resp), fmt.Sprintf("/post body-%d", i); got != want {
			t.Fatalf("request %d: the member got %q, want %q", i, got, want)
		}
	}
	if n := value(t, p.met.retries.WithLabelValues("test", dead)); n == 0 {
		t.Error("no retry counted for the refusing member")
	}
	if n := value(t, p.met.errs.WithLabelValues("test", dead, "unreachable")); n == 0 {
		t.Error("no unreachable error counted for the refusing member")
	}
}

// TestRetryWithAReachingTransport: the retry decisions hold with a
// transport that says itself whether a request was handed a connection
// (ReachRoundTripper, no client trace).
func TestRetryWithAReachingTransport(t *testing.T) {
	defer func(old func() http.RoundTripper) { testTransport = old }(testTransport)
	testTransport = func() http.RoundTripper { return &wire.Transport{} }
	if _, ok := testTransport().(ReachRoundTripper); !ok {
		t.Fatal("wire.Transport is not a ReachRoundTripper")
	}
	t.Run("never reached", TestRetryWhenNeverReached)
	t.Run("all refusing", TestAllRefusing)
	t.Run("once sent", TestNoRetryOnceSent)
}

// Every member refusing: the request fails with the last error, each
// member tried once.
func TestAllRefusing(t *testing.T) {
	p := newPool(t, Options{Upstreams: []string{refusing(t), refusing(t)}}, nil)
	if _, err := get(t, p, "/x", "body"); err == nil {
		t.Fatal("no error with every member refusing")
	}
	for _, m := range p.Members() {
		if m.Dispatched != 1 || m.Outstanding != 0 {
			t.Errorf("member %+v: want one attempt and nothing outstanding", m)
		}
	}
}

// A request that reached a member which then failed (its connection cut
// after the request was read) is never sent to another, whatever its
// method: it may have been executed.
func TestNoRetryOnceSent(t *testing.T) {
	cut := func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.Close()
		}
	}
	release := make(chan struct{})
	other := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-release
		}
	})
	defer close(release)
	cutter := newUpstream(t, cut)
	p := newPool(t, Options{Upstreams: []string{cutter.URL, other.URL}, Ejection: &Ejection{ConsecutiveFailures: 1000}}, nil)
	for _, body := range []string{"", "a body"} {
		// One request held on the other member, so that the cutter has
		// fewer. (A tie the cutter wins cuts the hold: try again.)
		var held *http.Response
		for held == nil {
			if resp, err := get(t, p, "/hold", ""); err == nil {
				held = resp
			}
		}
		before := other.hits.Load()
		resp, err := get(t, p, "/once", body)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("body %q: the cut request succeeded (%d)", body, resp.StatusCode)
		}
		if n := other.hits.Load() - before; n != 0 {
			t.Errorf("body %q: the request was sent again, to the other member, after it had reached the first", body)
		}
		held.Body.Close()
		cutter.hits.Store(0)
	}
}

// Connection errors and 5xx answers in a row eject a member: it gets no
// more requests for the ejection's duration; ejected, every member still
// takes requests rather than none.
func TestPassiveEjection(t *testing.T) {
	bad := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	good := newUpstream(t, ok)
	reg := prometheus.NewRegistry()
	p := newPool(t, Options{Upstreams: []string{bad.URL, good.URL}, Ejection: &Ejection{ConsecutiveFailures: 3, Duration: time.Hour}}, reg)
	for i := 0; i < 100; i++ {
		resp, err := get(t, p, "/x", "")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	if n := bad.hits.Load(); n != 3 {
		t.Errorf("the failing member got %d requests, want 3 (ejected after 3 failures in a row)", n)
	}
	ms := p.Members()
	if ms[0].Healthy || ms[0].EjectedUntil.IsZero() || ms[0].Ejections != 1 || !ms[1].Healthy {
		t.Errorf("members %+v: want the first ejected, the second healthy", ms)
	}
	if got := value(t, p.met.ejections.WithLabelValues("test", bad.URL)); got != 1 {
		t.Errorf("ejections counted: %v", got)
	}

	// A pool of one ejected member still sends it requests.
	one := newPool(t, Options{Name: "one", Upstreams: []string{bad.URL}, Ejection: &Ejection{ConsecutiveFailures: 1, Duration: time.Hour}}, nil)
	for i := 0; i < 3; i++ {
		resp, err := get(t, one, "/x", "")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusInternalServerError {
			t.Errorf("status %d", resp.StatusCode)
		}
		readAll(t, resp)
	}
}

// Active checks take a failing member out after the unhealthy threshold
// and bring it back after the healthy threshold.
func TestActiveChecks(t *testing.T) {
	var down atomic.Bool
	flaky := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" && down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		ok(w, r)
	})
	steady := newUpstream(t, ok)
	p := newPool(t, Options{Upstreams: []string{flaky.URL, steady.URL},
		HealthCheck: &HealthCheck{Path: "/healthz", Interval: 20 * time.Millisecond, Timeout: 10 * time.Millisecond, HealthyThreshold: 2, UnhealthyThreshold: 2}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 20 s: %+v", what, p.Members())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	down.Store(true)
	waitUntil("taken out", func() bool { return p.Members()[0].CheckedOut })
	before := flaky.hits.Load()
	for i := 0; i < 50; i++ {
		resp, err := get(t, p, "/x", "")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	if n := flaky.hits.Load() - before; n != 0 {
		t.Errorf("the member taken out got %d requests", n)
	}
	if m := p.Members()[0]; m.Healthy || m.LastCheck != "503" {
		t.Errorf("member taken out: %+v", m)
	}
	down.Store(false)
	waitUntil("back", func() bool { return p.Members()[0].Healthy })
	waitUntil("requests again", func() bool {
		resp, err := get(t, p, "/x", "")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		return flaky.hits.Load() > before
	})
}

// An upgraded connection is one round trip: its body stays writable, and
// the member counts it outstanding until it is closed.
func TestUpgradeHeldOnMember(t *testing.T) {
	echo := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprint(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
		brw.Flush()
		line, _ := brw.ReadString('\n')
		fmt.Fprint(brw, "echo "+line)
		brw.Flush()
	})
	other := newUpstream(t, ok)
	p := newPool(t, Options{Upstreams: []string{echo.URL, other.URL}}, nil)
	var conn io.ReadWriteCloser
	for conn == nil {
		req, _ := http.NewRequest(http.MethodGet, "http://pool/up", nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "test")
		resp, err := p.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusSwitchingProtocols {
			readAll(t, resp) // the tie went to the other member
			continue
		}
		rw, ok := resp.Body.(io.ReadWriteCloser)
		if !ok {
			t.Fatalf("the upgraded body %T is not writable", resp.Body)
		}
		conn = rw
	}
	if m := p.Members()[0]; m.Outstanding != 1 {
		t.Fatalf("the upgraded connection is not outstanding on its member: %+v", m)
	}
	fmt.Fprint(conn, "hello\n")
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || line != "echo hello\n" {
		t.Fatalf("through the upgraded connection: %q %v", line, err)
	}
	conn.Close()
	if m := p.Members()[0]; m.Outstanding != 0 {
		t.Errorf("closed, still outstanding: %+v", m)
	}
}

// The metrics follow Prometheus's naming rules, and the dump has a row per
// member in the APF dumps' format.
func TestMetricsAndDump(t *testing.T) {
	reg := prometheus.NewRegistry()
	u := newUpstream(t, ok)
	p := newPool(t, Options{Upstreams: []string{u.URL, refusing(t)}}, reg)
	for i := 0; i < 5; i++ {
		resp, err := get(t, p, "/x", "")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(families).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range problems {
		t.Errorf("metric %s: %s", pr.Metric, pr.Text)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	for _, n := range []string{MetricRequests, MetricLatency, MetricOutstanding, MetricHealthy} {
		if !names[n] {
			t.Errorf("metric %s missing", n)
		}
	}
	srv := httptest.NewServer(DumpHandler(func() []*Pool { return []*Pool{p} }))
	defer srv.Close()
	resp, err := http.Get(srv.URL + DumpPath)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	lines := strings.Split(strings.TrimSpace(body), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "PoolName,") || !strings.Contains(lines[1], u.URL) {
		t.Errorf("dump:\n%s", body)
	}
	if resp, _ := http.Post(srv.URL+DumpPath, "text/plain", bytes.NewReader(nil)); resp == nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST to the dump: %v", resp)
	}
	p.Close()
	families, _ = reg.Gather()
	for _, f := range families {
		if f.GetName() == MetricOutstanding || f.GetName() == MetricHealthy {
			t.Errorf("closed pool still has series of %s: %v", f.GetName(), f.GetMetric())
		}
	}
}

// Many requests at once over members that come and go: every outstanding
// count returns to zero (run with -race).
func TestConcurrentAccounting(t *testing.T) {
	us := []*upstream{newUpstream(t, ok), newUpstream(t, ok)}
	p := newPool(t, Options{Upstreams: []string{us[0].URL, us[1].URL, refusing(t)}}, nil)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for i := 0; i < 50; i++ {
				resp, err := get(t, p, "/x", "b")
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	for _, m := range p.Members() {
		if m.Outstanding != 0 {
			t.Errorf("outstanding left: %+v", m)
		}
	}
}

// value reads one counter's value.
func value(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue() + m.GetGauge().GetValue()
}
