// The rolling-restart test measures the server under a steady load: make
// test runs it in its e2e step without -race.

//go:build !race

package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/api/store"
)

// recordingReplica is one `apf serve` replica of a rolling restart: its
// outermost handler records every request it accepts, so that a client's
// transport error can be told apart as a request the replica accepted and
// dropped (lost) or one it never took (a connection error).
type recordingReplica struct {
	*e2eServer
	name string
	// stopAt is when the replica's shutdown began (UnixNano), 0 while it
	// serves normally.
	stopAt atomic.Int64
}

// startRecordingReplica runs a server with opts on a new listener,
// recording the X-Request-Id of every request it accepts in accepted, and
// waits until it is ready.
func startRecordingReplica(t *testing.T, name string, opts Options, accepted *sync.Map) *recordingReplica {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Listen = ln.Addr().String()
	opts.CertDir = t.TempDir()
	opts.Logger = slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := New(ctx, opts)
	if err != nil {
		cancel()
		_ = ln.Close()
		t.Fatal(err)
	}
	inner := srv.handler
	srv.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("X-Request-Id"); id != "" {
			accepted.Store(id, name)
		}
		inner.ServeHTTP(w, r)
	})
	s := &e2eServer{t: t, url: "https://" + opts.Listen, caFile: filepath.Join(opts.CertDir, caCertFile), server: srv, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- srv.Run(ctx, ln, nil) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if s.client == nil {
			if pem, err := os.ReadFile(s.caFile); err == nil {
				pool := x509.NewCertPool()
				pool.AppendCertsFromPEM(pem)
				s.client = &http.Client{
					Timeout: 30 * time.Second,
					Transport: &http.Transport{
						TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
						MaxIdleConnsPerHost: 64,
					},
				}
			}
		}
		if code, _, _ := s.do(http.MethodGet, "/readyz", "", nil); code == http.StatusOK {
			return &recordingReplica{e2eServer: s, name: name}
		}
		if time.Now().After(deadline) {
			s.stop()
			t.Fatalf("replica %s not ready after 60 s", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// replicaPool is what the clients resolve the service to: the replicas in
// rotation, taken in turn.
type replicaPool struct {
	mu   sync.Mutex
	live []*recordingReplica
	next int
}

func (p *replicaPool) pick() *recordingReplica {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.live[p.next%len(p.live)]
	p.next++
	return r
}

func (p *replicaPool) replace(old, repl *recordingReplica) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range p.live {
		if r == old {
			if repl == nil {
				p.live = append(p.live[:i], p.live[i+1:]...)
			} else {
				p.live[i] = repl
			}
			return
		}
	}
	p.live = append(p.live, repl)
}

// restartTally is what the clients of a rolling restart saw.
type restartTally struct {
	mu sync.Mutex
	// ok: 200s classified by the user's FlowSchema; rejected: 429s with
	// Retry-After.
	ok, rejected int
	// drained: 200s for requests sent before their replica's shutdown
	// began and answered after it, i.e. answered during the drain.
	drained int
	// connErrors: transport errors of requests the replica never
	// accepted, sent to a replica already shutting down.
	connErrors int
	// lost: transport errors of requests a replica had accepted.
	lost int
	// bad: any other answer (another status, a 200 not classified by the
	// user's FlowSchema, a connection error on a replica serving
	// normally).
	bad     int
	samples []string
}

func (ta *restartTally) note(bad bool, format string, args ...any) {
	if bad && len(ta.samples) < 10 {
		ta.samples = append(ta.samples, fmt.Sprintf(format, args...))
	}
}

// TestRollingRestart restarts three gateway replicas on one etcd, one at a
// time, under a steady client load spread over them: every request a
// replica accepted is answered (the graceful drain loses none), connection
// errors only come from a replica already shutting down, and a
// user-created FlowSchema is enforced throughout and after all three were
// replaced.
func TestRollingRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and three servers under load")
	}
	const (
		workers     = 16
		serviceTime = 20 * time.Millisecond
		settle      = 3 * time.Second // load between restarts
		grace       = 5 * time.Second
	)
	rounds := 1
	if storageSoak() {
		rounds = 5
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(serviceTime):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","namespace":"shop"}}`)
	}))
	defer upstream.Close()
	emb, err := store.StartEmbedded(t.TempDir(), store.EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()

	users := make([]string, workers)
	for i := range users {
		users[i] = fmt.Sprintf("client%d", i)
	}
	opts := DefaultOptions()
	opts.EtcdServers = emb.Endpoints()
	opts.Upstream = upstream.URL
	opts.Auth.TokenAuthFile = gatewayTokens(t, users...)
	opts.ShutdownTimeout = grace

	var accepted sync.Map
	pool := &replicaPool{}
	var generation atomic.Int32
	start := func(slot int) *recordingReplica {
		return startRecordingReplica(t, fmt.Sprintf("r%d.%d", slot, generation.Add(1)), opts, &accepted)
	}
	replicas := make([]*recordingReplica, 3)
	for i := range replicas {
		replicas[i] = start(i)
		pool.replace(nil, replicas[i])
	}
	defer func() {
		for _, r := range replicas {
			if r.stopAt.Load() == 0 {
				r.stop()
			}
		}
	}()

	// The clients' level and FlowSchema, created before the load.
	code, _, body := replicas[0].do(http.MethodPost, "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations", adminToken,
		[]byte(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration",
		 "metadata":{"name":"restart-level"},
		 "spec":{"type":"Limited","limited":{"nominalConcurrencyShares":100,
		  "limitResponse":{"type":"Queue","queuing":{"queues":64,"handSize":4,"queueLengthLimit":50}}}}}`))
	if code != http.StatusCreated {
		t.Fatalf("create level: %d %s", code, body)
	}
	code, _, body = replicas[0].do(http.MethodPost, fsPath, adminToken,
		[]byte(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema",
		 "metadata":{"name":"restart-clients"},
		 "spec":{"priorityLevelConfiguration":{"name":"restart-level"},"matchingPrecedence":500,"distinguisherMethod":{"type":"ByUser"},
		  "rules":[{"subjects":[{"kind":"Group","group":{"name":"clients"}}],
		   "resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"clusterScope":true,"namespaces":["*"]}]}]}}`))
	if code != http.StatusCreated {
		t.Fatalf("create FlowSchema: %d %s", code, body)
	}
	fsUID := objectUID(t, body)
	for _, r := range replicas {
		if err := waitFor(5*time.Second, func() bool { return classifiedAs(r.e2eServer, "token-client0") == fsUID }); err != nil {
			t.Fatalf("replica %s does not enforce the clients' FlowSchema: %v", r.name, err)
		}
	}

	// The load: closed-loop clients, each request to the next replica in
	// rotation.
	tally := &restartTally{}
	stopLoad := make(chan struct{})
	var load sync.WaitGroup
	var seq atomic.Int64
	for w := range workers {
		load.Go(func() {
			token := "token-" + users[w]
			for {
				select {
				case <-stopLoad:
					return
				default:
				}
				r := pool.pick()
				id := fmt.Sprint(seq.Add(1))
				req, err := http.NewRequest(http.MethodGet, r.url+"/api/v1/namespaces/shop/pods/web", nil)
				if err != nil {
					t.Error(err)
					return
				}
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("X-Request-Id", id)
				sent := time.Now()
				resp, err := r.client.Do(req)
				now := time.Now()
				var code int
				var hdr http.Header
				if err == nil {
					code, hdr = resp.StatusCode, resp.Header
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				stopAt := r.stopAt.Load()
				_, wasAccepted := accepted.Load(id)
				tally.mu.Lock()
				switch {
				case err != nil && wasAccepted:
					tally.lost++
					tally.note(true, "request %s accepted by %s and lost: %v", id, r.name, err)
				case err != nil && stopAt != 0 && stopAt <= now.UnixNano():
					tally.connErrors++
				case err != nil:
					tally.bad++
					tally.note(true, "request %s: connection error on %s while it served: %v", id, r.name, err)
				case code == http.StatusOK && hdr.Get("X-Kubernetes-PF-FlowSchema-UID") == fsUID:
					tally.ok++
					if stopAt != 0 && sent.UnixNano() < stopAt {
						tally.drained++
					}
				case code == http.StatusTooManyRequests && hdr.Get("Retry-After") != "":
					tally.rejected++
				default:
					tally.bad++
					tally.note(true, "request %s on %s: %d, FlowSchema UID %q", id, r.name, code, hdr.Get("X-Kubernetes-PF-FlowSchema-UID"))
				}
				tally.mu.Unlock()
				if err != nil {
					// A client backs off a moment before resolving again.
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
	defer func() {
		select {
		case <-stopLoad:
		default:
			close(stopLoad)
		}
		load.Wait()
	}()

	began := time.Now()
	time.Sleep(settle)
	var drains []time.Duration
	for round := range rounds {
		for i, old := range replicas {
			// Graceful stop: the replica stays in the clients' rotation
			// until it has stopped (as a load balancer that notices late
			// would keep it), then its successor takes its place.
			old.stopAt.Store(time.Now().UnixNano())
			stopped := time.Now()
			old.cancel()
			select {
			case err := <-old.done:
				if err != nil {
					t.Errorf("replica %s: %v", old.name, err)
				}
			case <-time.After(grace + 10*time.Second):
				t.Fatalf("replica %s did not stop within %v", old.name, grace+10*time.Second)
			}
			drains = append(drains, time.Since(stopped))
			pool.replace(old, nil)
			replicas[i] = start(i)
			pool.replace(nil, replicas[i])
			t.Logf("round %d: replaced %s by %s (stopped in %v)", round+1, old.name, replicas[i].name, drains[len(drains)-1].Round(time.Millisecond))
			time.Sleep(settle)
		}
	}
	close(stopLoad)
	load.Wait()
	elapsed := time.Since(began)

	// The configuration outlived every replica.
	for _, r := range replicas {
		if got := classifiedAs(r.e2eServer, "token-client0"); got != fsUID {
			t.Errorf("replica %s, started after the restarts, classifies clients with FlowSchema %q, want restart-clients' %q", r.name, got, fsUID)
		}
	}

	tally.mu.Lock()
	defer tally.mu.Unlock()
	total := tally.ok + tally.rejected + tally.connErrors + tally.lost + tally.bad
	t.Logf("%d requests in %v (%.0f/s) over %d restarts: %d answered 200 (%d of them during a drain), %d 429, %d connection errors on replicas shutting down, %d lost, %d bad; drains took %v",
		total, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(), len(drains),
		tally.ok, tally.drained, tally.rejected, tally.connErrors, tally.lost, tally.bad, drains)
	for _, s := range tally.samples {
		t.Log(s)
	}
	if tally.lost > 0 {
		t.Errorf("%d requests accepted by a replica got no answer", tally.lost)
	}
	if tally.bad > 0 {
		t.Errorf("%d requests got a wrong answer or a connection error from a serving replica", tally.bad)
	}
	if tally.drained == 0 {
		t.Error("no request was in flight when a replica began to shut down: the drain was not exercised")
	}
	if tally.ok < total/2 {
		t.Errorf("only %d of %d requests answered 200", tally.ok, total)
	}
	for _, d := range drains {
		if d > grace {
			t.Errorf("a drain took %v, longer than the %v grace period", d, grace)
		}
	}
}
