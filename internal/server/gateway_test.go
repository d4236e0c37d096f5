package server

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"encoding/json"
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

	dto "github.com/prometheus/client_model/go"

	"github.com/apfproject/apf/apfhttp"
	"github.com/apfproject/apf/request"
)

// The gateway tests put `apf serve --upstream` in front of a stand-in
// upstream on 127.0.0.1 and talk to it as authenticated clients.

// gatewayTokens are the e2e tokens plus one per load-test client, all in
// the group "clients".
func gatewayTokens(t testing.TB, users ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(tokenFile)
	for _, u := range users {
		fmt.Fprintf(&b, "token-%s,%s,uid-%s,\"clients\"\n", u, u, u)
	}
	f := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(f, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// startGateway runs a server proxying to upstream.
func startGateway(t testing.TB, upstream string, tokens string, tune func(*Options)) *e2eServer {
	t.Helper()
	opts := DefaultOptions()
	opts.DataDir = filepath.Join(t.TempDir(), "data")
	opts.Upstream = upstream
	opts.Auth.TokenAuthFile = tokens
	if tune != nil {
		tune(&opts)
	}
	return startServer(t, opts)
}

// gauges returns the values of every series of the gauges whose names
// start with one of prefixes, scraped from the server's registry.
func gauges(t testing.TB, s *e2eServer, prefixes ...string) map[string]float64 {
	t.Helper()
	families, err := s.server.promReg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range families {
		for _, p := range prefixes {
			if !strings.HasPrefix(mf.GetName(), p) || mf.GetType() != dto.MetricType_GAUGE {
				continue
			}
			for _, m := range mf.GetMetric() {
				out[mf.GetName()+fmt.Sprint(m.GetLabel())] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// executingSeats sums apiserver_flowcontrol_current_executing_seats.
func executingSeats(t testing.TB, s *e2eServer) float64 {
	sum := 0.0
	for _, v := range gauges(t, s, "apiserver_flowcontrol_current_executing_seats") {
		sum += v
	}
	return sum
}

// TestGatewayStreamsWatchesAndUpgrades: a watch through the gateway
// streams events as the upstream sends them and gives its seats back once
// it has started; an exec-style upgrade round-trips bytes; the upstream's
// responses, status codes and the caller's identity come through.
func TestGatewayStreamsWatchesAndUpgrades(t *testing.T) {
	events := make(chan string)
	var seenAuth sync.Map
	upstream := httptest.NewServer(kubeShaped(func(w http.ResponseWriter, r *http.Request) {
		seenAuth.Store(r.URL.Path, r.Header.Get("Authorization"))
		switch {
		case r.URL.Path == "/api/v1/namespaces/default/pods" && r.URL.Query().Get("watch") == "1":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			for {
				select {
				case ev, ok := <-events:
					if !ok {
						return
					}
					fmt.Fprintf(w, `{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":%q}}}`+"\n", ev)
					w.(http.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
		case strings.HasSuffix(r.URL.Path, "/exec"):
			if !strings.EqualFold(r.Header.Get("Upgrade"), "SPDY/3.1") {
				http.Error(w, "upgrade required", http.StatusBadRequest)
				return
			}
			conn, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			fmt.Fprint(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
			_ = brw.Flush()
			_, _ = io.Copy(conn, brw) // echo until the client closes
		case r.URL.Path == "/api/v1/namespaces/default/pods/missing":
			http.Error(w, `{"kind":"Status","code":404}`, http.StatusNotFound)
		default:
			fmt.Fprint(w, `{"kind":"Pod"}`)
		}
	}))
	defer upstream.Close()
	gw := startGateway(t, upstream.URL, gatewayTokens(t, "carol"), nil)
	defer gw.stop()

	// Plain requests, and the caller's own credentials passed through.
	code, hdr, body := gw.do(http.MethodGet, "/api/v1/namespaces/default/pods/p", "token-carol", nil)
	if code != http.StatusOK || string(body) != `{"kind":"Pod"}` || hdr.Get("X-Kubernetes-PF-FlowSchema-UID") == "" {
		t.Errorf("proxied GET: %d %q, PF header %q", code, body, hdr.Get("X-Kubernetes-PF-FlowSchema-UID"))
	}
	if a, _ := seenAuth.Load("/api/v1/namespaces/default/pods/p"); a != "Bearer token-carol" {
		t.Errorf("upstream saw Authorization %q, want the caller's own", a)
	}
	if code, _, _ := gw.do(http.MethodGet, "/api/v1/namespaces/default/pods/missing", "token-carol", nil); code != http.StatusNotFound {
		t.Errorf("upstream 404 came through as %d", code)
	}
	if code, _, _ := gw.do(http.MethodGet, "/api/v1/namespaces/default/pods/p", "no-such-token", nil); code != http.StatusUnauthorized {
		t.Errorf("unknown token: %d, want 401 from apf", code)
	}

	// A watch streams, and holds no seat once started.
	req, _ := http.NewRequest(http.MethodGet, gw.url+"/api/v1/namespaces/default/pods?watch=1", nil)
	req.Header.Set("Authorization", "Bearer token-carol")
	resp, err := gw.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID") == "" {
		t.Fatalf("watch: %d, PF header %q", resp.StatusCode, resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID"))
	}
	lines := bufio.NewReader(resp.Body)
	for i, name := range []string{"pod-a", "pod-b", "pod-c"} {
		select {
		case events <- name:
		case <-time.After(10 * time.Second):
			t.Fatalf("the upstream's watch handler is not running")
		}
		got := make(chan string, 1)
		go func() {
			l, _ := lines.ReadString('\n')
			got <- l
		}()
		select {
		case l := <-got:
			if !strings.Contains(l, name) {
				t.Fatalf("event %d: %q, want %s", i, l, name)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %s was sent upstream but did not come through", name)
		}
		if seats := executingSeats(t, gw); seats != 0 {
			t.Errorf("while the watch streams, %v seats are executing, want 0", seats)
		}
	}
	close(events)

	// An exec-style upgrade round-trips bytes.
	conn, err := tls.Dial("tcp", strings.TrimPrefix(gw.url, "https://"), gw.client.Transport.(*http.Transport).TLSClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/namespaces/default/pods/p/exec?command=sh HTTP/1.1\r\nHost: apf\r\nAuthorization: Bearer token-carol\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nContent-Length: 0\r\n\r\n")
	br := bufio.NewReader(conn)
	up, err := http.ReadResponse(br, nil)
	if err != nil || up.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", up, err)
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	for _, msg := range []string{"hello\n", "through apf\n"} {
		if _, err := io.WriteString(conn, msg); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(br, buf); err != nil || string(buf) != msg {
			t.Fatalf("echo: %q, %v; want %q", buf, err, msg)
		}
	}
	conn.Close()
	resp.Body.Close()

	// Everything answered: nothing left executing or queued.
	checkDrained(t, gw)
}

// TestGatewayUpstreamDown: an unreachable upstream is a 502, a slow one a
// 504, and neither keeps a seat.
func TestGatewayUpstreamDown(t *testing.T) {
	stall := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stall:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(stall)
	gw := startGateway(t, slow.URL, gatewayTokens(t, "carol"), func(o *Options) { o.UpstreamTimeout = 300 * time.Millisecond })
	defer gw.stop()
	code, _, body := gw.do(http.MethodGet, "/api/v1/pods", "token-carol", nil)
	if code != http.StatusGatewayTimeout || !strings.Contains(string(body), `"code":504`) {
		t.Errorf("slow upstream: %d %s", code, body)
	}

	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	down := startGateway(t, closed.URL, gatewayTokens(t, "carol"), nil)
	defer down.stop()
	code, _, body = down.do(http.MethodGet, "/api/v1/pods", "token-carol", nil)
	if code != http.StatusBadGateway || !strings.Contains(string(body), `"code":502`) {
		t.Errorf("unreachable upstream: %d %s", code, body)
	}
	for _, s := range []*e2eServer{gw, down} {
		if seats := executingSeats(t, s); seats != 0 {
			t.Errorf("%v seats still executing after the upstream failed", seats)
		}
	}
}

// podList is a Kubernetes-style list of n pods.
func podList(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42"},"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metadata":{"name":"pod-%d","namespace":"ns-%d"},"spec":{"nodeName":"node-%d"}}`, i, i%7, i%3)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// TestGatewayLearnsListCounts: after lists of pods pass through, a list
// request for pods is priced from the learned count, as
// apiserver_flowcontrol_work_estimated_seats shows.
func TestGatewayLearnsListCounts(t *testing.T) {
	t.Run("json", func(t *testing.T) { testGatewayLearnsListCounts(t, false) })
	// The API server gzips large lists for clients that accept it, as Go
	// clients (kubectl, client-go) do unless told otherwise.
	t.Run("gzip", func(t *testing.T) { testGatewayLearnsListCounts(t, true) })
}

func testGatewayLearnsListCounts(t *testing.T, compress bool) {
	const pods = 2500
	list := podList(pods)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(list)
	_ = zw.Close()
	var gzipped atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if compress && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") && r.URL.Path == "/api/v1/pods" {
			gzipped.Add(1)
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(gz.Bytes())
			return
		}
		_, _ = w.Write(list)
	}))
	defer upstream.Close()
	gw := startGateway(t, upstream.URL, gatewayTokens(t, "carol"), nil)
	defer gw.stop()

	// seatsObserved returns the work_estimated_seats histogram of
	// global-default (carol's level): observations and their sum.
	seatsObserved := func() (count uint64, sum float64) {
		families, err := gw.server.promReg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range families {
			if mf.GetName() != "apiserver_flowcontrol_work_estimated_seats" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "priority_level" && l.GetValue() == "global-default" {
						count += m.GetHistogram().GetSampleCount()
						sum += m.GetHistogram().GetSampleSum()
					}
				}
			}
		}
		return
	}
	var got struct {
		Items []json.RawMessage `json:"items"`
	}
	// The start-up's readiness probes may have landed in global-default
	// too (anonymous, before the suggested probes schema reached the
	// controller): count from here.
	cb, sb := seatsObserved()
	code, _, body := gw.do(http.MethodGet, "/api/v1/pods", "token-carol", nil)
	if code != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got.Items) != pods {
		t.Fatalf("first list: %d, %d items", code, len(got.Items))
	}
	c0, s0 := seatsObserved()
	if c0-cb != 1 || s0-sb != 1 {
		t.Fatalf("the first list, with no count known, took %v seats over %d requests; want 1", s0-sb, c0-cb)
	}
	// The next lists are priced from the pods just seen (the default
	// size-based estimate): objects × average size, one seat per 100,000
	// bytes.
	var itemBytes int
	for _, it := range got.Items {
		itemBytes += len(it)
	}
	avg := itemBytes / pods
	want := float64((pods*avg + 99_999) / 100_000)
	for range 3 {
		if code, _, _ := gw.do(http.MethodGet, "/api/v1/pods", "token-carol", nil); code != http.StatusOK {
			t.Fatalf("list: %d", code)
		}
	}
	c1, s1 := seatsObserved()
	perList := (s1 - s0) / float64(c1-c0)
	t.Logf("after learning %d pods, a list takes %v seats", pods, perList)
	if c1-c0 != 3 || perList != want || want <= 1 {
		t.Errorf("learned lists took %v seats each over %d requests, want %v", perList, c1-c0, want)
	}
	// A namespaced get is not a list: still one seat.
	gw.do(http.MethodGet, "/api/v1/namespaces/ns-1/pods/pod-1", "token-carol", nil)
	if c2, s2 := seatsObserved(); c2 != c1+1 || s2 != s1+1 {
		t.Errorf("a get after learning: %v seats", s2-s1)
	}
	if n := gzipped.Load(); compress && n != 4 {
		t.Errorf("the upstream gzipped %d of the 4 lists", n)
	}
}

// TestGatewayAdminListen: with --admin-listen, everything on the main
// address goes upstream (the upstream's own /metrics included) and apf's
// endpoints are served on the admin address only.
func TestGatewayAdminListen(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "upstream %s", r.URL.Path)
	}))
	defer upstream.Close()
	gw := startGateway(t, upstream.URL, gatewayTokens(t, "carol"), func(o *Options) { o.AdminListen = "127.0.0.1:0" })
	defer gw.stop()
	for _, p := range []string{"/metrics", "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", "/readyz", "/api"} {
		code, hdr, body := gw.do(http.MethodGet, p, adminToken, nil)
		if code != http.StatusOK || string(body) != "upstream "+p || hdr.Get("X-Kubernetes-PF-FlowSchema-UID") == "" {
			t.Errorf("main %s: %d %q (PF header %q), want the upstream's answer", p, code, body, hdr.Get("X-Kubernetes-PF-FlowSchema-UID"))
		}
	}
	code, _, body := gw.doAt(gw.adminURL, http.MethodGet, "/metrics", adminToken, nil)
	if code != http.StatusOK || !strings.Contains(string(body), "apiserver_flowcontrol_dispatched_requests_total") {
		t.Errorf("admin /metrics: %d", code)
	}
	code, _, body = gw.doAt(gw.adminURL, http.MethodGet, "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", readerToken, nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"FlowSchemaList"`) {
		t.Errorf("admin flowschemas: %d %.200s", code, body)
	}
	if code, _, _ := gw.doAt(gw.adminURL, http.MethodGet, "/api/v1/pods", adminToken, nil); code != http.StatusNotFound {
		t.Errorf("admin address proxied /api/v1/pods: %d", code)
	}
}

// TestGatewayShutdown: a shutdown lets executing requests finish within
// the grace period, and answers those still running after it.
func TestGatewayShutdown(t *testing.T) {
	release := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		fmt.Fprint(w, "done")
	}))
	defer upstream.Close()
	defer close(release)
	for _, tc := range []struct {
		name  string
		grace time.Duration
		want  int
	}{
		{"finishes within the grace period", 10 * time.Second, http.StatusOK},
		{"answered after the grace period", 300 * time.Millisecond, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := startGateway(t, upstream.URL, gatewayTokens(t, "carol"), func(o *Options) { o.ShutdownTimeout = tc.grace })
			got := make(chan int, 1)
			go func() {
				code, _, _ := gw.do(http.MethodGet, "/slow", "token-carol", nil)
				got <- code
			}()
			if err := waitFor(5*time.Second, func() bool { return executingSeats(t, gw) > 0 }); err != nil {
				t.Fatal("the slow request never started")
			}
			stopped := make(chan struct{})
			go func() { gw.stop(); close(stopped) }()
			if tc.want == http.StatusOK {
				time.Sleep(200 * time.Millisecond) // well inside the grace period
				release <- struct{}{}
			}
			select {
			case code := <-got:
				if code != tc.want {
					t.Errorf("the request in flight got %d, want %d", code, tc.want)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("the request in flight got no answer")
			}
			<-stopped
		})
	}
}

// TestHandlerPanicIsA500: a panic below APF answers 500 with a Status
// and gives the request's seats back.
func TestHandlerPanicIsA500(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer upstream.Close()
	gw := startGateway(t, upstream.URL, gatewayTokens(t, "carol"), nil)
	defer gw.stop()
	boom := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	chain := gw.server.recoverPanics(apfhttp.Middleware(gw.server.Controller(), apfhttp.Options{})(boom))
	req := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
	req = req.WithContext(request.WithUser(req.Context(), &request.User{Name: "carol", Groups: []string{"clients", "system:authenticated"}}))
	rec := httptest.NewRecorder()
	chain.ServeHTTP(rec, req)
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"reason":"InternalError"`) {
		t.Errorf("panic: %d %s", rec.Code, rec.Body.String())
	}
	if seats := executingSeats(t, gw); seats != 0 {
		t.Errorf("%v seats still held after the panic", seats)
	}
}

// TestGatewayRequestDeadline: a request that is not long-running ends at
// the request timeout (or its shorter ?timeout=), also when the upstream
// stalls in the middle of its answer, and gives its seats back.
func TestGatewayRequestDeadline(t *testing.T) {
	release := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/namespaces/shop/pods/half" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, `{"kind":"Pod",`)
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer upstream.Close()
	defer close(release)
	gw := startGateway(t, upstream.URL, gatewayTokens(t, "carol"), func(o *Options) {
		o.RequestTimeout = 2 * time.Second
		o.UpstreamTimeout = time.Minute // the request deadline comes first
	})
	defer gw.stop()

	// The deadline's answer is kube-apiserver's: its Timeout Status, not
	// the proxy's own 504 for an upstream that did not answer in time.
	start := time.Now()
	code, _, body := gw.do(http.MethodGet, "/api/v1/namespaces/shop/pods/silent?timeout=300ms", "token-carol", nil)
	if code != http.StatusGatewayTimeout || string(body) != kubeTimeoutBody || time.Since(start) > 10*time.Second {
		t.Errorf("?timeout=300ms on a silent upstream: %d after %v: %s", code, time.Since(start), body)
	}
	start = time.Now()
	code, _, body = gw.do(http.MethodGet, "/api/v1/namespaces/shop/pods/silent", "token-carol", nil)
	if code != http.StatusGatewayTimeout || string(body) != kubeTimeoutBody || time.Since(start) < time.Second {
		t.Errorf("silent upstream: %d after %v, want 504 at the 2 s request timeout: %s", code, time.Since(start), body)
	}
	// Headers and half a body, then nothing: the answer is cut at the
	// deadline, not held open.
	start = time.Now()
	req, _ := http.NewRequest(http.MethodGet, gw.url+"/api/v1/namespaces/shop/pods/half", nil)
	req.Header.Set("Authorization", "Bearer token-carol")
	resp, err := gw.client.Do(req)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil || time.Since(start) > 15*time.Second {
		t.Errorf("half an answer then a stall: err %v after %v, want the body cut at the deadline", err, time.Since(start))
	}
	if err := waitFor(5*time.Second, func() bool { return executingSeats(t, gw) == 0 }); err != nil {
		t.Errorf("%v seats still held after the deadlines", executingSeats(t, gw))
	}
}

// checkDrained fails t unless, eventually, nothing executes or waits.
func checkDrained(t *testing.T, gw *e2eServer) {
	t.Helper()
	if err := waitFor(5*time.Second, func() bool {
		for _, v := range gauges(t, gw, "apiserver_flowcontrol_current_executing_", "apiserver_flowcontrol_current_inqueue_") {
			if v != 0 {
				return false
			}
		}
		return true
	}); err != nil {
		t.Errorf("gauges after the run: %v", gauges(t, gw, "apiserver_flowcontrol_current_executing_", "apiserver_flowcontrol_current_inqueue_"))
	}
}

// TestGatewayOnePFHeaderEach: behind an upstream that is an API server
// with APF of its own (it sends both APF headers on every answer), a
// caller gets exactly one value of each, apf's: the UIDs of the
// FlowSchema and priority level apf classified the request into, which
// its flowcontrol API resolves.
func TestGatewayOnePFHeaderEach(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(apfhttp.FlowSchemaUIDHeader, "upstream-flowschema")
		w.Header().Set(apfhttp.PriorityLevelUIDHeader, "upstream-level")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"Pod"}`)
	}))
	defer upstream.Close()
	gw := startGateway(t, upstream.URL, gatewayTokens(t, "carol"), nil)
	defer gw.stop()

	uids := map[string]string{}
	for _, fs := range gw.server.Controller().Matcher().FlowSchemas() {
		uids[string(fs.UID)] = "flowschema " + fs.Name
		uids[string(fs.PriorityLevel.UID)] = "level " + fs.PriorityLevel.Name
	}
	code, hdr, _ := gw.do(http.MethodGet, "/api/v1/namespaces/default/pods/p", "token-carol", nil)
	if code != http.StatusOK {
		t.Fatalf("answered %d", code)
	}
	for h, kind := range map[string]string{apfhttp.FlowSchemaUIDHeader: "flowschema", apfhttp.PriorityLevelUIDHeader: "level"} {
		got := hdr.Values(h)
		if len(got) != 1 || !strings.HasPrefix(uids[got[0]], kind+" ") {
			t.Errorf("%s = %q, want one value: the UID of a %s of apf's", h, got, kind)
		}
	}
}
