// Command adaptive measures apf serve's adaptive server concurrency limit
// (--adaptive-concurrency-limit) on loopback, against static limits, in
// front of an upstream whose capacity changes while it runs.
//
// The upstream serves each request in a fixed service time (20 ms) with a
// concurrency capacity that changes over three phases (40, then 10, then
// 40 requests at once); beyond its capacity requests queue inside it, and
// it measures how long they queue. apf serve stands in front of it, built
// in this process exactly as the command builds it, with a configuration
// from files: one Queue level with all the shares for the clients, one
// flow per user. One user floods it (closed-loop connections sending as
// fast as they are answered) and four light users send 5 requests a second
// each. The same traffic runs against the adaptive limit and against
// static limits of 10 and 40, one after the other.
//
// For each run and phase, over the phase but its first -settle: the
// goodput (answers the upstream completed per second) over the upstream's
// capacity, the p99 of the time requests queued inside the upstream, and
// the light users' p99 latency, each against the bars of
// docs/spec/adaptive-limit.md (goodput at least 0.9 of the capacity,
// queueing within one service time, light users within three).
//
// Then deadline-aware queueing (deadline.go): a flood that waits longer
// than its wait limit, with --deadline-aware-queueing off and on.
//
// Everything listens on 127.0.0.1 and stops by itself; `make
// bench-adaptive` runs it (about six minutes), `-phase 6s
// -deadline-measure 3s` a short run.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apfproject/apf/internal/server"
)

func main() {
	var cfg Config
	flag.DurationVar(&cfg.Phase, "phase", 30*time.Second, "length of each of the three phases")
	flag.DurationVar(&cfg.Settle, "settle", 10*time.Second, "start of each phase left out of its figures")
	flag.DurationVar(&cfg.Service, "service", 20*time.Millisecond, "the upstream's service time")
	flag.IntVar(&cfg.Flood, "flood", 100, "the flooding user's connections")
	dl := DeadlineConfig{Capacity: 10, Service: 20 * time.Millisecond, Timeout: 8 * time.Second, Users: 8, Rate: 1000, Settle: 5 * time.Second, Measure: 15 * time.Second}
	adaptive := flag.Bool("adaptive", true, "measure the adaptive limit against static ones")
	deadline := flag.Bool("deadline", true, "measure deadline-aware queueing, off and on")
	flag.DurationVar(&dl.Measure, "deadline-measure", dl.Measure, "how long each deadline-aware run is measured, after 5 s")
	flag.Parse()
	ctx := context.Background()
	if *adaptive {
		results, err := Run(ctx, cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "adaptive:", err)
			os.Exit(1)
		}
		fmt.Print(Table(cfg, results))
	}
	if *deadline {
		results, err := RunDeadline(ctx, dl)
		if err != nil {
			fmt.Fprintln(os.Stderr, "adaptive:", err)
			os.Exit(1)
		}
		if *adaptive {
			fmt.Println()
		}
		fmt.Print(DeadlineTable(dl, results))
	}
}

// Config shapes a run.
type Config struct {
	Phase, Settle, Service time.Duration
	Flood                  int
}

// capacities are the upstream's, phase by phase.
var capacities = []int{40, 10, 40}

// Result is one phase of one run.
type Result struct {
	Run      string
	Capacity int
	// Goodput is the upstream's completions per second over its capacity.
	Goodput float64
	// QueueP99 is the p99 of the time requests queued inside the upstream.
	QueueP99 time.Duration
	// LightP99 is the light users' p99 latency; LightErrors their answers
	// other than 200.
	LightP99    time.Duration
	LightErrors int
	// FloodOK is the flood's answers of 200 per second.
	FloodOK float64
	// Limit is the server concurrency limit at the end of the phase.
	Limit int
}

// Run measures the adaptive limit and the static ones.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	var out []Result
	for _, run := range []struct {
		name, adaptive string
		static         int
	}{
		{"adaptive 2:200", "2:200", 0},
		{"static 10", "", 10},
		{"static 40", "", 40},
	} {
		rs, err := measure(ctx, cfg, run.name, run.adaptive, run.static)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", run.name, err)
		}
		out = append(out, rs...)
	}
	return out, nil
}

// upstream serves requests in cfg.Service with a capacity that can change,
// queueing the rest, and records how long each queued and when each ended.
type upstream struct {
	mu       sync.Mutex
	cond     *sync.Cond
	capacity int
	busy     int
	service  time.Duration
	// done and queued record, for requests completed, when and how long
	// they queued.
	done   []time.Time
	queued []time.Duration
}

func (u *upstream) setCapacity(c int) {
	u.mu.Lock()
	u.capacity = c
	u.mu.Unlock()
	u.cond.Broadcast()
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	u.mu.Lock()
	for u.busy >= u.capacity {
		u.cond.Wait()
	}
	u.busy++
	u.mu.Unlock()
	waited := time.Since(arrived)
	time.Sleep(u.service)
	u.mu.Lock()
	u.busy--
	u.done = append(u.done, time.Now())
	u.queued = append(u.queued, waited)
	u.mu.Unlock()
	u.cond.Signal()
	_, _ = io.WriteString(w, `{"kind":"Pod"}`)
}

// window returns the completions and queueing times between from and to.
func (u *upstream) window(from, to time.Time) (n int, queued []time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for i, t := range u.done {
		if !t.Before(from) && t.Before(to) {
			n++
			queued = append(queued, u.queued[i])
		}
	}
	return n, queued
}

const levelAndSchema = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: clients}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 2000
    lendablePercent: 0
    limitResponse:
      type: Queue
      queuing: {queues: 64, handSize: 6, queueLengthLimit: 50}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: clients}
spec:
  priorityLevelConfiguration: {name: clients}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: clients}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
`

// rig is apf serve in front of an upstream, for one run: the clients'
// level from files, a token for each user, the upstream's capacity
// settable.
type rig struct {
	up     *upstream
	srv    *server.Server
	client *http.Client
	url    string
	stop   func()
}

// newRig starts the upstream at capacity and apf serve in front of it,
// configured by configure, and waits until the clients' level is in
// force. conns sizes the client's connection pool.
func newRig(ctx context.Context, service time.Duration, capacity, conns int, users []string, configure func(*server.Options)) (r *rig, err error) {
	dir, err := os.MkdirTemp("", "apf-bench-adaptive-")
	if err != nil {
		return nil, err
	}
	var stops []func()
	defer func() {
		if err != nil {
			slices.Reverse(stops)
			for _, f := range stops {
				f()
			}
		}
	}()
	stops = append(stops, func() { _ = os.RemoveAll(dir) })
	configDir := filepath.Join(dir, "flowcontrol")
	if err := os.MkdirAll(configDir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(configDir, "clients.yaml"), []byte(levelAndSchema), 0o600); err != nil {
		return nil, err
	}
	var tokens strings.Builder
	for _, u := range users {
		fmt.Fprintf(&tokens, "token-%s,%s,uid-%s,\"clients\"\n", u, u, u)
	}
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(tokens.String()), 0o600); err != nil {
		return nil, err
	}

	up := &upstream{capacity: capacity, service: service}
	up.cond = sync.NewCond(&up.mu)
	upLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	upSrv := &http.Server{Handler: up, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = upSrv.Serve(upLn) }()
	stops = append(stops, func() { _ = upSrv.Close() })

	o := server.DefaultOptions()
	o.Upstream = "http://" + upLn.Addr().String()
	o.InsecureHTTP = true
	o.ConfigDir = configDir
	o.Auth.TokenAuthFile = tokenFile
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	o.ShutdownTimeout = time.Second
	configure(&o)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srvCtx, stopServer := context.WithCancel(ctx)
	srv, err := server.New(srvCtx, o)
	if err != nil {
		stopServer()
		_ = ln.Close()
		return nil, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Run(srvCtx, ln, nil) }()
	stops = append(stops, func() {
		stopServer()
		<-served
	})
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2 * conns}}
	stops = append(stops, client.CloseIdleConnections)
	r = &rig{up: up, srv: srv, client: client, url: "http://" + ln.Addr().String() + "/api/v1/namespaces/default/pods/web"}
	r.stop = func() {
		slices.Reverse(stops)
		for _, f := range stops {
			f()
		}
	}
	// Ready: the clients' level in force.
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := r.do(ctx, users[len(users)-1])
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK && flowSchemaIs(srv, resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID"), "clients") {
				return r, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("apf serve did not put the clients in their level within 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// do sends one request as user.
func (r *rig) do(ctx context.Context, user string) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	req.Header.Set("Authorization", "Bearer token-"+user)
	return r.client.Do(req)
}

// get sends one request as user and returns its status (0 when it
// failed), its Retry-After and how long it took.
func (r *rig) get(ctx context.Context, user string) (code int, retryAfter string, took time.Duration) {
	t := time.Now()
	resp, err := r.do(ctx, user)
	if err != nil {
		return 0, "", time.Since(t)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After"), time.Since(t)
}

func measure(ctx context.Context, cfg Config, name, adaptive string, static int) ([]Result, error) {
	users := []string{"flood", "light-0", "light-1", "light-2", "light-3"}
	r, err := newRig(ctx, cfg.Service, capacities[0], cfg.Flood, users, func(o *server.Options) {
		if adaptive != "" {
			o.AdaptiveConcurrencyLimit = adaptive
		} else {
			o.MaxRequestsInflight, o.MaxMutatingRequestsInflight = static, 0
		}
	})
	if err != nil {
		return nil, err
	}
	defer r.stop()
	up, srv := r.up, r.srv
	get := func(user string) (int, time.Duration) {
		code, _, d := r.get(ctx, user)
		return code, d
	}

	type sample struct {
		at      time.Time
		latency time.Duration
		code    int
	}
	var (
		stop         atomic.Bool
		wg           sync.WaitGroup
		mu           sync.Mutex
		light, flood []sample
	)
	for range cfg.Flood {
		wg.Go(func() {
			for !stop.Load() {
				code, d := get("flood")
				mu.Lock()
				flood = append(flood, sample{time.Now(), d, code})
				mu.Unlock()
				if code != http.StatusOK {
					time.Sleep(10 * time.Millisecond) // a 429 is no reason to spin
				}
			}
		})
	}
	for i := range 4 {
		user := fmt.Sprintf("light-%d", i)
		wg.Go(func() {
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			var inner sync.WaitGroup
			for !stop.Load() {
				<-tick.C
				inner.Go(func() {
					code, d := get(user)
					mu.Lock()
					light = append(light, sample{time.Now(), d, code})
					mu.Unlock()
				})
			}
			inner.Wait()
		})
	}

	var results []Result
	for _, c := range capacities {
		up.setCapacity(c)
		start := time.Now()
		time.Sleep(cfg.Phase)
		from, to := start.Add(cfg.Settle), time.Now()
		n, queued := up.window(from, to)
		secs := to.Sub(from).Seconds()
		r := Result{Run: name, Capacity: c, Limit: srv.Controller().ServerConcurrencyLimit()}
		r.Goodput = float64(n) / secs / (float64(c) / cfg.Service.Seconds())
		r.QueueP99 = quantile(queued, 0.99)
		mu.Lock()
		var lat []time.Duration
		for _, s := range light {
			if !s.at.Before(from) && s.at.Before(to) {
				if s.code == http.StatusOK {
					lat = append(lat, s.latency)
				} else {
					r.LightErrors++
				}
			}
		}
		ok := 0
		for _, s := range flood {
			if !s.at.Before(from) && s.at.Before(to) && s.code == http.StatusOK {
				ok++
			}
		}
		mu.Unlock()
		r.LightP99 = quantile(lat, 0.99)
		r.FloodOK = float64(ok) / secs
		results = append(results, r)
	}
	stop.Store(true)
	up.setCapacity(1 << 20) // let whatever queues inside go
	wg.Wait()
	return results, nil
}

// flowSchemaIs reports whether uid is that of the FlowSchema name in force.
func flowSchemaIs(srv *server.Server, uid, name string) bool {
	for _, fs := range srv.Controller().Matcher().FlowSchemas() {
		if fs.Name == name {
			return fs.UID == uid
		}
	}
	return false
}

// Table renders the results with the bars each is held to.
func Table(cfg Config, rs []Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "upstream: %v a request, capacity %v by phase of %v; figures over each phase but its first %v\n",
		cfg.Service, capacities, cfg.Phase, cfg.Settle)
	fmt.Fprintf(&b, "bars: goodput >= 0.9, upstream queueing p99 <= %v, light users' p99 <= %v\n\n", cfg.Service, 3*cfg.Service)
	fmt.Fprintf(&b, "%-16s %8s %8s %12s %12s %12s %10s %6s\n", "RUN", "CAPACITY", "GOODPUT", "QUEUE P99", "LIGHT P99", "LIGHT NOT OK", "FLOOD OK/s", "LIMIT")
	for _, r := range rs {
		fmt.Fprintf(&b, "%-16s %8d %8.3f %12v %12v %12d %10.0f %6d\n", r.Run, r.Capacity, r.Goodput,
			r.QueueP99.Round(100*time.Microsecond), r.LightP99.Round(100*time.Microsecond), r.LightErrors, r.FloodOK, r.Limit)
	}
	return b.String()
}
