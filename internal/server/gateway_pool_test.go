package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/debug/console"
	"github.com/apfproject/apf/internal/proxy/pool"
)

// The pool test puts three upstream processes behind one gateway: the
// test binary itself, run again as TestPoolUpstreamProcess, so that a
// kill -9 is a real process dying with its connections.

const (
	poolMemberEnv    = "APF_TEST_POOL_MEMBER"
	poolAddrEnv      = "APF_TEST_POOL_ADDR"
	poolCollectorEnv = "APF_TEST_POOL_COLLECTOR"
	// poolService is how long a member takes to answer.
	poolService = 20 * time.Millisecond
)

// TestPoolUpstreamProcess is a member of the pool when run by
// startPoolMember; otherwise it does nothing. It reports every caller's
// request it serves to the test's collector before doing its work and again before
// answering, so the collector counts what the members execute together.
func TestPoolUpstreamProcess(t *testing.T) {
	id := os.Getenv(poolMemberEnv)
	if id == "" {
		t.Skip("a member of TestGatewayPoolKill9's pool")
	}
	collector := os.Getenv(poolCollectorEnv)
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; {
		// A restarted member takes its old port back.
		if ln, err = net.Listen("tcp", os.Getenv(poolAddrEnv)); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	report := func(what string) {
		resp, err := client.Get(collector + "/" + what + "?member=" + id)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/") {
			// The checks, and apf's probe of the upstream's discovery
			// (which APF does not admit: it is apf's, not a caller's).
			fmt.Fprint(w, "ok")
			return
		}
		report("enter")
		time.Sleep(poolService)
		report("leave")
		fmt.Fprintf(w, `{"kind":"Pod","member":%q}`, id)
	}))
	os.Exit(0)
}

// poolCollector counts the requests the members execute, together and
// each.
type poolCollector struct {
	mu      sync.Mutex
	now     int
	peak    int
	each    map[string]int // executing, by member
	served  map[string]int // entered since the start, by member
	ignored map[string]bool
}

func (c *poolCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := r.URL.Query().Get("member")
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ignored[m] {
		return
	}
	switch r.URL.Path {
	case "/enter":
		c.now++
		c.each[m]++
		c.served[m]++
		c.peak = max(c.peak, c.now)
	case "/leave":
		c.now--
		c.each[m]--
	}
}

// forget stops counting member m (about to be killed: what it executes
// never leaves), or starts again (restarted).
func (c *poolCollector) forget(m string, forget bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ignored[m] = forget
	c.now -= c.each[m]
	c.each[m] = 0
}

func (c *poolCollector) servedBy(m string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.served[m]
}

// poolMember is one member process.
type poolMember struct {
	id, addr string
	cmd      *exec.Cmd
	out      *strings.Builder
}

func startPoolMember(t *testing.T, id, addr, collector string) *poolMember {
	t.Helper()
	m := &poolMember{id: id, addr: addr, out: &strings.Builder{}}
	m.cmd = exec.Command(os.Args[0], "-test.run=^TestPoolUpstreamProcess$", "-test.count=1", "-test.timeout=10m")
	m.cmd.Env = append(os.Environ(), poolMemberEnv+"="+id, poolAddrEnv+"="+addr, poolCollectorEnv+"="+collector)
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	// The member dies with the test.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.kill)
	if err := waitFor(30*time.Second, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}); err != nil {
		t.Fatalf("member %s did not come up: %v\n%s", id, err, m.out)
	}
	return m
}

// kill sends SIGKILL and reaps the process.
func (m *poolMember) kill() {
	if m.cmd.ProcessState != nil {
		return
	}
	_ = m.cmd.Process.Kill()
	_ = m.cmd.Wait()
}

// freeAddr is a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// poolConfig gives the group "clients" a level of nearly the whole server
// limit (1000 shares beside the built-in levels' 245: 7 seats of 8),
// distinguished by user, queuing rather than rejecting. It does not
// borrow: the levels' nominal limits are rounded up, and with borrowing a
// level alone can take more than the server limit when it is this small
// (kube-apiserver's arithmetic).
const poolConfig = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: pool-load}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1000
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse:
      type: Queue
      queuing: {queues: 16, handSize: 4, queueLengthLimit: 50}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: pool-load}
spec:
  priorityLevelConfiguration: {name: pool-load}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: clients}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
`

// TestGatewayPoolKill9: three member processes behind one gateway under
// load. Killing one with SIGKILL fails only the requests in flight on it
// (at most those the gateway had sent it); the other two take its share at
// once, with no failure from one health-check interval on; it is back in
// the pool, serving, once restarted; and the members together never
// execute more requests than the server's concurrency limit.
func TestGatewayPoolKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes and a gateway")
	}
	col := &poolCollector{each: map[string]int{}, served: map[string]int{}, ignored: map[string]bool{}}
	colSrv := httptest.NewServer(col)
	defer colSrv.Close()

	ids := []string{"a", "b", "c"}
	members := map[string]*poolMember{}
	var urls []string
	for _, id := range ids {
		members[id] = startPoolMember(t, id, freeAddr(t), colSrv.URL)
		urls = append(urls, "http://"+members[id].addr)
	}

	const interval = 500 * time.Millisecond
	const limit = 8
	cfgDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(cfgDir, "pool.yaml"), []byte(poolConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	users := []string{"u1", "u2", "u3", "u4"}
	gw := startGateway(t, strings.Join(urls, ","), gatewayTokens(t, users...), func(o *Options) {
		o.InsecureHTTP = true
		o.ConfigDir = cfgDir
		o.MaxRequestsInflight, o.MaxMutatingRequestsInflight = limit-2, 2
		o.UpstreamHealthCheck = pool.HealthCheck{Path: "/healthz", Interval: interval, Timeout: interval / 2, HealthyThreshold: 2, UnhealthyThreshold: 2}
	})
	gw.client.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
	p := gw.server.pools()[0]
	member := func(id string) pool.Member {
		for _, m := range p.Members() {
			if m.Upstream == "http://"+members[id].addr {
				return m
			}
		}
		t.Fatalf("no member %s in %+v", id, p.Members())
		return pool.Member{}
	}

	// Load: 16 workers, four users, each sending its next request when
	// the last is answered.
	var ok, failed atomic.Int64
	var failMu sync.Mutex
	var failures []string
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		user := users[w%len(users)]
		wg.Go(func() {
			for ctx.Err() == nil {
				code, _, body := gw.do(http.MethodGet, "/api/v1/namespaces/default/pods/p", "token-"+user, nil)
				if code == http.StatusOK {
					ok.Add(1)
					continue
				}
				if ctx.Err() != nil {
					return
				}
				failed.Add(1)
				failMu.Lock()
				failures = append(failures, fmt.Sprintf("%d %.200s", code, body))
				failMu.Unlock()
			}
		})
	}
	defer func() { stop(); wg.Wait() }()

	if err := waitFor(30*time.Second, func() bool {
		return col.servedBy("a") >= 30 && col.servedBy("b") >= 30 && col.servedBy("c") >= 30
	}); err != nil {
		t.Fatalf("the members did not all serve: a %d, b %d, c %d (ok %d, failed %d)", col.servedBy("a"), col.servedBy("b"), col.servedBy("c"), ok.Load(), failed.Load())
	}
	if n := failed.Load(); n != 0 {
		t.Fatalf("%d requests failed before any member was killed: %v", n, failures)
	}
	rateStart, okStart := time.Now(), ok.Load()
	time.Sleep(time.Second)
	rateBefore := float64(ok.Load()-okStart) / time.Since(rateStart).Seconds()

	// Kill b. In flight on it at the kill: what the gateway had
	// outstanding there just before, and whatever got a connection to it
	// until it was dead and reaped.
	before := member("b")
	col.forget("b", true)
	members["b"].kill()
	time.Sleep(50 * time.Millisecond) // its connections' ends reach the gateway
	after := member("b")
	inFlight := before.Outstanding + int(after.Sent-before.Sent)
	killedAt := time.Now()

	// From one interval (plus slack for a busy machine) on, nothing fails
	// and the other two carry the load.
	time.Sleep(interval + 2*time.Second)
	failedAtKill := failed.Load()
	if failedAtKill > int64(inFlight) {
		t.Errorf("%d requests failed with b killed, more than the %d in flight on it: %v", failedAtKill, inFlight, failures)
	}
	t.Logf("killed b with %d in flight on it (%d outstanding, %d sent while it died); %d requests failed", inFlight, before.Outstanding, after.Sent-before.Sent, failedAtKill)
	windowStart, okWindow := time.Now(), ok.Load()
	servedA, servedC := col.servedBy("a"), col.servedBy("c")
	time.Sleep(2 * time.Second)
	rateAfter := float64(ok.Load()-okWindow) / time.Since(windowStart).Seconds()
	if n := failed.Load() - failedAtKill; n != 0 {
		t.Errorf("%d requests failed from %s after the kill on: %v", n, time.Since(killedAt).Round(time.Millisecond), failures)
	}
	if col.servedBy("a") == servedA || col.servedBy("c") == servedC {
		t.Errorf("a and c did not both serve with b dead")
	}
	// The share moves: the throughput stays of the same order (the
	// server limit, not the members, bounds it).
	if rateAfter < 0.3*rateBefore {
		t.Errorf("with b dead the gateway answered %.0f/s, against %.0f/s before", rateAfter, rateBefore)
	}
	t.Logf("answered %.0f/s before the kill, %.0f/s after", rateBefore, rateAfter)
	if m := member("b"); m.Healthy {
		t.Errorf("b dead for %s and still in the pool: %+v", time.Since(killedAt), m)
	}

	// Restart b on its address: it rejoins and serves.
	col.forget("b", false)
	servedB := col.servedBy("b")
	members["b"] = startPoolMember(t, "b", members["b"].addr, colSrv.URL)
	restarted := time.Now()
	if err := waitFor(2*interval+20*time.Second, func() bool { return col.servedBy("b") >= servedB+20 }); err != nil {
		t.Fatalf("b did not rejoin: %+v", p.Members())
	}
	t.Logf("b served again %s after its restart", time.Since(restarted).Round(time.Millisecond))
	stop()
	wg.Wait()
	if n := failed.Load() - failedAtKill; n != 0 {
		t.Errorf("%d requests failed after the kill's: %v", n, failures)
	}
	col.mu.Lock()
	peak := col.peak
	col.mu.Unlock()
	if peak > limit {
		t.Errorf("the members executed %d requests at once, more than the server limit %d", peak, limit)
	}
	if peak < 3 {
		t.Errorf("the members never executed more than %d at once: the load did not load", peak)
	}
	t.Logf("peak executing on the members together: %d (limit %d); answered %d, failed %d", peak, limit, ok.Load(), failed.Load())
}

// --upstream takes several URLs, comma-separated or repeated, and the
// pool's check flags fill UpstreamHealthCheck and UpstreamEjection.
func TestUpstreamPoolFlags(t *testing.T) {
	o, err := parseServeFlags(t, "--data-dir", "/d",
		"--upstream", "https://a:6443, https://b:6443", "--upstream=https://c:6443",
		"--upstream-health-path=/readyz", "--upstream-health-interval=2s", "--upstream-health-timeout=500ms",
		"--upstream-healthy-threshold=3", "--upstream-unhealthy-threshold=4",
		"--upstream-ejection-failures=7", "--upstream-ejection-duration=1m")
	if err != nil {
		t.Fatal(err)
	}
	if got := o.upstreams(); !slices.Equal(got, []string{"https://a:6443", "https://b:6443", "https://c:6443"}) {
		t.Errorf("upstreams %q (from %q)", got, o.Upstream)
	}
	wantHC := pool.HealthCheck{Path: "/readyz", Interval: 2 * time.Second, Timeout: 500 * time.Millisecond, HealthyThreshold: 3, UnhealthyThreshold: 4}
	if o.UpstreamHealthCheck != wantHC || o.UpstreamEjection != (pool.Ejection{ConsecutiveFailures: 7, Duration: time.Minute}) {
		t.Errorf("checks %+v, ejection %+v", o.UpstreamHealthCheck, o.UpstreamEjection)
	}
	// One URL is today's --upstream.
	if o, err := parseServeFlags(t, "--upstream", "https://k:6443"); err != nil || o.Upstream != "https://k:6443" {
		t.Errorf("one upstream: %v %q", err, o.Upstream)
	}
	// Every URL is checked, and the pool refuses members that do not
	// serve one API.
	for _, tc := range []struct{ upstream, want string }{
		{"https://a:6443,ftp://b", `--upstream "ftp://b"`},
		{"https://a:6443,http://b:6443", "one scheme and path prefix"},
		{"https://a:6443,https://a:6443", "listed twice"},
	} {
		opts := DefaultOptions()
		opts.DataDir = filepath.Join(t.TempDir(), "data")
		opts.Upstream = tc.upstream
		opts.Logger = slog.New(slog.DiscardHandler)
		_, err := New(context.Background(), opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--upstream %s: %v, want an error with %q", tc.upstream, err, tc.want)
		}
	}
}

// The pool's dump is served beside the APF dumps, to whom may read them,
// and its metrics are in /metrics: a member that refuses connections
// costs the callers nothing.
func TestGatewayPoolDumpAndMetrics(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"kind":"Pod"}`) }))
	defer up.Close()
	dead := "http://" + freeAddr(t)
	gw := startGateway(t, up.URL+","+dead, gatewayTokens(t), nil)
	for i := 0; i < 20; i++ {
		if code, _, body := gw.do(http.MethodGet, "/api/v1/namespaces/default/pods/p", adminToken, nil); code != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, code, body)
		}
	}
	code, _, body := gw.do(http.MethodGet, pool.DumpPath, adminToken, nil)
	if code != http.StatusOK || !strings.HasPrefix(string(body), "PoolName,") || !strings.Contains(string(body), up.URL) || !strings.Contains(string(body), dead) {
		t.Errorf("dump: %d\n%s", code, body)
	}
	for _, token := range []string{readerToken, carolToken, ""} {
		want, _, _ := gw.do(http.MethodGet, "/debug/api_priority_and_fairness/dump_priority_levels", token, nil)
		if got, _, _ := gw.do(http.MethodGet, pool.DumpPath, token, nil); got != want {
			t.Errorf("token %q: the pools' dump answers %d, the priority levels' %d", token, got, want)
		}
	}
	// The console lists the members.
	code, _, body = gw.do(http.MethodGet, console.PathPrefix+"state", adminToken, nil)
	var st console.State
	if err := json.Unmarshal(body, &st); code != http.StatusOK || err != nil || len(st.Upstreams) != 2 ||
		st.Upstreams[0].Upstream != up.URL || !st.Upstreams[0].Healthy || st.Upstreams[0].Dispatched == 0 || st.Upstreams[1].Upstream != dead {
		t.Errorf("console state: %d %v %+v", code, err, st.Upstreams)
	}
	_, _, metrics := gw.do(http.MethodGet, "/metrics", adminToken, nil)
	for _, want := range []string{
		fmt.Sprintf(`apf_upstream_requests_total{code="200",pool="default",upstream=%q} `, up.URL),
		fmt.Sprintf(`apf_upstream_errors_total{pool="default",reason="unreachable",upstream=%q}`, dead),
		fmt.Sprintf(`apf_upstream_healthy{pool="default",upstream=%q} 1`, up.URL),
		fmt.Sprintf(`apf_upstream_outstanding_requests{pool="default",upstream=%q} 0`, up.URL),
		`apf_upstream_response_latency_seconds_bucket{pool="default",upstream=`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// A member taken out of the pool while it runs a request drains: the
// request runs to its end and is answered, through a shutdown that
// leaves it its grace period; the pool's checks stop with the server.
func TestGatewayPoolDrains(t *testing.T) {
	release := make(chan struct{})
	var failing sync.Map // member URL → its checks fail
	var started sync.Map // member URL → a /slow request started there
	member := func() *httptest.Server {
		var srv *httptest.Server
		srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/healthz":
				if _, bad := failing.Load(srv.URL); bad {
					w.WriteHeader(http.StatusServiceUnavailable)
				}
			case "/slow":
				started.Store(srv.URL, true)
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
			}
			fmt.Fprint(w, "done")
		}))
		return srv
	}
	a, b := member(), member()
	defer a.Close()
	defer b.Close()
	defer close(release)
	gw := startGateway(t, a.URL+","+b.URL, gatewayTokens(t, "carol"), func(o *Options) {
		o.ShutdownTimeout = 10 * time.Second
		o.UpstreamHealthCheck = pool.HealthCheck{Path: "/healthz", Interval: 50 * time.Millisecond, Timeout: 25 * time.Millisecond, HealthyThreshold: 1, UnhealthyThreshold: 1}
	})
	got := make(chan int, 1)
	go func() {
		code, _, _ := gw.do(http.MethodGet, "/slow", "token-carol", nil)
		got <- code
	}()
	var busy string
	if err := waitFor(5*time.Second, func() bool {
		for _, u := range []string{a.URL, b.URL} {
			if _, ok := started.Load(u); ok {
				busy = u
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal("the slow request never started")
	}
	// Its member fails its checks: out of the pool, it keeps the request.
	failing.Store(busy, true)
	p := gw.server.pools()[0]
	if err := waitFor(10*time.Second, func() bool {
		for _, m := range p.Members() {
			if m.Upstream == busy {
				return m.CheckedOut && m.Outstanding == 1
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the busy member was not taken out with its request: %+v", p.Members())
	}
	stopped := make(chan struct{})
	go func() { gw.stop(); close(stopped) }()
	time.Sleep(200 * time.Millisecond) // well inside the grace period
	release <- struct{}{}
	select {
	case code := <-got:
		if code != http.StatusOK {
			t.Errorf("the request on the member taken out got %d, want 200", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the request in flight got no answer")
	}
	select {
	case <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not stop")
	}
}

// In impersonate mode the active checks go with apf's token, as every
// request does: an upstream whose health path wants it keeps the member
// in. (In passthrough mode they go with nothing of apf's.)
func TestGatewayPoolChecksAsApf(t *testing.T) {
	var checks, withToken atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			checks.Add(1)
			if r.Header.Get("Authorization") != "Bearer apf-own-token" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			withToken.Add(1)
		}
		fmt.Fprint(w, "ok")
	}))
	defer up.Close()
	token := filepath.Join(t.TempDir(), "apf-token")
	if err := os.WriteFile(token, []byte("apf-own-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, identity := range []string{"impersonate", "passthrough"} {
		checks.Store(0)
		withToken.Store(0)
		gw := startGateway(t, up.URL+","+"http://"+freeAddr(t), gatewayTokens(t), func(o *Options) {
			o.UpstreamIdentity = identity
			if identity == "impersonate" {
				o.UpstreamTokenFile = token
			}
			o.UpstreamHealthCheck = pool.HealthCheck{Path: "/healthz", Interval: 50 * time.Millisecond, Timeout: 25 * time.Millisecond, HealthyThreshold: 1, UnhealthyThreshold: 1}
		})
		if err := waitFor(10*time.Second, func() bool { return checks.Load() >= 3 }); err != nil {
			t.Fatalf("%s: no checks", identity)
		}
		m := gw.server.pools()[0].Members()[0]
		switch identity {
		case "impersonate":
			// Every check carried the token, so none was refused; a
			// check that a busy machine made time out may still have
			// taken the member out for a while, which is not the point.
			if withToken.Load() != checks.Load() || m.LastCheck == "401" {
				t.Errorf("impersonate: %d of %d checks with apf's token; member %+v", withToken.Load(), checks.Load(), m)
			}
		case "passthrough":
			if withToken.Load() != 0 {
				t.Errorf("passthrough: %d checks went with apf's token", withToken.Load())
			}
		}
		gw.stop()
	}
}
