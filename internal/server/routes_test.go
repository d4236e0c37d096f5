package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/apfhttp"
	"github.com/apfproject/apf/internal/proxy/pool"
)

// The routes tests put `apf serve --upstream --gateway-config` in front of
// a service that is not a Kubernetes API server: event streams, slow
// answers, answers of a size asked for.

// routesUpstream is the service: /events/ streams one server-sent event
// every 200 ms, n of them (the query's n; for ever without it); /slow...
// answers after the query's d; /size answers the query's n bytes;
// anything else answers "ok".
func routesUpstream(t *testing.T) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case strings.HasPrefix(r.URL.Path, "/events/") || r.URL.Path == "/unrouted-events":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			n, _ := strconv.Atoi(q.Get("n"))
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for i := 0; n == 0 || i < n; i++ {
				select {
				case <-r.Context().Done():
					return
				case <-tick.C:
				}
				fmt.Fprintf(w, "data: %d\n\n", i)
				w.(http.Flusher).Flush()
			}
		case strings.HasPrefix(r.URL.Path, "/slow"):
			d, _ := time.ParseDuration(q.Get("d"))
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
			_, _ = io.WriteString(w, "done")
		case r.URL.Path == "/size":
			n, _ := strconv.Atoi(q.Get("n"))
			_, _ = w.Write(bytes.Repeat([]byte("x"), n))
		default:
			_, _ = io.WriteString(w, "ok")
		}
	}))
	t.Cleanup(up.Close)
	return up
}

const routesConfig = `apiVersion: gateway.apfproject.io/v1alpha1
kind: GatewayConfiguration
routes:
- name: events
  match: {methods: [GET], pathPrefix: /events/}
  longRunning: true
- name: slow
  match: {path: /slow}
  timeout: 5s
- name: heavy
  match: {path: /heavy}
  workEstimate: {seats: 3}
- name: sized
  match: {path: /size}
  workEstimate: {bytesPerSeat: 1000, maxSeats: 8}
longRunningLimits: {perFlow: 2, perLevel: 3}
`

// startRoutesGateway runs a gateway with --gateway-config holding config,
// a request timeout of 1 s and a server limit so small that the
// global-default level, where bob and carol go, has one seat: a request
// that kept its seat would stop every other.
func startRoutesGateway(t *testing.T, config string) (*e2eServer, string, *lockedBuffer) {
	file := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	up := routesUpstream(t)
	gw := startGateway(t, up.URL, "", func(o *Options) {
		o.GatewayConfig = file
		o.ConfigPollInterval = 50 * time.Millisecond
		o.RequestTimeout = time.Second
		o.MaxRequestsInflight, o.MaxMutatingRequestsInflight = 4, 0
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	return gw, file, logs
}

// stream is an event stream opened through the gateway.
type stream struct {
	resp   *http.Response
	events *bufio.Reader
}

// openStream opens path as token and reads its first event.
func openStream(t *testing.T, gw *e2eServer, path, token string) (*stream, *http.Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, gw.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := gw.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp
	}
	s := &stream{resp: resp, events: bufio.NewReader(resp.Body)}
	if _, err := s.next(); err != nil {
		t.Fatalf("%s: first event: %v", path, err)
	}
	return s, resp
}

// next reads one event's data.
func (s *stream) next() (string, error) {
	for {
		line, err := s.events.ReadString('\n')
		if err != nil {
			return "", err
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			_, err := s.events.ReadString('\n') // the blank line
			return strings.TrimSpace(d), err
		}
	}
}

func (s *stream) close() { _ = s.resp.Body.Close() }

// heldGauge is apf_gateway_long_running_requests of global-default.
func heldGauge(t *testing.T, gw *e2eServer) float64 {
	t.Helper()
	for k, v := range gauges(t, gw, "apf_gateway_long_running_requests") {
		if strings.HasPrefix(k, "apf_gateway_long_running_requests[") && strings.Contains(k, `value:"global-default"`) {
			return v
		}
	}
	return -1
}

// A server-sent-events stream on a long-running route lasts more than
// three request timeouts and ends whole, when the upstream ends it; while
// it runs it holds no seat, so that ordinary requests of its level are
// answered; and it counts in the held gauge.
func TestGatewayLongRunningRouteOutlivesTheRequestTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	gw, _, _ := startRoutesGateway(t, routesConfig)
	start := time.Now()
	s, resp := openStream(t, gw, "/events/a?n=18", readerToken) // 18 × 200 ms: 3.6 s
	if s == nil {
		t.Fatalf("stream refused: %d", resp.StatusCode)
	}
	defer s.close()
	if resp.Header.Get(apfhttp.PriorityLevelUIDHeader) == "" {
		t.Error("the stream was not admitted by APF (no PF headers)")
	}
	if held := heldGauge(t, gw); held != 1 {
		t.Errorf("held gauge %v, want 1", held)
	}
	// Ordinary requests of the same level, one after the other, each
	// answered: the stream gave its seat back.
	for i := range 5 {
		if code, _, body := gw.do(http.MethodGet, "/ping", readerToken, nil); code != http.StatusOK {
			t.Fatalf("ordinary request %d beside the stream: %d %s", i, code, body)
		}
	}
	if seats := executingSeats(t, gw); seats != 0 {
		t.Errorf("%v seats executing while only the stream is open", seats)
	}
	got := 1
	for {
		if _, err := s.next(); err != nil {
			if err != io.EOF {
				t.Fatalf("after %d events and %v: %v", got, time.Since(start), err)
			}
			break
		}
		got++
	}
	if got != 18 || time.Since(start) < 3*time.Second {
		t.Fatalf("%d events in %v, want 18 over more than 3 s", got, time.Since(start))
	}
	if err := waitFor(5*time.Second, func() bool {
		return heldGauge(t, gw) == 0
	}); err != nil {
		t.Error("the ended stream is still counted as held")
	}
}

// The caps of longRunningLimits: a flow holds two streams, its level
// three; the stream beyond either is refused with the TooManyRequests
// Status and a Retry-After; ordinary requests of the level are answered
// all along.
func TestGatewayLongRunningCaps(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	gw, _, _ := startRoutesGateway(t, routesConfig)
	var open []*stream
	defer func() {
		for _, s := range open {
			s.close()
		}
	}()
	for i := range 2 {
		s, resp := openStream(t, gw, "/events/bob", readerToken)
		if s == nil {
			t.Fatalf("bob's stream %d refused: %d", i, resp.StatusCode)
		}
		open = append(open, s)
	}
	refused := func(who, token, scope string) {
		t.Helper()
		s, resp := openStream(t, gw, "/events/x", token)
		if s != nil {
			open = append(open, s)
			t.Fatalf("%s's stream beyond the %s cap was accepted", who, scope)
		}
		defer resp.Body.Close()
		var st struct {
			Kind, Status, Reason, Message string
			Code                          int
			Details                       struct{ RetryAfterSeconds int }
		}
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" ||
			st.Kind != "Status" || st.Status != "Failure" || st.Reason != "TooManyRequests" || st.Code != 429 ||
			st.Details.RetryAfterSeconds != 1 || !strings.Contains(st.Message, scope) ||
			resp.Header.Get(apfhttp.PriorityLevelUIDHeader) == "" {
			t.Errorf("%s beyond the %s cap: %d, Retry-After %q, %+v", who, scope, resp.StatusCode, resp.Header.Get("Retry-After"), st)
		}
	}
	refused("bob", readerToken, "flow")
	s, resp := openStream(t, gw, "/events/carol", carolToken)
	if s == nil {
		t.Fatalf("carol's first stream refused: %d", resp.StatusCode)
	}
	open = append(open, s)
	refused("carol", carolToken, "priority level")
	for i := range 5 {
		if code, _, body := gw.do(http.MethodGet, "/ping", readerToken, nil); code != http.StatusOK {
			t.Fatalf("ordinary request %d beside three held streams: %d %s", i, code, body)
		}
	}
	if held := heldGauge(t, gw); held != 3 {
		t.Errorf("held gauge %v, want 3", held)
	}
	// A stream that ends makes room for another.
	open[0].close()
	open = open[1:]
	if err := waitFor(5*time.Second, func() bool {
		s, resp := openStream(t, gw, "/events/bob", readerToken)
		if s == nil {
			resp.Body.Close()
			return false
		}
		open = append(open, s)
		return true
	}); err != nil {
		t.Fatal("no room after a stream ended")
	}
}

// A route's timeout replaces the request timeout: an answer that takes
// twice the server's 1 s comes through on the route whose timeout is
// 5 s, and is cut at 1 s elsewhere.
func TestGatewayRouteTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	gw, _, _ := startRoutesGateway(t, routesConfig)
	if code, _, body := gw.do(http.MethodGet, "/slow?d=2s", readerToken, nil); code != http.StatusOK || string(body) != "done" {
		t.Fatalf("on the route with a 5 s timeout: %d %s", code, body)
	}
	if code, _, _ := gw.do(http.MethodGet, "/slow-unrouted?d=2s", readerToken, nil); code != http.StatusGatewayTimeout {
		t.Fatalf("on no route: %d, want 504", code)
	}
	// The same request with a timeout parameter shorter than the route's
	// is cut at it.
	if code, _, _ := gw.do(http.MethodGet, "/slow?d=3s&timeout=500ms", readerToken, nil); code != http.StatusGatewayTimeout {
		t.Fatalf("with timeout=500ms: %d, want 504", code)
	}
}

// A route's work estimate prices its requests: a fixed number of seats,
// or seats from the sizes of the route's recent answers; the explanation
// shows them.
func TestGatewayRouteWorkEstimate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	gw, _, _ := startRoutesGateway(t, routesConfig)
	seats := func(path string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, gw.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set(apfhttp.ExplainHeader, "1")
		resp, err := gw.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		return explanation(t, resp.Header.Get(apfhttp.ExplanationHeader))["initial-seats"]
	}
	if got := seats("/heavy"); got != "3" {
		t.Errorf("fixed: %s seats, want 3", got)
	}
	if got := seats("/other"); got != "1" {
		t.Errorf("unrouted: %s seats, want 1", got)
	}
	if got := seats("/size?n=4500"); got != "1" {
		t.Errorf("by size, before any answer: %s seats, want 1", got)
	}
	if got := seats("/size?n=10"); got != "5" {
		t.Errorf("by size, after a 4500-byte answer: %s seats, want 5", got)
	}
}

// A change of --gateway-config is taken while the server runs; a broken
// file keeps the last good configuration, says so at its line in the log,
// in the reload metrics and on the readiness check, until it is fixed.
func TestGatewayConfigReload(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	gw, file, logs := startRoutesGateway(t, routesConfig)
	// Each version replaces the file at once, as a ConfigMap's update
	// or an editor's save does: a file caught empty for two polls
	// would be refused on its own account.
	write := func(s string) {
		tmp := file + ".new"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	heavySeats := func() string {
		req, _ := http.NewRequest(http.MethodGet, gw.url+"/heavy", nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set(apfhttp.ExplainHeader, "1")
		resp, err := gw.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return explanation(t, resp.Header.Get(apfhttp.ExplanationHeader))["initial-seats"]
	}
	write(strings.Replace(routesConfig, "{seats: 3}", "{seats: 4}", 1))
	if err := waitFor(10*time.Second, func() bool { return heavySeats() == "4" }); err != nil {
		t.Fatalf("the change was not taken: %s seats", heavySeats())
	}
	write(strings.Replace(routesConfig, "{seats: 3}", "{seats: 4, colour: red}", 1))
	failing := `apf_gateway_configuration_reload_error[]`
	if err := waitFor(10*time.Second, func() bool {
		return strings.Contains(logs.String(), file+`:12: unknown field \"routes[2].workEstimate.colour\"`)
	}); err != nil {
		t.Fatalf("the log does not name the problem at its line:\n%s", logs.String())
	}
	if v := gauges(t, gw, "apf_gateway_configuration_reload_error")[failing]; v != 1 {
		t.Errorf("reload error gauge %v with the file broken, want 1", v)
	}
	if got := heavySeats(); got != "4" {
		t.Errorf("with the file broken: %s seats, want the last good 4", got)
	}
	code, _, body := gw.do(http.MethodGet, "/readyz?verbose", adminToken, nil)
	if code != http.StatusOK || !strings.Contains(string(body), "[+]gateway-config ok: the gateway configuration read at") ||
		!strings.Contains(string(body), "routes[2].workEstimate.colour") {
		t.Errorf("readyz: %d\n%s", code, body)
	}
	write(routesConfig)
	if err := waitFor(10*time.Second, func() bool { return heavySeats() == "3" }); err != nil {
		t.Fatal("the fixed file was not taken")
	}
	if v := gauges(t, gw, "apf_gateway_configuration_reload_error")[failing]; v != 0 {
		t.Errorf("reload error gauge %v after the fix", v)
	}
}

// A proxied answer cut off is logged with its method, path, user and
// reason, not only the reverse proxy's bare copy error.
func TestGatewayCutAnswerIsLoggedWithTheRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	gw, _, logs := startRoutesGateway(t, routesConfig)
	req, _ := http.NewRequest(http.MethodGet, gw.url+"/unrouted-events", nil)
	req.Header.Set("Authorization", "Bearer "+readerToken)
	resp, err := gw.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Fatal("the stream on no route was not cut at the request timeout")
	}
	want := `msg="proxied answer cut off" method=GET path=/unrouted-events user=bob route="" reason="the request timeout passed"`
	if err := waitFor(5*time.Second, func() bool { return strings.Contains(logs.String(), want) }); err != nil {
		t.Fatalf("log lacks %s:\n%s", want, logs.String())
	}
	if strings.Contains(logs.String(), "ReverseProxy read error during body copy") {
		t.Errorf("the bare copy error is still logged at info or above:\n%s", logs.String())
	}
}

// --gateway-config is the gateway's: without --upstream it is refused.
func TestGatewayConfigNeedsUpstream(t *testing.T) {
	o := DefaultOptions()
	o.GatewayConfig = "gateway.yaml"
	if err := o.check(); err == nil || !strings.Contains(err.Error(), "--gateway-config") || !strings.Contains(err.Error(), "--upstream") {
		t.Fatalf("error %v", err)
	}
}

// The adaptive limit does not learn from a long-running route's requests,
// whose answer starts when the client's event comes, as it does not from
// watches; the route's other requests are observed as any.
func TestAdaptiveSkipsLongRunningRoutes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	file := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(file, []byte(routesConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	gw := startGateway(t, routesUpstream(t).URL, "", func(o *Options) {
		o.GatewayConfig = file
		o.AdaptiveConcurrencyLimit = "4:40"
		o.InsecureHTTP = true
	})
	before := observedCounts(t, gw)
	if code, _, _ := gw.do(http.MethodGet, "/events/x?n=2", readerToken, nil); code != http.StatusOK {
		t.Fatalf("stream: %d", code)
	}
	if code, _, _ := gw.do(http.MethodGet, "/heavy", readerToken, nil); code != http.StatusOK {
		t.Fatalf("heavy: %d", code)
	}
	after := observedCounts(t, gw)
	if got := after["answered"] - before["answered"]; got != 1 {
		t.Errorf("%v answers observed, want 1 (the stream not): before %v, after %v", got, before, after)
	}
}

// A route that names a pool of the file sends its requests to that pool's
// members, the others go to --upstream's; a pool named "default", or one
// whose path prefix is not --upstream's, is refused at start-up.
func TestGatewayRoutesToFilePools(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	reports, reports2, main := namedUpstream(t, "reports"), namedUpstream(t, "reports"), namedUpstream(t, "main")
	config := fmt.Sprintf(`apiVersion: gateway.apfproject.io/v1alpha1
kind: GatewayConfiguration
pools:
- name: reporting
  upstreams: [%s, %s]
routes:
- name: reports
  match: {pathPrefix: /reports/}
  pool: reporting
`, reports.URL, reports2.URL)
	file := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	gw := startGateway(t, main.URL, "", func(o *Options) { o.GatewayConfig = file })
	for range 4 {
		if code, _, body := gw.do(http.MethodGet, "/reports/q1", readerToken, nil); code != http.StatusOK || string(body) != "reports" {
			t.Fatalf("/reports/q1: %d %q, want the reporting pool's answer", code, body)
		}
		if code, _, body := gw.do(http.MethodGet, "/items", readerToken, nil); code != http.StatusOK || string(body) != "main" {
			t.Fatalf("/items: %d %q, want --upstream's answer", code, body)
		}
	}

	for _, bad := range []struct{ pools, want string }{
		{"- name: default\n  upstreams: [" + reports.URL + "]\n", `the pool "default" is --upstream's`},
		{"- name: other\n  upstreams: [" + reports.URL + "/prefix]\n", "must have --upstream's path prefix"},
	} {
		f := filepath.Join(t.TempDir(), "gateway.yaml")
		body := "apiVersion: gateway.apfproject.io/v1alpha1\nkind: GatewayConfiguration\npools:\n" + bad.pools
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		o := DefaultOptions()
		o.DataDir = t.TempDir()
		o.Upstream = main.URL
		o.GatewayConfig = f
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		srv, err := New(context.Background(), o)
		if err == nil {
			_ = srv.Close()
			t.Fatalf("a gateway configuration with %q started", bad.pools)
		}
		if !strings.Contains(err.Error(), bad.want) {
			t.Errorf("error %q, want %q", err, bad.want)
		}
	}
}

// TestGatewayPoolsReload: a reload of --gateway-config changes the pools
// while the gateway runs: a pool whose members changed goes to its new
// members, a pool added takes its route's requests, a pool removed leaves
// the metrics, a pool that did not change is kept as it was (its members'
// health and counts with it), and a reload whose pools cannot be built
// changes none of them.
func TestGatewayPoolsReload(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	a1, a2, b1, main := namedUpstream(t, "a1"), namedUpstream(t, "a2"), namedUpstream(t, "b1"), namedUpstream(t, "main")
	const head = "apiVersion: gateway.apfproject.io/v1alpha1\nkind: GatewayConfiguration\n"
	reporting := func(up string) string {
		return fmt.Sprintf("- name: reporting\n  upstreams: [%s]\n", up)
	}
	const reportsRoute = "- name: reports\n  match: {pathPrefix: /reports/}\n  pool: reporting\n"
	file := filepath.Join(t.TempDir(), "gateway.yaml")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(head+body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("pools:\n" + reporting(a1.URL) + "routes:\n" + reportsRoute)
	logs := &syncBuffer{}
	gw := startGateway(t, main.URL, "", func(o *Options) {
		o.GatewayConfig = file
		o.ConfigPollInterval = 50 * time.Millisecond
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	defer gw.stop()
	get := func(path string) string {
		code, _, body := gw.do(http.MethodGet, path, readerToken, nil)
		return fmt.Sprintf("%d %s", code, body)
	}
	waitAnswer := func(what, path, want string) {
		t.Helper()
		if err := waitFor(15*time.Second, func() bool { return get(path) == "200 "+want }); err != nil {
			t.Fatalf("%s: %s answers %q, want %q", what, path, get(path), want)
		}
	}
	poolNames := func() []string {
		var names []string
		for _, p := range gw.server.pools() {
			names = append(names, p.Name())
		}
		return names
	}
	waitAnswer("at start", "/reports/q1", "a1")

	// The pool's member changes, a pool and its route are added.
	write("pools:\n" + reporting(a2.URL) + "- name: exports\n  upstreams: [" + b1.URL + "]\nroutes:\n" + reportsRoute +
		"- name: exports\n  match: {pathPrefix: /exports/}\n  pool: exports\n")
	waitAnswer("the member replaced", "/reports/q1", "a2")
	waitAnswer("a pool added", "/exports/x", "b1")
	if got := poolNames(); !slices.Equal(got, []string{"default", "reporting", "exports"}) {
		t.Errorf("pools in force: %v", got)
	}
	kept := gw.server.pools()[1]
	if !hasPoolSeries(t, gw, "exports") {
		t.Errorf("the added pool is not in the metrics")
	}

	// The pool and its route removed; the other pool, unchanged, is kept.
	write("pools:\n" + reporting(a2.URL) + "routes:\n" + reportsRoute)
	waitAnswer("a pool removed", "/exports/x", "main")
	if got := poolNames(); !slices.Equal(got, []string{"default", "reporting"}) {
		t.Errorf("pools in force after the removal: %v", got)
	}
	if gw.server.pools()[1] != kept {
		t.Errorf("the unchanged pool was built again: its members' health and counts are lost")
	}
	if hasPoolSeries(t, gw, "exports") {
		t.Errorf("the removed pool is still in the metrics")
	}

	// A pool that cannot be built: nothing changes, the log says why.
	write("pools:\n" + reporting(a1.URL+"/prefix") + "routes:\n" + reportsRoute)
	if err := waitFor(15*time.Second, func() bool { return strings.Contains(logs.String(), "were not changed") }); err != nil {
		t.Fatalf("a reload with a pool that cannot be built is not logged:\n%s", logs.String())
	}
	if got := get("/reports/q1"); got != "200 a2" {
		t.Errorf("after a refused change of the pools: %q, want the pool as it was", got)
	}
}

// hasPoolSeries says whether the pool metrics have a series of the pool.
func hasPoolSeries(t *testing.T, gw *e2eServer, name string) bool {
	t.Helper()
	families, err := gw.server.promReg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != pool.MetricHealthy {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "pool" && l.GetValue() == name {
					return true
				}
			}
		}
	}
	return false
}

// namedUpstream is an upstream that answers every request with its name.
func namedUpstream(t *testing.T, name string) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, name)
	}))
	t.Cleanup(up.Close)
	return up
}
