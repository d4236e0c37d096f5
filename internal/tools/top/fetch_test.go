package top

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apfproject/apf/apfdebug"
)

// fakeServer answers the four paths as a kube-apiserver would, refusing
// those in refuse with code and kube-apiserver's Status body, and
// answering 401 to a request without the token. Each answer of
// dump_priority_levels counts ten more dispatched requests.
type fakeServer struct {
	refuse  map[string]bool
	code    int
	metrics []byte
	rounds  atomic.Int32
}

const fakeToken = "fake-token"

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	status := func(code int, reason, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		body, _ := json.Marshal(map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
			"status": "Failure", "message": msg, "reason": reason, "details": map[string]any{}, "code": code})
		_, _ = w.Write(body)
	}
	if r.Header.Get("Authorization") != "Bearer "+fakeToken {
		status(http.StatusUnauthorized, "Unauthorized", "Unauthorized")
		return
	}
	if f.refuse[r.URL.Path] {
		switch f.code {
		case http.StatusForbidden:
			status(f.code, "Forbidden", fmt.Sprintf("forbidden: User \"bob\" cannot get path \"%s\"", r.URL.Path))
		case http.StatusNotFound:
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(f.code)
			_, _ = w.Write([]byte("404 page not found\n"))
		default:
			status(f.code, "InternalError", "something broke")
		}
		return
	}
	var b bytes.Buffer
	switch r.URL.Path {
	case PathMetrics:
		if !strings.Contains(r.Header.Get("Accept"), "text/plain") {
			http.Error(w, "want text", http.StatusNotAcceptable)
			return
		}
		b.Write(f.metrics)
	case PathPriorityLevels:
		n := int(f.rounds.Add(1))
		_ = apfdebug.WritePriorityLevels(&b, []apfdebug.PriorityLevel{{Name: "global-default", ActiveQueues: 1, WaitingRequests: 2, ExecutingRequests: 3, DispatchedRequests: 10 * n}})
	case PathQueues:
		_ = apfdebug.WriteQueues(&b, []apfdebug.Queue{{PriorityLevel: "global-default", Index: 5, PendingRequests: 2, ExecutingRequests: 3}})
	case PathRequests:
		_ = apfdebug.WriteRequests(&b, []apfdebug.Request{
			{PriorityLevel: "global-default", FlowSchema: "global-default", QueueIndex: 5, IndexInQueue: 0, FlowDistinguisher: "flood", InitialSeats: 1},
			{PriorityLevel: "global-default", FlowSchema: "global-default", QueueIndex: 5, IndexInQueue: 1, FlowDistinguisher: "flood", InitialSeats: 1},
		}, r.URL.Query().Get("includeRequestDetails") != "")
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

// writeKubeconfig writes a kubeconfig whose current context points
// nowhere and whose context "fake" is server with the token (client-go
// sends a token over HTTPS only), trusting srv's certificate.
func writeKubeconfig(t *testing.T, server string, srv *httptest.Server) string {
	t.Helper()
	ca := ""
	if srv != nil {
		ca = base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "https://127.0.0.1:1"}
- name: fake
  cluster: {server: %q, certificate-authority-data: %q}
users:
- name: u
  user: {token: %s}
contexts:
- name: nowhere
  context: {cluster: nowhere, user: u}
- name: fake
  context: {cluster: fake, user: u}
current-context: nowhere
`, server, ca, fakeToken)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func clientFor(t *testing.T, srv *httptest.Server) *Client {
	t.Helper()
	cfg, err := LoadConfig(writeKubeconfig(t, srv.URL, srv), "fake")
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Timeout = 20 * time.Second
	return c
}

func missing(s *Sample, p Part) *Missing {
	for i := range s.Missing {
		if s.Missing[i].Part == p {
			return &s.Missing[i]
		}
	}
	return nil
}

// Everything read: the four parts, through the kubeconfig's context and
// credentials.
func TestSampleReadsEveryPart(t *testing.T) {
	f := &fakeServer{metrics: readFile(t, "testdata", "metrics-after.txt")}
	srv := httptest.NewTLSServer(f)
	defer srv.Close()
	s := clientFor(t, srv).Sample(context.Background())
	if len(s.Missing) != 0 || len(s.Problems) != 0 {
		t.Fatalf("missing %+v, problems %v", s.Missing, s.Problems)
	}
	if s.Metrics == nil || len(s.Levels) != 1 || len(s.Queues) != 1 || len(s.Requests) != 2 || s.At.IsZero() || s.Server != srv.URL {
		t.Fatalf("sample %+v", s)
	}
}

// 403s: the part is missing with the server's message, what the view
// lacks and the permission kube-apiserver wants; the other parts are
// shown.
func TestForbiddenPartsAreExplained(t *testing.T) {
	metrics := readFile(t, "testdata", "metrics-after.txt")
	t.Run("metrics", func(t *testing.T) {
		f := &fakeServer{refuse: map[string]bool{PathMetrics: true}, code: http.StatusForbidden, metrics: metrics}
		srv := httptest.NewTLSServer(f)
		defer srv.Close()
		c := clientFor(t, srv)
		var out bytes.Buffer
		err := Once(context.Background(), c, 10*time.Millisecond, 0, &out)
		if err != nil {
			t.Fatal(err)
		}
		var r Report
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Missing) != 1 {
			t.Fatalf("missing %+v", r.Missing)
		}
		m := r.Missing[0]
		if m.Part != PartMetrics || m.Status != 403 || m.Path != "/metrics" ||
			m.Error != `403 Forbidden: forbidden: User "bob" cannot get path "/metrics"` ||
			!strings.Contains(m.Fix, `the verb get on the non-resource URL /metrics`) ||
			!strings.Contains(m.Fix, `{nonResourceURLs: ["/metrics"], verbs: ["get"]}`) ||
			!strings.Contains(m.Without, "no seats") {
			t.Errorf("missing %+v", m)
		}
		// The rest: the level from the dump, with the dump's rates, and the
		// flows.
		if len(r.Levels) != 1 || val(r.Levels[0].WaitingRequests) != 2 || r.Levels[0].DispatchedPerSecond == nil || *r.Levels[0].DispatchedPerSecond <= 0 {
			t.Errorf("levels %+v", r.Levels)
		}
		if len(r.Flows) != 1 || r.Flows[0].Distinguisher != "flood" || r.Flows[0].WaitingRequests != 2 {
			t.Errorf("flows %+v", r.Flows)
		}
		var text bytes.Buffer
		if err := Render(&text, &r, Screen{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), `NOT READ /metrics: 403 Forbidden: forbidden: User "bob" cannot get path "/metrics". reading it needs the verb get`) {
			t.Errorf("text:\n%s", text.String())
		}
	})
	t.Run("dumps", func(t *testing.T) {
		f := &fakeServer{refuse: map[string]bool{PathPriorityLevels: true, PathQueues: true, PathRequests: true}, code: http.StatusForbidden, metrics: metrics}
		srv := httptest.NewTLSServer(f)
		defer srv.Close()
		s := clientFor(t, srv).Sample(context.Background())
		if len(s.Missing) != 3 || s.Metrics == nil {
			t.Fatalf("missing %+v", s.Missing)
		}
		m := missing(s, PartRequests)
		if m == nil || m.Error != `403 Forbidden: forbidden: User "bob" cannot get path "/debug/api_priority_and_fairness/dump_requests"` ||
			!strings.Contains(m.Fix, `{nonResourceURLs: ["/debug/api_priority_and_fairness/*"], verbs: ["get"]}`) ||
			m.Without != "no busiest flows" {
			t.Errorf("missing %+v", m)
		}
		r := NewReport(nil, s, 0)
		if len(r.Levels) != 4 || r.Flows == nil || len(r.Flows) != 0 {
			t.Errorf("report %+v", r)
		}
	})
	t.Run("everything", func(t *testing.T) {
		f := &fakeServer{refuse: map[string]bool{PathMetrics: true, PathPriorityLevels: true, PathQueues: true, PathRequests: true}, code: http.StatusForbidden}
		srv := httptest.NewTLSServer(f)
		defer srv.Close()
		var out bytes.Buffer
		err := Once(context.Background(), clientFor(t, srv), time.Millisecond, 0, &out)
		if !errors.Is(err, ErrNothingRead) {
			t.Fatalf("err %v", err)
		}
		var r Report
		if err := json.Unmarshal(out.Bytes(), &r); err != nil || len(r.Missing) != 4 {
			t.Fatalf("%v %s", err, out.String())
		}
	})
}

// Other refusals: bad credentials, a server without APF, a server
// error, no server at all.
func TestOtherRefusals(t *testing.T) {
	for _, tc := range []struct {
		name      string
		code      int
		token     bool
		wantError string
		wantFix   string
	}{
		{"not found", http.StatusNotFound, true, "404 Not Found: 404 page not found", "API Priority and Fairness is off"},
		{"server error", http.StatusInternalServerError, true, "500 Internal Server Error: something broke", ""},
		{"unauthorized", 0, false, "401 Unauthorized: Unauthorized", "did not accept the kubeconfig's credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeServer{refuse: map[string]bool{PathQueues: true}, code: tc.code}
			srv := httptest.NewTLSServer(f)
			defer srv.Close()
			c := clientFor(t, srv)
			if !tc.token {
				cfg, _ := LoadConfig(writeKubeconfig(t, srv.URL, srv), "fake")
				cfg.BearerToken = "wrong"
				c, _ = NewClient(cfg)
			}
			m := missing(c.Sample(context.Background()), PartQueues)
			if m == nil || m.Error != tc.wantError || !strings.Contains(m.Fix, tc.wantFix) || (tc.wantFix == "" && m.Fix != "") {
				t.Errorf("missing %+v", m)
			}
		})
	}
	t.Run("no server", func(t *testing.T) {
		cfg, err := LoadConfig(writeKubeconfig(t, "https://127.0.0.1:1", nil), "")
		if err != nil {
			t.Fatal(err)
		}
		c, _ := NewClient(cfg)
		s := c.Sample(context.Background())
		if len(s.Missing) != 4 || !strings.Contains(s.Missing[0].Error, "connection refused") || s.Missing[0].Status != 0 {
			t.Errorf("missing %+v", s.Missing)
		}
	})
	t.Run("not a metrics exposition", func(t *testing.T) {
		f := &fakeServer{metrics: []byte("<html>hello</html>\n")}
		srv := httptest.NewTLSServer(f)
		defer srv.Close()
		m := missing(clientFor(t, srv).Sample(context.Background()), PartMetrics)
		if m == nil || !strings.Contains(m.Error, "reading the metrics") {
			t.Errorf("missing %+v", m)
		}
	})
	t.Run("no APF metrics", func(t *testing.T) {
		f := &fakeServer{metrics: []byte("process_open_fds 7\n")}
		srv := httptest.NewTLSServer(f)
		defer srv.Close()
		m := missing(clientFor(t, srv).Sample(context.Background()), PartMetrics)
		if m == nil || !strings.Contains(m.Error, "no apiserver_flowcontrol_* metrics") {
			t.Errorf("missing %+v", m)
		}
	})
}

func TestLoadConfigErrors(t *testing.T) {
	if _, err := LoadConfig(filepath.Join(t.TempDir(), "missing"), ""); err == nil {
		t.Error("a missing kubeconfig was accepted")
	}
	if _, err := LoadConfig(writeKubeconfig(t, "https://127.0.0.1:1", nil), "other"); err == nil || !strings.Contains(err.Error(), `"other"`) {
		t.Errorf("unknown context: %v", err)
	}
	// No kubeconfig anywhere, and not in a pod.
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := LoadConfig("", ""); err == nil || !strings.Contains(err.Error(), "no kubeconfig: give --kubeconfig, set KUBECONFIG, or write ~/.kube/config") {
		t.Errorf("no kubeconfig: %v", err)
	}
}
