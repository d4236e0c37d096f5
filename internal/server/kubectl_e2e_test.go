package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/internal/api/store"
	"github.com/apfproject/apf/internal/testing/testkubectl"
)

// The end-to-end tests drive the real kubectl against `apf serve` on
// 127.0.0.1, as an operator would.

// Tokens of the e2e token file: an administrator (system:masters) and a
// plain authenticated user.
const (
	adminToken  = "e2e-admin-token"
	readerToken = "e2e-reader-token"
	carolToken  = "e2e-carol-token"
	tokenFile   = adminToken + ",admin,uid-admin,\"system:masters\"\n" +
		readerToken + ",bob,uid-bob,\"devs\"\n" +
		carolToken + ",carol,uid-carol\n"
)

// e2eServer is one running `apf serve`.
type e2eServer struct {
	t   testing.TB
	url string
	// adminURL is the --admin-listen address's URL, when there is one.
	adminURL string
	caFile   string
	client   *http.Client
	server   *Server
	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
}

// startServer runs a server with opts (Listen and Auth.TokenAuthFile are
// filled in) and waits until /readyz says it is ready. The server is
// stopped when the test ends, if the test has not stopped it: a server
// left running would outlive its data directory, and its etcd member ends
// the whole test process when it finds the directory gone.
func startServer(t testing.TB, opts Options) *e2eServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startServerOn(t, opts, ln)
}

// startServerOn is startServer on a listener of the test's own.
func startServerOn(t testing.TB, opts Options, ln net.Listener) *e2eServer {
	t.Helper()
	var err error
	opts.Listen = ln.Addr().String()
	var adminLn net.Listener
	if opts.AdminListen != "" {
		if adminLn, err = net.Listen("tcp", opts.AdminListen); err != nil {
			t.Fatal(err)
		}
		opts.AdminListen = adminLn.Addr().String()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Auth.TokenAuthFile == "" {
		f := filepath.Join(t.TempDir(), "tokens.csv")
		if err := os.WriteFile(f, []byte(tokenFile), 0o600); err != nil {
			t.Fatal(err)
		}
		opts.Auth.TokenAuthFile = f
	}
	if opts.CertDir == "" && len(opts.EtcdServers) > 0 {
		opts.CertDir = t.TempDir()
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := New(ctx, opts)
	if err != nil {
		cancel()
		_ = ln.Close()
		t.Fatal(err)
	}
	scheme := "https://"
	if opts.InsecureHTTP {
		scheme = "http://"
	}
	s := &e2eServer{t: t, url: scheme + opts.Listen, caFile: filepath.Join(opts.certDir(), caCertFile), server: srv, cancel: cancel, done: make(chan error, 1)}
	if adminLn != nil {
		s.adminURL = scheme + opts.AdminListen
	}
	go func() { s.done <- srv.Run(ctx, ln, adminLn) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if s.client == nil && opts.InsecureHTTP {
			s.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}}
		}
		if s.client == nil {
			if pem, err := os.ReadFile(s.caFile); err == nil {
				pool := x509.NewCertPool()
				pool.AppendCertsFromPEM(pem)
				s.client = &http.Client{
					Timeout:   30 * time.Second,
					Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
				}
			}
		}
		readyURL := s.url
		if s.adminURL != "" {
			readyURL = s.adminURL // the main address is all upstream
		}
		code, _, _ := s.doAt(readyURL, http.MethodGet, "/readyz", "", nil)
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			s.stop()
			t.Fatalf("server not ready after 60 s (last /readyz: %d)", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(s.stop)
	return s
}

// stop stops the server and waits for it; only the first call does so.
func (s *e2eServer) stop() {
	s.stopOnce.Do(func() {
		s.cancel()
		select {
		case err := <-s.done:
			if err != nil {
				s.t.Errorf("server: %v", err)
			}
		case <-time.After(30 * time.Second):
			s.t.Error("server did not stop within 30 s")
		}
	})
}

// do sends one request with a bearer token ("" for none).
func (s *e2eServer) do(method, path, token string, body []byte) (int, http.Header, []byte) {
	return s.doAt(s.url, method, path, token, body)
}

// doAt is do against base, the main or the admin URL.
func (s *e2eServer) doAt(base, method, path, token string, body []byte) (int, http.Header, []byte) {
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.client == nil {
		return 0, nil, nil
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, nil
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header, b.Bytes()
}

// kubectl runs kubectl against a server as the holder of token.
type kubectl struct {
	t                 *testing.T
	bin, config, home string
}

func newKubectl(t *testing.T, srv *e2eServer, token string) *kubectl {
	t.Helper()
	bin := testkubectl.Path(t)
	home := t.TempDir()
	cfg := filepath.Join(home, "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: apf
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: u
  user:
    token: %s
contexts:
- name: apf
  context: {cluster: apf, user: u}
current-context: apf
`, srv.url, srv.caFile, token)
	if err := os.WriteFile(cfg, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return &kubectl{t: t, bin: bin, config: cfg, home: home}
}

// run runs kubectl with args, stdin from in, and returns its output and
// whether it succeeded.
func (k *kubectl) run(in string, args ...string) (string, bool) {
	k.t.Helper()
	args = append([]string{"--kubeconfig", k.config, "--cache-dir", filepath.Join(k.home, "cache"), "--request-timeout", "30s"}, args...)
	cmd := exec.Command(k.bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+k.home, "KUBECONFIG="+k.config)
	cmd.Stdin = strings.NewReader(in)
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// must runs kubectl and fails the test if it fails.
func (k *kubectl) must(in string, args ...string) string {
	k.t.Helper()
	out, ok := k.run(in, args...)
	if !ok {
		k.t.Fatalf("kubectl %s failed:\n%s", strings.Join(args, " "), out)
	}
	return out
}

// fields splits kubectl's table output into rows of cells.
func fields(out string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		rows = append(rows, strings.Fields(l))
	}
	return rows
}

const userFlowSchemaV1 = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: e2e-level
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 7
    limitResponse:
      type: Queue
      queuing: {queues: 16, handSize: 4, queueLengthLimit: 20}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: e2e-carol
spec:
  priorityLevelConfiguration: {name: e2e-level}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects:
    - kind: User
      user: {name: carol}
    nonResourceRules:
    - verbs: ["*"]
      nonResourceURLs: ["*"]
    resourceRules:
    - verbs: ["*"]
      apiGroups: ["*"]
      resources: ["*"]
      clusterScope: true
      namespaces: ["*"]
`

const userFlowSchemaV1Beta1 = `apiVersion: flowcontrol.apiserver.k8s.io/v1beta1
kind: FlowSchema
metadata:
  name: e2e-old-style
spec:
  priorityLevelConfiguration: {name: workload-low}
  matchingPrecedence: 900
  rules:
  - subjects:
    - kind: Group
      group: {name: old-timers}
    nonResourceRules:
    - verbs: [get]
      nonResourceURLs: ["/old/*"]
`

func TestKubectlEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and runs kubectl")
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	opts := DefaultOptions()
	opts.DataDir = dataDir
	opts.MaintenancePeriod = 500 * time.Millisecond
	srv := startServer(t, opts)
	admin := newKubectl(t, srv, adminToken)
	reader := newKubectl(t, srv, readerToken)

	// Discovery.
	out := admin.must("", "api-resources", "--api-group", "flowcontrol.apiserver.k8s.io")
	for _, r := range []string{"flowschemas", "prioritylevelconfigurations"} {
		if !strings.Contains(out, r) {
			t.Errorf("api-resources lacks %s:\n%s", r, out)
		}
	}

	// Every bootstrap object listed, with upstream's columns.
	out = admin.must("", "get", "flowschemas")
	rows := fields(out)
	if want := []string{"NAME", "PRIORITYLEVEL", "MATCHINGPRECEDENCE", "DISTINGUISHERMETHOD", "AGE", "MISSINGPL"}; !slices.Equal(rows[0], want) {
		t.Errorf("flowschemas header %v, want %v", rows[0], want)
	}
	for _, fs := range bootstrap.FlowSchemas() {
		if !strings.Contains(out, "\n"+fs.Name+" ") {
			t.Errorf("kubectl get flowschemas lacks %s:\n%s", fs.Name, out)
		}
	}
	// In matching order, as kube-apiserver lists them: precedence, then
	// name.
	var order []string
	for _, r := range rows[1:] {
		order = append(order, r[2]+" "+r[0])
	}
	if !slices.IsSortedFunc(rows[1:], func(a, b []string) int {
		pa, _ := strconv.Atoi(a[2])
		pb, _ := strconv.Atoi(b[2])
		if pa != pb {
			return pa - pb
		}
		return strings.Compare(a[0], b[0])
	}) {
		t.Errorf("kubectl get flowschemas is not in matching order: %q", order)
	}
	out = admin.must("", "get", "prioritylevelconfigurations")
	rows = fields(out)
	if want := []string{"NAME", "TYPE", "NOMINALCONCURRENCYSHARES", "QUEUES", "HANDSIZE", "QUEUELENGTHLIMIT", "AGE"}; !slices.Equal(rows[0], want) {
		t.Errorf("prioritylevelconfigurations header %v, want %v", rows[0], want)
	}
	for _, pl := range bootstrap.PriorityLevels() {
		if !strings.Contains(out, "\n"+pl.Name+" ") {
			t.Errorf("kubectl get prioritylevelconfigurations lacks %s:\n%s", pl.Name, out)
		}
	}

	// The other output formats.
	if out := admin.must("", "get", "flowschemas", "-o", "wide"); !strings.Contains(out, "MISSINGPL") {
		t.Errorf("-o wide:\n%s", out)
	}
	if out := admin.must("", "get", "flowschema", "exempt", "-o", "yaml"); !strings.Contains(out, "kind: FlowSchema") || !strings.Contains(out, "matchingPrecedence: 1\n") {
		t.Errorf("-o yaml:\n%s", out)
	}
	var list struct {
		Kind  string
		Items []struct{ Metadata struct{ Name string } }
	}
	if err := json.Unmarshal([]byte(admin.must("", "get", "prioritylevelconfigurations", "-o", "json")), &list); err != nil || list.Kind != "List" || len(list.Items) != len(bootstrap.PriorityLevels()) {
		t.Errorf("-o json: %v, kind %q, %d items", err, list.Kind, len(list.Items))
	}

	// The seeds' UID mapping, and the PF headers carry those UIDs.
	out = admin.must("", "get", "flowschemas", "-o", "custom-columns=uid:{metadata.uid},name:{metadata.name}")
	fsUID := map[string]string{}
	for _, r := range fields(out)[1:] {
		fsUID[r[1]] = r[0]
	}
	out = admin.must("", "get", "prioritylevelconfigurations", "-o", "custom-columns=uid:{metadata.uid},name:{metadata.name}")
	plUID := map[string]string{}
	for _, r := range fields(out)[1:] {
		plUID[r[1]] = r[0]
	}
	code, hdr, _ := srv.do(http.MethodGet, "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", readerToken, nil)
	if code != http.StatusOK {
		t.Fatalf("list as reader: %d", code)
	}
	if got, want := hdr.Get("X-Kubernetes-PF-FlowSchema-UID"), fsUID["global-default"]; got != want || got == "" {
		t.Errorf("FlowSchema UID header %q, want global-default's %q", got, want)
	}
	if got, want := hdr.Get("X-Kubernetes-PF-PriorityLevel-UID"), plUID["global-default"]; got != want || got == "" {
		t.Errorf("PriorityLevel UID header %q, want global-default's %q", got, want)
	}
	code, hdr, _ = srv.do(http.MethodGet, "/healthz", "", nil)
	if code != http.StatusOK || hdr.Get("X-Kubernetes-PF-FlowSchema-UID") != fsUID["probes"] {
		t.Errorf("anonymous /healthz: %d, FlowSchema UID %q, want probes' %q", code, hdr.Get("X-Kubernetes-PF-FlowSchema-UID"), fsUID["probes"])
	}

	// kubectl apply creates, then updates.
	manifest := filepath.Join(t.TempDir(), "user.yaml")
	write := func(content string) {
		if err := os.WriteFile(manifest, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(userFlowSchemaV1)
	out = admin.must("", "apply", "-f", manifest)
	if !strings.Contains(out, "flowschema.flowcontrol.apiserver.k8s.io/e2e-carol created") {
		t.Errorf("apply: %s", out)
	}
	write(strings.Replace(userFlowSchemaV1, "matchingPrecedence: 500", "matchingPrecedence: 600", 1))
	out = admin.must("", "apply", "-f", manifest)
	if !strings.Contains(out, "flowschema.flowcontrol.apiserver.k8s.io/e2e-carol configured") {
		t.Errorf("second apply: %s", out)
	}
	out = admin.must("", "get", "flowschema", "e2e-carol", "-o", "jsonpath={.spec.matchingPrecedence} {.metadata.generation}")
	if out != "600 2" {
		t.Errorf("after the second apply: precedence and generation %q, want \"600 2\"", out)
	}
	// An older version's manifest.
	write(userFlowSchemaV1Beta1)
	out = admin.must("", "apply", "-f", manifest)
	if !strings.Contains(out, "e2e-old-style created") {
		t.Errorf("v1beta1 apply: %s", out)
	}
	// kubectl prints the deprecation warning of an older version.
	out = admin.must("", "get", "flowschemas.v1beta1.flowcontrol.apiserver.k8s.io", "e2e-old-style", "-o", "jsonpath={.apiVersion}")
	if want := "Warning: flowcontrol.apiserver.k8s.io/v1beta1 FlowSchema is deprecated in v1.23+, unavailable in v1.26+; use flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema\nflowcontrol.apiserver.k8s.io/v1beta1"; out != want {
		t.Errorf("v1beta1 get: %q, want %q", out, want)
	}

	// The new FlowSchema is enforced: carol's requests land on it.
	carolFS := admin.must("", "get", "flowschema", "e2e-carol", "-o", "jsonpath={.metadata.uid}")
	if err := waitFor(5*time.Second, func() bool {
		_, hdr, _ := srv.do(http.MethodGet, "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", carolToken, nil)
		return hdr.Get("X-Kubernetes-PF-FlowSchema-UID") == carolFS
	}); err != nil {
		t.Errorf("carol's requests are not classified by e2e-carol: %v", err)
	}

	// A FlowSchema naming a missing level is marked dangling.
	admin.must(`apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: e2e-dangling}
spec:
  priorityLevelConfiguration: {name: no-such-level}
  matchingPrecedence: 700
  rules:
  - subjects: [{kind: Group, group: {name: nobody}}]
    nonResourceRules: [{verbs: [get], nonResourceURLs: ["/x"]}]
`, "apply", "-f", "-")
	if err := waitFor(10*time.Second, func() bool {
		out, _ := admin.run("", "get", "flowschema", "e2e-dangling", "--no-headers")
		f := strings.Fields(out)
		return len(f) == 6 && f[5] == "True"
	}); err != nil {
		out, _ := admin.run("", "get", "flowschema", "e2e-dangling", "-o", "yaml")
		t.Errorf("e2e-dangling not marked MissingPL: %v\n%s", err, out)
	}
	cond := admin.must("", "get", "flowschema", "e2e-dangling", "-o", `jsonpath={.status.conditions[?(@.type=="Dangling")].reason}`)
	if cond != "NotFound" {
		t.Errorf("Dangling reason %q, want NotFound", cond)
	}

	// Deleting a suggested object: it comes back.
	admin.must("", "delete", "flowschema", "global-default")
	if err := waitFor(20*time.Second, func() bool {
		_, ok := admin.run("", "get", "flowschema", "global-default")
		return ok
	}); err != nil {
		t.Errorf("suggested FlowSchema global-default not restored: %v", err)
	}

	// Breaking a mandatory object is refused.
	out, ok := admin.run("", "patch", "prioritylevelconfiguration", "catch-all", "--type=merge", "-p", `{"spec":{"limited":{"nominalConcurrencyShares":99}}}`)
	if ok || !strings.Contains(out, "Invalid") && !strings.Contains(out, "invalid") {
		t.Errorf("patching mandatory catch-all: ok=%v\n%s", ok, out)
	}
	// An invalid object: 422 naming the field.
	write(strings.Replace(userFlowSchemaV1, "matchingPrecedence: 500", "matchingPrecedence: 20000", 1))
	out, ok = admin.run("", "apply", "-f", manifest)
	if ok || !strings.Contains(out, "spec.matchingPrecedence") {
		t.Errorf("invalid precedence: ok=%v\n%s", ok, out)
	}

	// A non-admin reads but cannot write.
	reader.must("", "get", "flowschemas")
	out, ok = reader.run("", "delete", "flowschema", "e2e-carol")
	if ok || !strings.Contains(out, "forbidden") {
		t.Errorf("reader delete: ok=%v\n%s", ok, out)
	}
	out, ok = reader.run("", "get", "--raw", "/debug/api_priority_and_fairness/dump_priority_levels")
	if ok || !strings.Contains(out, "forbidden") {
		t.Errorf("reader debug dump: ok=%v\n%s", ok, out)
	}

	// Debug dumps through kubectl get --raw.
	for _, d := range []string{"dump_priority_levels", "dump_queues", "dump_requests"} {
		out = admin.must("", "get", "--raw", "/debug/api_priority_and_fairness/"+d)
		if !strings.Contains(out, "PriorityLevelName") {
			t.Errorf("%s:\n%s", d, out)
		}
	}

	// v1alpha1 is not served unless --runtime-config asks for it.
	if code, _, _ := srv.do(http.MethodGet, "/apis/flowcontrol.apiserver.k8s.io/v1alpha1/flowschemas", adminToken, nil); code != http.StatusNotFound {
		t.Errorf("v1alpha1 served by default: %d", code)
	}
	// and kubectl says so as it does against kube-apiserver: it looks
	// the kind up in OpenAPI 3, then (as protobuf) in OpenAPI 2, then in
	// discovery.
	write(strings.Replace(userFlowSchemaV1Beta1, "flowcontrol.apiserver.k8s.io/v1beta1", "flowcontrol.apiserver.k8s.io/v1alpha1", 1))
	if out, ok := admin.run("", "apply", "-f", manifest); ok || !strings.Contains(out, `no matches for kind "FlowSchema" in version "flowcontrol.apiserver.k8s.io/v1alpha1"`) {
		t.Errorf("applying a v1alpha1 manifest while v1alpha1 is off: %v\n%s", ok, out)
	}

	// A restart keeps the user's objects, here with v1alpha1 enabled.
	carolUID := admin.must("", "get", "flowschema", "e2e-carol", "-o", "jsonpath={.metadata.uid}")
	srv.stop()
	opts.Versions, _ = ParseRuntimeConfig("flowcontrol.apiserver.k8s.io/v1alpha1=true")
	srv = startServer(t, opts)
	defer srv.stop()
	admin = newKubectl(t, srv, adminToken)
	if got := admin.must("", "get", "flowschema", "e2e-carol", "-o", "jsonpath={.metadata.uid}"); got != carolUID {
		t.Errorf("after restart e2e-carol has uid %q, want %q", got, carolUID)
	}
	admin.must("", "get", "prioritylevelconfiguration", "e2e-level")
	out = admin.must("", "get", "flowschemas.v1alpha1.flowcontrol.apiserver.k8s.io", "e2e-carol", "-o", "jsonpath={.apiVersion}")
	if want := "Warning: flowcontrol.apiserver.k8s.io/v1alpha1 FlowSchema is deprecated in v1.20+, unavailable in v1.21+; use flowcontrol.apiserver.k8s.io/v1beta1 FlowSchema\nflowcontrol.apiserver.k8s.io/v1alpha1"; out != want {
		t.Errorf("v1alpha1 get after enabling it: %q, want %q", out, want)
	}
}

// waitFor polls cond every 50 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("condition not met within %v", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// TestReplicasShareEtcd runs two servers on one etcd: a FlowSchema created
// through one is enforced by the other within a second.
func TestReplicasShareEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	emb, err := store.StartEmbedded(t.TempDir(), store.EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	opts := DefaultOptions()
	opts.EtcdServers = emb.Endpoints()
	a := startServer(t, opts)
	defer a.stop()
	b := startServer(t, opts)
	defer b.stop()

	body := []byte(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema",
	 "metadata":{"name":"replica-carol"},
	 "spec":{"priorityLevelConfiguration":{"name":"workload-high"},"matchingPrecedence":400,
	  "rules":[{"subjects":[{"kind":"User","user":{"name":"carol"}}],
	   "resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"clusterScope":true,"namespaces":["*"]}]}]}}`)
	code, _, resp := a.do(http.MethodPost, "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", adminToken, body)
	if code != http.StatusCreated {
		t.Fatalf("create through replica a: %d %s", code, resp)
	}
	created := time.Now()
	var obj struct {
		Metadata struct{ UID string } `json:"metadata"`
	}
	if err := json.Unmarshal(resp, &obj); err != nil || obj.Metadata.UID == "" {
		t.Fatalf("created object: %v %s", err, resp)
	}
	err = waitFor(time.Second, func() bool {
		_, hdr, _ := b.do(http.MethodGet, "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", carolToken, nil)
		return hdr.Get("X-Kubernetes-PF-FlowSchema-UID") == obj.Metadata.UID
	})
	if err != nil {
		t.Fatalf("replica b does not enforce the FlowSchema created through a: %v", err)
	}
	t.Logf("replica b enforced the new FlowSchema %v after it was created through a", time.Since(created).Round(time.Millisecond))
}
