package server

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The storage-fault tests run apf replicas on a three-member etcd cluster
// started in the test process and take its members away and back.

// etcdCluster is an etcd cluster whose members run in this process, on
// 127.0.0.1, each with its own data directory and fixed ports, so that a
// stopped member can be started again as itself.
type etcdCluster struct {
	t       testing.TB
	members []*etcdMember
}

type etcdMember struct {
	name               string
	dir                string
	clientURL, peerURL url.URL
	mu                 sync.Mutex
	etcd               *embed.Etcd // nil while stopped
}

// startEtcdCluster starts an n-member cluster and waits until every member
// serves clients. The members are stopped when the test ends.
func startEtcdCluster(t testing.TB, n int) *etcdCluster {
	t.Helper()
	ports := testFreePorts(t, 2*n)
	c := &etcdCluster{t: t}
	var initial []string
	for i := range n {
		m := &etcdMember{
			name:      fmt.Sprintf("m%d", i),
			dir:       t.TempDir(),
			clientURL: url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2*i]))},
			peerURL:   url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2*i+1]))},
		}
		c.members = append(c.members, m)
		initial = append(initial, m.name+"="+m.peerURL.String())
	}
	t.Cleanup(func() {
		for i := range c.members {
			c.stop(i)
		}
	})
	c.startMembers(strings.Join(initial, ","), allIndexes(n)...)
	return c
}

func allIndexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// testFreePorts reserves n distinct free ports on 127.0.0.1 and releases
// them for the caller to bind.
func testFreePorts(t testing.TB, n int) []int {
	t.Helper()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// config is member m's etcd configuration. initialCluster is only
// consulted while the data directory is new: a restarted member finds its
// cluster in its write-ahead log.
func (m *etcdMember) config(initialCluster string) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenClientUrls = []url.URL{m.clientURL}
	cfg.AdvertiseClientUrls = []url.URL{m.clientURL}
	cfg.ListenPeerUrls = []url.URL{m.peerURL}
	cfg.AdvertisePeerUrls = []url.URL{m.peerURL}
	cfg.InitialCluster = initialCluster
	cfg.InitialClusterToken = "apf-storage-faults"
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.EnableGRPCGateway = false
	cfg.AutoCompactionRetention = "0"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	return cfg
}

// startMembers starts the given members together (a restarted majority
// needs its peers to elect a leader) and waits until each serves clients.
func (c *etcdCluster) startMembers(initialCluster string, idx ...int) {
	c.t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(idx))
	for k, i := range idx {
		m := c.members[i]
		wg.Go(func() {
			e, err := embed.StartEtcd(m.config(initialCluster))
			if err != nil {
				errs[k] = fmt.Errorf("member %s: %w", m.name, err)
				return
			}
			m.mu.Lock()
			m.etcd = e
			m.mu.Unlock()
			select {
			case <-e.Server.ReadyNotify():
			case err := <-e.Err():
				errs[k] = fmt.Errorf("member %s: %w", m.name, err)
			case <-time.After(30 * time.Second):
				errs[k] = fmt.Errorf("member %s not ready after 30 s", m.name)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			c.t.Fatal(err)
		}
	}
}

// start starts stopped members again on their data directories.
func (c *etcdCluster) start(idx ...int) { c.t.Helper(); c.startMembers("", idx...) }

// stop stops member i abruptly, as a crash would: its raft node stops
// without handing leadership over, then its listeners close. Stopping a
// stopped member does nothing.
func (c *etcdCluster) stop(i int) {
	m := c.members[i]
	m.mu.Lock()
	e := m.etcd
	m.etcd = nil
	m.mu.Unlock()
	if e == nil {
		return
	}
	e.Server.HardStop()
	e.Close()
}

// leader returns the index of the member that currently leads, or -1.
func (c *etcdCluster) leader() int {
	for i, m := range c.members {
		m.mu.Lock()
		e := m.etcd
		m.mu.Unlock()
		if e != nil && e.Server.Leader() == e.Server.MemberID() {
			return i
		}
	}
	return -1
}

// clientURLs returns every member's client URL.
func (c *etcdCluster) clientURLs() []string {
	var out []string
	for _, m := range c.members {
		out = append(out, m.clientURL.String())
	}
	return out
}

const fsPath = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"

// userFlowSchema is a FlowSchema sending every resource request of user to
// level.
func userFlowSchema(name, user, level string, precedence int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema",
	 "metadata":{"name":%q},
	 "spec":{"priorityLevelConfiguration":{"name":%q},"matchingPrecedence":%d,"distinguisherMethod":{"type":"ByUser"},
	  "rules":[{"subjects":[{"kind":"User","user":{"name":%q}}],
	   "resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"clusterScope":true,"namespaces":["*"]}]}]}}`,
		name, level, precedence, user)
}

// objectUID returns metadata.uid of an object's JSON.
func objectUID(t testing.TB, body []byte) string {
	t.Helper()
	var o struct {
		Metadata struct{ UID string } `json:"metadata"`
	}
	if err := json.Unmarshal(body, &o); err != nil || o.Metadata.UID == "" {
		t.Fatalf("no uid in %s (%v)", body, err)
	}
	return o.Metadata.UID
}

// classifiedAs sends one proxied request as the holder of token and
// returns the FlowSchema UID the replica classified it with ("" if the
// request failed).
func classifiedAs(s *e2eServer, token string) string {
	code, hdr, _ := s.do(http.MethodGet, "/api/v1/namespaces/default/pods", token, nil)
	if code != http.StatusOK {
		return ""
	}
	return hdr.Get("X-Kubernetes-PF-FlowSchema-UID")
}

// trafficLog records what a steady client saw from one replica.
type trafficLog struct {
	mu       sync.Mutex
	sent     int
	bad      int // not 200, or not classified with the expected objects
	firstBad string
	byPhase  map[string]int
}

// steadyTraffic sends carol's proxied requests to s, one at a time every
// 20 ms, until stop is closed, and checks that each is answered with 200
// and classified by the FlowSchema fsUID into the level plUID.
func steadyTraffic(s *e2eServer, token, fsUID, plUID string, phase *atomic.Value, stop <-chan struct{}) *trafficLog {
	l := &trafficLog{byPhase: map[string]int{}}
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			p := phase.Load().(string)
			code, hdr, _ := s.do(http.MethodGet, "/api/v1/namespaces/default/pods", token, nil)
			l.mu.Lock()
			l.sent++
			l.byPhase[p]++
			if code != http.StatusOK || hdr.Get("X-Kubernetes-PF-FlowSchema-UID") != fsUID || hdr.Get("X-Kubernetes-PF-PriorityLevel-UID") != plUID {
				l.bad++
				if l.firstBad == "" {
					l.firstBad = fmt.Sprintf("phase %s: %d, FlowSchema UID %q, PriorityLevel UID %q",
						p, code, hdr.Get("X-Kubernetes-PF-FlowSchema-UID"), hdr.Get("X-Kubernetes-PF-PriorityLevel-UID"))
				}
			}
			l.mu.Unlock()
		}
	}()
	return l
}

// TestStorageFaults runs two replicas on a three-member etcd cluster: the
// loss of one member changes nothing; the loss of all keeps requests
// classified and answered on the last configuration while API writes get a
// prompt 503; when the members return both replicas catch up without a
// restart; and concurrent read-modify-write through both replicas loses no
// update.
func TestStorageFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-member etcd cluster and two servers")
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"PodList","apiVersion":"v1","items":[]}`)
	}))
	defer upstream.Close()

	cluster := startEtcdCluster(t, 3)
	tokens := gatewayTokens(t, "dave")
	tune := func(o *Options) {
		o.EtcdServers = cluster.clientURLs()
		o.MaintenancePeriod = time.Second
	}
	a := startGateway(t, upstream.URL, tokens, tune)
	defer a.stop()
	b := startGateway(t, upstream.URL, tokens, tune)
	defer b.stop()

	// carol's own level and FlowSchema, created through a and enforced by
	// both replicas.
	code, _, body := a.do(http.MethodPost, "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations", adminToken,
		[]byte(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration",
		 "metadata":{"name":"faults-level"},
		 "spec":{"type":"Limited","limited":{"nominalConcurrencyShares":20,
		  "limitResponse":{"type":"Queue","queuing":{"queues":16,"handSize":4,"queueLengthLimit":50}}}}}`))
	if code != http.StatusCreated {
		t.Fatalf("create level: %d %s", code, body)
	}
	plUID := objectUID(t, body)
	code, _, body = a.do(http.MethodPost, fsPath, adminToken, userFlowSchema("faults-carol", "carol", "faults-level", 500))
	if code != http.StatusCreated {
		t.Fatalf("create FlowSchema: %d %s", code, body)
	}
	fsUID := objectUID(t, body)
	for _, s := range []*e2eServer{a, b} {
		if err := waitFor(5*time.Second, func() bool { return classifiedAs(s, carolToken) == fsUID }); err != nil {
			t.Fatalf("carol's FlowSchema not enforced: %v", err)
		}
	}

	// From here to the end carol's requests flow through both replicas
	// and must all be answered with 200, classified by her FlowSchema.
	var phase atomic.Value
	phase.Store("healthy")
	stopTraffic := make(chan struct{})
	logs := []*trafficLog{
		steadyTraffic(a, carolToken, fsUID, plUID, &phase, stopTraffic),
		steadyTraffic(b, carolToken, fsUID, plUID, &phase, stopTraffic),
	}
	trafficStopped := false
	endTraffic := func() {
		if !trafficStopped {
			trafficStopped = true
			close(stopTraffic)
		}
	}
	defer endTraffic()

	// One member down, the leader, stopped as by a crash: writes through
	// either replica succeed and are enforced by the other.
	phase.Store("one member down")
	lead := cluster.leader()
	if lead < 0 {
		t.Fatal("the cluster has no leader")
	}
	cluster.stop(lead)
	t.Logf("stopped member %d, the leader", lead)
	body, tries, took := writeRetrying(t, b, http.MethodPost, fsPath, userFlowSchema("one-down", "dave", "workload-low", 600))
	t.Logf("first write after the leader's loss: done after %v, %d attempt(s)", took.Round(time.Millisecond), tries)
	oneDownUID := objectUID(t, body)
	if err := waitFor(5*time.Second, func() bool { return classifiedAs(a, "token-dave") == oneDownUID }); err != nil {
		t.Fatalf("replica a does not enforce the FlowSchema created through b with a member down: %v", err)
	}
	_, tries, took = writeRetrying(t, a, http.MethodDelete, fsPath+"/one-down", nil)
	t.Logf("delete through a with a member down: done after %v, %d attempt(s)", took.Round(time.Millisecond), tries)
	if err := waitFor(5*time.Second, func() bool { return classifiedAs(b, "token-dave") != oneDownUID }); err != nil {
		t.Fatalf("replica b still enforces the FlowSchema deleted through a: %v", err)
	}

	// Every member down: traffic goes on with the last configuration, a
	// write is refused with a 503 Status within a bounded time.
	phase.Store("all members down")
	for i := range cluster.members {
		cluster.stop(i)
	}
	var wg sync.WaitGroup
	for _, s := range []*e2eServer{a, b} {
		wg.Go(func() {
			start := time.Now()
			code, _, body := s.do(http.MethodPost, fsPath, adminToken, userFlowSchema("all-down", "dave", "workload-low", 600))
			took := time.Since(start)
			t.Logf("write with every member down: %d after %v: %s", code, took.Round(time.Millisecond), strings.TrimSpace(string(body)))
			if code == 0 {
				t.Errorf("write with every member down: no answer after %v", took)
				return
			}
			var st metav1.Status
			if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
				t.Errorf("write with every member down: %d, not a Status: %s (%v)", code, body, err)
				return
			}
			if code != http.StatusServiceUnavailable || st.Code != http.StatusServiceUnavailable ||
				st.Reason != metav1.StatusReasonServiceUnavailable || !strings.Contains(st.Message, "storage is unavailable") {
				t.Errorf("write with every member down: %d %s, want a 503 ServiceUnavailable Status saying the storage is unavailable", code, body)
			}
			if took > storageFaultBound {
				t.Errorf("write with every member down answered after %v, want within %v", took, storageFaultBound)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if storageSoak() {
		// A long outage: traffic keeps flowing and the replicas' retries
		// back off as far as they go.
		time.Sleep(soakOutage)
	}

	// The members return: both replicas reconnect by themselves; a write
	// through a is enforced by b.
	phase.Store("members back")
	cluster.start(allIndexes(len(cluster.members))...)
	back := time.Now()
	var recoveredUID string
	if err := waitFor(30*time.Second, func() bool {
		code, _, body := a.do(http.MethodPost, fsPath, adminToken, userFlowSchema("recovered", "dave", "workload-low", 550))
		if code == http.StatusCreated {
			recoveredUID = objectUID(t, body)
		}
		return code == http.StatusCreated
	}); err != nil {
		t.Fatalf("no write through a succeeds after the members returned: %v", err)
	}
	wrote := time.Now()
	if d := wrote.Sub(back); d > storageCatchUp {
		t.Errorf("the first write through a succeeded %v after the members returned, want within %v", d, storageCatchUp)
	}
	if err := waitFor(storageCatchUp, func() bool { return classifiedAs(b, "token-dave") == recoveredUID }); err != nil {
		t.Fatalf("replica b does not enforce the FlowSchema written through a after the members returned: %v", err)
	}
	t.Logf("after the members returned: first write through a after %v, enforced by b %v later",
		wrote.Sub(back).Round(time.Millisecond), time.Since(wrote).Round(time.Millisecond))

	endTraffic()
	for i, l := range logs {
		l.mu.Lock()
		t.Logf("replica %c: %d requests answered during the faults (%v), %d bad", 'a'+i, l.sent, l.byPhase, l.bad)
		if l.bad > 0 {
			t.Errorf("replica %c: %d of %d requests not answered 200 on carol's FlowSchema; first: %s", 'a'+i, l.bad, l.sent, l.firstBad)
		}
		if l.byPhase["all members down"] == 0 {
			t.Errorf("replica %c: no request was sent while every member was down", 'a'+i)
		}
		l.mu.Unlock()
	}

	concurrentIncrements(t, []*e2eServer{a, b})
}

// writeRetrying creates (POST) or deletes (DELETE) an object through s as
// a client honouring 503 does: a 503 Status is retried, anything else
// but success fails the test, and so does a write still refused after
// storageFaultBound. A 503'd write may still have happened (the store
// cannot tell), so after one, a create answered 409 AlreadyExists or a
// delete answered 404 counts as done. It returns the object, the number
// of attempts and the time they took.
func writeRetrying(t *testing.T, s *e2eServer, method, path string, body []byte) ([]byte, int, time.Duration) {
	t.Helper()
	want := http.StatusOK
	if method == http.MethodPost {
		want = http.StatusCreated
	}
	start := time.Now()
	for attempt := 1; ; attempt++ {
		code, _, resp := s.do(method, path, adminToken, body)
		switch {
		case code == want:
			return resp, attempt, time.Since(start)
		case attempt > 1 && method == http.MethodPost && code == http.StatusConflict:
			var o struct {
				Metadata struct{ Name string } `json:"metadata"`
			}
			_ = json.Unmarshal(body, &o)
			code, _, resp = s.do(http.MethodGet, path+"/"+o.Metadata.Name, adminToken, nil)
			if code != http.StatusOK {
				t.Fatalf("%s %s: 409 after a 503, then get: %d %s", method, path, code, resp)
			}
			return resp, attempt, time.Since(start)
		case attempt > 1 && method == http.MethodDelete && code == http.StatusNotFound:
			return nil, attempt, time.Since(start)
		case code != http.StatusServiceUnavailable:
			t.Fatalf("%s %s: %d %s", method, path, code, resp)
		case time.Since(start) > storageFaultBound:
			t.Fatalf("%s %s: still 503 after %v: %s", method, path, time.Since(start), resp)
		}
		t.Logf("%s %s: 503, retrying: %s", method, path, resp)
		time.Sleep(100 * time.Millisecond)
	}
}

// soak says whether the long variants of the reliability tests run
// (make soak sets APF_SOAK=1).
func storageSoak() bool { return os.Getenv("APF_SOAK") == "1" }

// soakOutage is how long every member stays down in the soak variant of
// TestStorageFaults.
const soakOutage = 90 * time.Second

// storageCatchUp bounds, once the members are back, the time until a
// write succeeds again and until the other replica enforces it.
const storageCatchUp = 10 * time.Second

// storageFaultBound is how soon a write must be refused when no etcd
// member answers: the store's own bound on a call, with room for a slow
// machine.
const storageFaultBound = 15 * time.Second

// concurrentIncrements has writers increment one FlowSchema's annotation
// through alternating replicas, each a read-modify-write conditioned on
// the resourceVersion read and retried on 409: no increment may be lost.
func concurrentIncrements(t *testing.T, replicas []*e2eServer) {
	t.Helper()
	const writers, each = 8, 10
	body := userFlowSchema("counter", "nobody", "workload-low", 700)
	body = []byte(strings.Replace(string(body), `"metadata":{"name":"counter"}`, `"metadata":{"name":"counter","annotations":{"counter":"0"}}`, 1))
	if code, _, resp := replicas[0].do(http.MethodPost, fsPath, adminToken, body); code != http.StatusCreated {
		t.Fatalf("create the counter: %d %s", code, resp)
	}
	var succeeded, conflicts atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				for attempt := 0; ; attempt++ {
					s := replicas[(w+i+attempt)%len(replicas)]
					code, _, resp := s.do(http.MethodGet, fsPath+"/counter", adminToken, nil)
					if code != http.StatusOK {
						t.Errorf("read the counter: %d %s", code, resp)
						return
					}
					var obj map[string]any
					if err := json.Unmarshal(resp, &obj); err != nil {
						t.Error(err)
						return
					}
					meta := obj["metadata"].(map[string]any)
					ann := meta["annotations"].(map[string]any)
					n, err := strconv.Atoi(ann["counter"].(string))
					if err != nil {
						t.Error(err)
						return
					}
					ann["counter"] = strconv.Itoa(n + 1)
					out, _ := json.Marshal(obj)
					code, _, resp = s.do(http.MethodPut, fsPath+"/counter", adminToken, out)
					if code == http.StatusOK {
						succeeded.Add(1)
						break
					}
					if code != http.StatusConflict {
						t.Errorf("write the counter: %d %s", code, resp)
						return
					}
					conflicts.Add(1)
				}
			}
		})
	}
	wg.Wait()
	code, _, resp := replicas[1].do(http.MethodGet, fsPath+"/counter", adminToken, nil)
	if code != http.StatusOK {
		t.Fatalf("read the counter: %d %s", code, resp)
	}
	var obj struct {
		Metadata struct{ Annotations map[string]string } `json:"metadata"`
	}
	if err := json.Unmarshal(resp, &obj); err != nil {
		t.Fatal(err)
	}
	got := obj.Metadata.Annotations["counter"]
	t.Logf("%d writers through %d replicas: %d increments, %d conflicts retried, counter %s",
		writers, len(replicas), succeeded.Load(), conflicts.Load(), got)
	if got != strconv.FormatInt(succeeded.Load(), 10) || succeeded.Load() != writers*each {
		t.Errorf("counter %s after %d successful increments (want %d)", got, succeeded.Load(), writers*each)
	}
}
