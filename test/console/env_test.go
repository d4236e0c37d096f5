package console

import (
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

	"github.com/apfproject/apf/test/testproc"
)

// Tokens of the token file: the admin (system:masters, so its console
// requests are exempt), three flooding users in the group flooders, and
// bob, who sends a trickle to global-default.
const (
	adminToken = "console-admin-token"
	bobToken   = "console-bob-token"
	tokenCSV   = adminToken + ",admin,uid-admin,\"system:masters\"\n" +
		bobToken + ",bob,uid-bob\n" +
		"console-flood-1,flood-1,uid-flood-1,flooders\n" +
		"console-flood-2,flood-2,uid-flood-2,flooders\n" +
		"console-flood-3,flood-3,uid-flood-3,flooders\n"
)

var floodTokens = []string{"console-flood-1", "console-flood-2", "console-flood-3"}

// The flood's level: a few seats (its share of the server's 30), no
// lending or borrowing, 16 queues of 4; each flooding user is a flow of
// its own (ByUser), dealt 4 queues.
const (
	plPath = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations"
	fsPath = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"

	floodLevel = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"flood"},
"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":20,"lendablePercent":0,"borrowingLimitPercent":0,
"limitResponse":{"type":"Queue","queuing":{"queues":16,"handSize":4,"queueLengthLimit":4}}}}}`
	floodSchema = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"flood"},
"spec":{"priorityLevelConfiguration":{"name":"flood"},"matchingPrecedence":500,"distinguisherMethod":{"type":"ByUser"},
"rules":[{"subjects":[{"kind":"Group","group":{"name":"flooders"}}],"nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}]}]}}`
)

// Bounds of the environment's life.
const (
	startTimeout   = 60 * time.Second
	stopTimeout    = 10 * time.Second
	requestTimeout = 20 * time.Second
	// serviceTime is how long the upstream takes for each flood request.
	serviceTime = 250 * time.Millisecond
)

// env is bin/apf serve in front of the test's upstream.
type env struct {
	url    string
	client *http.Client
	proc   *testproc.Process
	up     *httptest.Server
	dir    string
}

// startEnv starts the upstream and apf serve as a gateway in front of it,
// with the flood level and schema created through the flowcontrol API;
// extra are more flags of apf serve.
func startEnv(t *testing.T, extra ...string) *env {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin", "apf")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("bin/apf is missing: run `make build` (or `make console-test`) first: %v", err)
	}
	dir := t.TempDir()
	e := &env{dir: dir}
	e.up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-time.After(serviceTime):
			case <-r.Context().Done():
			}
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok\n")
	}))
	t.Cleanup(func() {
		if e.proc != nil {
			e.proc.Stop(stopTimeout)
		}
		e.up.Close()
	})
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(tokenCSV), 0o600); err != nil {
		t.Fatal(err)
	}
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	apfDir := filepath.Join(dir, "apf")
	e.proc, err = testproc.Start(bin, apfDir, append([]string{"serve",
		"--data-dir=" + filepath.Join(apfDir, "data"),
		"--listen=127.0.0.1:" + port,
		"--token-auth-file=" + tokens,
		"--upstream=" + e.up.URL,
		"--max-requests-inflight=20",
		"--max-mutating-requests-inflight=10",
		"--request-timeout=8s",
		"--shutdown-timeout=1s",
	}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.url = "https://127.0.0.1:" + port
	if err := e.waitReady(filepath.Join(apfDir, "data", "pki", "ca.crt")); err != nil {
		t.Fatal(e.withLog(err))
	}
	for _, c := range []struct{ path, body string }{{plPath, floodLevel}, {fsPath, floodSchema}} {
		code, body, err := e.do(context.Background(), http.MethodPost, c.path, adminToken, c.body)
		if err != nil || code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s %v", c.path, code, body, err)
		}
	}
	return e
}

// withLog adds the end of apf serve's log to err.
func (e *env) withLog(err error) error {
	b, _ := os.ReadFile(e.proc.LogPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return fmt.Errorf("%w\n----- end of apf serve's log -----\n%s", err, b)
}

// do sends one request with a bearer token and reads the answer.
func (e *env) do(ctx context.Context, method, path, token, body string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return testproc.Do(ctx, e.client, method, e.url+path, token, body)
}

// waitReady waits for the server's CA file and a 200 from /readyz.
func (e *env) waitReady(caFile string) (err error) {
	e.client, err = testproc.WaitReady(e.proc, "apf serve", caFile, time.Now().Add(startTimeout),
		func(roots *x509.CertPool) *http.Client {
			return &http.Client{Transport: &http.Transport{
				TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
				MaxIdleConnsPerHost: 128,
			}}
		}, testproc.ReadyzProbe(e.url, adminToken, requestTimeout))
	return err
}

// flood runs loops per flooding user, each sending GET /slow again as
// soon as it is answered (after a 429 too), until stop is called; stop
// waits for them.
func (e *env) flood(loops int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, tok := range floodTokens {
		for range loops {
			wg.Go(func() {
				for ctx.Err() == nil {
					code, _, err := e.do(ctx, http.MethodGet, "/slow", tok, "")
					if err != nil || code != http.StatusOK {
						select {
						case <-ctx.Done():
						case <-time.After(20 * time.Millisecond):
						}
					}
				}
			})
		}
	}
	return func() { cancel(); wg.Wait() }
}
