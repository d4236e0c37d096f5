package observability

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/apfproject/apf/test/testproc"
)

// The server every expression is checked against: bin/apf serve as a
// gateway in front of an upstream of the test's own, with a configuration
// and traffic that make every series the rules and the dashboard name
// exist (histogram buckets, every rejection reason, a dangling FlowSchema).

// Tokens of the token file. The admin is in system:masters (exempt);
// flood's requests go to the one-seat queuing level obs-queue, rejected's
// to the one-seat Reject level obs-reject, bob's to global-default.
const (
	adminToken    = "observability-admin-token"
	floodToken    = "observability-flood-token"
	rejectedToken = "observability-rejected-token"
	bobToken      = "observability-bob-token"
	tokenCSV      = adminToken + ",admin,uid-admin,\"system:masters\"\n" +
		floodToken + ",flood,uid-flood\n" +
		rejectedToken + ",rejected,uid-rejected\n" +
		bobToken + ",bob,uid-bob\n"
)

// Bounds of the environment's life.
const (
	startTimeout   = 90 * time.Second // apf serve ready
	stepTimeout    = 30 * time.Second // one wait for a metric to change
	stopTimeout    = 15 * time.Second // apf serve after SIGTERM
	requestTimeout = 30 * time.Second // one HTTP request of the test
	// apfRequestTimeout is apf serve's --request-timeout: a quarter of it,
	// 2 s, is how long a request waits in its queue before it is rejected
	// with reason time-out; long enough for the test to fill the queue
	// behind the waiting requests before they go.
	apfRequestTimeout = 8 * time.Second
	// holdLimit bounds how long the upstream holds a request when the
	// test does not release it.
	holdLimit = 20 * time.Second
)

// The configuration the traffic runs under. Both levels get one seat (the
// server's concurrency limit is 20 seats, shared out by shares among the
// bootstrap levels' 245 shares and these) and may neither lend nor borrow,
// so one request held by the upstream saturates each.
const (
	plPath = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations"
	fsPath = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"

	queueLevel = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"obs-queue"},
"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":1,"lendablePercent":0,"borrowingLimitPercent":0,
"limitResponse":{"type":"Queue","queuing":{"queues":1,"handSize":1,"queueLengthLimit":2}}}}}`
	rejectLevel = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"obs-reject"},
"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":1,"lendablePercent":0,"borrowingLimitPercent":0,
"limitResponse":{"type":"Reject"}}}}`
	queueSchema = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"obs-queue"},
"spec":{"priorityLevelConfiguration":{"name":"obs-queue"},"matchingPrecedence":100,"distinguisherMethod":{"type":"ByUser"},
"rules":[{"subjects":[{"kind":"User","user":{"name":"flood"}}],"nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}]}]}}`
	rejectSchema = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"obs-reject"},
"spec":{"priorityLevelConfiguration":{"name":"obs-reject"},"matchingPrecedence":100,"distinguisherMethod":{"type":"ByUser"},
"rules":[{"subjects":[{"kind":"User","user":{"name":"rejected"}}],"nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}]}]}}`
	danglingSchema = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"obs-dangling"},
"spec":{"priorityLevelConfiguration":{"name":"obs-missing"},"matchingPrecedence":200,
"rules":[{"subjects":[{"kind":"User","user":{"name":"nobody"}}],"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/nothing"]}]}]}}`
)

// exposition is what the test environment scraped, or why it could not.
var (
	envOnce     sync.Once
	envFamilies map[string]*dto.MetricFamily
	envErr      error
	envStop     func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	if envStop != nil {
		envStop()
	}
	os.Exit(code)
}

// scraped returns the metric families of a running apf serve that has
// seen the traffic, starting it on first use.
func scraped(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	envOnce.Do(func() {
		envFamilies, envErr = runEnv()
	})
	if envErr != nil {
		t.Fatalf("apf serve with traffic: %v", envErr)
	}
	return envFamilies
}

// runEnv starts the upstream and apf serve, sends the traffic and scrapes
// /metrics. envStop stops what it started.
func runEnv() (map[string]*dto.MetricFamily, error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(root, "bin", "apf")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("bin/apf is missing: run `make build` (or `make observability-test`) first: %v", err)
	}
	dir, err := os.MkdirTemp("", "apf-observability-test-")
	if err != nil {
		return nil, err
	}
	up := newUpstream()
	var proc *testproc.Process
	envStop = func() {
		up.releaseAll()
		if proc != nil {
			proc.Stop(stopTimeout)
		}
		up.srv.Close()
		_ = os.RemoveAll(dir)
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(tokenCSV), 0o600); err != nil {
		return nil, err
	}
	port, err := testproc.FreePort()
	if err != nil {
		return nil, err
	}
	apfDir := filepath.Join(dir, "apf")
	proc, err = testproc.Start(bin, apfDir, "serve",
		"--data-dir="+filepath.Join(apfDir, "data"),
		"--listen=127.0.0.1:"+port,
		"--token-auth-file="+tokens,
		"--upstream="+up.srv.URL,
		"--max-requests-inflight=10",
		"--max-mutating-requests-inflight=10",
		"--request-timeout="+apfRequestTimeout.String(),
		"--shutdown-timeout=1s",
	)
	if err != nil {
		return nil, err
	}
	s := &server{url: "https://127.0.0.1:" + port, caFile: filepath.Join(apfDir, "data", "pki", "ca.crt"), proc: proc}
	fams, err := s.exercise(up)
	if err != nil {
		b, _ := os.ReadFile(proc.LogPath)
		if len(b) > 6000 {
			b = b[len(b)-6000:]
		}
		return nil, fmt.Errorf("%w\n----- end of apf serve's log -----\n%s", err, b)
	}
	return fams, nil
}

// exercise waits for the server, configures it, sends the traffic, and
// returns the scrape.
func (s *server) exercise(up *upstream) (map[string]*dto.MetricFamily, error) {
	if err := s.waitReady(time.Now().Add(startTimeout)); err != nil {
		return nil, err
	}
	for _, c := range []struct{ path, body string }{
		{plPath, queueLevel}, {plPath, rejectLevel},
		{fsPath, queueSchema}, {fsPath, rejectSchema}, {fsPath, danglingSchema},
	} {
		code, body, err := s.do(http.MethodPost, c.path, adminToken, c.body)
		if err != nil {
			return nil, err
		}
		if code != http.StatusCreated {
			return nil, fmt.Errorf("POST %s: %d %s", c.path, code, body)
		}
	}
	// The configuration is in force once the levels have limits.
	for _, pl := range []string{"obs-queue", "obs-reject"} {
		if err := s.waitMetric("apiserver_flowcontrol_nominal_limit_seats", map[string]string{"priority_level": pl}, "1"); err != nil {
			return nil, err
		}
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string][]int{}
	send := func(who, token, path string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, err := s.do(http.MethodGet, path, token, "")
			if err != nil {
				code = -1
			}
			mu.Lock()
			codes[who] = append(codes[who], code)
			mu.Unlock()
		}()
	}
	obsQueue := map[string]string{"priority_level": "obs-queue", "flow_schema": "obs-queue"}
	obsReject := map[string]string{"priority_level": "obs-reject", "flow_schema": "obs-reject"}

	// obs-queue: one request holds the seat, two wait in the queue (and
	// time out after 2 s: reason time-out), three find the queue full
	// (reason queue-full).
	send("flood", floodToken, "/hold")
	if err := s.waitMetric("apiserver_flowcontrol_current_executing_requests", obsQueue, "1"); err != nil {
		return nil, err
	}
	send("flood", floodToken, "/hold")
	send("flood", floodToken, "/hold")
	if err := s.waitMetric("apiserver_flowcontrol_current_inqueue_requests", obsQueue, "2"); err != nil {
		return nil, err
	}
	for range 3 {
		send("flood", floodToken, "/hold")
	}
	// obs-reject: one request holds the seat, two are refused (reason
	// concurrency-limit).
	send("rejected", rejectedToken, "/hold")
	if err := s.waitMetric("apiserver_flowcontrol_current_executing_requests", obsReject, "1"); err != nil {
		return nil, err
	}
	send("rejected", rejectedToken, "/hold")
	send("rejected", rejectedToken, "/hold")
	if err := s.waitMetric("apiserver_flowcontrol_rejected_requests_total",
		map[string]string{"priority_level": "obs-queue", "reason": "time-out"}, "2"); err != nil {
		return nil, err
	}
	up.releaseAll()
	// Some requests that go through at once, in global-default.
	for range 5 {
		send("bob", bobToken, "/fast")
	}
	wg.Wait()
	want := map[string]map[int]int{
		"flood":    {http.StatusOK: 1, http.StatusTooManyRequests: 5},
		"rejected": {http.StatusOK: 1, http.StatusTooManyRequests: 2},
		"bob":      {http.StatusOK: 5},
	}
	for who, w := range want {
		got := map[int]int{}
		for _, c := range codes[who] {
			got[c]++
		}
		if fmt.Sprint(got) != fmt.Sprint(w) {
			return nil, fmt.Errorf("%s's answers: %v, want %v", who, got, w)
		}
	}
	if err := s.waitMetric("apf_flowschemas_dangling", nil, "1"); err != nil {
		return nil, err
	}
	return s.scrape()
}

// upstream is the API apf serve proxies to: /hold answers once the test
// releases it (or after holdLimit), anything else at once.
type upstream struct {
	srv     *httptest.Server
	release chan struct{}
	once    sync.Once
}

func newUpstream() *upstream {
	u := &upstream{release: make(chan struct{})}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			select {
			case <-u.release:
			case <-r.Context().Done():
			case <-time.After(holdLimit):
			}
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok\n")
	}))
	return u
}

func (u *upstream) releaseAll() { u.once.Do(func() { close(u.release) }) }

// server is the running apf serve as the test reaches it.
type server struct {
	url    string
	caFile string
	client *http.Client
	proc   *testproc.Process
}

// do sends one request with a bearer token and reads the whole answer.
func (s *server) do(method, path, token, body string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	return testproc.Do(ctx, s.client, method, s.url+path, token, body)
}

// scrape reads /metrics, in the text format, as the admin.
func (s *server) scrape() (map[string]*dto.MetricFamily, error) {
	code, body, err := s.do(http.MethodGet, "/metrics", adminToken, "")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(bytes.NewReader(body))
}

// waitMetric waits until a series of the metric whose labels include
// want has the value (as the exposition prints it).
func (s *server) waitMetric(name string, want map[string]string, value string) error {
	deadline := time.Now().Add(stepTimeout)
	var last string
	for {
		fams, err := s.scrape()
		if err != nil {
			return err
		}
		last = "no such series"
		if f := fams[name]; f != nil {
			for _, m := range f.GetMetric() {
				if !hasLabels(m, want) {
					continue
				}
				last = model.SampleValue(sampleValue(f.GetType(), m)).String()
				if last == value {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s%v is %s after %v, want %s", name, want, last, stepTimeout, value)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

func sampleValue(t dto.MetricType, m *dto.Metric) float64 {
	switch t {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}

// waitReady waits for the server's CA file and then a 200 from /readyz.
func (s *server) waitReady(deadline time.Time) (err error) {
	s.client, err = testproc.WaitReady(s.proc, "apf serve", s.caFile, deadline,
		func(roots *x509.CertPool) *http.Client {
			return &http.Client{Transport: &http.Transport{
				TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
				MaxIdleConnsPerHost: 16,
			}}
		}, testproc.ReadyzProbe(s.url, adminToken, requestTimeout))
	return err
}
