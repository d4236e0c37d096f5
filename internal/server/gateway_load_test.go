// The gateway load test measures APF, not the race detector: make test
// runs it in its own step without -race.

//go:build !race

package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/fairqueue"
)

// levelJSON is a Queue level of 45 shares that neither lends nor borrows.
// A hand of 2 keeps a flood to two of its queues.
func levelJSON(name string) string {
	return fmt.Sprintf(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration",
	 "metadata":{"name":%q},
	 "spec":{"type":"Limited","limited":{"nominalConcurrencyShares":45,"lendablePercent":0,"borrowingLimitPercent":0,
	  "limitResponse":{"type":"Queue","queuing":{"queues":64,"handSize":2,"queueLengthLimit":5}}}}}`, name)
}

// The load tests' configuration: the level "shared" takes the group
// "clients", distinguished by user; its twin, "twin", an identical level
// the flood never reaches, takes the users named in twinsSchemaJSON.
var (
	sharedLevelJSON   = levelJSON("shared")
	twinLevelJSON     = levelJSON("twin")
	clientsSchemaJSON = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema",
	 "metadata":{"name":"clients"},
	 "spec":{"priorityLevelConfiguration":{"name":"shared"},"matchingPrecedence":500,"distinguisherMethod":{"type":"ByUser"},
	  "rules":[{"subjects":[{"kind":"Group","group":{"name":"clients"}}],
	   "resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"clusterScope":true,"namespaces":["*"]}]}]}}`
)

// twinsSchemaJSON sends users to the level "twin", distinguished by user.
func twinsSchemaJSON(users []string) string {
	subjects := make([]string, len(users))
	for i, u := range users {
		subjects[i] = fmt.Sprintf(`{"kind":"User","user":{"name":%q}}`, u)
	}
	return `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema",
	 "metadata":{"name":"twins"},
	 "spec":{"priorityLevelConfiguration":{"name":"twin"},"matchingPrecedence":400,"distinguisherMethod":{"type":"ByUser"},
	  "rules":[{"subjects":[` + strings.Join(subjects, ",") + `],
	   "resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"clusterScope":true,"namespaces":["*"]}]}]}}`
}

// upstreamService is how long the rig's upstream takes to answer.
const upstreamService = 50 * time.Millisecond

// loadResult is what one client saw.
type loadResult struct {
	mu        sync.Mutex
	latencies []time.Duration // of 200s
	rejected  int             // 429s with Retry-After
	bad       int             // anything else, or a 429 without Retry-After
}

func (l *loadResult) send(gw *e2eServer, token string) {
	req, _ := http.NewRequest(http.MethodGet, gw.url+"/api/v1/namespaces/shop/pods/web", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	start := time.Now()
	resp, err := gw.client.Do(req)
	if err == nil {
		// Read the answer to its end, as API clients do: the transport
		// drops a connection whose body was closed unread, and every
		// rejection would then cost the flood a new connection (over
		// TLS, a handshake): CPU the load generator takes from the
		// gateway it measures, on the same two cores.
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	took := time.Since(start)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
		l.bad++
	case resp.StatusCode == http.StatusOK:
		l.latencies = append(l.latencies, took)
	case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "":
		l.rejected++
	default:
		l.bad++
	}
}

// add counts o's answers in l too.
func (l *loadResult) add(o *loadResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.latencies = append(l.latencies, o.latencies...)
	l.rejected += o.rejected
	l.bad += o.bad
}

// repeat calls send every period until stop says so: each call in its own
// goroutine (open, a well-behaved client) or only after the previous one
// returned (closed, one worker of the flood). It returns once every call
// has returned.
func repeat(offset, period time.Duration, stop func() bool, open bool, send func()) {
	time.Sleep(offset)
	tick := time.NewTicker(period)
	defer tick.Stop()
	var wg sync.WaitGroup
	for !stop() {
		if open {
			wg.Go(send)
		} else {
			send()
		}
		<-tick.C
	}
	wg.Wait()
}

// until is a stop function for repeat: true from end on.
func until(end time.Time) func() bool {
	return func() bool { return !time.Now().Before(end) }
}

// fairnessRig is the scene of the gateway load tests: an upstream taking
// upstreamService per request; a gateway whose level "shared" gets 5
// seats; a flooding user and six mice in that level; and six twins of
// the mice, sending the same requests at the same moments to "twin", a
// level like "shared" that the flood never reaches. The twins go through
// the same gateway, process and machine as the mice: they take what a
// mouse would take if it did not share its level with the flood, at the
// very moments the mice do.
type fairnessRig struct {
	t     testing.TB
	gw    *e2eServer
	flood string
	mice  []string
	twins []string
	seats int
	// capacity is the level's requests/s: seats / upstreamService.
	capacity float64
}

// newFairnessRig builds the rig; plainHTTP serves HTTP instead of HTTPS
// (for CPU figures without TLS handshakes). Everything stops at the end
// of the test.
func newFairnessRig(t *testing.T, plainHTTP bool) *fairnessRig {
	t.Helper()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(upstreamService)
		fmt.Fprint(w, `{"kind":"Pod"}`)
	}))
	t.Cleanup(upstream.Close)
	r := &fairnessRig{t: t, flood: "flood"}
	for _, m := range "abcdef" {
		r.mice = append(r.mice, "mouse-"+string(m))
		r.twins = append(r.twins, "twin-"+string(m))
	}
	users := append(append([]string{r.flood}, r.mice...), r.twins...)
	gw := startGateway(t, upstream.URL, gatewayTokens(t, users...), func(o *Options) {
		// 36 seats in all; with the bootstrap levels' 245 shares beside
		// the 45 of "shared" and of "twin", each gets
		// ceil(36*45/335) = 5.
		o.MaxRequestsInflight, o.MaxMutatingRequestsInflight = 28, 8
		o.InsecureHTTP = plainHTTP
	})
	t.Cleanup(gw.stop)
	r.gw = gw
	gw.client.Transport.(*http.Transport).MaxIdleConnsPerHost = 256
	for _, obj := range []struct{ res, body string }{
		{"prioritylevelconfigurations", sharedLevelJSON},
		{"prioritylevelconfigurations", twinLevelJSON},
		{"flowschemas", clientsSchemaJSON},
		{"flowschemas", twinsSchemaJSON(r.twins)},
	} {
		if code, _, body := gw.do(http.MethodPost, "/apis/flowcontrol.apiserver.k8s.io/v1/"+obj.res, adminToken, []byte(obj.body)); code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", obj.res, code, body)
		}
	}
	// Wait until the controller enforces the new schemas and has given
	// both levels their seats.
	classifiedTo := func(user string, l *controller.LevelView) bool {
		code, h, _ := gw.do(http.MethodGet, "/api/v1/namespaces/shop/pods/web", "token-"+user, nil)
		return code == http.StatusOK && h.Get("X-Kubernetes-PF-PriorityLevel-UID") == l.UID
	}
	if err := waitFor(10*time.Second, func() bool {
		shared, twin := r.level("shared"), r.level("twin")
		if shared == nil || shared.Limits == nil || twin == nil || twin.Limits == nil || shared.Limits.Current != twin.Limits.Current {
			return false
		}
		r.seats = shared.Limits.Current
		return classifiedTo(r.mice[0], shared) && classifiedTo(r.twins[0], twin)
	}); err != nil {
		t.Fatalf("the levels shared and twin are not in force: %v", err)
	}
	r.capacity = float64(r.seats) / upstreamService.Seconds()
	t.Logf("levels shared and twin: %d seats each, %.0f requests/s", r.seats, r.capacity)
	return r
}

// level is the controller's view of the named level, nil before it has
// one.
func (r *fairnessRig) level(name string) *controller.LevelView {
	for _, l := range r.gw.server.Controller().Levels() {
		if l.Name == name {
			return &l
		}
	}
	return nil
}

// stats are the counters of the level "shared".
func (r *fairnessRig) stats() fairqueue.Stats {
	if l := r.level("shared"); l != nil {
		return l.Queue.Stats()
	}
	r.t.Fatal("the level shared is gone")
	return fairqueue.Stats{}
}

// miceResult is what the mice and their twins saw over one stretch of
// time.
type miceResult struct {
	mice, twins *loadResult
	// hold is how long a request held a seat of "shared", on average
	// over the stretch: its seats times the stretch over the requests
	// the level dispatched. It is the time a seat takes to turn over,
	// as it is at that moment on this machine, as long as the flood
	// keeps every seat busy.
	hold time.Duration
}

// run has each mouse send 4 requests/s for d, open loop, each request
// beside an identical one of its twin, and gathers what they saw once
// every request is answered. Six mice at 4/s ask for a quarter of the
// level's capacity, each far below its fair share.
func (r *fairnessRig) run(d time.Duration) miceResult {
	before, start := r.stats(), time.Now()
	stop := until(start.Add(d))
	mice, twins := make([]*loadResult, len(r.mice)), make([]*loadResult, len(r.mice))
	var wg sync.WaitGroup
	for i := range r.mice {
		mice[i], twins[i] = &loadResult{}, &loadResult{}
		wg.Go(func() {
			repeat(time.Duration(i)*250*time.Millisecond/6, 250*time.Millisecond, stop, true, func() {
				var pair sync.WaitGroup
				pair.Go(func() { mice[i].send(r.gw, "token-"+r.mice[i]) })
				twins[i].send(r.gw, "token-"+r.twins[i])
				pair.Wait()
			})
		})
	}
	wg.Wait()
	out := miceResult{mice: &loadResult{}, twins: &loadResult{}}
	if n := r.stats().Dispatched - before.Dispatched; n > 0 {
		out.hold = time.Since(start) * time.Duration(r.seats) / time.Duration(n)
	}
	for i := range mice {
		out.mice.add(mice[i])
		out.twins.add(twins[i])
	}
	return out
}

// floodWorkers is the size of the flood: ten times the level's capacity
// from closed-loop workers, each at most 20 requests/s, plus one for each
// request the level holds of the flood (its seats and two full queues of
// 5), since those workers wait instead of sending. A fixed number of
// closed-loop workers bounds what the load generator costs: the flood
// cannot grow to take the CPU the gateway needs.
func (r *fairnessRig) floodWorkers() int {
	return int(10*r.capacity/20) + 1 + r.seats + 2*5
}

// startFlood starts the flooding user's workers, once they have filled
// the queues of their hand: the level turns requests away (the mice never
// fill theirs). stop ends the workers and returns, once each has its last
// answer, what the flood saw.
func (r *fairnessRig) startFlood() (stop func() *loadResult) {
	r.t.Helper()
	before := r.stats()
	var stopped atomic.Bool
	workers := r.floodWorkers()
	flood := &loadResult{}
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			repeat(time.Duration(i)*50*time.Millisecond/time.Duration(workers), 50*time.Millisecond, stopped.Load, false, func() {
				flood.send(r.gw, "token-"+r.flood)
			})
		})
	}
	stop = func() *loadResult {
		stopped.Store(true)
		wg.Wait()
		return flood
	}
	if err := waitFor(10*time.Second, func() bool { return r.stats().Rejected > before.Rejected }); err != nil {
		stop()
		r.t.Fatalf("the flood did not fill its queues: %v", err)
	}
	return stop
}

func p99of(ds []time.Duration) time.Duration {
	return quantile(ds, 990)
}

// quantile is the permille/1000 quantile of ds (nearest rank), 0 for
// no samples.
func quantile(ds []time.Duration, permille int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[max((len(s)*permille+999)/1000-1, 0)]
}

// miceLatencyBounds are how much longer than their twins the mice may
// take beside the flood, at two quantiles, in seat holds (miceResult's
// hold). The flood holds every seat of "shared"; fair queuing hands a
// mouse one of the next seats to free, ahead of the flood's queued
// requests. So a mouse takes what its twin takes, plus a wait for the
// seats to turn over (within one hold) and for the heads of the few
// queues whose turn comes before its own (the flood's two, another
// mouse's), each taking one of the seats freeing meanwhile: measured, up
// to about one hold at the p90 and at the p99, on an idle machine as on
// a busy one. The twins take what the gateway, the process and the
// machine cost at that moment, and the hold is measured too: a busy
// machine stretches both, and the bounds with them. A mouse held behind
// the flood's queues instead waits for them to drain (two queues of 5
// over 5 seats) after the seats turn over: about three holds more for
// every mouse, the p90 as much as the p99 (or it is turned away).
var miceLatencyBounds = []struct {
	name     string
	permille int
	holds    float64
}{{"p90", 900, 2}, {"p99", 990, 3}}

// checkMiceLatency fails t when the mice take longer than
// miceLatencyBounds allows.
func checkMiceLatency(t *testing.T, beside miceResult) {
	t.Helper()
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }
	for _, b := range miceLatencyBounds {
		m, tw := quantile(beside.mice.latencies, b.permille), quantile(beside.twins.latencies, b.permille)
		bound := tw + time.Duration(b.holds*float64(beside.hold))
		t.Logf("beside the flood, %s: mice %s over %d, twins %s over %d, seat hold %s: mice/twins %.2f, (mice-twins)/hold %.2f, bound %.1f",
			b.name, ms(m), len(beside.mice.latencies), ms(tw), len(beside.twins.latencies), ms(beside.hold),
			float64(m)/float64(max(tw, 1)), float64(m-tw)/float64(max(beside.hold, 1)), b.holds)
		if m > bound {
			t.Errorf("mice %s %v beside the flood, over %v: their twins' %v plus %.1f seat holds of %v",
				b.name, m, bound, tw, b.holds, beside.hold)
		}
	}
}

// TestGatewayFairness is the gateway over loopback: an upstream taking 50
// ms per request, one flooding user at ten times the level's capacity and
// several users well below their fair share, all authenticated by token.
// This is what fair queuing within a priority level promises: one flow
// flooding the level does not starve the others. The well-behaved users
// get no 429 and take little longer than their twins on an identical
// level without the flood, measured at the same moments
// (checkMiceLatency), whatever else the machine runs; the flood gets
// 429s with Retry-After; afterwards nothing is executing or queued.
func TestGatewayFairness(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for several seconds")
	}
	rig := newFairnessRig(t, false)
	alone := rig.run(1500 * time.Millisecond)
	if alone.mice.rejected != 0 || alone.mice.bad != 0 || len(alone.mice.latencies) < 24 || alone.twins.rejected != 0 || alone.twins.bad != 0 {
		t.Fatalf("mice alone: %d answers, %d rejected, %d bad; twins %d answers, %d rejected, %d bad",
			len(alone.mice.latencies), alone.mice.rejected, alone.mice.bad, len(alone.twins.latencies), alone.twins.rejected, alone.twins.bad)
	}
	stop := rig.startFlood()
	beside := rig.run(4500 * time.Millisecond)
	flood := stop()

	t.Logf("flood: %d workers, %d served, %d rejected, %d bad", rig.floodWorkers(), len(flood.latencies), flood.rejected, flood.bad)
	t.Logf("mice alone p90/p99 %v/%v, twins %v/%v; beside the flood mice %v/%v",
		quantile(alone.mice.latencies, 900), p99of(alone.mice.latencies), quantile(alone.twins.latencies, 900), p99of(alone.twins.latencies),
		quantile(beside.mice.latencies, 900), p99of(beside.mice.latencies))
	if beside.mice.rejected != 0 || beside.mice.bad != 0 || len(beside.mice.latencies) < 60 {
		t.Errorf("mice beside the flood: %d answers, %d rejected, %d bad", len(beside.mice.latencies), beside.mice.rejected, beside.mice.bad)
	}
	if beside.twins.rejected != 0 || beside.twins.bad != 0 || len(beside.twins.latencies) < 60 {
		t.Errorf("twins beside the flood: %d answers, %d rejected, %d bad", len(beside.twins.latencies), beside.twins.rejected, beside.twins.bad)
	}
	if len(beside.mice.latencies) >= 60 && len(beside.twins.latencies) >= 60 {
		checkMiceLatency(t, beside)
	}
	if flood.rejected == 0 || flood.bad != 0 {
		t.Errorf("flood: %d rejected, %d bad", flood.rejected, flood.bad)
	}
	checkDrained(t, rig.gw)
}
