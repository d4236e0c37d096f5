package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

const (
	callerTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpanID  = "00f067aa0ba902b7"
	callerParent  = "00-" + callerTraceID + "-" + callerSpanID + "-01"
)

// TestTracingConfigFile: the TracingConfiguration file is read as
// kube-apiserver reads it (its three versions, known fields only, the
// rate and endpoint checked), plus http:// and https:// endpoints.
func TestTracingConfigFile(t *testing.T) {
	for _, c := range []struct {
		name, file, err string
	}{
		{"v1", "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: 127.0.0.1:4317\nsamplingRatePerMillion: 100\n", ""},
		{"v1beta1", "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\n", ""},
		{"v1alpha1 json", `{"apiVersion":"apiserver.config.k8s.io/v1alpha1","kind":"TracingConfiguration","samplingRatePerMillion":1000000}`, ""},
		{"unix", "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: unix:///run/otel.sock\n", ""},
		{"http", "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: http://collector:4318\n", ""},
		{"unknown field", "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpont: x:4317\n", "unknown field"},
		{"no apiVersion", "kind: TracingConfiguration\n", "apiVersion"},
		{"other group", "apiVersion: apiserver.k8s.io/v1\nkind: TracingConfiguration\n", "apiVersion"},
		{"other kind", "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\n", "kind"},
		{"negative rate", "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: -1\n", "samplingRatePerMillion"},
		{"rate over a million", "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: 1000001\n", "samplingRatePerMillion"},
		{"bad scheme", "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: ftp://collector:21\n", "unsupported scheme"},
		{"empty endpoint", "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: \"\"\n", "endpoint"},
		{"not yaml", "apiVersion: [\n", "tracing.yaml"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "tracing.yaml")
			if err := os.WriteFile(f, []byte(c.file), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := readTracingConfig(f)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one naming %q", err, c.err)
			}
		})
	}
	if _, err := readTracingConfig(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("a missing file was accepted")
	}
	// apf serve refuses to start with a bad file.
	f := filepath.Join(t.TempDir(), "tracing.yaml")
	if err := os.WriteFile(f, []byte("kind: TracingConfiguration\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := DefaultOptions()
	opts.DataDir = t.TempDir()
	opts.Tracing.ConfigFile = f
	if s, err := New(context.Background(), opts); err == nil {
		_ = s.Close()
		t.Fatal("New accepted a bad tracing configuration")
	}
}

// spanRig is an obsRig whose server records its spans in memory.
func spanRig(t *testing.T) (*obsRig, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	rig := newObsRig(t, func(o *Options) { o.Tracing.TracerProvider = tp })
	return rig, rec
}

// trace is the spans of one request: its server span and its children.
type traced struct {
	server, wait, exec sdktrace.ReadOnlySpan
}

// waitTrace waits for the server span of the request to path to end and
// returns it with its children.
func waitTrace(t *testing.T, rec *tracetest.SpanRecorder, path string) traced {
	t.Helper()
	var tr traced
	if err := waitFor(10*time.Second, func() bool {
		for _, s := range rec.Ended() {
			if s.SpanKind() == trace.SpanKindServer && attr(s, "url.path") == path {
				tr.server = s
			}
		}
		return tr.server != nil
	}); err != nil {
		t.Fatalf("no server span for %s", path)
	}
	for _, s := range rec.Ended() {
		if s.Parent().SpanID() != tr.server.SpanContext().SpanID() {
			continue
		}
		switch s.Name() {
		case "apf queue wait":
			tr.wait = s
		case "apf execution":
			tr.exec = s
		}
	}
	return tr
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

func hasEvent(s sdktrace.ReadOnlySpan, name string, want ...attribute.KeyValue) bool {
	for _, e := range s.Events() {
		if e.Name != name {
			continue
		}
		ok := true
		for _, w := range want {
			found := false
			for _, kv := range e.Attributes {
				found = found || kv == w
			}
			ok = ok && found
		}
		if ok {
			return true
		}
	}
	return false
}

// TestTracingSpans: a request continues the caller's trace: a server
// span, its queue wait and its execution as children, and the upstream
// gets a traceparent naming the execution span (and the caller's
// tracestate), one of each. A queued request's wait span lasts; a
// rejected one's is an error, with the rejection as an event; an exempt
// one has no wait span.
func TestTracingSpans(t *testing.T) {
	rig, rec := spanRig(t)

	const path = "/api/v1/namespaces/shop/pods/traced"
	if code := rig.send(http.MethodGet, path, "token-carol", "Traceparent", callerParent, "Tracestate", "vendor=abc"); code != http.StatusOK {
		t.Fatalf("traced: %d", code)
	}
	tr := waitTrace(t, rec, path)
	sc := tr.server.SpanContext()
	if sc.TraceID().String() != callerTraceID || tr.server.Parent().SpanID().String() != callerSpanID || !tr.server.Parent().IsRemote() {
		t.Errorf("the server span does not continue the caller's trace: trace %s, parent %s", sc.TraceID(), tr.server.Parent().SpanID())
	}
	if tr.server.Name() != http.MethodGet || attr(tr.server, "http.response.status_code") != "200" ||
		attr(tr.server, "apf.flow_schema") != "global-default" || attr(tr.server, "apf.priority_level") != "global-default" ||
		attr(tr.server, "apf.outcome") != "dispatched" || attr(tr.server, "apf.flow_distinguisher") != "carol" ||
		attr(tr.server, "http.request.method") != "GET" {
		t.Errorf("server span %q: %v", tr.server.Name(), tr.server.Attributes())
	}
	if tr.wait == nil || tr.exec == nil {
		t.Fatalf("children: wait %v, execution %v", tr.wait, tr.exec)
	}
	if tr.wait.StartTime().Before(tr.server.StartTime()) || tr.wait.EndTime().After(tr.exec.StartTime()) || tr.exec.EndTime().After(tr.server.EndTime()) {
		t.Errorf("spans out of order: server %v–%v, wait %v–%v, execution %v–%v",
			tr.server.StartTime(), tr.server.EndTime(), tr.wait.StartTime(), tr.wait.EndTime(), tr.exec.StartTime(), tr.exec.EndTime())
	}
	if attr(tr.exec, "apf.seats.initial") != "1" {
		t.Errorf("execution span: %v", tr.exec.Attributes())
	}
	seen := rig.headersSeen(path)
	if len(seen) != 1 {
		t.Fatalf("the upstream got %s %d times", path, len(seen))
	}
	want := "00-" + callerTraceID + "-" + tr.exec.SpanContext().SpanID().String() + "-01"
	if got := seen[0].Values("Traceparent"); len(got) != 1 || got[0] != want {
		t.Errorf("upstream traceparent %q, want [%s]: the execution span as parent", got, want)
	}
	if got := seen[0].Values("Tracestate"); len(got) != 1 || got[0] != "vendor=abc" {
		t.Errorf("upstream tracestate %q, want [vendor=abc]", got)
	}

	const queued = "/api/v1/namespaces/shop/pods/queued"
	if code := rig.queued(queued); code != http.StatusOK {
		t.Fatalf("queued: %d", code)
	}
	tr = waitTrace(t, rec, queued)
	if tr.wait == nil || tr.exec == nil {
		t.Fatalf("queued children: wait %v, execution %v", tr.wait, tr.exec)
	}
	if d := tr.wait.EndTime().Sub(tr.wait.StartTime()); d <= 0 || attr(tr.wait, "apf.queued") != "true" || attr(tr.wait, "apf.queue") != "0" ||
		attr(tr.wait, "apf.priority_level") != "one-queue" {
		t.Errorf("queue wait span: %v long, %v", d, tr.wait.Attributes())
	}
	if tr.wait.Status().Code == codes.Error {
		t.Errorf("a served request's wait is an error: %v", tr.wait.Status())
	}

	const rejected = "/api/v1/namespaces/shop/pods/rejected"
	if code := rig.rejected(rejected); code != http.StatusTooManyRequests {
		t.Fatalf("rejected: %d", code)
	}
	tr = waitTrace(t, rec, rejected)
	reason := attribute.String("apf.reason", "concurrency-limit")
	if tr.wait == nil || tr.exec != nil {
		t.Fatalf("rejected children: wait %v, execution %v", tr.wait, tr.exec)
	}
	if tr.wait.Status().Code != codes.Error || !hasEvent(tr.wait, "rejected", reason) {
		t.Errorf("rejected wait span: status %v, events %v", tr.wait.Status(), tr.wait.Events())
	}
	if attr(tr.server, "http.response.status_code") != "429" || attr(tr.server, "apf.outcome") != "rejected" || !hasEvent(tr.server, "rejected", reason) {
		t.Errorf("rejected server span: %v, events %v", tr.server.Attributes(), tr.server.Events())
	}

	const exempt = "/api/v1/namespaces/shop/pods/exempt"
	if code := rig.send(http.MethodGet, exempt, adminToken); code != http.StatusOK {
		t.Fatalf("exempt: %d", code)
	}
	tr = waitTrace(t, rec, exempt)
	if tr.wait != nil || tr.exec == nil || attr(tr.server, "apf.outcome") != "exempt" {
		t.Errorf("exempt: wait %v, execution %v, %v", tr.wait, tr.exec, tr.server.Attributes())
	}
}

// TestTraceContextPassThrough: without tracing, the caller's traceparent
// and tracestate reach the upstream as sent, neither dropped nor
// duplicated; with tracing, one of each.
func TestTraceContextPassThrough(t *testing.T) {
	for _, tracing := range []bool{false, true} {
		t.Run(fmt.Sprintf("tracing=%v", tracing), func(t *testing.T) {
			var rig *obsRig
			if tracing {
				rig, _ = spanRig(t)
			} else {
				rig = newObsRig(t, nil)
			}
			const path = "/api/v1/namespaces/shop/pods/passed"
			rig.send(http.MethodGet, path, "token-carol", "Traceparent", callerParent, "Tracestate", "a=1", "Tracestate", "b=2", "Baggage", "k=v")
			seen := rig.headersSeen(path)
			if len(seen) != 1 {
				t.Fatalf("the upstream got %s %d times", path, len(seen))
			}
			h := seen[0]
			wantState := []string{"a=1", "b=2"}
			if tracing {
				wantState = []string{"a=1,b=2"}
			}
			if tp := h.Values("Traceparent"); len(tp) != 1 || (!tracing && tp[0] != callerParent) || !strings.Contains(tp[0], callerTraceID) {
				t.Errorf("traceparent %q", tp)
			}
			if ts := h.Values("Tracestate"); strings.Join(ts, "|") != strings.Join(wantState, "|") {
				t.Errorf("tracestate %q, want %q", ts, wantState)
			}
			if b := h.Values("Baggage"); len(b) != 1 || b[0] != "k=v" {
				t.Errorf("baggage %q", b)
			}
		})
	}
}

// collector is a stand-in OTLP receiver: it keeps the names and service
// of the spans it is sent.
type collector struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans map[string]int // "service/name"
	trace map[string]bool
}

func newCollector() *collector { return &collector{spans: map[string]int{}, trace: map[string]bool{}} }

func (c *collector) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans[service+"/"+s.GetName()]++
				c.trace[fmt.Sprintf("%x", s.GetTraceId())] = true
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (c *collector) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.spans[key]
}

func writeTracingConfig(t *testing.T, endpoint, rate string) string {
	t.Helper()
	body := "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: " + endpoint + "\n"
	if rate != "" {
		body += "samplingRatePerMillion: " + rate + "\n"
	}
	f := filepath.Join(t.TempDir(), "tracing.yaml")
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestTracingOTLPgRPC: with --tracing-config-file naming an OTLP gRPC
// endpoint (a stand-in collector on 127.0.0.1) and every trace sampled,
// the spans of a request reach it by the time the server has stopped.
func TestTracingOTLPgRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	col := newCollector()
	gs := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(gs, col)
	go func() { _ = gs.Serve(ln) }()
	defer gs.Stop()

	cfg := writeTracingConfig(t, ln.Addr().String(), "1000000")
	rig := newObsRig(t, func(o *Options) { o.Tracing.ConfigFile = cfg })
	if code := rig.send(http.MethodGet, "/api/v1/namespaces/shop/pods/exported", "token-carol"); code != http.StatusOK {
		t.Fatalf("answered %d", code)
	}
	rig.gw.stop() // flushes the spans
	for _, name := range []string{"GET", "apf queue wait", "apf execution"} {
		if col.count("apf/"+name) == 0 {
			t.Errorf("the collector got no %q span of service apf: %v", name, col.spans)
		}
	}
}

// TestTracingOTLPHTTP: an http:// endpoint is sent OTLP over HTTP. With
// no samplingRatePerMillion, as with kube-apiserver, only requests whose
// caller sampled them are traced.
func TestTracingOTLPHTTP(t *testing.T) {
	col := newCollector()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		b, err := io.ReadAll(r.Body)
		req := &collectortrace.ExportTraceServiceRequest{}
		if err == nil {
			err = proto.Unmarshal(b, req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = col.Export(r.Context(), req)
		resp, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	}))
	defer srv.Close()

	cfg := writeTracingConfig(t, srv.URL, "")
	rig := newObsRig(t, func(o *Options) { o.Tracing.ConfigFile = cfg })
	rig.send(http.MethodGet, "/api/v1/namespaces/shop/pods/unsampled", "token-carol")
	rig.send(http.MethodGet, "/api/v1/namespaces/shop/pods/sampled", "token-carol", "Traceparent", callerParent)
	rig.gw.stop()
	if col.count("apf/apf execution") != 1 || len(col.trace) != 1 || !col.trace[callerTraceID] {
		t.Errorf("spans %v of traces %v: want those of the caller's sampled trace only", col.spans, col.trace)
	}
}
