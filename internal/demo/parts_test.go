package demo

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHistogramQuantile(t *testing.T) {
	var h histogram
	if h.quantile(0.99) != 0 {
		t.Error("empty histogram has a quantile")
	}
	for i := 1; i <= 100; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}} {
		got := h.quantile(c.q)
		if got < c.want*96/100 || got > c.want*104/100 {
			t.Errorf("quantile(%v) = %s, want %s within 4%%", c.q, got, c.want)
		}
	}
	var far histogram
	far.add(time.Hour)
	far.add(0)
	if got := far.quantile(1); got < 50*time.Second {
		t.Errorf("an hour is counted in the last bucket, got %s", got)
	}
}

func TestClientStatsWindow(t *testing.T) {
	start := time.Unix(1000, 0)
	s := newClientStats(start)
	s.sent()
	s.done(start.Add(500*time.Millisecond), 200, 10*time.Millisecond, "uid")
	s.sent()
	s.done(start.Add(1500*time.Millisecond), 429, time.Second, "")
	snap := s.snapshot(start.Add(2 * time.Second))
	if snap.totals != (counts{Sent: 2, OK: 1, Rejected: 1}) || snap.inflight != 0 || snap.levelUID != "uid" || snap.recent.n != 2 {
		t.Errorf("snapshot %+v", snap)
	}
	// Older than the window: forgotten by the table, kept by the summary.
	if snap := s.snapshot(start.Add(time.Minute)); snap.recent.n != 0 {
		t.Errorf("stale latencies in the window: %d", snap.recent.n)
	}
	if _, _, p99 := s.final(); p99 < 900*time.Millisecond {
		t.Errorf("final p99 %s", p99)
	}
}

func TestUpstream(t *testing.T) {
	h := newUpstream(0)
	for _, c := range []struct {
		method, path, body string
		code               int
		items              int
	}{
		{"GET", "/api/v1/pods", "", 200, podsPerNamespace * len(clusterNamespaces)},
		{"GET", "/api/v1/namespaces/shop/pods", "", 200, podsPerNamespace},
		{"GET", "/api/v1/namespaces/shop/pods/web-1", "", 200, -1},
		{"GET", "/api/v1/namespaces/shop/pods/web-99", "", 404, -1},
		{"GET", "/api/v1/namespaces/shop/pods/nonsense", "", 404, -1},
		{"POST", "/api/v1/namespaces/shop/events", `{"kind":"Event"}`, 201, -1},
		{"POST", "/api/v1/namespaces/shop/events", `not json`, 400, -1},
		{"DELETE", "/api/v1/namespaces/shop/pods/web-1", "", 404, -1},
		{"GET", "/apis/apps/v1/deployments", "", 404, -1},
		{"GET", "/", "", 404, -1},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, strings.NewReader(c.body)))
		if rec.Code != c.code {
			t.Errorf("%s %s: %d, want %d: %s", c.method, c.path, rec.Code, c.code, rec.Body)
			continue
		}
		var body struct {
			Kind  string            `json:"kind"`
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Kind == "" {
			t.Errorf("%s %s: body %q: %v", c.method, c.path, rec.Body, err)
		}
		if c.items >= 0 && len(body.Items) != c.items {
			t.Errorf("%s %s: %d items, want %d", c.method, c.path, len(body.Items), c.items)
		}
	}
}

func TestTokenFile(t *testing.T) {
	cs, err := newClients(3, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f := string(tokenFile(cs))
	if !strings.Contains(f, ",system:serviceaccount:kube-system:replicaset-controller,uid-5,\"system:serviceaccounts,system:serviceaccounts:kube-system\"\n") ||
		!strings.Contains(f, cs[0].token+",flood,uid-0\n") {
		t.Errorf("token file:\n%s", f)
	}
}

func TestBoardTerminal(t *testing.T) {
	start := time.Now()
	cs, err := newClients(1, start)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	b := newBoard(&out, true, start, 0, 30, cs)
	for range 2 {
		if err := b.draw(start.Add(time.Second), nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(out.String(), "\x1b[H\x1b[2J"); n != 2 {
		t.Errorf("%d redraws, want 2", n)
	}
	if !strings.Contains(out.String(), "Ctrl-C stops") {
		t.Errorf("frame:\n%s", out.String())
	}
}

func TestSummaryWrite(t *testing.T) {
	var out bytes.Buffer
	s := Summary{Elapsed: 3 * time.Second, Clients: []ClientSummary{
		{Name: "flood", Flood: true, Sent: 10, OK: 5, Rejected: 5, P50: 2 * time.Second, P99: 3 * time.Second},
		{Name: "alice", Sent: 4, OK: 4, P50: 30 * time.Millisecond, P99: 40 * time.Millisecond},
	}}
	if err := s.Write(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"flood                10        5        5      0    2.0s    3.0s", "alice                 4        4        0      0    30ms    40ms", "The flood got 5 429s (50% of what it sent); the other clients got 0."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}
