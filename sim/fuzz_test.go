package sim

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"testing"
	"time"
)

// fuzzArrivals bounds how many arrivals a fuzzed source is asked for.
const fuzzArrivals = 500

// drain reads up to fuzzArrivals arrivals and checks what every Source
// promises: arrivals in non-decreasing time, never a negative service
// time, and an error or the end of the stream rather than a panic. It
// reports whether the source came to its end.
func drain(t *testing.T, src Source) bool {
	t.Helper()
	var last time.Duration
	for i := 0; i < fuzzArrivals; i++ {
		a, ok, err := src.Next()
		if err != nil {
			return false
		}
		if !ok {
			return true
		}
		if a.At < last {
			t.Fatalf("arrival %d at %v, before the previous one at %v", i, a.At, last)
		}
		if a.Service < 0 || a.WatchFor < 0 {
			t.Fatalf("arrival %d: negative service %v or watch %v", i, a.Service, a.WatchFor)
		}
		last = a.At
	}
	return false
}

// FuzzAuditSource replays arbitrary audit logs. Whatever a line holds,
// it is replayed or skipped for a reason, and every line is accounted
// for; only a broken gzip stream ends a replay with an error. No input
// panics, and what is replayed comes out in arrival order.
func FuzzAuditSource(f *testing.F) {
	const good = `{"stage":"ResponseComplete","requestURI":"/api/v1/namespaces/a/pods/b","verb":"get","user":{"username":"u","groups":["system:authenticated"]},"requestReceivedTimestamp":"2024-05-01T12:00:00.000000Z","stageTimestamp":"2024-05-01T12:00:00.010000Z"}`
	f.Add([]byte(good + "\n"))
	f.Add([]byte(good + "\n" + good + "\n\n{\n"))
	f.Add([]byte(`{"stage":"ResponseStarted","requestURI":"/api/v1/pods?watch=true","verb":"watch","user":{"username":"w"},"requestReceivedTimestamp":"2024-05-01T11:00:00Z","stageTimestamp":"2024-05-01T12:00:00Z"}` + "\n" + good))
	f.Add([]byte(`{"stage":"ResponseComplete","requestURI":"/api/v1/pods?watch=true&timeoutSeconds=30","verb":"watch","user":{"username":"w","groups":["g"]},"requestReceivedTimestamp":"2024-05-01T11:59:00Z","stageTimestamp":"2024-05-01T12:00:00Z"}` + "\n" + good))
	f.Add([]byte(`{"stage":"Panic","requestURI":"/healthz","verb":"get","user":{"username":"system:anonymous"},"requestReceivedTimestamp":"2024-05-01T12:00:01Z","stageTimestamp":"2024-05-01T12:00:00Z"}`))
	f.Add([]byte(`{"stage":"ResponseComplete","requestURI":"/apis/apps/v1/namespaces/x/deployments","verb":"list","user":{"username":"u"},"impersonatedUser":{"username":"v"},"requestReceivedTimestamp":"0001-01-01T00:00:00Z","stageTimestamp":"9999-12-31T23:59:59Z"}`))
	f.Add([]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"a","stage":"ResponseComplete","requestURI":"/api/v1/pods","verb":"list","user":{"username":"m"},"responseStatus":{"metadata":{},"code":429},"requestObject":{"a":[1,{"b":null}]},"responseObject":{"items":["\u00e9\"x"]},"requestReceivedTimestamp":"2024-05-01T12:00:00Z","stageTimestamp":"2024-05-01T12:00:15Z","annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"15s"}}` + "\r\n" + good + "\n" + good[:40]))
	f.Add([]byte(`{"kind":"Event","auditID":"d","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/a/pods/b/exec?command=sh","verb":"get","user":{"username":"u"},"requestReceivedTimestamp":"2024-05-01T12:00:00Z","stageTimestamp":"2024-05-01T12:00:09Z"}` + "\n" +
		`{"kind":"Event","auditID":"d","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/a/pods/b/exec?command=sh","verb":"get","user":{"username":"u"},"requestReceivedTimestamp":"2024-05-01T12:00:00Z","stageTimestamp":"2024-05-01T12:00:09Z"}` + "\n" +
		`{"kind":"Event","stage":"ResponseComplete","requestURI":"/x","verb":"get","user":{"username":"bob"},"responseStatus":{"code":403,"message":"User \"bob\" cannot impersonate resource \"users\""},"requestReceivedTimestamp":"2024-05-01T12:00:00Z","stageTimestamp":"2024-05-01T12:00:00Z"}` + "\n" +
		`{"kind":"Status"}` + "\n" + `[` + "\n" + `E0501 12:00:00.3 1 x.go:1] oops` + "\n"))
	f.Add([]byte(`[]`))
	f.Add([]byte("\x00\xff"))
	f.Add(gzipped(good + "\n" + good + "\n"))
	f.Add(gzipped(good)[:20])
	if data, err := readSample(); err == nil {
		f.Add(data)
	}
	if data, err := readGzip(auditCluster); err == nil {
		data = data[:min(len(data), 16<<10)]
		f.Add(data[:bytes.LastIndexByte(data, '\n')+1])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src, err := NewAuditSource(bytes.NewReader(data), AuditOptions{ObjectCounts: map[string]int64{"pods": 100}})
		if err != nil {
			t.Fatal(err)
		}
		if !drain(t, src) {
			return
		}
		st := src.AuditStats()
		if st.Lines != st.Requests+st.SkippedLines() || st.Lines > int64(bytes.Count(data, []byte("\n"))+1) && data[0] != 0x1f {
			t.Fatalf("%d lines: %d requests, %d skipped", st.Lines, st.Requests, st.SkippedLines())
		}
	})
}

// gzipped compresses s.
func gzipped(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return b.Bytes()
}

// readSample returns the first lines of the committed audit sample, a
// realistic seed for the audit fuzzer.
func readSample() ([]byte, error) {
	data, err := readFileHead(auditSample, 8<<10)
	if err != nil {
		return nil, err
	}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	}
	return data, nil
}

// maxFuzzReplicas bounds the replicas a fuzzed workload may ask for
// before its source is built: a valid workload may declare up to a
// million replicas, which is legitimate but not worth a fuzz iteration.
const maxFuzzReplicas = 1000

// FuzzParseWorkload decodes arbitrary workload files. Anything that is
// not a valid workload is refused with an error; a workload that is
// accepted builds a source (or explains why it cannot) whose arrivals
// come in order. Nothing panics.
func FuzzParseWorkload(f *testing.F) {
	const ok = `
duration: 10s
seed: 3
clients:
- name: a
  user: alice
  arrival: {process: poisson, rate: 5}
  requests:
  - {verb: get, resource: pods, namespace: default, name: x, share: 1}
`
	f.Add([]byte(ok))
	f.Add([]byte(`
duration: 1m
serviceTimes:
  list: {lognormal: {median: 60ms, sigma: 0.7}}
  default: {exponential: {mean: 5ms}}
clients:
- name: "c-{i}"
  replicas: 3
  serviceAccount: "ns/sa-{i}"
  groups: [system:authenticated]
  arrival: {process: onoff, rate: 50, onFor: 2s, offFor: 3s, start: 1s}
  requests:
  - {verb: list, resource: pods, namespace: "ns-{i}", share: 2, listSize: 1000}
  - {verb: watch, group: apps, resource: deployments, share: 1, watchDuration: 30s}
  - {path: /healthz, share: 1}
  - {path: /api/v1/pods, method: POST, query: "dryRun=All", share: 0.5, serviceTime: {constant: 1ms}}
`))
	f.Add([]byte(`{"duration":"5s","clients":[{"name":"j","user":"u","arrival":{"process":"constant","rate":1000},"requests":[{"path":"/version","share":1}]}]}`))
	f.Add([]byte("duration: 10s\nclients: [\n"))
	f.Add([]byte("duration: -1s\n"))
	f.Add([]byte("duration: 10s\nclients:\n- name: a\n  user: a\n  replicas: 1000000\n  arrival: {process: poisson, rate: 1e308}\n  requests: [{path: /, share: 1e308}]\n"))
	if data, err := readFileHead("../examples/sim/flood.yaml", 64<<10); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ParseWorkload(data)
		if err != nil {
			if w != nil {
				t.Fatalf("error %v with a workload", err)
			}
			return
		}
		if err := w.Validate(); err != nil {
			t.Fatalf("accepted workload fails validation: %v", err)
		}
		n := 0
		for _, c := range w.Clients {
			n += max(c.Replicas, 1)
		}
		if n > maxFuzzReplicas {
			return
		}
		src, err := w.NewSource()
		if err != nil {
			return
		}
		drain(t, src)
	})
}

// readFileHead returns at most n bytes from the start of a file.
func readFileHead(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}
