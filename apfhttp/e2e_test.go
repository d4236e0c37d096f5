// This load test measures APF, not the race detector, whose cost would
// swamp the latencies it compares: make test runs it in its own step
// without -race.

//go:build !race

package apfhttp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/metrics"
	"github.com/apfproject/apf/request"
)

// sharedLevel gives the "clients" group one Queue level, distinguished by
// user, and its twin gives the users twin-a to twin-i an identical level
// of their own, which the elephant never reaches. With a server limit of
// 8 and the mandatory catch-all's 5 shares beside their 45 each, each
// level gets 4 seats. A hand of 2 keeps the elephant to two of the
// eleven busy queues: fairness is per queue, so with a hand of 8 the
// elephant would hold eight shares and the mice would sit close to
// theirs.
const sharedLevel = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: shared, uid: pl-shared}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 45
    limitResponse:
      type: Queue
      queuing: {queues: 64, handSize: 2, queueLengthLimit: 5}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: clients, uid: fs-clients}
spec:
  priorityLevelConfiguration: {name: shared}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: clients}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: twin, uid: pl-twin}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 45
    limitResponse:
      type: Queue
      queuing: {queues: 64, handSize: 2, queueLengthLimit: 5}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: twins, uid: fs-twins}
spec:
  priorityLevelConfiguration: {name: twin}
  matchingPrecedence: 400
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects:
    - {kind: User, user: {name: twin-a}}
    - {kind: User, user: {name: twin-b}}
    - {kind: User, user: {name: twin-c}}
    - {kind: User, user: {name: twin-d}}
    - {kind: User, user: {name: twin-e}}
    - {kind: User, user: {name: twin-f}}
    - {kind: User, user: {name: twin-g}}
    - {kind: User, user: {name: twin-h}}
    - {kind: User, user: {name: twin-i}}
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`

// outcome is what one client saw.
type outcome struct {
	mu         sync.Mutex
	latencies  []time.Duration // of 200 responses
	rejected   int             // 429s, all with Retry-After
	badHeaders int             // responses lacking a PF header or a 429 without Retry-After
	otherCodes int
}

// send makes one request as user and records what came back; the PF
// headers must carry the UIDs of the named schema and level.
func send(t *testing.T, hc *http.Client, url, user, schema, level string, out *outcome) {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("X-Test-User", user)
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		t.Errorf("%s: %v", user, err)
		return
	}
	// Read the answer to its end, as API clients do: the transport drops
	// a connection whose body was closed unread, and every rejection
	// would then cost the elephant a new connection, CPU the load
	// generator takes from the server it measures, on the same cores.
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil {
		t.Errorf("%s: %v", user, err)
		return
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if resp.Header.Get(FlowSchemaUIDHeader) != "fs-"+schema || resp.Header.Get(PriorityLevelUIDHeader) != "pl-"+level {
		out.badHeaders++
	}
	switch resp.StatusCode {
	case http.StatusOK:
		out.latencies = append(out.latencies, took)
	case http.StatusTooManyRequests:
		out.rejected++
		if resp.Header.Get("Retry-After") == "" {
			out.badHeaders++
		}
	default:
		out.otherCodes++
	}
}

// repeat calls send every period, starting after offset, until stop says
// so. Offsets spread clients over the period, as independent clients are:
// started in lock step they would arrive in bursts. An open client makes
// each call in its own goroutine, whatever the answers take (a mouse); a
// closed one makes the next only after the previous returned, at most
// once a period (one worker of a busy client with a bounded number of
// connections). It returns once every call has returned.
func repeat(offset, period time.Duration, stop func() bool, open bool, send func()) {
	var wg sync.WaitGroup
	time.Sleep(offset)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for !stop() {
		if open {
			wg.Add(1)
			go func() {
				defer wg.Done()
				send()
			}()
		} else {
			send()
		}
		<-tick.C
	}
	wg.Wait()
}

// waitUntil polls cond every 5 ms until it holds (true) or d passes
// (false).
func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// quantile is the permille/1000 quantile of ds (nearest rank), 0 for no
// samples.
func quantile(ds []time.Duration, permille int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[max((len(s)*permille+999)/1000-1, 0)]
}

// TestElephantAndMice runs APF over real HTTP on loopback: one elephant
// client at ten times the level's capacity and nine mice below their fair
// share, against a handler that takes 50 ms. Fair queuing within a
// priority level promises that one flow flooding the level does not
// starve the others. The mice must see no 429, and take little longer
// than their twins: nine users sending the same requests at the same
// moments to an identical level the elephant never reaches, so that
// whatever else the machine runs weighs on both alike. Beside the
// elephant a mouse finds every seat taken and waits for the next to free,
// ahead of the elephant's queued requests: its p90 and p99 may exceed
// its twins' by 2 and 3 seat holds (the time a request holds a seat,
// measured over the same stretch), where a mouse queued behind the
// elephant's two queues of 5 would wait about four holds more. The
// elephant must be told 429 with Retry-After; every response carries
// both PF headers; afterwards nothing is executing or queued.
func TestElephantAndMice(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for several seconds")
	}
	objs, err := config.Decode([]byte(sharedLevel), "shared.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	set, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Config{ServerConcurrencyLimit: 8, Source: controller.StaticSource(objs), Metrics: set})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx)
	// The levels get their seats at the controller's first adjustment.
	var shared *controller.Level
	seats := 0
	if !waitUntil(5*time.Second, func() bool {
		views := map[string]controller.LevelView{}
		for _, l := range c.Levels() {
			views[l.Name] = l
		}
		sh, tw := views["shared"], views["twin"]
		if sh.Limits == nil || tw.Limits == nil {
			return false
		}
		shared, seats = sh.Queue, sh.Limits.Current
		return tw.Limits.Current == seats
	}) {
		t.Fatal("the levels shared and twin do not get the same seats")
	}

	const service = 50 * time.Millisecond
	var wmu sync.Mutex
	waits := map[string][]time.Duration{}
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered := r.Context().Value(enterKey{}).(time.Time)
		who, _, _ := strings.Cut(r.Header.Get("X-Test-User"), "-")
		wmu.Lock()
		waits[who] = append(waits[who], time.Since(entered))
		wmu.Unlock()
		time.Sleep(service)
		w.WriteHeader(http.StatusOK)
	})
	// Stand-in authentication: the user named by a test header, in the
	// group the schema matches.
	authn := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u := request.User{Name: r.Header.Get("X-Test-User"), Groups: []string{"clients", "system:authenticated"}}
			next.ServeHTTP(w, r.WithContext(context.WithValue(request.WithUser(r.Context(), &u), enterKey{}, time.Now())))
		})
	}
	srv := httptest.NewServer(authn(Middleware(c, Options{})(work))) // 127.0.0.1
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 20 * time.Second}
	defer hc.CloseIdleConnections()
	url := srv.URL + "/work"
	t.Logf("levels shared and twin: %d seats each", seats)

	// Capacity: 4 seats / 50 ms = 80 requests/s; each of the eleven busy
	// queues' fair share is 7/s. The mice ask for 2/s each, the elephant
	// for 800/s. Each mouse's request goes beside an identical one of
	// its twin. hold is the time a request held a seat of "shared" on
	// average over the stretch (its seats times the stretch over the
	// requests it dispatched): the time a seat takes to turn over as it is
	// then, on this machine, as long as the elephant keeps every seat busy.
	type miceResult struct {
		mice, twins outcome
		hold        time.Duration
	}
	run := func(d time.Duration) *miceResult {
		before, start := shared.Stats().Dispatched, time.Now()
		end := start.Add(d)
		stop := func() bool { return !time.Now().Before(end) }
		var out miceResult
		var wg sync.WaitGroup
		for i := range 9 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := string(rune('a' + i))
				repeat(time.Duration(i)*500*time.Millisecond/9, 500*time.Millisecond, stop, true, func() {
					var pair sync.WaitGroup
					pair.Add(1)
					go func() {
						defer pair.Done()
						send(t, hc, url, "mouse-"+name, "clients", "shared", &out.mice)
					}()
					send(t, hc, url, "twin-"+name, "twins", "twin", &out.twins)
					pair.Wait()
				})
			}()
		}
		wg.Wait()
		if n := shared.Stats().Dispatched - before; n > 0 {
			out.hold = time.Since(start) * time.Duration(seats) / time.Duration(n)
		}
		return &out
	}

	alone := run(2 * time.Second)
	if alone.mice.rejected != 0 || alone.mice.badHeaders+alone.mice.otherCodes != 0 || len(alone.mice.latencies) < 24 ||
		alone.twins.rejected != 0 || alone.twins.badHeaders+alone.twins.otherCodes != 0 {
		t.Fatalf("alone: mice %d answers, %d rejected, %d bad; twins %d answers, %d rejected, %d bad",
			len(alone.mice.latencies), alone.mice.rejected, alone.mice.badHeaders+alone.mice.otherCodes,
			len(alone.twins.latencies), alone.twins.rejected, alone.twins.badHeaders+alone.twins.otherCodes)
	}

	// Up to 800 requests/s: 40 workers, each at most 20/s, plus one
	// for each request the level holds of the elephant (its seats and
	// two full queues of 5), since those workers wait instead of
	// sending. A fixed number of closed-loop workers bounds what the load
	// generator costs. The mice start once the elephant has filled its
	// queues: the level turns it away.
	var elephant outcome
	var stopped atomic.Bool
	workers := 40 + seats + 2*5
	var ewg sync.WaitGroup
	rejectedBefore := shared.Stats().Rejected
	for i := range workers {
		ewg.Add(1)
		go func() {
			defer ewg.Done()
			repeat(time.Duration(i)*50*time.Millisecond/time.Duration(workers), 50*time.Millisecond, stopped.Load, false, func() {
				send(t, hc, url, "elephant", "clients", "shared", &elephant)
			})
		}()
	}
	if !waitUntil(10*time.Second, func() bool { return shared.Stats().Rejected > rejectedBefore }) {
		stopped.Store(true)
		ewg.Wait()
		t.Fatal("the elephant did not fill its queues")
	}
	beside := run(6 * time.Second)
	stopped.Store(true)
	ewg.Wait()

	wmu.Lock()
	t.Logf("APF wait p99: mice %v, twins %v, elephant %v", quantile(waits["mouse"], 990), quantile(waits["twin"], 990), quantile(waits["elephant"], 990))
	wmu.Unlock()
	t.Logf("alone p99: mice %v over %d, twins %v; elephant: %d served, %d rejected",
		quantile(alone.mice.latencies, 990), len(alone.mice.latencies), quantile(alone.twins.latencies, 990), len(elephant.latencies), elephant.rejected)
	if beside.mice.rejected != 0 || beside.mice.badHeaders+beside.mice.otherCodes != 0 || len(beside.mice.latencies) < 72 ||
		beside.twins.rejected != 0 || beside.twins.badHeaders+beside.twins.otherCodes != 0 || len(beside.twins.latencies) < 72 {
		t.Errorf("beside the elephant: mice %d answers, %d rejected, %d bad; twins %d answers, %d rejected, %d bad",
			len(beside.mice.latencies), beside.mice.rejected, beside.mice.badHeaders+beside.mice.otherCodes,
			len(beside.twins.latencies), beside.twins.rejected, beside.twins.badHeaders+beside.twins.otherCodes)
	} else {
		for _, b := range []struct {
			name     string
			permille int
			holds    float64
		}{{"p90", 900, 2}, {"p99", 990, 3}} {
			m, tw := quantile(beside.mice.latencies, b.permille), quantile(beside.twins.latencies, b.permille)
			bound := tw + time.Duration(b.holds*float64(beside.hold))
			t.Logf("beside the elephant, %s: mice %v over %d, twins %v over %d, seat hold %v: mice/twins %.2f, (mice-twins)/hold %.2f, bound %.1f",
				b.name, m, len(beside.mice.latencies), tw, len(beside.twins.latencies), beside.hold,
				float64(m)/float64(max(tw, 1)), float64(m-tw)/float64(max(beside.hold, 1)), b.holds)
			if m > bound {
				t.Errorf("mice %s %v beside the elephant, over %v: their twins' %v plus %.1f seat holds of %v", b.name, m, bound, tw, b.holds, beside.hold)
			}
		}
	}
	if elephant.rejected == 0 || elephant.badHeaders != 0 || elephant.otherCodes != 0 {
		t.Errorf("elephant: %d rejected, %d bad headers, %d other codes", elephant.rejected, elephant.badHeaders, elephant.otherCodes)
	}

	// Everything answered: nothing may be left executing or queued.
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, mf := range families {
		name := mf.GetName()
		if !strings.HasPrefix(name, "apiserver_flowcontrol_current_executing_") && !strings.HasPrefix(name, "apiserver_flowcontrol_current_inqueue_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			checked++
			if v := m.GetGauge().GetValue(); v != 0 {
				t.Errorf("%s %v = %v after the run", name, m.GetLabel(), v)
			}
		}
	}
	if checked == 0 {
		t.Error("no executing or in-queue gauges were exported")
	}
}

type enterKey struct{}
