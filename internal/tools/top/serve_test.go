package top_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/server"
	"github.com/apfproject/apf/internal/testing/testserve"
	"github.com/apfproject/apf/internal/tools/top"
)

// These tests run apf top against `apf serve` started in the test, on
// 127.0.0.1, as a cluster admin would: through a kubeconfig, with no
// other input.

// The users: an admin (system:masters, exempt and allowed everything),
// bob (may read neither /metrics nor the dumps), carol (may read
// /metrics only, by an ABAC policy), and two clients of the gateway: the
// flood and a mouse.
const (
	adminToken = "top-admin-token"
	bobToken   = "top-bob-token"
	carolToken = "top-carol-token"
	floodToken = "top-flood-token"
	mouseToken = "top-mouse-token"
	tokens     = adminToken + ",admin,uid-admin,\"system:masters\"\n" +
		bobToken + ",bob,uid-bob,devs\n" +
		carolToken + ",carol,uid-carol,devs\n" +
		floodToken + ",flood,uid-flood,clients\n" +
		mouseToken + ",mouse,uid-mouse,clients\n"
	carolPolicy = `{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"carol","nonResourcePath":"/metrics","readonly":true}}` + "\n"
)

// The flood's level: 5 seats of the gateway's 36 that it neither lends
// nor borrows, a hand of 2 queues of 5; the schema sends the group
// clients there, one flow per user.
const (
	levelJSON = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration",
	 "metadata":{"name":"shared"},
	 "spec":{"type":"Limited","limited":{"nominalConcurrencyShares":45,"lendablePercent":0,"borrowingLimitPercent":0,
	  "limitResponse":{"type":"Queue","queuing":{"queues":64,"handSize":2,"queueLengthLimit":5}}}}}`
	schemaJSON = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema",
	 "metadata":{"name":"clients"},
	 "spec":{"priorityLevelConfiguration":{"name":"shared"},"matchingPrecedence":500,"distinguisherMethod":{"type":"ByUser"},
	  "rules":[{"subjects":[{"kind":"Group","group":{"name":"clients"}}],
	   "resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"clusterScope":true,"namespaces":["*"]}]}]}}`
)

// upstreamService is how long the gateway's upstream takes per request.
const upstreamService = 50 * time.Millisecond

// gateway is apf serve in front of a slow upstream.
type gateway struct {
	url, caFile string
	client      *http.Client
}

// startGateway starts apf serve with the test's tokens and policy, in
// front of an upstream taking upstreamService per request, and waits
// until it is ready. Everything stops when the test ends.
func startGateway(t *testing.T) *gateway {
	t.Helper()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(upstreamService)
		fmt.Fprint(w, `{"kind":"Pod"}`)
	}))
	t.Cleanup(upstream.Close)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	srv := testserve.Start(t, func(opts *server.Options) {
		opts.Upstream = upstream.URL
		opts.Auth.TokenAuthFile = write("tokens.csv", tokens)
		opts.Authz.Modes = []string{"Builtin", "ABAC"}
		opts.Authz.PolicyFile = write("policy.jsonl", carolPolicy)
		// 36 seats in all: with the bootstrap levels' 245 shares beside
		// the 45 of "shared", it gets ceil(36*45/290) = 6.
		opts.MaxRequestsInflight, opts.MaxMutatingRequestsInflight = 28, 8
	})
	pem, err := os.ReadFile(srv.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &gateway{url: srv.URL, caFile: srv.CAFile, client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: 100}}}
}

// do sends one request with a bearer token ("" for none) and reads the
// whole answer.
func (g *gateway) do(method, path, token string, body []byte) (int, http.Header, []byte) {
	req, err := http.NewRequest(method, g.url+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return 0, nil, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// kubeconfig writes one kubeconfig with a context per user, the admin's
// current.
func (g *gateway) kubeconfig(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Config\nclusters:\n- name: apf\n  cluster: {server: %q, certificate-authority: %q}\nusers:\n", g.url, g.caFile)
	users := map[string]string{"admin": adminToken, "bob": bobToken, "carol": carolToken}
	for _, u := range []string{"admin", "bob", "carol"} {
		fmt.Fprintf(&b, "- name: %s\n  user: {token: %s}\n", u, users[u])
	}
	b.WriteString("contexts:\n")
	for _, u := range []string{"admin", "bob", "carol"} {
		fmt.Fprintf(&b, "- name: %s\n  context: {cluster: apf, user: %s}\n", u, u)
	}
	b.WriteString("current-context: admin\n")
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// configure creates the flood's level and schema, and waits until the
// gateway sends the clients there.
func (g *gateway) configure(t *testing.T) {
	t.Helper()
	code, _, body := g.do(http.MethodPost, "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations", adminToken, []byte(levelJSON))
	if code != http.StatusCreated {
		t.Fatalf("create the level: %d %s", code, body)
	}
	var level struct {
		Metadata struct{ UID string } `json:"metadata"`
	}
	if err := json.Unmarshal(body, &level); err != nil {
		t.Fatal(err)
	}
	if code, _, body := g.do(http.MethodPost, "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", adminToken, []byte(schemaJSON)); code != http.StatusCreated {
		t.Fatalf("create the schema: %d %s", code, body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, h, _ := g.do(http.MethodGet, "/api/v1/namespaces/shop/pods/web", mouseToken, nil)
		if code == http.StatusOK && h.Get("X-Kubernetes-PF-PriorityLevel-UID") == level.Metadata.UID {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the level shared is not in force after 20 s (last answer %d)", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// flood runs closed-loop workers as the flood, far more than the level
// holds (6 seats and two queues of 5), and a mouse sending a request
// every 100 ms. It returns once the flood has been turned away; stop ends
// both and waits for them.
func (g *gateway) flood(t *testing.T, workers int) (stop func()) {
	t.Helper()
	var stopped atomic.Bool
	var rejected atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for !stopped.Load() {
				if code, _, _ := g.do(http.MethodGet, "/api/v1/namespaces/shop/pods", floodToken, nil); code == http.StatusTooManyRequests {
					rejected.Add(1)
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
	wg.Go(func() {
		for !stopped.Load() {
			g.do(http.MethodGet, "/api/v1/namespaces/shop/pods/web", mouseToken, nil)
			time.Sleep(100 * time.Millisecond)
		}
	})
	stop = func() {
		stopped.Store(true)
		wg.Wait()
	}
	deadline := time.Now().Add(20 * time.Second)
	for rejected.Load() == 0 {
		if time.Now().After(deadline) {
			stop()
			t.Fatal("the flood was not turned away within 20 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return stop
}

// runTop runs apf top -o json with the kubeconfig's context and returns
// the document.
func runTop(t *testing.T, kubeconfig, context string) (*top.Report, error) {
	t.Helper()
	ctx, cancel := contextWithTimeout(60 * time.Second)
	defer cancel()
	var out bytes.Buffer
	err := top.Run(ctx, top.Options{Kubeconfig: kubeconfig, Context: context, Interval: time.Second, Output: "json", Flows: 5}, nil, &out)
	var r top.Report
	if jerr := json.Unmarshal(out.Bytes(), &r); jerr != nil {
		t.Fatalf("apf top --context %s -o json: %v (err %v):\n%s", context, jerr, err, out.String())
	}
	return &r, err
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// The acceptance test of apf top: against apf serve while a flood runs
// through it, `apf top -o json` shows the flood's level rejecting and
// the flood's flow as the busiest; a user who may not read /metrics or
// the dumps is told which and why, and sees the rest.
func TestTopAgainstServeDuringAFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("starts apf serve and floods it")
	}
	g := startGateway(t)
	g.configure(t)
	kc := g.kubeconfig(t)
	stop := g.flood(t, 30)
	defer stop()

	r, err := runTop(t, kc, "")
	if err != nil {
		t.Fatalf("apf top: %v", err)
	}
	var text bytes.Buffer
	_ = top.Render(&text, r, top.Screen{})
	t.Logf("apf top during the flood:\n%s", text.String())
	if len(r.Missing) != 0 || r.IntervalSeconds < 0.9 || r.Server != g.url {
		t.Errorf("missing %+v, interval %v, server %q", r.Missing, r.IntervalSeconds, r.Server)
	}
	var shared *top.Level
	names := map[string]bool{}
	for i, l := range r.Levels {
		names[l.Name] = true
		if l.Name == "shared" {
			shared = &r.Levels[i]
		}
	}
	for _, want := range []string{"exempt", "catch-all", "global-default", "workload-low", "workload-high", "system", "node-high", "leader-election", "shared"} {
		if !names[want] {
			t.Errorf("no level %s in %v", want, names)
		}
	}
	if shared == nil {
		t.Fatal("no level shared")
	}
	if shared.RejectedPerSecond == nil || *shared.RejectedPerSecond <= 0 || shared.RejectedByReason["queue-full"] <= 0 {
		t.Errorf("the flood's level is not rejecting: %+v", *shared)
	}
	if shared.DispatchedPerSecond == nil || *shared.DispatchedPerSecond <= 0 || shared.WaitP99Seconds == nil {
		t.Errorf("the flood's level dispatches nothing, or has no wait p99: %+v", *shared)
	}
	if shared.NominalSeats == nil || *shared.NominalSeats != 6 || shared.CurrentSeats == nil || *shared.CurrentSeats != 6 || shared.State != "" {
		t.Errorf("seats of shared (lends and borrows nothing): %+v", *shared)
	}
	if len(r.Flows) == 0 {
		t.Fatal("no flows")
	}
	busiest := r.Flows[0]
	if busiest.PriorityLevel != "shared" || busiest.FlowSchema != "clients" || busiest.Distinguisher != "flood" ||
		busiest.WaitingRequests == 0 || len(busiest.Queues) == 0 || busiest.Queues[0].QueueWaiting == nil {
		t.Errorf("the busiest flow is not the flood's: %+v (all: %+v)", busiest, r.Flows)
	}

	// bob may read nothing: every part is missing, with apf's 403 and,
	// since nothing says which server this is, what kube-apiserver and
	// apf serve would each need; and top fails.
	r, err = runTop(t, kc, "bob")
	if !errors.Is(err, top.ErrNothingRead) || len(r.Missing) != 4 {
		t.Fatalf("bob: err %v, missing %+v", err, r.Missing)
	}
	for _, m := range r.Missing {
		if m.Status != http.StatusForbidden || !strings.Contains(m.Error, fmt.Sprintf(`forbidden: User "bob" cannot get path %q`, m.Path)) ||
			!strings.Contains(m.Fix, "the verb get on the non-resource URL") ||
			!strings.Contains(m.Fix, "ClusterRole") || !strings.Contains(m.Fix, "--admin-groups") {
			t.Errorf("bob: %+v", m)
		}
	}

	// carol may read /metrics alone: the levels with their rates, no
	// flows, and the dumps said to be missing, with apf serve's fix (its
	// groups and policy), not kube-apiserver's RBAC, which it has not.
	r, err = runTop(t, kc, "carol")
	if err != nil {
		t.Fatalf("carol: %v", err)
	}
	if len(r.Missing) != 3 || len(r.Flows) != 0 {
		t.Errorf("carol: missing %+v, flows %+v", r.Missing, r.Flows)
	}
	for _, m := range r.Missing {
		if m.Status != http.StatusForbidden || !strings.Contains(m.Fix, `"nonResourcePath": "/debug/api_priority_and_fairness/*"`) ||
			!strings.Contains(m.Fix, "--admin-groups") || strings.Contains(m.Fix, "ClusterRole") {
			t.Errorf("carol: %+v", m)
		}
	}
	for _, l := range r.Levels {
		if l.Name == "shared" && (l.RejectedPerSecond == nil || *l.RejectedPerSecond <= 0) {
			t.Errorf("carol: shared %+v", l)
		}
	}
}

// What apf serve gives is read without a problem: every level's seats
// from its /metrics, every dump's rows.
func TestParseServeOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("starts apf serve")
	}
	g := startGateway(t)
	get := func(path string) []byte {
		code, _, body := g.do(http.MethodGet, path, adminToken, nil)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		return body
	}
	m, err := top.ParseMetrics(bytes.NewReader(get(top.PathMetrics)))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Levels) != 8 {
		t.Errorf("%d levels in the metrics, want the 8 bootstrap ones", len(m.Levels))
	}
	for name, l := range m.Levels {
		if l.NominalSeats == nil || l.CurrentSeats == nil {
			t.Errorf("%s: no seats", name)
		}
	}
	levels, read, err := top.ParsePriorityLevels(bytes.NewReader(get(top.PathPriorityLevels)))
	if err != nil || len(read.Problems) != 0 || len(levels) != 8 {
		t.Errorf("priority levels: %v %+v %+v", err, read, levels)
	}
	queues, read, err := top.ParseQueues(bytes.NewReader(get(top.PathQueues)))
	if err != nil || len(read.Problems) != 0 || len(queues) == 0 {
		t.Errorf("queues: %v %+v %d rows", err, read, len(queues))
	}
	// The dump of requests shows this very request, executing in exempt.
	reqs, read, err := top.ParseRequests(bytes.NewReader(get(top.PathRequests)))
	if err != nil || len(read.Problems) != 0 || len(reqs) == 0 || reqs[0].Level != "exempt" || !reqs[0].Executing() {
		t.Errorf("requests: %v %+v %+v", err, read, reqs)
	}
}
