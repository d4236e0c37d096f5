// The kill -9 test of the shared budget runs one replica as a process of
// its own, so that it can be killed for real: make test runs it in its
// e2e step without -race, beside TestSharedConcurrencyLimit, and make
// soak with half a minute of load before the kill and after.

//go:build !race && linux

package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/apfproject/apf/apfdebug"
	"github.com/apfproject/apf/internal/server/sharedbudget"
)

// childReplicaEnv, when set in the environment of this test binary, holds
// the JSON array of `apf serve` flags TestChildReplicaProcess runs a
// replica with; childAddrEnv names the file the replica writes its
// address to once it listens.
const (
	childReplicaEnv = "APF_TEST_CHILD_REPLICA_FLAGS"
	childAddrEnv    = "APF_TEST_CHILD_REPLICA_ADDR_FILE"
)

// TestChildReplicaProcess is not a test: it is the body of the replica
// TestSharedBudgetKill9 runs as a child process (this test binary run
// again with childReplicaEnv set), and is skipped otherwise. It does what
// `apf serve` does with the same flags (cmd/apf's serve command: the
// server's options from their flags, New, then Run until a signal) and
// lives until it is killed, stopped, or the binary's -test.timeout.
func TestChildReplicaProcess(t *testing.T) {
	raw := os.Getenv(childReplicaEnv)
	if raw == "" {
		t.Skip("run by TestSharedBudgetKill9 as a replica of its own")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatalf("%s: %v", childReplicaEnv, err)
	}
	opts, err := replicaOptions(args)
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := New(ctx, opts)
	if err != nil {
		t.Fatalf("cannot start: %v", err)
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	// Written whole under another name and renamed, so that the parent
	// never reads half an address.
	if f := os.Getenv(childAddrEnv); f != "" {
		if err := os.WriteFile(f+".tmp", []byte(ln.Addr().String()), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(f+".tmp", f); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Run(ctx, ln, nil); err != nil {
		t.Fatal(err)
	}
}

// replicaOptions are the server's options given the flags of apf serve.
func replicaOptions(args []string) (Options, error) {
	opts := DefaultOptions()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	opts.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return Options{}, err
	}
	if fs.NArg() > 0 {
		return Options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return opts, nil
}

// childReplica is a replica running as a process of its own.
type childReplica struct {
	*e2eServer
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
	stderr string
}

// startChildReplica runs this test binary again as a replica with the
// given apf serve flags (a --listen on port 0 and a --cert-dir of its
// own added) and waits until it is ready. The replica is killed when the
// test ends, and by the kernel if this process dies first.
func startChildReplica(t *testing.T, flags []string) *childReplica {
	t.Helper()
	dir := t.TempDir()
	certDir := filepath.Join(dir, "pki")
	addrFile := filepath.Join(dir, "addr")
	flags = append(append([]string(nil), flags...), "--listen", "127.0.0.1:0", "--cert-dir", certDir)
	raw, err := json.Marshal(flags)
	if err != nil {
		t.Fatal(err)
	}
	c := &childReplica{exited: make(chan struct{}), stderr: filepath.Join(dir, "stderr")}
	errFile, err := os.Create(c.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	c.cmd = exec.Command(os.Args[0], "-test.run=^TestChildReplicaProcess$", "-test.count=1", "-test.timeout=5m")
	c.cmd.Env = append(os.Environ(), childReplicaEnv+"="+string(raw), childAddrEnv+"="+addrFile)
	c.cmd.Stdout, c.cmd.Stderr = errFile, errFile
	// The replica must not outlive the test binary, whatever ends it.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.exited
		if t.Failed() {
			t.Logf("child replica's output:\n%s", c.output())
		}
	})

	var addr []byte
	if err := waitFor(60*time.Second, func() bool {
		select {
		case <-c.exited:
			return true
		default:
		}
		if addr, err = os.ReadFile(addrFile); err != nil {
			return false
		}
		// The address is written once the replica listens; its
		// certificate authority when it starts serving, a moment
		// later (on a busy machine, after this reads the address).
		pem, err := os.ReadFile(filepath.Join(certDir, caCertFile))
		return err == nil && x509.NewCertPool().AppendCertsFromPEM(pem)
	}); err != nil || len(addr) == 0 {
		// The cleanup above logs the child's output.
		select {
		case <-c.exited:
			t.Fatalf("the child replica ended before it listened: %v", c.err)
		default:
			t.Fatalf("the child replica does not listen: %v", err)
		}
	}
	pem, err := os.ReadFile(filepath.Join(certDir, caCertFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c.e2eServer = &e2eServer{
		t:      t,
		url:    "https://" + string(addr),
		caFile: filepath.Join(certDir, caCertFile),
		client: &http.Client{
			Timeout: 30 * time.Second,
			Transport: &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
				// Room for the load test's clients' connections.
				MaxIdleConnsPerHost: 256,
			},
		},
	}
	if err := waitFor(60*time.Second, func() bool {
		code, _, _ := c.do(http.MethodGet, "/readyz", "", nil)
		return code == http.StatusOK
	}); err != nil {
		t.Fatalf("the child replica is not ready: %v", err)
	}
	return c
}

func (c *childReplica) output() string {
	b, _ := os.ReadFile(c.stderr)
	return string(b)
}

// dump is the child's shared-budget dump: its share, and the sum of its
// limited levels' nominal limits.
func (c *childReplica) dump() (id string, share, nominalSum int, err error) {
	code, _, body := c.do(http.MethodGet, SharedBudgetDumpPath, adminToken, nil)
	if code != http.StatusOK {
		return "", 0, 0, fmt.Errorf("%s: %d", SharedBudgetDumpPath, code)
	}
	var d sharedBudgetDump
	if err := json.Unmarshal(body, &d); err != nil {
		return "", 0, 0, err
	}
	for _, l := range d.Levels {
		if !l.Exempt {
			nominalSum += l.Nominal
		}
	}
	return d.ID, d.Share, nominalSum, nil
}

// executing is the number of requests the child's priority level named
// level executes now, from its dump_priority_levels.
func (c *childReplica) executing(level string) (int, error) {
	code, _, body := c.do(http.MethodGet, apfdebug.PathPrefix+"dump_priority_levels", adminToken, nil)
	if code != http.StatusOK {
		return 0, fmt.Errorf("dump_priority_levels: %d", code)
	}
	for line := range strings.Lines(string(body)) {
		cells := strings.Split(line, ",")
		if len(cells) > 5 && strings.TrimSpace(cells[0]) == level {
			return strconv.Atoi(strings.TrimSpace(cells[5]))
		}
	}
	return 0, fmt.Errorf("no level %s in dump_priority_levels:\n%s", level, body)
}

// budgetRecords reads every replica's record of the shared budget at one
// etcd revision: the share each wrote, by replica ID.
func budgetRecords(ctx context.Context, cli *clientv3.Client, prefix string) (map[string]int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, kv := range resp.Kvs {
		var rec struct {
			ID    string `json:"id"`
			Share int    `json:"share"`
		}
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			return nil, fmt.Errorf("%s: %w", kv.Key, err)
		}
		out[rec.ID] = rec.Share
	}
	return out, nil
}

func sumShares(m map[string]int) int {
	n := 0
	for _, s := range m {
		n += s
	}
	return n
}

// TestSharedBudgetKill9 kills a replica of apf serve with
// --shared-concurrency-limit for real (docs/spec/shared-budget.md#timing):
// two replicas run in this process and a third as a process of its own,
// all with the same flags, on a three-member etcd cluster in front of an
// upstream that records its concurrent requests, under closed-loop
// clients spread over the three. Once the three records' shares sum to
// the limit, the third gets SIGKILL while its requests are in flight: its
// lease is neither renewed nor revoked, its connections are cut. The two
// others' shares must sum to the limit within the lease TTL plus a period
// (and a second and a half for etcd's lease check and writes on a busy
// machine), the upstream must never see more than the limit plus the
// documented bound, the killed replica's clients must see their
// connections fail, and no other client may see a failure.
func TestSharedBudgetKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, two servers and a server process under load")
	}
	const (
		// More clients than seats, so that the limit, not the clients,
		// bounds what the upstream sees.
		clients     = 120
		serviceTime = 200 * time.Millisecond
		period      = 500 * time.Millisecond
		ttl         = 2 * time.Second
		limit       = 90
	)
	// How long the three replicas run under load before the kill, and the
	// two survivors after it; make soak runs them for long.
	load := 2 * time.Second
	if storageSoak() {
		load = 30 * time.Second
	}
	// The upstream's gauge of concurrent requests is the one of
	// TestSharedConcurrencyLimit.
	g := &sbRig{t: t, limit: limit}
	upstream := httptest.NewServer(g.upstream(serviceTime))
	defer upstream.Close()
	cluster := startEtcdCluster(t, 3)

	users := make([]string, clients)
	for i := range users {
		users[i] = fmt.Sprintf("client%d", i)
	}
	// The flags every replica runs with, in this process or not.
	flags := []string{
		"--etcd-servers", strings.Join(cluster.clientURLs(), ","),
		"--upstream", upstream.URL,
		"--token-auth-file", gatewayTokens(t, users...),
		"--max-requests-inflight", "60", "--max-mutating-requests-inflight", "30",
		"--shutdown-timeout", "200ms",
		"--shared-concurrency-limit",
		"--shared-concurrency-period", period.String(),
		"--shared-concurrency-lease-ttl", ttl.String(),
	}
	opts, err := replicaOptions(flags)
	if err != nil {
		t.Fatal(err)
	}
	start := func(name string) *sbReplica {
		t.Helper()
		o := opts
		o.SharedBudget.ID = name
		s := startServer(t, o)
		tr := s.client.Transport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = clients
		return &sbReplica{e2eServer: s, name: name, client: &http.Client{Timeout: 30 * time.Second, Transport: tr}}
	}

	r1 := start("r1")
	fsUID := createSharedLevel(t, r1)
	r2 := start("r2")
	child := startChildReplica(t, flags)
	childID, _, _, err := child.dump()
	if err != nil {
		t.Fatalf("the child replica's dump: %v", err)
	}
	for _, s := range []*e2eServer{r1.e2eServer, r2.e2eServer, child.e2eServer} {
		if err := waitFor(10*time.Second, func() bool { return classifiedAs(s, "token-client0") == fsUID }); err != nil {
			t.Fatalf("replica %s does not enforce the clients' FlowSchema: %v", s.url, err)
		}
	}

	cli, err := clientv3.New(clientv3.Config{Endpoints: cluster.clientURLs(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	prefix := opts.EtcdPrefix
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	prefix += sharedbudget.KeySuffix

	// The bound the upstream must keep within, sampled as the shares
	// move: TestSharedConcurrencyLimit's (docs/spec/shared-budget.md#bounds),
	// with the child's share and levels read from its dump while it lives.
	var (
		mu        sync.Mutex
		childLive = true
		childLast struct{ share, nominal int }
		boundMax  int
	)
	sample := func() {
		bound := limit
		for _, r := range []*sbReplica{r1, r2} {
			s := r.share()
			bound += max(0, r.nominalSum()-s)
			if s == 1 {
				bound++
			}
		}
		mu.Lock()
		live := childLive
		mu.Unlock()
		if live {
			if _, s, n, err := child.dump(); err == nil {
				mu.Lock()
				childLast.share, childLast.nominal = s, n
				mu.Unlock()
			}
			mu.Lock()
			bound += max(0, childLast.nominal-childLast.share)
			if childLast.share == 1 {
				bound++
			}
			mu.Unlock()
		}
		mu.Lock()
		boundMax = max(boundMax, bound)
		mu.Unlock()
	}
	checkBound := func(what string) {
		t.Helper()
		sample()
		mu.Lock()
		bound := boundMax
		boundMax = 0
		mu.Unlock()
		up := g.upMax.Load()
		g.upMax.Store(g.inflight.Load())
		t.Logf("%s: upstream at most %d concurrent (bound %d, limit %d), %d requests served", what, up, bound, limit, g.served.Swap(0))
		if int(up) > bound {
			t.Errorf("%s: the upstream saw %d concurrent requests, above the bound %d", what, up, bound)
		}
	}

	// The clients: closed loops, a third on each replica. A client of
	// the killed replica that sees its connection fail moves to r1, as a
	// load balancer would move it; a 429 or a failure is retried after a
	// pause.
	targets := []*e2eServer{r1.e2eServer, r2.e2eServer, child.e2eServer}
	httpClients := []*http.Client{r1.client, r2.client, child.client}
	var (
		killed       atomic.Bool
		inflight     [3]atomic.Int64 // per replica, as the clients count them
		failures     [3]atomic.Int64 // transport errors, per replica
		bad          [3]atomic.Int64 // answers neither 200 nor 429, per replica
		failedBefore atomic.Int64    // failures seen before the kill
		firstFailure [3]atomic.Value
		movedToR1    atomic.Int64
		stop         = make(chan struct{})
		wg           sync.WaitGroup
		stopped      bool
		stopAndWait  = func() {
			if !stopped {
				stopped = true
				close(stop)
				wg.Wait()
			}
		}
	)
	defer stopAndWait()
	for c := range clients {
		wg.Go(func() {
			token := "Bearer token-" + users[c]
			home := c % 3
			moved := false
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := home
				if moved {
					i = 0
				}
				req, _ := http.NewRequest(http.MethodGet, targets[i].url+"/api/v1/namespaces/shop/pods/web", nil)
				req.Header.Set("Authorization", token)
				inflight[i].Add(1)
				resp, err := httpClients[i].Do(req)
				inflight[i].Add(-1)
				switch {
				case err != nil:
					failures[i].Add(1)
					firstFailure[i].CompareAndSwap(nil, err.Error())
					if !killed.Load() {
						failedBefore.Add(1)
					}
					if i == 2 && killed.Load() && !moved {
						moved = true
						movedToR1.Add(1)
					}
				case resp.StatusCode == http.StatusOK:
					resp.Body.Close()
					g.served.Add(1)
					continue
				default:
					resp.Body.Close()
					if resp.StatusCode != http.StatusTooManyRequests {
						bad[i].Add(1)
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				sample()
			}
		}
	})

	// Before the kill: the three records, read at one revision, divide
	// the whole limit, and the child holds requests.
	ctx := context.Background()
	var before map[string]int
	if err := waitFor(20*time.Second, func() bool {
		before, err = budgetRecords(ctx, cli, prefix)
		return err == nil && len(before) == 3 && sumShares(before) == limit && inflight[2].Load() > 0
	}); err != nil {
		t.Fatalf("the three replicas' shares do not sum to %d before the kill: %v (%v), %d requests in flight at the child", limit, before, err, inflight[2].Load())
	}
	if _, ok := before[childID]; !ok {
		t.Fatalf("no record of the child replica %s among %v", childID, before)
	}
	// The first measurement begins now, the replicas' joins behind.
	mu.Lock()
	boundMax = 0
	mu.Unlock()
	g.upMax.Store(g.inflight.Load())
	g.served.Store(0)
	sample()
	time.Sleep(load)
	checkBound("three replicas, a third of the clients each")
	// The child executes requests (the upstream holds them) when it is
	// killed, and the three records divide the whole limit: while demand
	// moves, a replica that shrank may have written its smaller share
	// before the one that grows wrote its larger one, so the records may
	// briefly sum to less.
	var executing int
	// On a busy machine a round can take longer than the 2 s lease, so
	// that a record lapses and comes back before the three settle.
	if err := waitFor(30*time.Second, func() bool {
		executing, err = child.executing("shared-level")
		if err != nil || executing == 0 {
			return false
		}
		before, err = budgetRecords(ctx, cli, prefix)
		return err == nil && len(before) == 3 && sumShares(before) == limit
	}); err != nil {
		t.Fatalf("before the kill the child executes %d requests and the records' shares are %v (%v), not three summing to %d", executing, before, err, limit)
	}
	held := inflight[2].Load()

	// kill -9 of the child.
	killedAt := time.Now()
	killed.Store(true)
	if err := child.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	childLive = false
	mu.Unlock()
	select {
	case <-child.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the child replica did not die of SIGKILL")
	}
	var ee *exec.ExitError
	if !errors.As(child.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child replica ended with %v, not killed by SIGKILL", child.err)
	}
	t.Logf("SIGKILL with %d of the child's clients' requests in flight, %d of them executing; the shares were %v", held, executing, before)

	// The survivors' rounds say how long etcd's requests take on this
	// machine now (sharedbudget.Status.LastRound).
	var slow time.Duration
	if err := waitFor(ttl+period+30*time.Second, func() bool {
		a, b := r1.server.budget.Status(), r2.server.budget.Status()
		slow = max(slow, a.LastRound, b.LastRound)
		return a.Share+b.Share == limit
	}); err != nil {
		t.Fatalf("the killed replica's share was not redistributed: r1=%d r2=%d", r1.share(), r2.share())
	}
	took := time.Since(killedAt)
	t.Logf("kill -9: its share redistributed after %v (r1=%d r2=%d, slowest round %v)", took.Round(time.Millisecond), r1.share(), r2.share(), slow.Round(time.Millisecond))
	// The lease expires at most a TTL after its last renewal, which came
	// before the kill; etcd's leader looks for expired leases every
	// 500 ms, and the revocation and the survivors' round are a few etcd
	// writes, each replicated and synced to disk: a second and a half of
	// slack, and three rounds as long as the survivors' slowest, for
	// those on a busy machine (one more when two survivors write at
	// once).
	const slack = 1500 * time.Millisecond
	if took > ttl+period+slack+3*slow {
		t.Errorf("the killed replica's share was redistributed after %v, more than the lease TTL %v plus a period %v, %v of slack and three rounds of %v", took, ttl, period, slack, slow)
	}
	var after map[string]int
	if err := waitFor(30*time.Second, func() bool {
		after, err = budgetRecords(ctx, cli, prefix)
		return err == nil && len(after) == 2 && sumShares(after) == limit
	}); err != nil {
		t.Errorf("after the kill the records' shares are %v (%v), not the two survivors' summing to %d", after, err, limit)
	}
	if _, ok := after[childID]; ok {
		t.Errorf("the killed replica's record %s is still there: %v", childID, after)
	}
	time.Sleep(load)
	checkBound("the child killed, the survivors growing")
	stopAndWait()

	for i, name := range []string{"r1", "r2", "the child"} {
		first, _ := firstFailure[i].Load().(string)
		t.Logf("%s: %d failed requests (first: %q), %d answers neither 200 nor 429", name, failures[i].Load(), first, bad[i].Load())
	}
	if n := failedBefore.Load(); n > 0 {
		t.Errorf("%d requests failed before the kill", n)
	}
	if failures[2].Load() == 0 || movedToR1.Load() == 0 {
		t.Errorf("the killed replica's clients saw no connection fail (%d failures, %d clients moved)", failures[2].Load(), movedToR1.Load())
	}
	for i := range 2 {
		if failures[i].Load() > 0 || bad[i].Load() > 0 {
			t.Errorf("the survivor r%d's clients saw %d failures and %d answers neither 200 nor 429", i+1, failures[i].Load(), bad[i].Load())
		}
	}
	if bad[2].Load() > 0 {
		t.Errorf("the child's clients got %d answers neither 200 nor 429", bad[2].Load())
	}
}
