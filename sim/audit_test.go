package sim

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite examples/sim/audit-sample.jsonl and audit-cluster.log.gz")

const (
	auditSample  = "../examples/sim/audit-sample.jsonl"
	auditCluster = "../examples/sim/audit-cluster.log.gz"
)

// clusterFixture shapes examples/sim/audit-cluster.log.gz: half a minute
// of a ten-node cluster, as kube-apiserver writes it.
var clusterFixture = FixtureOptions{Seed: 1, Cluster: true, Duration: 30 * time.Second, Nodes: 10}

// TestAuditFixtureUpToDate keeps the committed sample equal to what
// WriteAuditFixture generates (go test ./sim -run AuditFixture -update
// rewrites it).
func TestAuditFixtureUpToDate(t *testing.T) {
	var buf bytes.Buffer
	n, err := WriteAuditFixture(&buf, FixtureOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n < 2000 || n > 10000 {
		t.Errorf("fixture has %d events, want a few thousand", n)
	}
	if *update {
		if err := os.WriteFile(auditSample, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(auditSample)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, buf.Bytes()) {
		t.Fatalf("%s is stale: run go test ./sim -run AuditFixture -update", auditSample)
	}
}

// TestAuditClusterFixtureUpToDate keeps the committed cluster log equal,
// once decompressed, to what the generator writes.
func TestAuditClusterFixtureUpToDate(t *testing.T) {
	var buf bytes.Buffer
	if _, err := WriteAuditFixture(&buf, clusterFixture); err != nil {
		t.Fatal(err)
	}
	if *update {
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		if _, err := zw.Write(buf.Bytes()); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(auditCluster, z.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readGzip(auditCluster)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, buf.Bytes()) {
		t.Fatalf("%s is stale: run go test ./sim -run AuditFixture -update", auditCluster)
	}
}

func readGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// drainAudit reads every arrival of src.
func drainAudit(t *testing.T, src *AuditSource) []Arrival {
	t.Helper()
	var got []Arrival
	for {
		a, ok, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return got
		}
		got = append(got, a)
	}
}

// checkSkips compares a replay's skipped lines with want (reason: lines)
// and checks that every line is accounted for.
func checkSkips(t *testing.T, st AuditStats, want map[string]int64) {
	t.Helper()
	for reason, n := range want {
		if st.Skipped[reason].Lines != n {
			t.Errorf("skipped for %s: %d lines, want %d", reason, st.Skipped[reason].Lines, n)
		}
	}
	for reason, s := range st.Skipped {
		if _, ok := want[reason]; !ok {
			t.Errorf("skipped for %s: %d lines (first: %s: %s), want none", reason, s.Lines, s.First, s.Detail)
		}
	}
	if st.Lines != st.Requests+st.SkippedLines() {
		t.Errorf("%d lines, %d requests and %d skipped", st.Lines, st.Requests, st.SkippedLines())
	}
}

// TestAuditSkips: what cannot be replayed is counted by reason, with
// where the first such line is, and never ends the replay.
func TestAuditSkips(t *testing.T) {
	const good = `{"stage":"ResponseComplete","requestURI":"/api/v1/namespaces/a/pods/b","verb":"get","user":{"username":"u","groups":["system:authenticated"]},"requestReceivedTimestamp":"2024-05-01T12:00:00.000000Z","stageTimestamp":"2024-05-01T12:00:00.010000Z"}`
	for _, c := range []struct{ name, line, reason, detail string }{
		{"not json", "{", SkipNotJSON, "column 2: the line ends inside its JSON"},
		{"not an event", `{"kind":"Status","apiVersion":"v1"}`, SkipNotEvent, `kind "Status", apiVersion "v1"`},
		{"other group", `{"kind":"Event","apiVersion":"v1","stage":"ResponseComplete"}`, SkipNotEvent, `kind "Event", apiVersion "v1"`},
		{"nothing of an event", `{"a":1}`, SkipNotEvent, "no kind, stage, auditID or requestURI"},
		{"wrong type", strings.Replace(good, `"verb":"get"`, `"verb":7`, 1), SkipNotEvent, "json: cannot unmarshal number into Go struct field AuditEvent.verb of type string"},
		{"bad time", strings.Replace(good, `"2024-05-01T12:00:00.000000Z"`, `"yesterday"`, 1), SkipNotEvent, `parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"`},
		{"no stage", strings.Replace(good, `"stage":"ResponseComplete",`, "", 1), SkipUnknownStage, "no stage"},
		{"odd stage", strings.Replace(good, `ResponseComplete`, `Done`, 1), SkipUnknownStage, `stage "Done"`},
		{"received", strings.Replace(good, `ResponseComplete`, `RequestReceived`, 1), SkipRequestReceived, ""},
		{"started", strings.Replace(good, `ResponseComplete`, `ResponseStarted`, 1), SkipResponseStarted, ""},
		{"no uri", strings.Replace(good, `"/api/v1/namespaces/a/pods/b"`, `""`, 1), SkipUnusable, "no requestURI"},
		{"no verb", strings.Replace(good, `"verb":"get",`, ``, 1), SkipUnusable, "no verb"},
		{"no user", strings.Replace(good, `"username":"u"`, `"username":""`, 1), SkipUnauthenticated, ""},
		{"no time", strings.Replace(good, `"requestReceivedTimestamp":"2024-05-01T12:00:00.000000Z",`, "", 1), SkipNoTimestamps, ""},
		{"bad path", strings.Replace(good, `/api/v1/namespaces/a/pods/b`, `/api/v1/watch`, 1), SkipUnusable,
			`requestURI "/api/v1/watch": request: path "/api/v1/watch": "watch": verb in path is not followed by a resource`},
		{"exec", strings.Replace(good, `/api/v1/namespaces/a/pods/b`, `/api/v1/namespaces/a/pods/b/exec?command=sh`, 1), SkipLongRunning, ""},
		{"too large", `{"annotations":{"a":"` + strings.Repeat("x", maxKept) + `"}}`, SkipTooLarge, ""},
	} {
		src, err := NewAuditSource(strings.NewReader(good+"\n\n"+c.line+"\n"+good+"\n"), AuditOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(context.Background(), Config{}, src)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		st := *r.Audit
		checkSkips(t, st, map[string]int64{c.reason: 1})
		if s := st.Skipped[c.reason]; s.First != "line 3" || s.Detail != c.detail {
			t.Errorf("%s: first at %q (%q), want line 3 (%q)", c.name, s.First, s.Detail, c.detail)
		}
		if st.Lines != 3 || st.Requests != 2 || r.Requests != 2 {
			t.Errorf("%s: %d lines, %d requests kept, %d replayed", c.name, st.Lines, st.Requests, r.Requests)
		}
	}
	if _, err := NewAuditSource(strings.NewReader(""), AuditOptions{Speed: -1}); err == nil {
		t.Error("negative speed accepted")
	}
}

// TestAuditOrder: events logged in completion order are replayed in
// arrival order, with stage − received as service time.
func TestAuditOrder(t *testing.T) {
	log := strings.Join([]string{
		`{"stage":"ResponseComplete","requestURI":"/api/v1/pods?limit=500","verb":"list","user":{"username":"slow"},"requestReceivedTimestamp":"2024-05-01T12:00:00Z","stageTimestamp":"2024-05-01T12:00:02Z"}`,
		`{"stage":"RequestReceived","requestURI":"/healthz","verb":"get","user":{"username":"fast"},"requestReceivedTimestamp":"2024-05-01T12:00:01Z","stageTimestamp":"2024-05-01T12:00:01Z"}`,
		`{"stage":"ResponseComplete","requestURI":"/healthz","verb":"get","user":{"username":"fast"},"requestReceivedTimestamp":"2024-05-01T12:00:01Z","stageTimestamp":"2024-05-01T12:00:01.5Z"}`,
		`{"stage":"ResponseComplete","requestURI":"/api/v1/pods?watch=true","verb":"watch","user":{"username":"w"},"requestReceivedTimestamp":"2024-05-01T12:00:00.5Z","stageTimestamp":"2024-05-01T12:05:00Z"}`,
	}, "\n")
	src, err := NewAuditSource(strings.NewReader(log), AuditOptions{Speed: 2, ObjectCounts: map[string]int64{"pods": 700}})
	if err != nil {
		t.Fatal(err)
	}
	got := drainAudit(t, src)
	if len(got) != 3 || src.Skipped() != 1 {
		t.Fatalf("%d arrivals, %d skipped", len(got), src.Skipped())
	}
	want := []struct {
		client  string
		at, svc time.Duration
	}{{"slow", 0, 2 * time.Second}, {"w", 250 * time.Millisecond, 5 * time.Millisecond}, {"fast", 500 * time.Millisecond, 500 * time.Millisecond}}
	for i, w := range want {
		a := got[i]
		if a.Client != w.client || a.At != w.at || a.Service != w.svc {
			t.Errorf("arrival %d: %s at %v for %v, want %s at %v for %v", i, a.Client, a.At, a.Service, w.client, w.at, w.svc)
		}
	}
	if got[0].ListSize != 700 || got[0].Attributes.Info.Verb != "list" || got[1].WatchFor != 5*time.Minute-500*time.Millisecond-5*time.Millisecond {
		t.Errorf("list size %d, verb %q, watch for %v", got[0].ListSize, got[0].Attributes.Info.Verb, got[1].WatchFor)
	}
}

// TestAuditBeforeLog: a watch opened long before the log's first
// request arrives at the replay's start, not hours before it; the
// replay starts with the earliest request that is not long.
func TestAuditBeforeLog(t *testing.T) {
	log := strings.Join([]string{
		`{"stage":"ResponseComplete","requestURI":"/api/v1/pods?watch=true","verb":"watch","user":{"username":"w"},"requestReceivedTimestamp":"2024-05-01T11:30:00Z","stageTimestamp":"2024-05-01T12:00:01Z"}`,
		`{"stage":"ResponseComplete","requestURI":"/healthz","verb":"get","user":{"username":"a"},"requestReceivedTimestamp":"2024-05-01T12:00:00Z","stageTimestamp":"2024-05-01T12:00:02Z"}`,
		`{"stage":"ResponseComplete","requestURI":"/healthz","verb":"get","user":{"username":"b"},"requestReceivedTimestamp":"2024-05-01T12:00:03Z","stageTimestamp":"2024-05-01T12:00:03.1Z"}`,
		`{"stage":"ResponseComplete","requestURI":"/api/v1/pods?watch=true","verb":"watch","user":{"username":"v"},"requestReceivedTimestamp":"2024-05-01T11:59:00Z","stageTimestamp":"2024-05-01T12:02:30Z"}`,
	}, "\n")
	src, err := NewAuditSource(strings.NewReader(log), AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := drainAudit(t, src)
	var at []string
	for _, a := range got {
		at = append(at, fmt.Sprintf("%s@%v", a.Client, a.At))
	}
	if strings.Join(at, " ") != "w@0s v@0s a@0s b@3s" {
		t.Errorf("arrivals %v", at)
	}
	st := src.AuditStats()
	if st.BeforeLog != 2 || st.Late != 0 {
		t.Errorf("before the log %d, late %d", st.BeforeLog, st.Late)
	}
}

// kubeLog is a short log in kube-apiserver's own format, in the order its
// log backend writes it: several stages per request, the Metadata,
// Request and RequestResponse levels (a list response of megabytes on
// one line), an impersonated request, a watch, a handler that panicked,
// a request the cluster's APF rejected, one it queued for a second, and
// what else lands in such a
// file: a klog line, a cut line, an object of another kind, a duplicate
// from a log shipper.
func kubeLog() string {
	var items []string
	for i := range 20000 {
		items = append(items, fmt.Sprintf(`{"metadata":{"name":"web-%d","namespace":"shop","uid":"u-%d","resourceVersion":"%d"},"spec":{"nodeName":"node-1","containers":[{"name":"main","image":"registry.example.com/web:1.2"}]},"status":{"phase":"Running"}}`, i, i, 1000+i))
	}
	podList := `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"20000"},"items":[` + strings.Join(items, ",") + `]}`
	const (
		alice    = `"user":{"username":"alice@example.com","groups":["developers","system:authenticated"]},"sourceIPs":["192.168.7.40"],"userAgent":"kubectl/v1.32.2 (linux/amd64) kubernetes/67a30c0"`
		kubelet  = `"user":{"username":"system:node:node-1","groups":["system:nodes","system:authenticated"]},"sourceIPs":["10.0.1.11"],"userAgent":"kubelet/v1.32.2 (linux/amd64) kubernetes/67a30c0"`
		builder  = `"user":{"username":"system:serviceaccount:ci:builder","uid":"9d1c8e0a-0b3f-4c51-9f0e-7a3c2b1d4e5f","groups":["system:serviceaccounts","system:serviceaccounts:ci","system:authenticated"],"extra":{"authentication.kubernetes.io/credential-id":["JTI=7a9c"],"authentication.kubernetes.io/pod-name":["builder-7c9d8"]}},"sourceIPs":["10.244.3.17"],"userAgent":"tekton-pipelines-controller/v0.59.0"`
		deployer = `"impersonatedUser":{"username":"system:serviceaccount:shop:deployer","groups":["system:serviceaccounts","system:serviceaccounts:shop","system:authenticated"]}`
		head     = `{"kind":"Event","apiVersion":"audit.k8s.io/v1",`
		allow    = `"annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by ClusterRoleBinding \"x\" of ClusterRole \"y\" to Group \"z\""}`
		ok       = `"responseStatus":{"metadata":{},"code":200}`
	)
	ts := func(s string) string {
		return `"requestReceivedTimestamp":"2024-05-01T12:00:` + s[:9] + `Z","stageTimestamp":"2024-05-01T12:00:` + s[10:] + `Z"`
	}
	getPod := head + `"level":"Metadata","auditID":"a1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/shop/pods/web-1","verb":"get",` + alice + `,"objectRef":{"resource":"pods","namespace":"shop","name":"web-1","apiVersion":"v1"},` + ok + `,` + ts("00.100000 00.104000") + `,` + allow + `}`
	return strings.Join([]string{
		head + `"level":"Metadata","auditID":"a1","stage":"RequestReceived","requestURI":"/api/v1/namespaces/shop/pods/web-1","verb":"get",` + alice + `,"objectRef":{"resource":"pods","namespace":"shop","name":"web-1","apiVersion":"v1"},` + ts("00.100000 00.100000") + `}`,
		head + `"level":"RequestResponse","auditID":"a2","stage":"RequestReceived","requestURI":"/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1\u0026limit=500","verb":"list",` + kubelet + `,"objectRef":{"resource":"pods","apiVersion":"v1"},` + ts("00.200000 00.200000") + `}`,
		getPod,
		`E0501 12:00:00.300000       1 writers.go:122] "Unhandled Error" err="apiserver was unable to write a JSON response: http2: stream closed"`,
		head + `"level":"RequestResponse","auditID":"a2","stage":"ResponseComplete","requestURI":"/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1\u0026limit=500","verb":"list",` + kubelet + `,"objectRef":{"resource":"pods","apiVersion":"v1"},` + ok + `,"responseObject":` + podList + `,` + ts("00.200000 00.260000") + `,` + allow + `}`,
		head + `"level":"Metadata","auditID":"a3","stage":"RequestReceived","requestURI":"/api/v1/namespaces/shop/configmaps?allowWatchBookmarks=true\u0026resourceVersion=100\u0026timeoutSeconds=30\u0026watch=true","verb":"watch",` + kubelet + `,"objectRef":{"resource":"configmaps","namespace":"shop","apiVersion":"v1"},` + ts("00.300000 00.300000") + `}`,
		head + `"level":"Metadata","auditID":"a3","stage":"ResponseStarted","requestURI":"/api/v1/namespaces/shop/configmaps?allowWatchBookmarks=true\u0026resourceVersion=100\u0026timeoutSeconds=30\u0026watch=true","verb":"watch",` + kubelet + `,"objectRef":{"resource":"configmaps","namespace":"shop","apiVersion":"v1"},` + ok + `,` + ts("00.300000 00.303000") + `}`,
		head + `"level":"Request","auditID":"a4","stage":"RequestReceived","requestURI":"/api/v1/namespaces/shop/secrets?limit=500","verb":"list",` + alice + `,"objectRef":{"resource":"secrets","namespace":"shop","apiVersion":"v1"},` + ts("00.400000 00.400000") + `}`,
		head + `"level":"Request","auditID":"a4","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/shop/secrets?limit=500","verb":"list",` + alice + `,` + deployer + `,"objectRef":{"resource":"secrets","namespace":"shop","apiVersion":"v1"},` + ok + `,` + ts("00.400000 00.410000") + `,` + allow + `}`,
		head + `"level":"RequestResponse","auditID":"a5","stage":"RequestReceived","requestURI":"/apis/tekton.dev/v1/namespaces/ci/pipelineruns","verb":"create",` + builder + `,"objectRef":{"resource":"pipelineruns","namespace":"ci","apiGroup":"tekton.dev","apiVersion":"v1"},` + ts("00.500000 00.500000") + `}`,
		head + `"level":"RequestResponse","auditID":"a5","stage":"Panic","requestURI":"/apis/tekton.dev/v1/namespaces/ci/pipelineruns","verb":"create",` + builder + `,"objectRef":{"resource":"pipelineruns","namespace":"ci","apiGroup":"tekton.dev","apiVersion":"v1"},"responseStatus":{"metadata":{},"status":"Failure","message":"APIServer panic'd: runtime error: index out of range [3] with length 3","reason":"InternalError","code":500},"requestObject":{"apiVersion":"tekton.dev/v1","kind":"PipelineRun","metadata":{"generateName":"build-"},"spec":{"params":[{"name":"rev","value":"main"}]}},` + ts("00.500000 00.502000") + `}`,
		getPod, // resent by a log shipper
		`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","code":404}`,
		head + `"level":"Metadata","auditID":"a6","stage":"ResponseComplete","requestURI":"/version","verb":"get",` + alice + `,` + ok + `,"stageTimestamp":"2024-05-01T12:00:00.600000Z"}`,
		head + `"level":"Metadata","auditID":"a3","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/shop/configmaps?allowWatchBookmarks=true\u0026resourceVersion=100\u0026timeoutSeconds=30\u0026watch=true","verb":"watch",` + kubelet + `,"objectRef":{"resource":"configmaps","namespace":"shop","apiVersion":"v1"},` + ok + `,` + ts("00.300000 30.300000") + `}`,
		head + `"level":"Metadata","auditID":"a7","stage":"RequestReceived","requestURI":"/api/v1/namespaces/shop/pods/web-1/exec?command=sh\u0026container=main\u0026stdin=true\u0026stdout=true\u0026tty=true","verb":"get",` + alice + `,"objectRef":{"resource":"pods","namespace":"shop","name":"web-1","apiVersion":"v1","subresource":"exec"},` + ts("01.000000 01.000000") + `}`,
		head + `"level":"Metadata","auditID":"a7","stage":"ResponseStarted","requestURI":"/api/v1/namespaces/shop/pods/web-1/exec?command=sh\u0026container=main\u0026stdin=true\u0026stdout=true\u0026tty=true","verb":"get",` + alice + `,"objectRef":{"resource":"pods","namespace":"shop","name":"web-1","apiVersion":"v1","subresource":"exec"},"responseStatus":{"metadata":{},"code":101},` + ts("01.000000 01.004000") + `}`,
		head + `"level":"Metadata","auditID":"a7","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/shop/pods/web-1/exec?command=sh\u0026container=main\u0026stdin=true\u0026stdout=true\u0026tty=true","verb":"get",` + alice + `,"objectRef":{"resource":"pods","namespace":"shop","name":"web-1","apiVersion":"v1","subresource":"exec"},"responseStatus":{"metadata":{},"code":101},` + ts("01.000000 11.000000") + `,` + allow + `}`,
		head + `"level":"Metadata","auditID":"a8","stage":"ResponseStarted","requestURI":"/api/v1/namespaces/default/pods","verb":"list","user":{},"sourceIPs":["203.0.113.9"],"userAgent":"curl/8.5.0","objectRef":{"resource":"pods","namespace":"default","apiVersion":"v1"},"responseStatus":{"metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401},` + ts("02.000000 02.000400") + `}`,
		head + `"level":"Metadata","auditID":"a9","stage":"ResponseCompl`,
		head + `"level":"Metadata","auditID":"a10","stage":"RequestReceived","requestURI":"/api/v1/namespaces/payments/secrets/db","verb":"get","user":{"username":"bob@example.com","groups":["developers","system:authenticated"]},"objectRef":{"resource":"secrets","namespace":"payments","name":"db","apiVersion":"v1"},` + ts("03.000000 03.000000") + `}`,
		head + `"level":"Metadata","auditID":"a10","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/payments/secrets/db","verb":"get","user":{"username":"bob@example.com","groups":["developers","system:authenticated"]},"objectRef":{"resource":"secrets","namespace":"payments","name":"db","apiVersion":"v1"},"responseStatus":{"metadata":{},"status":"Failure","message":"users \"admin\" is forbidden: User \"bob@example.com\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope","reason":"Forbidden","details":{"name":"admin","kind":"users"},"code":403},` + ts("03.000000 03.000900") + `,"annotations":{"authorization.k8s.io/decision":"forbid","authorization.k8s.io/reason":""}}`,
		head + `"level":"Metadata","auditID":"a11","stage":"RequestReceived","requestURI":"/api/v1/pods","verb":"list","user":{"username":"mallory","groups":["system:authenticated"]},"objectRef":{"resource":"pods","apiVersion":"v1"},` + ts("04.000000 04.000000") + `}`,
		head + `"level":"Metadata","auditID":"a11","stage":"ResponseComplete","requestURI":"/api/v1/pods","verb":"list","user":{"username":"mallory","groups":["system:authenticated"]},"objectRef":{"resource":"pods","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":429},` + ts("04.000000 19.000000") + `,"annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"15s","apiserver.latency.k8s.io/total":"15.000069s"}}`,
		head + `"level":"Metadata","auditID":"a12","stage":"ResponseFinished","requestURI":"/healthz","verb":"get",` + alice + `,` + ts("05.000000 05.001000") + `}`,
		head + `"level":"Metadata","auditID":"a13","stage":"ResponseComplete","requestURI":"/api/v1/watch","verb":"get",` + alice + `,"responseStatus":{"metadata":{},"code":500},` + ts("06.000000 06.001000") + `}`,
		head + `"level":"Metadata","auditID":"a14","stage":"ResponseComplete","requestURI":"/apis/apps/v1/replicasets?limit=500\u0026resourceVersion=0","verb":"list","user":{"username":"system:kube-controller-manager","groups":["system:authenticated"]},"objectRef":{"resource":"replicasets","apiGroup":"apps","apiVersion":"v1"},` + ok + `,` + ts("07.000000 08.300000") + `,"annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"1s","apiserver.latency.k8s.io/etcd":"280ms","apiserver.latency.k8s.io/total":"1.3s"}}`,
	}, "\n") + "\n"
}

// TestAuditKubeAPIServerLog replays kubeLog: one request per auditID, its
// completion; every other line counted by why it was skipped; the
// impersonated request classified as its impersonated service account,
// as kube-apiserver's APF (behind its impersonation filter) classifies
// it; the request the cluster rejected replayed with the service time of
// its kind, and the one it queued without its queue wait.
func TestAuditKubeAPIServerLog(t *testing.T) {
	log := kubeLog()
	if len(log) < 4<<20 {
		t.Fatalf("the log is only %d bytes", len(log))
	}
	src, err := NewAuditSource(strings.NewReader(log), AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := drainAudit(t, src)
	var desc []string
	for _, a := range got {
		desc = append(desc, fmt.Sprintf("%s %s %s/%s %v+%v", a.Client, a.Attributes.Info.Verb, a.Attributes.Info.Resource, a.Attributes.Info.Name, a.Service, a.WatchFor))
	}
	want := []string{
		"alice@example.com get pods/web-1 4ms+0s",
		"system:node:node-1 list pods/ 60ms+0s",
		"system:node:node-1 watch configmaps/ 5ms+29.995s",
		"system:serviceaccount:shop:deployer list secrets/ 10ms+0s",
		"system:serviceaccount:ci:builder create pipelineruns/ 2ms+0s",
		"mallory list pods/ 60ms+0s",
		"system:kube-controller-manager list replicasets/ 300ms+0s",
	}
	if strings.Join(desc, "\n") != strings.Join(want, "\n") {
		t.Errorf("arrivals:\n%s\nwant:\n%s", strings.Join(desc, "\n"), strings.Join(want, "\n"))
	}
	if len(got) == 7 {
		if g := got[3].Attributes.User.Groups; strings.Join(g, ",") != "system:serviceaccounts,system:serviceaccounts:shop,system:authenticated" {
			t.Errorf("impersonated groups %q", g)
		}
		if u := got[4].Attributes.User; u.UID != "9d1c8e0a-0b3f-4c51-9f0e-7a3c2b1d4e5f" || u.Extra != nil {
			t.Errorf("service account %+v", u)
		}
	}
	st := src.AuditStats()
	checkSkips(t, st, map[string]int64{
		SkipRequestReceived:     8,
		SkipResponseStarted:     3,
		SkipNotJSON:             2,
		SkipNotEvent:            1,
		SkipDuplicate:           1,
		SkipNoTimestamps:        1,
		SkipLongRunning:         1,
		SkipImpersonationDenied: 1,
		SkipUnknownStage:        1,
		SkipUnusable:            1,
	})
	if st.Lines != 27 || st.Requests != 7 || st.RejectedInLog != 1 {
		t.Errorf("%d lines, %d requests, %d rejected in the log", st.Lines, st.Requests, st.RejectedInLog)
	}
	for reason, first := range map[string]string{SkipRequestReceived: "line 1", SkipNotJSON: "line 4", SkipDuplicate: "line 12", SkipNotEvent: "line 13", SkipImpersonationDenied: "line 22"} {
		if s := st.Skipped[reason]; s.First != first {
			t.Errorf("first skipped for %s at %q, want %s", reason, s.First, first)
		}
	}
	if d := st.Skipped[SkipNotJSON].Detail; d != `column 1: 'E' where a value should be` {
		t.Errorf("not-json detail %q", d)
	}

	// The replay, per FlowSchema of the suggested configuration.
	src, err = NewAuditSource(strings.NewReader(log), AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), Config{}, src)
	if err != nil {
		t.Fatal(err)
	}
	arrived := map[string]int64{}
	for _, s := range r.FlowSchemas {
		if s.Arrived > 0 {
			arrived[s.Name] = s.Arrived
		}
	}
	if fmt.Sprint(arrived) != "map[global-default:2 kube-controller-manager:1 service-accounts:2 system-nodes:2]" {
		t.Errorf("arrivals per FlowSchema: %v", arrived)
	}
	if r.Audit == nil || r.Audit.Requests != 7 || r.Requests != 7 {
		t.Errorf("result: %d requests, audit %+v", r.Requests, r.Audit)
	}
}

// clusterTally is what an independent reading of a log in kube-apiserver's
// format (encoding/json, line by line, all in memory) expects a replay to
// make of it.
type clusterTally struct {
	lines, requests, rejected int64
	skipped                   map[string]int64
	impersonated              int64
}

func tallyClusterLog(t *testing.T, data []byte) clusterTally {
	t.Helper()
	tl := clusterTally{skipped: map[string]int64{}}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		tl.lines++
		var ev struct {
			Kind, Stage, AuditID, RequestReceivedTimestamp string
			User                                           struct{ Username string }
			ImpersonatedUser                               *struct{ Username string }
			ObjectRef                                      *struct{ Subresource string }
			ResponseStatus                                 *struct {
				Code    int
				Message string
			}
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			tl.skipped[SkipNotJSON]++
			continue
		}
		switch {
		case ev.Kind != "Event":
			tl.skipped[SkipNotEvent]++
		case ev.Stage == StageRequestReceived:
			tl.skipped[SkipRequestReceived]++
		case ev.Stage == StageResponseStarted:
			tl.skipped[SkipResponseStarted]++
		case seen[ev.AuditID+ev.RequestReceivedTimestamp]:
			tl.skipped[SkipDuplicate]++
		case ev.User.Username == "":
			seen[ev.AuditID+ev.RequestReceivedTimestamp] = true
			tl.skipped[SkipUnauthenticated]++
		case ev.ResponseStatus == nil:
			t.Fatalf("a completion without a status: %s", line)
		case ev.ResponseStatus.Code == 403 && strings.Contains(ev.ResponseStatus.Message, "cannot impersonate"):
			seen[ev.AuditID+ev.RequestReceivedTimestamp] = true
			tl.skipped[SkipImpersonationDenied]++
		case ev.ObjectRef != nil && (ev.ObjectRef.Subresource == "exec" || ev.ObjectRef.Subresource == "log"):
			seen[ev.AuditID+ev.RequestReceivedTimestamp] = true
			tl.skipped[SkipLongRunning]++
		default:
			seen[ev.AuditID+ev.RequestReceivedTimestamp] = true
			tl.requests++
			if ev.ResponseStatus.Code == 429 {
				tl.rejected++
			}
			if ev.ImpersonatedUser != nil {
				tl.impersonated++
			}
		}
	}
	return tl
}

// TestAuditClusterLog replays the committed cluster log, gzip-compressed
// as archives keep it, with junk lines and resent events spliced in, and
// checks its counts against an independent reading of the same bytes.
func TestAuditClusterLog(t *testing.T) {
	plain, err := readGzip(auditCluster)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(plain), "\n"), "\n")
	var spliced []string
	for i, l := range lines {
		spliced = append(spliced, l)
		switch {
		case i%500 == 7:
			spliced = append(spliced, l) // a shipper resends it
		case i%700 == 3:
			spliced = append(spliced, l[:len(l)/2]) // the disk filled up
		case i%900 == 5:
			spliced = append(spliced, `I0501 12:00:01.000000       1 trace.go:236] Trace[1]: "List" url:/api/v1/pods (total time: 1500ms)`)
		}
	}
	data := []byte(strings.Join(spliced, "\n") + "\n")
	tl := tallyClusterLog(t, data)
	if tl.skipped[SkipRequestReceived] < 1000 || tl.skipped[SkipResponseStarted] == 0 || tl.skipped[SkipDuplicate] == 0 ||
		tl.skipped[SkipNotJSON] == 0 || tl.skipped[SkipImpersonationDenied] != 1 || tl.skipped[SkipLongRunning] != 2 ||
		tl.rejected == 0 || tl.impersonated == 0 {
		t.Fatalf("the fixture lacks what this test is about: %+v", tl)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	src, err := NewAuditSource(&z, AuditOptions{Speed: 2})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), Config{}, src)
	if err != nil {
		t.Fatal(err)
	}
	st := *r.Audit
	want := map[string]int64{}
	for k, v := range tl.skipped {
		if v > 0 {
			want[k] = v
		}
	}
	checkSkips(t, st, want)
	if st.Lines != tl.lines || st.Requests != tl.requests || st.RejectedInLog != tl.rejected || r.Requests != tl.requests {
		t.Errorf("%d lines, %d requests (%d replayed), %d rejected in the log; want %d, %d, %d",
			st.Lines, st.Requests, r.Requests, st.RejectedInLog, tl.lines, tl.requests, tl.rejected)
	}
	var sum int64
	for _, s := range r.FlowSchemas {
		sum += s.Arrived
	}
	if sum != tl.requests {
		t.Errorf("%d arrivals over the FlowSchemas, want %d", sum, tl.requests)
	}
	// At twice the speed, the thirty seconds are replayed in about
	// fifteen (the longest request ends later).
	if r.Duration < 14*time.Second || r.Duration > 30*time.Second {
		t.Errorf("replayed over %v", r.Duration)
	}
}

// TestOpenAuditLogs: rotated logs, plain and compressed, replay as one,
// in the order given; a skipped line names its file.
func TestOpenAuditLogs(t *testing.T) {
	dir := t.TempDir()
	ev := func(id, at string) string {
		return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"` + id + `","stage":"ResponseComplete","requestURI":"/healthz","verb":"get","user":{"username":"u"},"requestReceivedTimestamp":"2024-05-01T12:00:` + at + `Z","stageTimestamp":"2024-05-01T12:00:` + at + `Z"}` + "\n"
	}
	older := filepath.Join(dir, "audit-2024-05-01T12-00-05.000.log.gz")
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	_, _ = zw.Write([]byte(ev("a", "01") + ev("b", "02") + "junk\n"))
	_ = zw.Close()
	if err := os.WriteFile(older, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	current := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(current, []byte(ev("b", "02")+ev("c", "06")+"{\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := OpenAuditLogs([]string{older, current}, AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := drainAudit(t, src)
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2].At != 5*time.Second {
		t.Fatalf("arrivals %+v", got)
	}
	st := src.AuditStats()
	checkSkips(t, st, map[string]int64{SkipNotJSON: 2, SkipDuplicate: 1})
	if st.Skipped[SkipNotJSON].First != older+":3" || st.Skipped[SkipDuplicate].First != current+":1" {
		t.Errorf("skips %+v", st.Skipped)
	}
	if len(st.Files) != 2 || st.Files[1] != current {
		t.Errorf("files %q", st.Files)
	}
	if _, err := OpenAuditLogs([]string{current, filepath.Join(dir, "missing.log")}, AuditOptions{}); err == nil {
		t.Error("a missing file opened")
	}
	// A pattern: the backups, then the current file.
	src, err = OpenAuditLogs([]string{filepath.Join(dir, "audit*.log*")}, AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := drainAudit(t, src); len(got) != 3 || strings.Join(src.AuditStats().Files, " ") != older+" "+current {
		t.Errorf("%d arrivals from %q", len(got), src.AuditStats().Files)
	}
	_ = src.Close()
	if _, err := OpenAuditLogs([]string{filepath.Join(dir, "nothing*.log")}, AuditOptions{}); err == nil || !strings.Contains(err.Error(), "no file matches") {
		t.Errorf("a pattern matching nothing: %v", err)
	}
	// "-": the standard input, compressed or not, between files.
	src, err = OpenAuditLogs([]string{older, "-"}, AuditOptions{Stdin: strings.NewReader(ev("d", "03") + "[]\n")})
	if err != nil {
		t.Fatal(err)
	}
	if got := drainAudit(t, src); len(got) != 3 || src.AuditStats().Skipped[SkipNotEvent].First != "-:2" {
		t.Errorf("%d arrivals, %+v", len(got), src.AuditStats().Skipped)
	}
	_ = src.Close()
	bad := filepath.Join(dir, "bad.gz")
	if err := os.WriteFile(bad, []byte{0x1f, 0x8b, 0x08}, 0o644); err != nil {
		t.Fatal(err)
	}
	src, err = OpenAuditLogs([]string{bad}, AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, _, err := src.Next(); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("a truncated gzip file: %v", err)
	}
}

// failingReader reads r, then fails instead of ending.
type failingReader struct{ r io.Reader }

func (f failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errors.New("the disk is gone")
	}
	return n, err
}

// TestAuditStartsEarly: the replay starts once the window has passed
// the first request, not at the end of the log, even when a line's
// timestamps are far off: what is in memory is what is in the window.
func TestAuditStartsEarly(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"stage":"RequestReceived","requestURI":"/healthz","verb":"get","user":{"username":"a"},"requestReceivedTimestamp":"2100-01-01T00:00:00Z","stageTimestamp":"2100-01-01T00:00:00Z"}` + "\n")
	for i := range 200 {
		at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		fmt.Fprintf(&b, `{"stage":"ResponseComplete","requestURI":"/healthz","verb":"get","user":{"username":"a"},"requestReceivedTimestamp":%q,"stageTimestamp":%q}`+"\n", at, at)
	}
	src, err := NewAuditSource(failingReader{strings.NewReader(b.String())}, AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, ok, err := src.Next()
	if err != nil || !ok || a.At != 0 {
		t.Fatalf("first arrival %+v, %v, %v", a, ok, err)
	}
	if len(src.pending) > 100 {
		t.Errorf("%d arrivals held to start", len(src.pending))
	}
}
