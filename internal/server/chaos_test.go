// The chaos test measures nothing against a clock but runs thousands of
// requests over loopback for half a minute: make test runs it in its
// e2e step, without -race, whose cost would make it far longer.

//go:build !race

package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/fairqueue"
)

// What the stand-in upstream of the chaos test does with a request, as
// the client chose it (seeded) and said in the X-Chaos header.
const (
	chaosOK           = "ok"             // answer after the delay
	chaosPanic        = "panic"          // panic before answering
	chaosPanicMidBody = "panic-mid-body" // send headers and half the body, then panic
	chaosHang         = "hang"           // answer nothing until the gateway gives up
	chaosReset        = "reset"          // hijack the connection and reset it
)

// chaosModes are drawn with these weights.
var chaosModes = []struct {
	mode   string
	weight int
}{{chaosOK, 70}, {chaosPanic, 7}, {chaosPanicMidBody, 5}, {chaosHang, 8}, {chaosReset, 10}}

// chaosUpstream is the API behind the gateway. Its handlers obey the
// X-Chaos and X-Chaos-Delay headers. A hanging handler waits for the
// gateway to give up on it (its context ends) or for chaosHangLimit,
// far beyond the gateway's upstream timeout, so a hang the gateway
// failed to cut short shows as a goroutine left over.
// It records the X-Chaos-ID of every request it sees in seen.
func chaosUpstream(seen *sync.Map) *httptest.Server {
	list := podList(3)
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Header.Get("X-Chaos-ID"), true)
		// Read the body as an API server does: net/http notices a
		// client that goes away only once the body is consumed.
		_, _ = io.Copy(io.Discard, r.Body)
		delay, _ := time.ParseDuration(r.Header.Get("X-Chaos-Delay"))
		pause := func() bool {
			t := time.NewTimer(delay)
			defer t.Stop()
			select {
			case <-t.C:
				return true
			case <-r.Context().Done():
				return false
			}
		}
		switch r.Header.Get("X-Chaos") {
		case chaosPanic:
			if pause() {
				panic("chaos: the upstream handler panics")
			}
		case chaosPanicMidBody:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(list)))
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(list[:len(list)/2])
			http.NewResponseController(w).Flush()
			if pause() {
				panic("chaos: the upstream handler panics in the middle of its answer")
			}
		case chaosHang:
			t := time.NewTimer(chaosHangLimit)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
			}
		case chaosReset:
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(err)
			}
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // close with a RST, not a FIN
			}
			_ = conn.Close()
		default:
			if !pause() {
				return
			}
			w.Header().Set("Content-Type", "application/json")
			if r.Method == http.MethodGet && !strings.Contains(r.URL.Path, "/pods/") {
				_, _ = w.Write(list)
				return
			}
			fmt.Fprint(w, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"}}`)
		}
	}))
	// The panics are the point: keep net/http's reports of them quiet.
	up.Config.ErrorLog = log.New(io.Discard, "", 0)
	up.Start()
	return up
}

// Bounds of the chaos test's gateway and clients.
const (
	chaosRequestTimeout  = 4 * time.Second // a queue wait is at most 1 s
	chaosUpstreamTimeout = 2 * time.Second
	chaosHangLimit       = 2 * time.Minute
	// chaosRequestBound is the longest a request may take: the wait
	// limit, the upstream timeout, and a wide margin for a loaded
	// machine (other processes can stall this one for seconds). A
	// request taking longer counts as hung.
	chaosRequestBound = 20 * time.Second
)

// The chaos configuration: the flood's users go to chaos-a (or to the
// rejecting chaos-c when retargeted), every other client to chaos-b.
// When a schema or a level is missing, the requests fall through to the
// bootstrap global-default.
func chaosLevelJSON(name string, shares int, queuing string) string {
	lr := `{"type":"Reject"}`
	if queuing != "" {
		lr = `{"type":"Queue","queuing":` + queuing + `}`
	}
	return fmt.Sprintf(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration",
	 "metadata":{"name":%q},"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":%d,"limitResponse":%s}}}`, name, shares, lr)
}

const (
	chaosFloodSchemaJSON = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema",
	 "metadata":{"name":"chaos-flood"},
	 "spec":{"priorityLevelConfiguration":{"name":"%s"},"matchingPrecedence":400,"distinguisherMethod":{"type":"ByUser"},
	  "rules":[{"subjects":[{"kind":"User","user":{"name":"flood-1"}},{"kind":"User","user":{"name":"flood-2"}}],
	   "resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"clusterScope":true,"namespaces":["*"]}]}]}}`
	chaosMiceSchemaJSON = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema",
	 "metadata":{"name":"chaos-mice"},
	 "spec":{"priorityLevelConfiguration":{"name":"chaos-b"},"matchingPrecedence":500,"distinguisherMethod":{"type":"ByUser"},
	  "rules":[{"subjects":[{"kind":"Group","group":{"name":"clients"}}],
	   "resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"clusterScope":true,"namespaces":["*"]}]}]}}`
)

// chaosQueuing is a random queuing block.
func chaosQueuing(rng *rand.Rand) string {
	queues := []int{1, 8, 64}[rng.IntN(3)]
	hand := min([]int{1, 2, 4}[rng.IntN(3)], queues)
	return fmt.Sprintf(`{"queues":%d,"handSize":%d,"queueLengthLimit":%d}`, queues, hand, []int{1, 5, 50}[rng.IntN(3)])
}

// chaosTally counts how the clients' requests ended.
type chaosTally struct {
	sent, ok, rejected, badGateway, gatewayTimeout, aborted, cancelled atomic.Int64
	// cancelledRunning counts the cancelled requests the upstream had
	// seen: cancelled while they executed.
	cancelledRunning atomic.Int64
	// slowTimeout counts the 504s of requests the upstream did not
	// mean to hang.
	slowTimeout atomic.Int64
	// retries counts extra attempts the client transport made on its
	// own (a replayable request on a connection the server closed).
	retries atomic.Int64
	// maxTook is the longest request, in nanoseconds.
	maxTook atomic.Int64

	mu       sync.Mutex
	failures []string // unexpected outcomes, the first few
	failed   int
	retried  map[string]int // retried requests by mode, method and protocol
}

func (c *chaosTally) fail(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failed++
	if len(c.failures) < 10 {
		c.failures = append(c.failures, fmt.Sprintf(format, args...))
	}
}

// chaosClient is one user.
type chaosClient struct {
	user, token string
	client      *http.Client
	exempt, h2  bool
}

// one sends a request with a random verb, upstream behaviour and, for
// some, a cancellation after a random delay, and checks how it ended.
func (cc *chaosClient) one(ctx context.Context, base string, rng *rand.Rand, tally *chaosTally, upstreamSaw *sync.Map) {
	mode := chaosOK
	for n, i := rng.IntN(100), 0; ; i++ {
		if n < chaosModes[i].weight {
			mode = chaosModes[i].mode
			break
		}
		n -= chaosModes[i].weight
	}
	method, path, body := http.MethodGet, "/api/v1/namespaces/chaos/pods/p", []byte(nil)
	switch v := rng.IntN(10); {
	case v == 1 || mode == chaosPanicMidBody:
		// A POST is not re-sent by the client transport, so a
		// connection the gateway aborts is seen as such (a GET would
		// be sent again, up to once per idle connection).
		method, path, body = http.MethodPost, "/api/v1/namespaces/chaos/pods", []byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"}}`)
	case v == 0:
		path = "/api/v1/namespaces/chaos/pods"
	}
	delay := time.Duration(5+rng.IntN(30)) * time.Millisecond
	cancelAfter := time.Duration(-1)
	if rng.IntN(100) < 15 {
		cancelAfter = time.Duration(rng.IntN(1500)) * time.Millisecond
	}

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var cancelled atomic.Bool
	if cancelAfter >= 0 {
		t := time.AfterFunc(cancelAfter, func() { cancelled.Store(true); cancel() })
		defer t.Stop()
	}
	var attempts atomic.Int32
	rctx = httptrace.WithClientTrace(rctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { attempts.Add(1) }})
	req, err := http.NewRequestWithContext(rctx, method, base+path, bytes.NewReader(body))
	if err != nil {
		tally.fail("%v", err)
		return
	}
	req.Header.Set("Authorization", "Bearer "+cc.token)
	req.Header.Set("X-Chaos", mode)
	req.Header.Set("X-Chaos-Delay", delay.String())
	id := strconv.FormatInt(tally.sent.Add(1), 10)
	req.Header.Set("X-Chaos-ID", id)

	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := cc.client.Do(req)
	var bodyErr error
	code := 0
	if err == nil {
		code = resp.StatusCode
		_, bodyErr = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	took := time.Since(start)
	if n := attempts.Load(); n > 1 {
		tally.retries.Add(int64(n - 1))
		tally.mu.Lock()
		tally.retried[fmt.Sprintf("%s %s over HTTP/%d", mode, method, map[bool]int{false: 1, true: 2}[cc.h2])]++
		tally.mu.Unlock()
	}
	for {
		m := tally.maxTook.Load()
		if int64(took) <= m || tally.maxTook.CompareAndSwap(m, int64(took)) {
			break
		}
	}
	what := fmt.Sprintf("%s %s %s by %s (cancel after %v)", mode, method, path, cc.user, cancelAfter)
	if took > chaosRequestBound {
		tally.fail("%s took %v", what, took)
	}
	if cancelled.Load() && (err != nil || bodyErr != nil) {
		tally.cancelled.Add(1)
		if _, ok := upstreamSaw.Load(id); ok {
			tally.cancelledRunning.Add(1)
		}
		return
	}
	if err != nil {
		if mode == chaosPanicMidBody {
			// The gateway had relayed the start of an answer the
			// upstream never finished: it aborts the connection, the
			// only way HTTP has to say a response is truncated.
			tally.aborted.Add(1)
			return
		}
		tally.fail("%s: %v", what, err)
		return
	}
	if code == http.StatusTooManyRequests {
		if cc.exempt || resp.Header.Get("Retry-After") == "" {
			tally.fail("%s: 429 (Retry-After %q)", what, resp.Header.Get("Retry-After"))
		}
		tally.rejected.Add(1)
		return
	}
	if resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID") == "" {
		tally.fail("%s: %d without the APF headers", what, code)
	}
	switch {
	case mode == chaosOK && (code == http.StatusOK || code == http.StatusCreated) && bodyErr == nil:
		tally.ok.Add(1)
	case mode != chaosOK && mode != chaosHang && code == http.StatusBadGateway:
		tally.badGateway.Add(1)
	case mode == chaosPanicMidBody && code == http.StatusOK && bodyErr != nil:
		tally.aborted.Add(1)
	case code == http.StatusGatewayTimeout:
		// Always possible: on a loaded machine even a quick upstream
		// can miss the header timeout.
		tally.gatewayTimeout.Add(1)
		if mode != chaosHang {
			tally.slowTimeout.Add(1)
		}
	default:
		tally.fail("%s: unexpected %d (body error %v)", what, code, bodyErr)
	}
}

// levelBooks follows every queue set the controller ever shows, by
// identity: a level that is removed keeps its books in its
// controller.Level after the controller forgets it, and one re-created
// after that is a new queue set with books of its own.
type levelBooks struct {
	mu    sync.Mutex
	names map[*controller.Level]string
	base  map[*controller.Level]fairqueue.Stats
}

func (b *levelBooks) poll(s *e2eServer) {
	views := s.server.Controller().Levels()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, v := range views {
		if _, ok := b.names[v.Queue]; !ok {
			b.names[v.Queue] = v.Name
		}
	}
}

// chaosTokens is the e2e token file plus the chaos clients: users in the
// group "clients", and root-chaos, a member of system:masters whose
// requests are exempt.
func chaosTokens(t *testing.T, users []string) string {
	var b strings.Builder
	b.WriteString(tokenFile)
	for _, u := range users {
		fmt.Fprintf(&b, "token-%s,%s,uid-%s,\"clients\"\n", u, u, u)
	}
	b.WriteString("token-root-chaos,root-chaos,uid-root-chaos,\"system:masters\"\n")
	f := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(f, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// goroutineTops counts the goroutines by the function they run in,
// for the report of a leak.
func goroutineTops() map[string]int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]int{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		// The creating frame names the goroutine best: "created by
		// X" is the second-to-last line.
		key := lines[len(lines)-1]
		for _, l := range lines {
			if strings.HasPrefix(l, "created by ") {
				key, _, _ = strings.Cut(l, " in goroutine ")
			}
		}
		if len(lines) > 1 {
			key = strings.TrimSpace(lines[1]) + " / " + key
		}
		out[key]++
	}
	return out
}

// TestChaos: a gateway over an upstream whose handlers answer, panic,
// hang or reset the connection at random (seeded), clients that flood,
// trickle and cancel requests while they wait and while they run, and
// the configuration changing every second through the flowcontrol API.
// Every request ends with an answer or the client's own cancellation,
// none takes longer than chaosRequestBound; every queue set's books
// balance, and together they account for every request the clients
// sent; afterwards nothing executes or waits, and the goroutines are back
// to their count before the run.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for half a minute")
	}
	run := 30 * time.Second
	if os.Getenv("APF_SOAK") != "" {
		run = 5 * time.Minute
	}
	seed := uint64(20240611)
	if s := os.Getenv("APF_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("APF_CHAOS_SEED %q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (APF_CHAOS_SEED repeats the run's random choices), %v", seed, run)

	var upstreamSaw sync.Map
	upstream := chaosUpstream(&upstreamSaw)
	defer upstream.Close()
	floods := []string{"flood-1", "flood-2"}
	mice := []string{"mouse-a", "mouse-b", "mouse-c", "mouse-d"}
	gw := startGateway(t, upstream.URL, chaosTokens(t, append(slices.Clone(floods), mice...)), func(o *Options) {
		o.MaxRequestsInflight, o.MaxMutatingRequestsInflight = 20, 6
		o.RequestTimeout = chaosRequestTimeout
		o.UpstreamTimeout = chaosUpstreamTimeout
	})
	defer gw.stop()

	// admin changes the configuration; counts its requests, all exempt.
	var adminRequests int64
	admin := func(method, path, contentType, body string) int {
		req, err := http.NewRequest(method, gw.url+"/apis/flowcontrol.apiserver.k8s.io/v1/"+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+adminToken)
		if body != "" {
			req.Header.Set("Content-Type", contentType)
		}
		adminRequests++
		resp, err := gw.client.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", method, path, err)
			return 0
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Errorf("%s %s: %d %.300s", method, path, resp.StatusCode, b)
		}
		return resp.StatusCode
	}
	const jsonType, mergeType = "application/json", "application/merge-patch+json"
	rng := rand.New(rand.NewPCG(seed, 0))
	exists := map[string]bool{}
	create := func(kind, name, body string) {
		admin(http.MethodPost, kind, jsonType, body)
		exists[kind+"/"+name] = true
	}
	create("prioritylevelconfigurations", "chaos-a", chaosLevelJSON("chaos-a", 30, chaosQueuing(rng)))
	create("prioritylevelconfigurations", "chaos-b", chaosLevelJSON("chaos-b", 20, chaosQueuing(rng)))
	create("prioritylevelconfigurations", "chaos-c", chaosLevelJSON("chaos-c", 5, ""))
	floodTarget := "chaos-a"
	create("flowschemas", "chaos-flood", fmt.Sprintf(chaosFloodSchemaJSON, floodTarget))
	create("flowschemas", "chaos-mice", chaosMiceSchemaJSON)
	if err := waitFor(10*time.Second, func() bool {
		n := 0
		for _, l := range gw.server.Controller().Levels() {
			if strings.HasPrefix(l.Name, "chaos-") && l.Limits != nil {
				n++
			}
		}
		return n == 3
	}); err != nil {
		t.Fatal("the chaos levels are not enforced:", err)
	}

	// The clients: two flooding users of 12 closed-loop workers each,
	// four mice sending 5 requests/s each, and an exempt user sending 2
	// requests/s; half of them over HTTP/2.
	tlsCfg := gw.client.Transport.(*http.Transport).TLSClientConfig
	var transports []*http.Transport
	newClient := func(h2 bool) *http.Client {
		tr := &http.Transport{TLSClientConfig: tlsCfg.Clone(), ForceAttemptHTTP2: h2, MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}
		transports = append(transports, tr)
		// The timeout is a backstop: a request reaching it has hung,
		// which the bound check reports.
		return &http.Client{Transport: tr, Timeout: 3 * chaosRequestBound}
	}
	var clients []*chaosClient
	for i, u := range floods {
		clients = append(clients, &chaosClient{user: u, token: "token-" + u, client: newClient(i%2 == 0), h2: i%2 == 0})
	}
	for i, u := range mice {
		clients = append(clients, &chaosClient{user: u, token: "token-" + u, client: newClient(i%2 == 1), h2: i%2 == 1})
	}
	clients = append(clients, &chaosClient{user: "root-chaos", token: "token-root-chaos", client: newClient(true), exempt: true, h2: true})

	// closeIdle closes every idle connection on both sides of the gateway,
	// so that the goroutines serving them end.
	closeIdle := func() {
		for _, tr := range transports {
			tr.CloseIdleConnections()
		}
		gw.client.CloseIdleConnections()
		upstream.CloseClientConnections()
	}
	books := &levelBooks{names: map[*controller.Level]string{}, base: map[*controller.Level]fairqueue.Stats{}}
	books.poll(gw)
	closeIdle()
	var baseGoroutines int
	_ = waitFor(2*time.Second, func() bool {
		n := runtime.NumGoroutine()
		settled := n == baseGoroutines
		baseGoroutines = n
		return settled
	})
	baseTops := goroutineTops()
	for q := range books.names {
		books.base[q] = q.Stats()
	}
	baseExemptMetric := dispatchedMetric(t, gw, "exempt")
	baseAdmin := adminRequests

	// Follow the controller's levels all along.
	stopPoll := make(chan struct{})
	var pollWG sync.WaitGroup
	pollWG.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopPoll:
				return
			case <-tick.C:
				books.poll(gw)
			}
		}
	})

	tally := &chaosTally{retried: map[string]int{}}
	end := time.Now().Add(run)
	ctx, stopClients := context.WithCancel(context.Background())
	defer stopClients()
	var clientWG sync.WaitGroup
	for ci, cc := range clients {
		isFlood := ci < len(floods)
		workers, period := 1, time.Second/5
		switch {
		case isFlood:
			workers, period = 12, 50*time.Millisecond
		case cc.exempt:
			period = time.Second / 2
		}
		for w := range workers {
			rng := rand.New(rand.NewPCG(seed, uint64(1+ci*100+w)))
			clientWG.Go(func() {
				tick := time.NewTicker(period)
				defer tick.Stop()
				var reqWG sync.WaitGroup
				defer reqWG.Wait()
				for time.Now().Before(end) {
					if isFlood {
						cc.one(ctx, gw.url, rng, tally, &upstreamSaw) // closed loop
					} else {
						r := rand.New(rand.NewPCG(seed, rng.Uint64()))
						reqWG.Go(func() { cc.one(ctx, gw.url, r, tally, &upstreamSaw) })
					}
					<-tick.C
				}
			})
		}
	}

	// The configuration changes every second: the kinds of change are
	// dealt from a shuffled deck, so that every kind comes up every six
	// seconds; a kind that does not apply (resizing a level that is
	// deleted) does its opposite (creates the level).
	level := func(lvl string) func() string {
		key := "prioritylevelconfigurations/" + lvl
		return func() string {
			if !exists[key] {
				create("prioritylevelconfigurations", lvl, chaosLevelJSON(lvl, []int{10, 30}[rng.IntN(2)], chaosQueuing(rng)))
				return "create " + lvl
			}
			shares := []int{5, 10, 30, 60}[rng.IntN(4)]
			lr := `{"type":"Queue","queuing":` + chaosQueuing(rng) + `}`
			if lvl == "chaos-b" && rng.IntN(3) == 0 {
				lr = `{"type":"Reject","queuing":null}`
			}
			admin(http.MethodPatch, key, mergeType, fmt.Sprintf(`{"spec":{"limited":{"nominalConcurrencyShares":%d,"limitResponse":%s}}}`, shares, lr))
			return "resize " + lvl
		}
	}
	toggleLevel := func(lvl string) func() string {
		key := "prioritylevelconfigurations/" + lvl
		return func() string {
			if !exists[key] {
				return level(lvl)()
			}
			admin(http.MethodDelete, key, "", "")
			exists[key] = false
			return "delete " + lvl
		}
	}
	floodSchema := func(retarget bool) func() string {
		return func() string {
			switch {
			case !exists["flowschemas/chaos-flood"]:
				create("flowschemas", "chaos-flood", fmt.Sprintf(chaosFloodSchemaJSON, floodTarget))
				return "create chaos-flood"
			case retarget:
				floodTarget = map[string]string{"chaos-a": "chaos-c", "chaos-c": "chaos-a"}[floodTarget]
				admin(http.MethodPatch, "flowschemas/chaos-flood", mergeType, fmt.Sprintf(`{"spec":{"priorityLevelConfiguration":{"name":%q}}}`, floodTarget))
				return "retarget chaos-flood to " + floodTarget
			}
			admin(http.MethodDelete, "flowschemas/chaos-flood", "", "")
			exists["flowschemas/chaos-flood"] = false
			return "delete chaos-flood"
		}
	}
	kinds := []func() string{level("chaos-a"), level("chaos-b"), toggleLevel("chaos-a"), toggleLevel("chaos-b"), floodSchema(false), floodSchema(true)}
	var deck []func() string
	var ops []string
	for time.Now().Before(end) {
		time.Sleep(time.Second)
		if len(deck) == 0 {
			deck = slices.Clone(kinds)
			rng.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
		}
		ops = append(ops, deck[0]())
		deck = deck[1:]
	}
	t.Logf("%d configuration changes: %s", len(ops), strings.Join(ops, ", "))

	// Every client stops by itself within the request bound.
	clientsDone := make(chan struct{})
	go func() { clientWG.Wait(); close(clientsDone) }()
	select {
	case <-clientsDone:
	case <-time.After(chaosRequestBound + 5*time.Second):
		stopClients()
		<-clientsDone
		t.Errorf("requests still running %v after the end of the run", chaosRequestBound+5*time.Second)
	}
	close(stopPoll)
	pollWG.Wait()

	// The clients' side.
	answered := tally.ok.Load() + tally.badGateway.Load() + tally.gatewayTimeout.Load() + tally.aborted.Load()
	t.Logf("requests: %d sent; %d answered by the upstream (%d ok, %d 502, %d 504 of which %d not hung by the upstream, %d aborted mid-answer), %d rejected with 429, %d cancelled by their client (%d while executing, %d before), %d transport retries; longest %v",
		tally.sent.Load(), answered, tally.ok.Load(), tally.badGateway.Load(), tally.gatewayTimeout.Load(), tally.slowTimeout.Load(), tally.aborted.Load(),
		tally.rejected.Load(), tally.cancelled.Load(), tally.cancelledRunning.Load(), tally.cancelled.Load()-tally.cancelledRunning.Load(),
		tally.retries.Load(), time.Duration(tally.maxTook.Load()))
	t.Logf("requests the client transport sent again: %v", tally.retried)
	if tally.failed > 0 {
		t.Errorf("%d requests ended unexpectedly, among them:\n%s", tally.failed, strings.Join(tally.failures, "\n"))
	}
	if got := answered + tally.rejected.Load() + tally.cancelled.Load() + int64(tally.failed); got != tally.sent.Load() {
		t.Errorf("%d requests sent, %d ended", tally.sent.Load(), got)
	}
	if tally.rejected.Load() == 0 || tally.cancelledRunning.Load() == 0 || tally.cancelled.Load() == tally.cancelledRunning.Load() ||
		tally.badGateway.Load() == 0 || tally.gatewayTimeout.Load() == 0 || tally.aborted.Load() == 0 {
		t.Errorf("the run did not exercise every ending")
	}

	// The server's side: every queue set's books balance, and nothing is
	// left waiting, executing or holding seats.
	if err := waitFor(5*time.Second, func() bool {
		for q := range books.names {
			if st := q.Stats(); st.WaitingRequests+st.ExecutingRequests+st.SeatsInUse != 0 {
				return false
			}
		}
		return true
	}); err != nil {
		t.Errorf("requests still waiting or executing after the run")
	}
	var arrived, dispatched, rejected, cancelled, exemptDispatched int
	var instances []string
	for q, name := range books.names {
		st, b := q.Stats(), books.base[q]
		a, d, r, c := st.Arrived-b.Arrived, st.Dispatched-b.Dispatched, st.Rejected-b.Rejected, st.Cancelled-b.Cancelled
		arrived, dispatched, rejected, cancelled = arrived+a, dispatched+d, rejected+r, cancelled+c
		if name == "exempt" {
			exemptDispatched += d
		}
		instances = append(instances, fmt.Sprintf("%s: %d arrived = %d dispatched + %d rejected (%d of them cancelled or timed out in the queue)", name, a, d, r, c))
		if st.Arrived != st.Dispatched+st.Rejected+st.WaitingRequests || st.WaitingRequests != 0 || st.ExecutingRequests != 0 || st.SeatsInUse != 0 || c > r {
			t.Errorf("level %s: books do not balance: %+v", name, st)
		}
	}
	slices.Sort(instances)
	t.Logf("%d queue sets:\n%s", len(instances), strings.Join(instances, "\n"))
	// Each request the clients saw answered was dispatched, each 429
	// rejected; a cancelled one may have ended anywhere or never
	// arrived; a transport retry is one more arrival.
	admins := adminRequests - baseAdmin
	sawDispatched, sawRejected := answered+admins, tally.rejected.Load()
	slack := tally.cancelled.Load() + tally.retries.Load()
	t.Logf("books: %d arrived, %d dispatched, %d rejected (%d removed from a queue); the clients saw %d dispatched (%d of them configuration calls), %d rejected, and %d cancelled or re-sent",
		arrived, dispatched, rejected, cancelled, sawDispatched, admins, sawRejected, slack)
	if d := int64(dispatched); d < sawDispatched || d > sawDispatched+slack {
		t.Errorf("the queue sets dispatched %d requests; the clients saw %d answered, with %d cancelled or retried", d, sawDispatched, slack)
	}
	if r := int64(rejected); r < sawRejected || r > sawRejected+slack {
		t.Errorf("the queue sets rejected %d requests; the clients saw %d 429s, with %d cancelled or retried", r, sawRejected, slack)
	}
	if a := int64(arrived); a < sawDispatched+sawRejected || a > sawDispatched+sawRejected+slack {
		t.Errorf("%d requests arrived at the queue sets; the clients saw %d answered or rejected, with %d cancelled or retried", a, sawDispatched+sawRejected, slack)
	}
	// The exempt level and its flow schemas never changed: its metric
	// agrees with its queue set exactly.
	if m := dispatchedMetric(t, gw, "exempt") - baseExemptMetric; m != exemptDispatched {
		t.Errorf("apiserver_flowcontrol_dispatched_requests_total of exempt grew by %d, its queue set dispatched %d", m, exemptDispatched)
	}
	nonZero := func() []string {
		var out []string
		for k, v := range gauges(t, gw, "apiserver_flowcontrol_current_executing_", "apiserver_flowcontrol_current_inqueue_") {
			if v != 0 {
				out = append(out, fmt.Sprintf("%s = %v", k, v))
			}
		}
		return out
	}
	if err := waitFor(5*time.Second, func() bool { return len(nonZero()) == 0 }); err != nil {
		t.Errorf("gauges after the run:\n%s", strings.Join(nonZero(), "\n"))
	}

	// The goroutines of the run are gone.
	const tolerance = 5
	var n int
	if err := waitFor(15*time.Second, func() bool {
		closeIdle()
		n = runtime.NumGoroutine()
		return n <= baseGoroutines+tolerance
	}); err != nil {
		var grew []string
		for k, v := range goroutineTops() {
			if v > baseTops[k] {
				grew = append(grew, fmt.Sprintf("%+d %s", v-baseTops[k], k))
			}
		}
		slices.Sort(grew)
		t.Errorf("%d goroutines after the run, %d before; more of:\n%s", n, baseGoroutines, strings.Join(grew, "\n"))
	}
	t.Logf("goroutines: %d before the run, %d after", baseGoroutines, n)
}

// dispatchedMetric sums apiserver_flowcontrol_dispatched_requests_total
// over the flow schemas of a priority level.
func dispatchedMetric(t testing.TB, s *e2eServer, level string) int {
	t.Helper()
	families, err := s.server.promReg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range families {
		if mf.GetName() != "apiserver_flowcontrol_dispatched_requests_total" || mf.GetType() != dto.MetricType_COUNTER {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "priority_level" && l.GetValue() == level {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return int(sum)
}
