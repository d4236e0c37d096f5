// The simulator check measures APF under load over real HTTP, which the
// race detector's cost would distort: make test runs it in the e2e step,
// without -race.

//go:build !race

package server

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/request"
	"github.com/apfproject/apf/sim"
)

// simcheckWorkload is the traffic both the simulator and the gateway see:
// against the level "shared" of TestGatewayFairness (5 seats, 100 requests
// of 50 ms a second), a flood at three times that and four mice at 5
// requests a second each, well below their fair share. Every client is in
// the group "clients", as gatewayTokens makes them, so the FlowSchema
// "clients" sends them all to "shared", one flow per user.
const simcheckWorkload = `
duration: 6s
seed: 11
clients:
- name: flood
  user: flood
  groups: [clients, system:authenticated]
  arrival: {process: poisson, rate: 300}
  requests:
  - verb: get
    resource: pods
    namespace: shop
    name: web
    share: 1
    serviceTime: {lognormal: {median: 50ms, sigma: 0.25}}
- name: mouse-{i}
  user: mouse-{i}
  replicas: 4
  groups: [clients, system:authenticated]
  arrival: {process: constant, rate: 5}
  requests:
  - verb: get
    resource: pods
    namespace: shop
    name: web
    share: 1
    serviceTime: {constant: 50ms}
`

// Settings shared by the simulated and the real server: 26 seats in all
// (5 of them for "shared", see TestGatewayFairness) and a 4 s request
// timeout, so that a request waits in its queue at most 1 s.
const (
	simcheckMaxInflight         = 20
	simcheckMaxMutatingInflight = 6
	simcheckRequestTimeout      = 4 * time.Second
	// serviceTimeHeader carries an arrival's service time, in
	// nanoseconds, to the stand-in upstream, which sleeps that long.
	serviceTimeHeader = "X-Simcheck-Service-Ns"
)

// Tolerances of the comparison, in shares (0.10 is 10 percentage points).
const (
	// rejectedShareTolerance bounds the difference between the two runs
	// in each client's share of its own requests rejected.
	rejectedShareTolerance = 0.10
	// maxReplayLag bounds how late the replay may send arrivals, at
	// p99, for its answers to be compared with the simulation's (a
	// tenth of a queue's wait limit), and replayAttempts how many
	// replays are tried to get one.
	maxReplayLag   = 100 * time.Millisecond
	replayAttempts = 3
	// rejectionSplitTolerance bounds the difference in each client's
	// share of all rejections.
	rejectionSplitTolerance = 0.10
)

// clientTally is what one client sent and got rejected in one run.
type clientTally struct {
	sent, rejected int64
}

// rejectionSplit is one run's outcome by client.
type rejectionSplit map[string]*clientTally

func (s rejectionSplit) totalRejected() int64 {
	var n int64
	for _, c := range s {
		n += c.rejected
	}
	return n
}

// rejectedShare is the share of c's requests that were rejected.
func (s rejectionSplit) rejectedShare(c string) float64 {
	t := s[c]
	if t == nil || t.sent == 0 {
		return 0
	}
	return float64(t.rejected) / float64(t.sent)
}

// shareOfRejections is c's share of all the run's rejections.
func (s rejectionSplit) shareOfRejections(c string) float64 {
	total := s.totalRejected()
	if total == 0 || s[c] == nil {
		return 0
	}
	return float64(s[c].rejected) / float64(total)
}

func (s rejectionSplit) clients() []string {
	names := make([]string, 0, len(s))
	for c := range s {
		names = append(names, c)
	}
	slices.Sort(names)
	return names
}

func (s rejectionSplit) String() string {
	var b strings.Builder
	for _, c := range s.clients() {
		t := s[c]
		fmt.Fprintf(&b, "\n  %-8s sent %5d  rejected %5d  = %5.1f%% of its requests, %5.1f%% of all rejections",
			c, t.sent, t.rejected, 100*s.rejectedShare(c), 100*s.shareOfRejections(c))
	}
	return b.String()
}

// TestSimMatchesServe checks that `apf sim` predicts what `apf serve`
// does. One workload is run twice: through sim.Run on the virtual clock,
// with the objects the gateway holds (the bootstrap set plus the level
// "shared" and the FlowSchema "clients" it creates) and its concurrency
// limit and request timeout; and in real time against the gateway on
// loopback, every arrival of the same schedule sent at its offset, by its
// client's token, to the path of its attributes, the upstream sleeping its
// service time. The rejection splits must agree:
//
//   - the clients' request counts are identical (the same schedule);
//   - the mice get no 429 in either run;
//   - each client's rejected share, and its share of all rejections,
//     differ by at most 10 percentage points between the runs.
//
// The runs cannot agree exactly, and the tolerance covers why:
//
//   - Real time jitter: the replay fires each arrival from a timer and a
//     new goroutine, so arrivals land a little late and in bursts where
//     the schedule spaces them; the upstream's sleep overshoots its
//     service time by the timer's slack; the scheduler delays the
//     goroutine a dispatch wakes. The simulator's clock has none of this.
//   - HTTP overhead: a seat is held from dispatch until the proxied
//     response is written back, so every request occupies its seat for
//     its service time plus a round trip to the upstream and the copying
//     of the response (tens to hundreds of microseconds on loopback, more
//     when the two cores are busy). The level's real throughput is thus a
//     little below the simulated one, and the flood's rejected share a
//     little above.
//   - Borrowing adjustment timing: the simulator adjusts limits every
//     10 s from the start of the run, the server every 10 s from its
//     start, so the two would move a borrowing level's limit at different
//     moments of the traffic. "shared" neither lends nor borrows
//     (lendablePercent and borrowingLimitPercent 0), which pins its limit
//     to its nominal seats in both and removes this difference here; the
//     test checks that both runs give it the same seats.
func TestSimMatchesServe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for several seconds")
	}
	w, err := sim.ParseWorkload([]byte(simcheckWorkload))
	if err != nil {
		t.Fatal(err)
	}

	// The configuration, as the gateway will hold it: the bootstrap
	// objects its maintenance creates, and the two the test creates.
	objs, err := config.Decode([]byte(sharedLevelJSON+"\n"+clientsSchemaJSON), "simcheck")
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range bootstrap.PriorityLevels() {
		objs = append(objs, config.Object{PriorityLevel: pl, Version: config.V1})
	}
	for _, fs := range bootstrap.FlowSchemas() {
		objs = append(objs, config.Object{FlowSchema: fs, Version: config.V1})
	}

	// The simulated run.
	src, err := w.NewSource()
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), sim.Config{
		Name:                   "simcheck",
		Objects:                objs,
		ServerConcurrencyLimit: simcheckMaxInflight + simcheckMaxMutatingInflight,
		RequestTimeout:         simcheckRequestTimeout,
	}, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) > 0 {
		t.Fatalf("the simulated configuration has problems: %q", res.Problems)
	}
	simSplit := rejectionSplit{}
	for _, f := range res.Flows {
		if f.FlowSchema != "clients" || f.PriorityLevel != "shared" || len(f.Clients) != 1 {
			t.Fatalf("simulated flow %s/%s at %s with clients %q: want one client per flow of schema clients at level shared",
				f.FlowSchema, f.Distinguisher, f.PriorityLevel, f.Clients)
		}
		var rej int64
		for _, n := range f.Rejected {
			rej += n
		}
		simSplit[f.Clients[0]] = &clientTally{sent: f.Arrived, rejected: rej}
	}
	simSeats := -1
	for _, l := range res.Levels {
		if l.Name == "shared" {
			simSeats = l.NominalSeats
			t.Logf("sim: level shared %d seats, %d dispatched, rejected by reason %v", l.NominalSeats, l.Dispatched, l.Rejected)
		}
	}

	// The schedule both runs share: the same workload and seed.
	src, err = w.NewSource()
	if err != nil {
		t.Fatal(err)
	}
	var arrivals []sim.Arrival
	for {
		a, ok, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		arrivals = append(arrivals, a)
	}
	if int64(len(arrivals)) != res.Requests {
		t.Fatalf("the schedule has %d arrivals, the simulation saw %d", len(arrivals), res.Requests)
	}
	users := simSplit.clients()

	// The real run: the gateway in front of an upstream that sleeps each
	// request's service time.
	var badService atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" || r.URL.Path == "/apis" {
			// The gateway's probe of what kind of API this is, at start.
			http.NotFound(w, r)
			return
		}
		ns, err := strconv.ParseInt(r.Header.Get(serviceTimeHeader), 10, 64)
		if err != nil || ns < 0 || ns > int64(time.Minute) {
			badService.Add(1)
			http.Error(w, "missing or bad "+serviceTimeHeader, http.StatusBadRequest)
			return
		}
		time.Sleep(time.Duration(ns))
		fmt.Fprint(w, `{"kind":"Pod"}`)
	}))
	defer upstream.Close()
	gw := startGateway(t, upstream.URL, gatewayTokens(t, users...), func(o *Options) {
		o.MaxRequestsInflight, o.MaxMutatingRequestsInflight = simcheckMaxInflight, simcheckMaxMutatingInflight
		o.RequestTimeout = simcheckRequestTimeout
	})
	defer gw.stop()
	gw.client.Transport.(*http.Transport).MaxIdleConnsPerHost = 256
	for _, obj := range []struct{ res, body string }{
		{"prioritylevelconfigurations", sharedLevelJSON},
		{"flowschemas", clientsSchemaJSON},
	} {
		if code, _, body := gw.do(http.MethodPost, "/apis/flowcontrol.apiserver.k8s.io/v1/"+obj.res, adminToken, []byte(obj.body)); code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", obj.res, code, body)
		}
	}
	// Wait until the controller enforces both objects.
	if err := waitFor(5*time.Second, func() bool {
		for _, fs := range gw.server.Controller().Matcher().FlowSchemas() {
			if fs.Name == "clients" && fs.PriorityLevel.Name == "shared" {
				for _, l := range gw.server.Controller().Levels() {
					if l.Name == "shared" && l.Limits != nil {
						return true
					}
				}
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	// The gateway must hold the configuration the simulator was given,
	// and give "shared" the same seats.
	var want, got []string
	for _, o := range objs {
		want = append(want, o.Kind()+"/"+o.Name())
	}
	m := gw.server.Controller().Matcher()
	for _, fs := range m.FlowSchemas() {
		got = append(got, config.KindFlowSchema+"/"+fs.Name)
	}
	for _, pl := range m.PriorityLevels() {
		got = append(got, config.KindPriorityLevel+"/"+pl.Name)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		t.Fatalf("the gateway enforces %q, the simulator was given %q", got, want)
	}
	serveSeats := -1
	for _, l := range gw.server.Controller().Levels() {
		if l.Name == "shared" {
			serveSeats = l.Limits.Current
		}
	}
	if simSeats != serveSeats || simSeats <= 0 {
		t.Fatalf("level shared: %d seats simulated, %d served", simSeats, serveSeats)
	}
	for _, c := range users {
		a := arrivals[slices.IndexFunc(arrivals, func(a sim.Arrival) bool { return a.Client == c })]
		r := m.Classify(&a.Attributes)
		if r.FlowSchema.Name != "clients" || r.PriorityLevel.Name != "shared" {
			t.Fatalf("the gateway classifies %s's requests by %s to %s", c, r.FlowSchema.Name, r.PriorityLevel.Name)
		}
	}

	// The comparison holds for a replay that kept the schedule: arrivals
	// sent late (a machine too busy to run the clients, and then the
	// gateway, on time) come in bursts the simulation never saw. Such a
	// replay is run again; when none keeps the schedule, nothing is
	// judged and the test says why.
	var (
		serveSplit rejectionSplit
		lag        replayLag
		bad        []string
	)
	for attempt := 1; ; attempt++ {
		serveSplit, lag, bad = replay(t, gw, arrivals)
		if lag.p99 <= maxReplayLag {
			break
		}
		t.Logf("attempt %d: the replay lagged behind the schedule by %v at p99 (max %v), more than %v", attempt, lag.p99, lag.max, maxReplayLag)
		if attempt == replayAttempts {
			t.Skipf("in %d replays the machine never kept the schedule within %v at p99: the simulation cannot be compared with them", replayAttempts, maxReplayLag)
		}
	}
	if n := badService.Load(); n > 0 {
		t.Fatalf("%d requests reached the upstream without their service time", n)
	}
	if len(bad) > 0 {
		t.Fatalf("answers other than 200 and 429 with Retry-After: %q", bad)
	}
	t.Logf("serve: level shared %d seats, rejected by reason %v; replay lag behind the schedule p99 %v, max %v",
		serveSeats, rejectedByReason(t, gw, "shared"), lag.p99, lag.max)
	t.Logf("sim rejection split (%d requests):%s", res.Requests, simSplit)
	t.Logf("serve rejection split (%d requests):%s", len(arrivals), serveSplit)

	// The scenario must overload the level without rejecting everything,
	// or the comparison says nothing.
	if s := simSplit.rejectedShare("flood"); s < 0.3 || s > 0.95 {
		t.Fatalf("the simulated flood has %.1f%% rejected: the scenario no longer tests the split", 100*s)
	}
	for _, c := range users {
		st, gt := simSplit[c], serveSplit[c]
		if gt == nil {
			gt = &clientTally{}
		}
		if st.sent != gt.sent {
			t.Errorf("%s: %d requests simulated, %d sent", c, st.sent, gt.sent)
			continue
		}
		if c != "flood" && (st.rejected != 0 || gt.rejected != 0) {
			t.Errorf("%s: %d rejected simulated, %d served: a well-behaved client gets none", c, st.rejected, gt.rejected)
		}
		if d := math.Abs(simSplit.rejectedShare(c) - serveSplit.rejectedShare(c)); d > rejectedShareTolerance {
			t.Errorf("%s: %.1f%% of its requests rejected simulated, %.1f%% served: %.1f points apart, more than %.0f",
				c, 100*simSplit.rejectedShare(c), 100*serveSplit.rejectedShare(c), 100*d, 100*rejectedShareTolerance)
		}
		if d := math.Abs(simSplit.shareOfRejections(c) - serveSplit.shareOfRejections(c)); d > rejectionSplitTolerance {
			t.Errorf("%s: %.1f%% of all rejections simulated, %.1f%% served: %.1f points apart, more than %.0f",
				c, 100*simSplit.shareOfRejections(c), 100*serveSplit.shareOfRejections(c), 100*d, 100*rejectionSplitTolerance)
		}
	}
	if len(serveSplit) != len(simSplit) {
		t.Errorf("clients served %q, simulated %q", serveSplit.clients(), simSplit.clients())
	}
}

// replayLag is how late the replay fired arrivals behind their schedule.
type replayLag struct{ p99, max time.Duration }

// replay sends every arrival at its offset from now, each from its own
// goroutine, as its client (bearer token-<client>), and returns what each
// client got, how far the sending lagged behind the schedule, and the
// answers that were neither a 200 nor a 429 with Retry-After.
func replay(t *testing.T, gw *e2eServer, arrivals []sim.Arrival) (rejectionSplit, replayLag, []string) {
	t.Helper()
	var (
		mu    sync.Mutex
		split = rejectionSplit{}
		bad   []string
		lags  = make([]time.Duration, 0, len(arrivals))
		wg    sync.WaitGroup
	)
	// An arrival carries its parsed request, not its URL: each must be
	// sent as a request that parses back to exactly what was simulated.
	for _, a := range arrivals {
		method, err := methodOf(a)
		if err != nil {
			continue // counted as a bad answer below
		}
		in := a.Attributes.Info
		if got, err := request.Parse(method, in.Path, queryOf(in)); err != nil || got != in {
			t.Fatalf("arrival %+v is sent as %s %s?%s, which parses as %+v (%v)", in, method, in.Path, queryOf(in), got, err)
		}
	}
	send := func(a sim.Arrival) {
		method, err := methodOf(a)
		u := gw.url + a.Attributes.Info.Path
		if q := queryOf(a.Attributes.Info); q != "" {
			u += "?" + q
		}
		var req *http.Request
		if err == nil {
			req, err = http.NewRequest(method, u, nil)
		}
		outcome := ""
		if err == nil {
			req.Header.Set("Authorization", "Bearer token-"+a.Client)
			req.Header.Set(serviceTimeHeader, strconv.FormatInt(int64(a.Service), 10))
			var resp *http.Response
			if resp, err = gw.client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == http.StatusOK:
					outcome = "ok"
				case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "":
					outcome = "rejected"
				default:
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
		}
		mu.Lock()
		defer mu.Unlock()
		c := split[a.Client]
		if c == nil {
			c = &clientTally{}
			split[a.Client] = c
		}
		c.sent++
		switch {
		case err != nil:
			if len(bad) < 10 {
				bad = append(bad, fmt.Sprintf("%s at %v: %v", a.Client, a.At, err))
			}
		case outcome == "rejected":
			c.rejected++
		}
	}
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for _, a := range arrivals {
		due := start.Add(a.At)
		if d := time.Until(due); d > 0 {
			timer.Reset(d)
			<-timer.C
		}
		lags = append(lags, time.Since(due))
		wg.Go(func() { send(a) })
	}
	wg.Wait()
	slices.Sort(lags)
	var lag replayLag
	if n := len(lags); n > 0 {
		lag = replayLag{p99: lags[(n*99+99)/100-1], max: lags[n-1]}
	}
	return split, lag, bad
}

// queryOf is a query that request.Parse reads back as what in says of its
// query: watch, selectors, list options and timeout. (A continue token's
// value is not kept, only that there was one.)
func queryOf(in request.Info) string {
	v := url.Values{}
	if in.Verb == request.VerbWatch && !strings.Contains(in.Path, "/watch/") {
		v.Set("watch", "true")
	}
	if in.FieldSelector != "" {
		v.Set("fieldSelector", in.FieldSelector)
	}
	if in.LabelSelector != "" {
		v.Set("labelSelector", in.LabelSelector)
	}
	l := in.List
	if l.Limit != 0 {
		v.Set("limit", strconv.FormatInt(l.Limit, 10))
	}
	if l.ResourceVersion != "" {
		v.Set("resourceVersion", l.ResourceVersion)
	}
	if l.ResourceVersionMatch != "" {
		v.Set("resourceVersionMatch", l.ResourceVersionMatch)
	}
	if l.Continue {
		v.Set("continue", "token")
	}
	if l.SendInitialEvents {
		v.Set("sendInitialEvents", "true")
	}
	if in.Timeout > 0 {
		v.Set("timeout", in.Timeout.String())
	}
	return v.Encode()
}

// methodOf is the HTTP method that sends an arrival's request.
func methodOf(a sim.Arrival) (string, error) {
	in := a.Attributes.Info
	if !in.IsResourceRequest {
		return strings.ToUpper(in.Verb), nil
	}
	switch in.Verb {
	case "get", "list", "watch":
		return http.MethodGet, nil
	case "create":
		return http.MethodPost, nil
	case "update":
		return http.MethodPut, nil
	case "patch":
		return http.MethodPatch, nil
	case "delete", "deletecollection":
		return http.MethodDelete, nil
	}
	return "", fmt.Errorf("no HTTP method for verb %q", in.Verb)
}

// rejectedByReason sums apiserver_flowcontrol_rejected_requests_total of
// one priority level by reason.
func rejectedByReason(t testing.TB, s *e2eServer, level string) map[string]float64 {
	t.Helper()
	families, err := s.server.promReg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range families {
		if mf.GetName() != "apiserver_flowcontrol_rejected_requests_total" || mf.GetType() != dto.MetricType_COUNTER {
			continue
		}
		for _, m := range mf.GetMetric() {
			var pl, reason string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "priority_level":
					pl = l.GetValue()
				case "reason":
					reason = l.GetValue()
				}
			}
			if pl == level {
				out[reason] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// TestQueryOfRoundTrips checks the replay's rebuilt queries on requests a
// workload can hold: each parses back to the same Info.
func TestQueryOfRoundTrips(t *testing.T) {
	for _, c := range [][3]string{
		{"GET", "/api/v1/namespaces/shop/pods/web", ""},
		{"GET", "/api/v1/namespaces/shop/pods/web", "timeout=2s"},
		{"GET", "/api/v1/pods", "limit=500&resourceVersion=0&resourceVersionMatch=NotOlderThan"},
		{"GET", "/api/v1/pods", "limit=5&continue=abc"},
		{"GET", "/api/v1/namespaces/shop/pods", "watch=1&resourceVersion=7&sendInitialEvents=true&labelSelector=app%3Dweb"},
		{"GET", "/api/v1/namespaces/shop/pods", "fieldSelector=metadata.name%3Dweb&watch=true"},
		{"GET", "/api/v1/watch/namespaces/shop/pods/web", "resourceVersion=3"},
		{"DELETE", "/api/v1/namespaces/shop/pods", "labelSelector=a%3Db&timeout=1m"},
		{"POST", "/api/v1/namespaces/shop/pods", ""},
	} {
		in, err := request.Parse(c[0], c[1], c[2])
		if err != nil {
			t.Fatal(err)
		}
		if got, err := request.Parse(c[0], c[1], queryOf(in)); err != nil || got != in {
			t.Errorf("%s %s?%s: rebuilt as ?%s, which parses as %+v (%v), not %+v", c[0], c[1], c[2], queryOf(in), got, err, in)
		}
	}
}
