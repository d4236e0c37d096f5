package kube

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/apfproject/apf/test/testproc"
)

// The environment every test of the package shares, started once by
// TestMain: an etcd in this process, a kube-apiserver on it, apf serve
// beside it (the server under test) and a second apf serve in front of the
// kube-apiserver (the gateway).

// Tokens of the token file both servers read. The admin is in
// system:masters on both; bob is an ordinary authenticated user, who on
// apf may read the flowcontrol API (apf's fixed policy) and on the
// kube-apiserver gets the same through the RBAC binding TestMain creates.
const (
	adminToken  = "kube-test-admin-token"
	readerToken = "kube-test-reader-token"
	tokenCSV    = adminToken + ",admin,uid-admin,\"system:masters\"\n" +
		readerToken + ",bob,uid-bob,\"devs\"\n"
)

// The kube-apiserver's two in-flight limits: 1,000 seats.
const (
	kubeMaxInflight = 700
	kubeMaxMutating = 300
)

// Bounds of the environment's life.
const (
	startTimeout   = 120 * time.Second // all servers ready
	stopTimeout    = 15 * time.Second  // one process after SIGTERM
	requestTimeout = 30 * time.Second  // one HTTP request
)

// apfOnlyV1 is the --runtime-config that makes apf serve the flowcontrol
// group in v1 only, as kube-apiserver v1.37 does.
const apfOnlyV1 = "flowcontrol.apiserver.k8s.io/v1beta3=false,flowcontrol.apiserver.k8s.io/v1beta2=false,flowcontrol.apiserver.k8s.io/v1beta1=false"

// server is one running API server as the tests reach it.
type server struct {
	name   string // kube, apf or gateway
	url    string // https://127.0.0.1:PORT
	caFile string // the CA bundle that verifies its serving certificate
	client *http.Client
	proc   *testproc.Process
}

// env is the shared environment.
type env struct {
	dir     string // the temporary directory of everything
	binDir  string // the repository's bin/
	kubectl string // bin/kubectl
	etcd    *embed.Etcd
	kube    *server
	apf     *server
	gateway *server

	// auditLog is the kube-apiserver's audit log (kubeAuditPolicy).
	auditLog string
}

var theEnv *env

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "apf-kube-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	e, err := startEnv(dir)
	if e != nil {
		defer e.stop()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kube test environment: %v\n", err)
		if e != nil {
			e.dumpLogs(os.Stderr)
		}
		return 1
	}
	theEnv = e
	code := m.Run()
	if code != 0 && os.Getenv("KUBE_TEST_LOGS") != "" {
		e.dumpLogs(os.Stderr)
	}
	return code
}

// testEnv returns the shared environment.
func testEnv(t *testing.T) *env {
	t.Helper()
	if theEnv == nil {
		t.Fatal("the environment did not start")
	}
	return theEnv
}

// startEnv starts etcd, then the three servers side by side, and waits
// until all are ready. On error the returned env (when not nil) holds
// what was started, for stop and the logs.
func startEnv(dir string) (*env, error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return nil, err
	}
	e := &env{dir: dir, binDir: filepath.Join(root, "bin")}
	e.kubectl = filepath.Join(e.binDir, "kubectl")
	for _, b := range []string{"apf", "kube-apiserver", "kubectl"} {
		if _, err := os.Stat(filepath.Join(e.binDir, b)); err != nil {
			return nil, fmt.Errorf("bin/%s is missing: run `make build kube-bins` (or `make kube-test`) first: %v", b, err)
		}
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(tokenCSV), 0o600); err != nil {
		return nil, err
	}

	if e.etcd, err = startEtcd(filepath.Join(dir, "etcd")); err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	etcdURL := e.etcd.Clients[0].Addr().String()

	kubePort, err := testproc.FreePort()
	if err != nil {
		return e, err
	}
	saKey := filepath.Join(dir, "sa.key")
	if err := writeECKey(saKey); err != nil {
		return e, err
	}
	kubeDir := filepath.Join(dir, "kube")
	auditPolicy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(auditPolicy, []byte(kubeAuditPolicy), 0o600); err != nil {
		return e, err
	}
	e.auditLog = filepath.Join(kubeDir, "audit.log")
	e.kube = &server{name: "kube", url: "https://127.0.0.1:" + kubePort, caFile: filepath.Join(kubeDir, "certs", "apiserver.crt")}
	e.kube.proc, err = testproc.Start(filepath.Join(e.binDir, "kube-apiserver"), kubeDir,
		"--etcd-servers=http://"+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+kubePort,
		"--cert-dir="+filepath.Join(kubeDir, "certs"),
		"--service-account-key-file="+saKey,
		"--service-account-signing-key-file="+saKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.96.0.0/24",
		"--token-auth-file="+tokens,
		"--authorization-mode=RBAC",
		// Nothing in the cluster can reach 127.0.0.1 as an endpoint of the
		// kubernetes service; do not try to publish it.
		"--endpoint-reconciler-type=none",
		// An audit log for apf sim to replay (audit_test.go).
		"--audit-policy-file="+auditPolicy,
		"--audit-log-path="+e.auditLog,
		// A server concurrency limit other than the default 600 (and
		// larger, so that no other test is short of seats), which apf
		// classify and apf sim must find (serverlimit_test.go).
		fmt.Sprintf("--max-requests-inflight=%d", kubeMaxInflight),
		fmt.Sprintf("--max-mutating-requests-inflight=%d", kubeMaxMutating),
	)
	if err != nil {
		return e, fmt.Errorf("kube-apiserver: %w", err)
	}

	apfPort, err := testproc.FreePort()
	if err != nil {
		return e, err
	}
	apfDir := filepath.Join(dir, "apf")
	e.apf = &server{name: "apf", url: "https://127.0.0.1:" + apfPort, caFile: filepath.Join(apfDir, "data", "pki", "ca.crt")}
	e.apf.proc, err = testproc.Start(filepath.Join(e.binDir, "apf"), apfDir, "serve",
		"--data-dir="+filepath.Join(apfDir, "data"),
		"--listen=127.0.0.1:"+apfPort,
		"--token-auth-file="+tokens,
		"--runtime-config="+apfOnlyV1,
		"--shutdown-timeout=2s",
	)
	if err != nil {
		return e, fmt.Errorf("apf: %w", err)
	}

	// The gateway reads the kube-apiserver's CA at start: it starts once
	// the kube-apiserver, which writes its certificate, is ready.
	deadline := time.Now().Add(startTimeout)
	if err := e.kube.waitReady(deadline); err != nil {
		return e, err
	}
	gwPort, err := testproc.FreePort()
	if err != nil {
		return e, err
	}
	gwDir := filepath.Join(dir, "gateway")
	e.gateway = &server{name: "gateway", url: "https://127.0.0.1:" + gwPort, caFile: filepath.Join(gwDir, "data", "pki", "ca.crt")}
	e.gateway.proc, err = testproc.Start(filepath.Join(e.binDir, "apf"), gwDir, "serve",
		"--data-dir="+filepath.Join(gwDir, "data"),
		"--listen=127.0.0.1:"+gwPort,
		"--token-auth-file="+tokens,
		"--upstream="+e.kube.url,
		"--upstream-ca-file="+e.kube.caFile,
		"--upstream-identity=passthrough",
		"--shutdown-timeout=2s",
	)
	if err != nil {
		return e, fmt.Errorf("gateway: %w", err)
	}

	for _, s := range []*server{e.apf, e.gateway} {
		if err := s.waitReady(deadline); err != nil {
			return e, err
		}
	}
	if err := e.grantReader(); err != nil {
		return e, err
	}
	return e, nil
}

// grantReader gives bob, on the kube-apiserver, what apf's fixed policy
// gives every authenticated user: reading the flowcontrol API.
func (e *env) grantReader() error {
	role := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"kube-test-flowcontrol-reader"},
"rules":[{"apiGroups":["flowcontrol.apiserver.k8s.io"],"resources":["flowschemas","flowschemas/status","prioritylevelconfigurations","prioritylevelconfigurations/status"],"verbs":["get","list","watch"]}]}`
	binding := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"kube-test-flowcontrol-reader"},
"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"kube-test-flowcontrol-reader"},
"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"bob"}]}`
	for _, c := range []struct{ path, body string }{
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles", role},
		{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding},
	} {
		a, err := e.kube.send(request{method: http.MethodPost, path: c.path, body: c.body})
		if err != nil {
			return err
		}
		if a.code != http.StatusCreated {
			return fmt.Errorf("kube: POST %s: %d %s", c.path, a.code, a.raw)
		}
	}
	// RBAC decisions come from an informer cache: wait until bob can read.
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, err := e.kube.send(request{method: http.MethodGet, path: "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/exempt", token: readerToken})
		if err == nil && a.code == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube: bob still cannot read flowschemas after the RBAC binding (last answer %d)", a.code)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop stops the servers, gateway first, then etcd.
func (e *env) stop() {
	for _, s := range []*server{e.gateway, e.apf, e.kube} {
		if s != nil && s.proc != nil {
			s.proc.Stop(stopTimeout)
		}
	}
	if e.etcd != nil {
		e.etcd.Close()
	}
}

// dumpLogs copies the end of each server's log to w.
func (e *env) dumpLogs(w io.Writer) {
	for _, s := range []*server{e.kube, e.apf, e.gateway} {
		if s == nil || s.proc == nil {
			continue
		}
		b, _ := os.ReadFile(s.proc.LogPath)
		if len(b) > 8000 {
			b = b[len(b)-8000:]
		}
		fmt.Fprintf(w, "----- end of %s's log (%s) -----\n%s\n", s.name, s.proc.LogPath, b)
	}
}

// startEtcd runs a single-member etcd in this process on free loopback
// ports, with its data in dir.
func startEtcd(dir string) (*embed.Etcd, error) {
	clientPort, err := testproc.FreePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := testproc.FreePort()
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "kube-test"
	cfg.Dir = dir
	cfg.LogLevel = "fatal" // its shutdown reports closed listeners as errors
	client := url.URL{Scheme: "http", Host: "127.0.0.1:" + clientPort}
	peer := url.URL{Scheme: "http", Host: "127.0.0.1:" + peerPort}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, errors.New("etcd not ready after 60 s")
	}
}

// writeECKey writes a new P-256 private key in PEM, the service-account
// signing key of the kube-apiserver (its public half verifies).
func writeECKey(path string) error {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

// waitReady waits for the server's CA file and then a 200 from /readyz.
func (s *server) waitReady(deadline time.Time) (err error) {
	s.client, err = testproc.WaitReady(s.proc, s.name, s.caFile, deadline,
		func(roots *x509.CertPool) *http.Client {
			return &http.Client{
				Timeout: requestTimeout,
				Transport: &http.Transport{
					TLSClientConfig:   &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
					ForceAttemptHTTP2: true,
				},
			}
		}, func(c *http.Client) error {
			s.client = c
			a, err := s.send(request{method: http.MethodGet, path: "/readyz"})
			switch {
			case err != nil:
				return err
			case a.code != http.StatusOK:
				return fmt.Errorf("/readyz: %d %s", a.code, a.raw)
			}
			return nil
		})
	return err
}

// request is one HTTP request of a test.
type request struct {
	method      string
	path        string // with the query
	body        string
	contentType string // default application/json when there is a body
	accept      string // default application/json
	token       string // default the admin's; "-" for none
	header      http.Header
}

// answer is a server's response.
type answer struct {
	code   int
	header http.Header
	raw    []byte
	body   any // the body decoded as JSON, nil when it is not JSON
}

func (r request) String() string {
	s := r.method + " " + r.path
	if r.contentType != "" {
		s += " (" + r.contentType + ")"
	}
	if r.token == readerToken {
		s += " as bob"
	}
	for _, k := range slices.Sorted(maps.Keys(r.header)) {
		s += fmt.Sprintf(" %s=%q", k, r.header[k])
	}
	return s
}

// send sends r and reads the whole answer.
func (s *server) send(r request) (answer, error) {
	return s.sendWithin(r, requestTimeout)
}

// sendWithin is send with a bound of its own.
func (s *server) sendWithin(r request, timeout time.Duration) (answer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, s.url+r.path, body)
	if err != nil {
		return answer{}, err
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	switch r.token {
	case "":
		req.Header.Set("Authorization", "Bearer "+adminToken)
	case "-":
	default:
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.body != "" {
		ct := r.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	accept := r.accept
	if accept == "" {
		accept = "application/json"
	}
	req.Header.Set("Accept", accept)
	resp, err := s.client.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("%s: %s: %w", s.name, r, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, fmt.Errorf("%s: %s: reading the body: %w", s.name, r, err)
	}
	a := answer{code: resp.StatusCode, header: resp.Header, raw: raw}
	var v any
	if d := json.NewDecoder(bytes.NewReader(raw)); len(raw) > 0 && d.Decode(&v) == nil && !d.More() {
		a.body = v
	}
	return a, nil
}

// mustSend sends r and fails the test when it cannot be sent.
func (s *server) mustSend(t *testing.T, r request) answer {
	t.Helper()
	a, err := s.send(r)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// kubeconfig writes (once) a kubeconfig for token against s and returns
// its path. The cluster, user and context names are the same for every
// server, so that kubectl's messages that name them compare equal.
func (s *server) kubeconfig(t *testing.T, token string) string {
	t.Helper()
	e := testEnv(t)
	path := filepath.Join(e.dir, "kubeconfig-"+s.name+"-"+token)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: test
  user:
    token: %s
contexts:
- name: test
  context: {cluster: test, user: test}
current-context: test
`, s.url, s.caFile, token)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
