// The gateway load test measures APF, not the race detector: make test
// runs it in its own step without -race.

//go:build !race

package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// sharedLevelJSON is one Queue level of 45 shares that neither lends nor
// borrows, and the FlowSchema sending the group "clients" there,
// distinguished by user. A hand of 2 keeps the flood to two queues.
const (
	sharedLevelJSON = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration",
	 "metadata":{"name":"shared"},
	 "spec":{"type":"Limited","limited":{"nominalConcurrencyShares":45,"lendablePercent":0,"borrowingLimitPercent":0,
	  "limitResponse":{"type":"Queue","queuing":{"queues":64,"handSize":2,"queueLengthLimit":5}}}}}`
	clientsSchemaJSON = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema",
	 "metadata":{"name":"clients"},
	 "spec":{"priorityLevelConfiguration":{"name":"shared"},"matchingPrecedence":500,"distinguisherMethod":{"type":"ByUser"},
	  "rules":[{"subjects":[{"kind":"Group","group":{"name":"clients"}}],
	   "resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"clusterScope":true,"namespaces":["*"]}]}]}}`
)

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
	took := time.Since(start)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.bad++
		return
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		l.latencies = append(l.latencies, took)
	case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "":
		l.rejected++
	default:
		l.bad++
	}
}

// run sends a request every period until end: each in its own goroutine
// (open, a well-behaved client) or only after the previous was answered
// (closed, one worker of the flood).
func (l *loadResult) run(gw *e2eServer, token string, offset, period time.Duration, end time.Time, open bool) {
	time.Sleep(offset)
	tick := time.NewTicker(period)
	defer tick.Stop()
	var wg sync.WaitGroup
	for time.Now().Before(end) {
		if open {
			wg.Go(func() { l.send(gw, token) })
		} else {
			l.send(gw, token)
		}
		<-tick.C
	}
	wg.Wait()
}

// fairnessRig is the scene of the gateway load tests: an upstream taking
// 50 ms per request, a gateway whose level "shared" (sharedLevelJSON) gets
// 5 of 26 seats, a flooding user and six mice, all in the group "clients".
type fairnessRig struct {
	gw    *e2eServer
	users []string // users[0] floods, the rest are mice
	seats int
	// capacity is the level's requests/s: seats / 50 ms.
	capacity float64
}

// newFairnessRig builds the rig; plainHTTP serves HTTP instead of HTTPS
// (for CPU figures without TLS handshakes). Everything stops at the end
// of the test.
func newFairnessRig(t *testing.T, plainHTTP bool) *fairnessRig {
	t.Helper()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		fmt.Fprint(w, `{"kind":"Pod"}`)
	}))
	t.Cleanup(upstream.Close)
	users := []string{"flood", "mouse-a", "mouse-b", "mouse-c", "mouse-d", "mouse-e", "mouse-f"}
	gw := startGateway(t, upstream.URL, gatewayTokens(t, users...), func(o *Options) {
		// 26 seats in all; with the bootstrap levels' 245 shares beside
		// the 45 of "shared", that level gets ceil(26*45/290) = 5.
		o.MaxRequestsInflight, o.MaxMutatingRequestsInflight = 20, 6
		o.InsecureHTTP = plainHTTP
	})
	t.Cleanup(gw.stop)
	gw.client.Transport.(*http.Transport).MaxIdleConnsPerHost = 256
	for _, obj := range []struct{ res, body string }{{"prioritylevelconfigurations", sharedLevelJSON}, {"flowschemas", clientsSchemaJSON}} {
		if code, _, body := gw.do(http.MethodPost, "/apis/flowcontrol.apiserver.k8s.io/v1/"+obj.res, adminToken, []byte(obj.body)); code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", obj.res, code, body)
		}
	}
	// Wait until the controller enforces the new schema.
	r := &fairnessRig{gw: gw, users: users}
	if err := waitFor(5*time.Second, func() bool {
		for _, l := range gw.server.Controller().Levels() {
			if l.Name == "shared" && l.Limits != nil {
				r.seats = l.Limits.Current
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	r.capacity = float64(r.seats) / 0.05
	t.Logf("level shared: %d seats, %.0f requests/s", r.seats, r.capacity)
	return r
}

// mice has each mouse send 4 requests/s for d, open loop, and gathers
// what they saw.
func (r *fairnessRig) mice(d time.Duration) (lat []time.Duration, rejected, bad int) {
	end := time.Now().Add(d)
	outs := make([]*loadResult, len(r.users)-1)
	var wg sync.WaitGroup
	for i := range outs {
		outs[i] = &loadResult{}
		wg.Go(func() {
			outs[i].run(r.gw, "token-"+r.users[i+1], time.Duration(i)*250*time.Millisecond/6, 250*time.Millisecond, end, true)
		})
	}
	wg.Wait()
	for _, o := range outs {
		lat = append(lat, o.latencies...)
		rejected += o.rejected
		bad += o.bad
	}
	return
}

func p99of(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)*99+99)/100-1]
}

// TestGatewayFairness is the gateway over loopback: an upstream taking 50
// ms per request, one flooding user at ten times the level's capacity and
// several users below their fair share, all authenticated by token. The
// well-behaved users get no 429 and keep their p99 within 3x of their
// unloaded p99; the flood gets 429s with Retry-After; afterwards nothing is
// executing or queued.
func TestGatewayFairness(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for several seconds")
	}
	rig := newFairnessRig(t, false)
	gw, capacity, mice := rig.gw, rig.capacity, rig.mice
	alone, rejAlone, badAlone := mice(2 * time.Second)
	if rejAlone != 0 || badAlone != 0 || len(alone) < 30 {
		t.Fatalf("mice alone: %d answers, %d rejected, %d bad", len(alone), rejAlone, badAlone)
	}

	flood := &loadResult{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		end := time.Now().Add(3500 * time.Millisecond)
		// Ten times the capacity from closed-loop workers, each at most
		// 20 requests/s.
		workers := int(10*capacity/20) + 1
		var wg sync.WaitGroup
		for i := range workers {
			wg.Go(func() {
				flood.run(gw, "token-flood", time.Duration(i)*50*time.Millisecond/time.Duration(workers), 50*time.Millisecond, end, false)
			})
		}
		wg.Wait()
	}()
	time.Sleep(300 * time.Millisecond) // let the flood fill its queues
	loaded, rejLoaded, badLoaded := mice(3 * time.Second)
	<-done

	pAlone, pLoaded := p99of(alone), p99of(loaded)
	t.Logf("mice: alone p99 %v over %d, with the flood p99 %v over %d; flood: %d served, %d rejected, %d bad",
		pAlone, len(alone), pLoaded, len(loaded), len(flood.latencies), flood.rejected, flood.bad)
	if rejLoaded != 0 || badLoaded != 0 {
		t.Errorf("mice with the flood: %d rejected, %d bad answers", rejLoaded, badLoaded)
	}
	if pLoaded > 3*pAlone {
		t.Errorf("mice p99 %v with the flood, more than 3x their %v alone", pLoaded, pAlone)
	}
	if flood.rejected == 0 || flood.bad != 0 {
		t.Errorf("flood: %d rejected, %d bad", flood.rejected, flood.bad)
	}
	if err := waitFor(5*time.Second, func() bool {
		for _, v := range gauges(t, gw, "apiserver_flowcontrol_current_executing_", "apiserver_flowcontrol_current_inqueue_") {
			if v != 0 {
				return false
			}
		}
		return true
	}); err != nil {
		t.Errorf("gauges after the run: %v", gauges(t, gw, "apiserver_flowcontrol_current_executing_", "apiserver_flowcontrol_current_inqueue_"))
	}
}
