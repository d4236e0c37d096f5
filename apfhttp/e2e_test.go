// This load test measures APF, not the race detector: under -race the
// clients and the server of 4,000 requests/s no longer fit on two cores.
// make test runs it in its own step without -race.

//go:build !race

package apfhttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/metrics"
	"github.com/apfproject/apf/request"
)

// sharedLevel gives the "clients" group one Queue level, distinguished by
// user. With a server limit of 4 and the mandatory catch-all's 5 shares
// beside its 45, the level gets 4 seats. A hand of 2 keeps the elephant to
// two of the eleven busy queues: fairness is per queue, so with a hand of
// 8 the elephant would hold eight shares and the mice would sit close to
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
`

// outcome is what one client saw.
type outcome struct {
	latencies  []time.Duration // of 200 responses
	rejected   int             // 429s, all with Retry-After
	badHeaders int             // responses lacking a PF header or a 429 without Retry-After
	otherCodes int
}

// send makes one request as user and records what came back.
func send(t *testing.T, hc *http.Client, url, user string, mu *sync.Mutex, out *outcome) {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("X-Test-User", user)
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		t.Errorf("%s: %v", user, err)
		return
	}
	resp.Body.Close()
	took := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	if resp.Header.Get(FlowSchemaUIDHeader) != "fs-clients" || resp.Header.Get(PriorityLevelUIDHeader) != "pl-shared" {
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

// client sends requests as user every period, starting after offset, until
// end. Offsets spread clients over the period, as independent clients are:
// started in lock step they would arrive in bursts. An open client sends
// each request in its own goroutine, whatever the answers take (a mouse);
// a closed one sends the next only after the previous was answered, at
// most once a period (one worker of a busy client with a bounded number of
// connections).
func client(t *testing.T, hc *http.Client, url, user string, offset, period time.Duration, end time.Time, open bool) *outcome {
	var (
		mu  sync.Mutex
		out outcome
		wg  sync.WaitGroup
	)
	time.Sleep(offset)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for time.Now().Before(end) {
		if open {
			wg.Add(1)
			go func() {
				defer wg.Done()
				send(t, hc, url, user, &mu, &out)
			}()
		} else {
			send(t, hc, url, user, &mu, &out)
		}
		<-tick.C
	}
	wg.Wait()
	return &out
}

func p99(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)*99+99)/100-1]
}

// TestElephantAndMice runs APF over real HTTP on loopback: one elephant
// client at ten times the level's capacity and nine mice below their fair
// share, against a handler that takes 10 ms. The mice must see no 429 and
// keep their p99 latency within 3x of what they see alone; the elephant
// must be told 429 with Retry-After; every response carries both PF
// headers; afterwards nothing is executing or queued.
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
	c, err := controller.New(controller.Config{ServerConcurrencyLimit: 4, Source: controller.StaticSource(objs), Metrics: set})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx)

	var wmu sync.Mutex
	waits := map[bool][]time.Duration{}
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered := r.Context().Value(enterKey{}).(time.Time)
		wmu.Lock()
		waits[strings.HasPrefix(r.Header.Get("X-Test-User"), "mouse")] = append(waits[strings.HasPrefix(r.Header.Get("X-Test-User"), "mouse")], time.Since(entered))
		wmu.Unlock()
		time.Sleep(10 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	})
	// Stand-in authentication: the user named by a test header, in the
	// group the schema matches.
	authn := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u := request.User{Name: r.Header.Get("X-Test-User"), Groups: []string{"clients", "system:authenticated"}}
			next.ServeHTTP(w, r.WithContext(context.WithValue(WithUser(r.Context(), &u), enterKey{}, time.Now())))
		})
	}
	srv := httptest.NewServer(authn(Middleware(c, Options{})(work))) // 127.0.0.1
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 20 * time.Second}
	defer hc.CloseIdleConnections()
	url := srv.URL + "/work"

	// Capacity: 4 seats / 10 ms = 400 requests/s; each of the eleven busy
	// queues' fair share is 36/s. The mice ask for 10/s each, the elephant
	// for 4,000/s.
	mice := func(d time.Duration) []*outcome {
		end := time.Now().Add(d)
		outs := make([]*outcome, 9)
		var wg sync.WaitGroup
		for i := range outs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i] = client(t, hc, url, "mouse-"+string(rune('a'+i)), time.Duration(i)*100*time.Millisecond/9, 100*time.Millisecond, end, true)
			}()
		}
		wg.Wait()
		return outs
	}
	gather := func(outs []*outcome) (lat []time.Duration, rejected, bad int) {
		for _, o := range outs {
			lat = append(lat, o.latencies...)
			rejected += o.rejected
			bad += o.badHeaders + o.otherCodes
		}
		return
	}

	alone, rejAlone, badAlone := gather(mice(1500 * time.Millisecond))
	if rejAlone != 0 || badAlone != 0 || len(alone) < 100 {
		t.Fatalf("mice alone: %d answers, %d rejected, %d bad", len(alone), rejAlone, badAlone)
	}

	var elephant *outcome
	done := make(chan struct{})
	go func() {
		defer close(done)
		end := time.Now().Add(3 * time.Second)
		// Up to 4,000 requests/s: 40 workers, each at most 100/s.
		outs := make([]*outcome, 40)
		var wg sync.WaitGroup
		for i := range outs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i] = client(t, hc, url, "elephant", time.Duration(i)*10*time.Millisecond/40, 10*time.Millisecond, end, false)
			}()
		}
		wg.Wait()
		elephant = &outcome{}
		for _, o := range outs {
			elephant.latencies = append(elephant.latencies, o.latencies...)
			elephant.rejected += o.rejected
			elephant.badHeaders += o.badHeaders
			elephant.otherCodes += o.otherCodes
		}
	}()
	time.Sleep(200 * time.Millisecond) // let the elephant fill its queues
	loaded, rejLoaded, badLoaded := gather(mice(2500 * time.Millisecond))
	<-done

	pAlone, pLoaded := p99(alone), p99(loaded)
	wmu.Lock()
	t.Logf("APF wait p99: mice %v, elephant %v; mice loaded p50 %v", p99(waits[true]), p99(waits[false]), func() time.Duration { s := slices.Clone(loaded); slices.Sort(s); return s[len(s)/2] }())
	wmu.Unlock()
	t.Logf("mice: alone p99 %v over %d, with the elephant p99 %v over %d; elephant: %d served, %d rejected",
		pAlone, len(alone), pLoaded, len(loaded), len(elephant.latencies), elephant.rejected)
	if rejLoaded != 0 || badLoaded != 0 {
		t.Errorf("mice with the elephant: %d rejected, %d bad answers", rejLoaded, badLoaded)
	}
	if pLoaded > 3*pAlone {
		t.Errorf("mice p99 %v with the elephant, more than 3x their %v alone", pLoaded, pAlone)
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
