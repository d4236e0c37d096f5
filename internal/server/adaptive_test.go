package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apfproject/apf/capacity"
	"github.com/apfproject/apf/internal/debug/console"
)

// --adaptive-concurrency-limit is off by default, parsed into its bounds,
// and refused at start-up where it cannot work: without --upstream (there
// is nothing to learn from) and without APF. With
// --shared-concurrency-limit it is taken (TestSharedAdaptiveLimit).
func TestAdaptiveConcurrencyLimitFlags(t *testing.T) {
	if o, _ := parseServeFlags(t); o.AdaptiveConcurrencyLimit != "" {
		t.Error("the adaptive limit is on by default")
	}
	o, err := parseServeFlags(t, "--upstream=http://127.0.0.1:1", "--adaptive-concurrency-limit=4:400")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.check(); err != nil {
		t.Fatalf("check: %v", err)
	}
	if c := o.adaptiveConfig; c == nil || c.Floor != 4 || c.Ceiling != 400 {
		t.Errorf("parsed bounds %+v, want 4:400", c)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--adaptive-concurrency-limit=4:400"}, "needs --upstream"},
		{[]string{"--upstream=http://127.0.0.1:1", "--adaptive-concurrency-limit=4:400", "--enable-priority-and-fairness=false"}, "needs --enable-priority-and-fairness"},
		{[]string{"--upstream=http://127.0.0.1:1", "--adaptive-concurrency-limit=400"}, `--adaptive-concurrency-limit "400": want FLOOR:CEILING`},
		{[]string{"--upstream=http://127.0.0.1:1", "--adaptive-concurrency-limit=8:4"}, "floor 8 and ceiling 4"},
	} {
		o, err := parseServeFlags(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: check = %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
	if o, err := parseServeFlags(t, "--upstream=http://127.0.0.1:1", "--adaptive-concurrency-limit=4:400", "--shared-concurrency-limit"); err != nil || o.check() != nil {
		t.Errorf("with --shared-concurrency-limit: %v, check %v", err, o.check())
	}
}

// What an answer of the proxy tells the adaptive limit.
func TestAdaptiveUpstreamOutcome(t *testing.T) {
	live := context.Background()
	deadline, cancel1 := context.WithDeadline(live, time.Now().Add(-time.Second))
	defer cancel1()
	gone, cancel2 := context.WithCancel(live)
	cancel2()
	for _, tc := range []struct {
		ctx  context.Context
		code int
		want capacity.Outcome
		ok   bool
	}{
		{live, http.StatusOK, capacity.Answered, true},
		{live, http.StatusNotFound, capacity.Answered, true},
		{live, http.StatusConflict, capacity.Answered, true},
		{live, http.StatusTooManyRequests, capacity.Overloaded, true},
		{live, http.StatusInternalServerError, capacity.Overloaded, true},
		{live, http.StatusBadGateway, capacity.Overloaded, true},
		{live, http.StatusServiceUnavailable, capacity.Overloaded, true},
		{live, http.StatusGatewayTimeout, capacity.TimedOut, true},
		{deadline, http.StatusGatewayTimeout, capacity.TimedOut, true},
		{gone, http.StatusServiceUnavailable, 0, false},
	} {
		got, ok := upstreamOutcome(tc.code, tc.ctx)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%d (context error %v): %v, %v; want %v, %v", tc.code, tc.ctx.Err(), got, ok, tc.want, tc.ok)
		}
	}
}

// kneeUpstream is an upstream with a capacity: knee workers, each
// answering in service; the requests beyond them queue inside it.
func kneeUpstream(t *testing.T, knee int, service time.Duration) *httptest.Server {
	workers := make(chan struct{}, knee)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case workers <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		time.Sleep(service)
		<-workers
		fmt.Fprint(w, `{"kind":"Pod"}`)
	}))
	t.Cleanup(up.Close)
	return up
}

// adaptiveLevelJSON is a Queue level with most of the server's shares
// (2000 beside the bootstrap levels' 245), one queue long enough for the
// whole load: its clients wait for seats instead of being refused.
const adaptiveLevelJSON = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration",
 "metadata":{"name":"shared"},
 "spec":{"type":"Limited","limited":{"nominalConcurrencyShares":2000,"lendablePercent":0,"borrowingLimitPercent":0,
  "limitResponse":{"type":"Queue","queuing":{"queues":1,"handSize":1,"queueLengthLimit":128}}}}}`

// adaptiveSchemaJSON sends the group "clients" to the level "shared".
const adaptiveSchemaJSON = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema",
 "metadata":{"name":"clients"},
 "spec":{"priorityLevelConfiguration":{"name":"shared"},"matchingPrecedence":500,
  "rules":[{"subjects":[{"kind":"Group","group":{"name":"clients"}}],
   "resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"clusterScope":true,"namespaces":["*"]}]}]}}`

// metricValue reads the value of an unlabelled series from the text of
// /metrics.
func metricValue(t *testing.T, text, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return 0
}

// The gateway with --adaptive-concurrency-limit in front of an upstream
// whose latency grows past a knee of 8 requests at once: under a
// closed-loop load of 30 clients the server concurrency limit leaves its
// floor and settles near the knee (the law's tolerance lets the upstream
// queue half a service time: about 12 requests in it, bounded here
// generously), /metrics shows the limit the controller enforces, and the
// dump shows it beside the levels' limits.
func TestAdaptiveGatewayLearnsKnee(t *testing.T) {
	const (
		knee    = 8
		service = 20 * time.Millisecond
		clients = 30
		floor   = 2
	)
	up := kneeUpstream(t, knee, service)
	gw := startGateway(t, up.URL, gatewayTokens(t, "load"), func(o *Options) {
		o.AdaptiveConcurrencyLimit = fmt.Sprintf("%d:64", floor)
		o.InsecureHTTP = true
	})
	t.Cleanup(gw.stop)
	gw.client.Transport.(*http.Transport).MaxIdleConnsPerHost = 256
	ctl := gw.server.Controller()
	if got := ctl.ServerConcurrencyLimit(); got != floor {
		t.Fatalf("the limit starts at %d, want the floor %d", got, floor)
	}
	for _, obj := range []struct{ res, body string }{
		{"prioritylevelconfigurations", adaptiveLevelJSON},
		{"flowschemas", adaptiveSchemaJSON},
	} {
		if code, _, body := gw.do(http.MethodPost, "/apis/flowcontrol.apiserver.k8s.io/v1/"+obj.res, adminToken, []byte(obj.body)); code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", obj.res, code, body)
		}
	}
	if err := waitFor(10*time.Second, func() bool {
		for _, l := range ctl.Levels() {
			if l.Name == "shared" && l.Limits != nil {
				code, h, _ := gw.do(http.MethodGet, "/api/v1/namespaces/shop/pods/web", "token-load", nil)
				return code == http.StatusOK && h.Get("X-Kubernetes-PF-PriorityLevel-UID") == l.UID
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the level shared is not in force: %v", err)
	}

	var (
		stop           atomic.Bool
		wg             sync.WaitGroup
		ok, other      atomic.Int64
		highest, moves atomic.Int64
	)
	for range clients {
		wg.Go(func() {
			for !stop.Load() {
				req, _ := http.NewRequest(http.MethodGet, gw.url+"/api/v1/namespaces/shop/pods/web", nil)
				req.Header.Set("Authorization", "Bearer token-load")
				resp, err := gw.client.Do(req)
				if err != nil {
					other.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ok.Add(1)
				} else {
					other.Add(1)
				}
			}
		})
	}
	// Watch the limit while the load runs: long enough for the first
	// measurement of the baseline and tens of windows after it.
	last := int64(floor)
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		l := int64(ctl.ServerConcurrencyLimit())
		if l != last {
			moves.Add(1)
			last = l
		}
		if l > highest.Load() {
			highest.Store(l)
		}
	}
	stop.Store(true)
	wg.Wait()

	limit := ctl.ServerConcurrencyLimit()
	st := ctl.Adaptive().Status()
	t.Logf("%d answered, %d otherwise; limit %d (highest seen %d, %d moves seen), baseline %v, sampled %v, gradient %.2f",
		ok.Load(), other.Load(), limit, highest.Load(), moves.Load(), st.Baseline, st.Sampled, st.Gradient)
	if ok.Load() == 0 {
		t.Fatal("no request was answered")
	}
	if moves.Load() == 0 || highest.Load() <= floor {
		t.Errorf("the limit never left its floor %d", floor)
	}
	if limit < 4 || limit > 24 {
		t.Errorf("the limit ended at %d, want it near the upstream's knee of %d (between 4 and 24)", limit, knee)
	}

	// The load has stopped: the limit changes on answers only.
	code, _, body := gw.do(http.MethodGet, "/metrics", adminToken, nil)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	if got := metricValue(t, string(body), "apf_adaptive_limit_seats"); int(got) != ctl.ServerConcurrencyLimit() {
		t.Errorf("apf_adaptive_limit_seats %v, the controller's limit %d", got, ctl.ServerConcurrencyLimit())
	}
	if got := metricValue(t, string(body), "apf_server_concurrency_limit_seats"); int(got) != ctl.ServerConcurrencyLimit() {
		t.Errorf("apf_server_concurrency_limit_seats %v, the controller's limit %d", got, ctl.ServerConcurrencyLimit())
	}
	if !strings.Contains(string(body), `apf_adaptive_observed_total{outcome="answered"}`) {
		t.Error("/metrics has no apf_adaptive_observed_total")
	}

	code, _, body = gw.do(http.MethodGet, AdaptiveLimitDumpPath, adminToken, nil)
	var d adaptiveLimitDump
	if code != http.StatusOK || json.Unmarshal(body, &d) != nil {
		t.Fatalf("%s: %d %s", AdaptiveLimitDumpPath, code, body)
	}
	if d.Limit != ctl.ServerConcurrencyLimit() || d.Floor != floor || d.Ceiling != 64 || d.BaselineSec <= 0 {
		t.Errorf("dump %+v, want the limit %d between %d and 64 and a baseline", d, ctl.ServerConcurrencyLimit(), floor)
	}
	found := false
	for _, l := range d.Levels {
		found = found || (l.Name == "shared" && l.Nominal > 0)
	}
	if !found {
		t.Errorf("dump's levels %+v: no level shared with its seats", d.Levels)
	}
}

// observedCounts reads apf_adaptive_observed_total by outcome from
// /metrics.
func observedCounts(t *testing.T, gw *e2eServer) map[string]float64 {
	t.Helper()
	code, _, body := gw.do(http.MethodGet, "/metrics", adminToken, nil)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	out := map[string]float64{}
	for _, o := range []string{"answered", "overloaded", "timed-out"} {
		out[o] = metricValue(t, string(body), `apf_adaptive_observed_total{outcome="`+o+`"}`)
	}
	return out
}

// Each proxied request that APF admitted and that is not a watch is
// observed once, with the outcome its answer says (a 5xx or a 429 is
// overload, the gateway's 504 when the upstream is too slow a time-out);
// a watch and apf's own endpoints are not observed. This holds with the
// access log on too, whose record of the request the observation reads.
func TestAdaptiveGatewayObservesAnswers(t *testing.T) {
	up := httptest.NewServer(kubeShaped(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Query().Get("watch") == "true":
			w.WriteHeader(http.StatusOK)
			_ = http.NewResponseController(w).Flush()
		case strings.HasSuffix(r.URL.Path, "/busy"):
			w.WriteHeader(http.StatusTooManyRequests)
		case strings.HasSuffix(r.URL.Path, "/broken"):
			w.WriteHeader(http.StatusServiceUnavailable)
		case strings.HasSuffix(r.URL.Path, "/slow"):
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		default:
			fmt.Fprint(w, `{"kind":"Pod"}`)
		}
	}))
	t.Cleanup(up.Close)
	for _, accessLog := range []bool{false, true} {
		t.Run(fmt.Sprintf("access-log=%v", accessLog), func(t *testing.T) {
			gw := startGateway(t, up.URL, gatewayTokens(t), func(o *Options) {
				o.AdaptiveConcurrencyLimit = "4:40"
				o.InsecureHTTP = true
				o.UpstreamTimeout = 500 * time.Millisecond
				if accessLog {
					o.AccessLog.Writer, o.AccessLog.Sample = io.Discard, 1
				}
			})
			t.Cleanup(gw.stop)
			before := observedCounts(t, gw)
			for path, want := range map[string]int{"web": 200, "busy": 429, "broken": 503, "slow": 504} {
				if code, _, body := gw.do(http.MethodGet, "/api/v1/namespaces/shop/pods/"+path, readerToken, nil); code != want {
					t.Fatalf("GET %s: %d %s, want %d", path, code, body, want)
				}
			}
			// A watch: its headers come at once, and it is not observed.
			if code, _, _ := gw.do(http.MethodGet, "/api/v1/namespaces/shop/pods?watch=true&timeoutSeconds=1", readerToken, nil); code != http.StatusOK {
				t.Fatalf("watch: %d", code)
			}
			after := observedCounts(t, gw)
			for o, want := range map[string]float64{"answered": 1, "overloaded": 2, "timed-out": 1} {
				if got := after[o] - before[o]; got != want {
					t.Errorf("%s: %v observed, want %v (before %v, after %v)", o, got, want, before, after)
				}
			}
		})
	}
}

// The console states a learned limit (its bounds, the limit in force, the
// latencies the law compares) and says nothing of one on a static limit.
func TestAdaptiveLimitInTheConsole(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	up := kneeUpstream(t, 8, 5*time.Millisecond)
	for _, adaptive := range []bool{true, false} {
		gw := startGateway(t, up.URL, "", func(o *Options) {
			if adaptive {
				o.AdaptiveConcurrencyLimit = "3:50"
			}
		})
		code, _, body := gw.do(http.MethodGet, console.PathPrefix+"state", adminToken, nil)
		var st console.State
		if err := json.Unmarshal(body, &st); code != http.StatusOK || err != nil {
			t.Fatalf("console state: %d %v", code, err)
		}
		a := st.AdaptiveLimit
		switch {
		case adaptive && (a == nil || a.FloorSeats != 3 || a.CeilingSeats != 50 || a.LimitSeats < 3 || a.LimitSeats > 50):
			t.Errorf("adaptive: the console states %+v", a)
		case !adaptive && a != nil:
			t.Errorf("static: the console states a learned limit %+v", a)
		}
		gw.stop()
	}
}

// TestSharedAdaptiveLimit: with --adaptive-concurrency-limit, the
// replicas divide its ceiling, and each learns its limit under its share:
// a replica alone has the whole ceiling; beside another, the ceiling it
// learns under is what its share fits (its dump says so, and the floor is
// the same part of the floor), the shares add up to no more than the
// ceiling, and no replica's limit passes its own ceiling; once the other
// leaves, the whole ceiling is the survivor's again.
func TestSharedAdaptiveLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and two servers")
	}
	const floor, ceiling = 16, 160
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	defer upstream.Close()
	cluster := startEtcdCluster(t, 1)
	opts := DefaultOptions()
	opts.EtcdServers = cluster.clientURLs()
	opts.Upstream = upstream.URL
	opts.Auth.TokenAuthFile = gatewayTokens(t, "carol")
	opts.AdaptiveConcurrencyLimit = fmt.Sprintf("%d:%d", floor, ceiling)
	opts.ShutdownTimeout = 200 * time.Millisecond
	opts.SharedBudget = SharedBudgetOptions{Enabled: true, Period: 300 * time.Millisecond, LeaseTTL: 2 * time.Second}
	start := func(name string) *e2eServer {
		o := opts
		o.SharedBudget.ID = name
		return startServer(t, o)
	}
	type bounds struct{ share, floor, ceiling, limit int }
	view := func(s *e2eServer) bounds {
		st := s.server.adaptive.Status()
		return bounds{share: s.server.budget.Status().Share, floor: st.Floor, ceiling: st.Ceiling, limit: st.Limit}
	}
	// fits says whether b's ceiling is what its share allows: at most
	// the share, the configured ceiling at most, its floor the same part
	// of the configured floor.
	fits := func(b bounds) bool {
		wantFloor := min(max(1, (floor*b.ceiling+ceiling/2)/ceiling), b.ceiling)
		return b.ceiling <= b.share && b.ceiling <= ceiling && b.ceiling > 0 && b.floor == wantFloor && b.limit <= b.ceiling
	}

	r1 := start("r1")
	if b := view(r1); b.share != ceiling || !fits(b) || b.ceiling < ceiling-ceiling/10 {
		t.Fatalf("a replica alone: %+v, want the whole ceiling %d to learn under", b, ceiling)
	}
	code, _, body := r1.do(http.MethodGet, AdaptiveLimitDumpPath, adminToken, nil)
	if code != http.StatusOK || !strings.Contains(string(body), fmt.Sprintf(`"ceilingSeats": %d`, view(r1).ceiling)) {
		t.Errorf("%s: %d %s", AdaptiveLimitDumpPath, code, body)
	}

	r2 := start("r2")
	var b1, b2 bounds
	if err := waitFor(20*time.Second, func() bool {
		b1, b2 = view(r1), view(r2)
		return b1.share+b2.share <= ceiling && b1.share < ceiling && fits(b1) && fits(b2)
	}); err != nil {
		t.Fatalf("two replicas: r1 %+v, r2 %+v: want shares that add up to at most %d, each learning under its own: %v", b1, b2, ceiling, err)
	}
	t.Logf("two replicas: r1 %+v, r2 %+v", b1, b2)
	// It holds on: sampled for a while, under a little traffic.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		for _, s := range []*e2eServer{r1, r2} {
			if code, _, _ := s.do(http.MethodGet, "/api/v1/namespaces/shop/pods/web", "token-carol", nil); code != http.StatusOK {
				t.Fatalf("a request through %s: %d", s.url, code)
			}
		}
		b1, b2 = view(r1), view(r2)
		if b1.share+b2.share > ceiling+1 || !fits(b1) || !fits(b2) {
			t.Fatalf("r1 %+v, r2 %+v: past the ceiling %d, or a limit past its share", b1, b2, ceiling)
		}
	}

	r2.stop()
	if err := waitFor(20*time.Second, func() bool {
		b1 = view(r1)
		return b1.share == ceiling && fits(b1) && b1.ceiling >= ceiling-ceiling/10
	}); err != nil {
		t.Fatalf("r2 gone: r1 %+v, want the whole ceiling again: %v", b1, err)
	}
	t.Logf("r2 gone: r1 %+v", b1)
}
