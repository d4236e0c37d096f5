package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/proxy/wire"
	"github.com/apfproject/apf/internal/server/h1"
)

func TestParseStat(t *testing.T) {
	line := "4242 (nginx: worker (x) 1) S 4240 4240 4240 0 -1 4194624 1200 0 0 0 250 75 0 0 20 0 1 0 12345 1000 10 18446744073709551615\n"
	g, ticks, err := parseStat([]byte(line))
	if err != nil || g != 4240 || ticks != 325 {
		t.Errorf("pgrp %d, ticks %d, %v", g, ticks, err)
	}
	for _, bad := range []string{
		"4242 nginx S 1 2 3",
		"4242 (nginx) S 1 2 3 4 5 6 7 8 9 10",
		"4242 (nginx) S 1 x 3 4 5 6 7 8 9 10 11 12 13",
		"4242 (nginx) S 1 2 3 4 5 6 7 8 9 10 -1 12 13",
	} {
		if _, _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}

func TestGroupCPU(t *testing.T) {
	root := t.TempDir()
	stat := func(pid, pgrp, utime, stime string) {
		if err := os.MkdirAll(filepath.Join(root, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		line := pid + " (p " + pid + ") S 1 " + pgrp + " 1 0 -1 0 0 0 0 0 " + utime + " " + stime + " 0 0 20 0 1 0\n"
		if err := os.WriteFile(filepath.Join(root, pid, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stat("10", "10", "100", "50") // a master
	stat("11", "10", "30", "20")  // its worker
	stat("12", "12", "999", "999")
	if err := os.MkdirAll(filepath.Join(root, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "13"), 0o755); err != nil { // gone: no stat
		t.Fatal(err)
	}
	if d, err := groupCPU(root, 10); err != nil || d != 2*time.Second {
		t.Errorf("group 10: %v, %v", d, err)
	}
	if _, err := groupCPU(root, 99); err == nil {
		t.Error("no error for a group without processes")
	}
	// This test's own group, from the real /proc.
	if _, err := groupCPU("/proc", syscall.Getpgrp()); err != nil {
		t.Errorf("own group: %v", err)
	}
}

func TestReadAnswer(t *testing.T) {
	body := strings.Repeat("x", 1024)
	in := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\ncontent-length: 1024\r\n\r\n" + body +
		"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 3\r\nRetry-After: 1\r\n\r\nno\n" +
		"HTTP/1.1 204\r\nContent-Length: 0\r\n\r\n"
	r := bufio.NewReader(strings.NewReader(in))
	for _, want := range []int{200, 429, 204} {
		code, err := readAnswer(r)
		if err != nil || code != want {
			t.Fatalf("got %d, %v; want %d", code, err, want)
		}
	}
	if _, err := readAnswer(r); err == nil {
		t.Error("no error at the end of the input")
	}
	for _, bad := range []string{
		"HTTP/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -4\r\n\r\n",
		"HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n",
		"SSH-2.0-OpenSSH\r\n",
		"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
	} {
		if _, err := readAnswer(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}

func TestSends(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		first, end, period time.Duration
		want               int
	}{
		{0, time.Second, 100 * time.Millisecond, 10},
		{50 * time.Millisecond, time.Second, 100 * time.Millisecond, 10},
		{0, 950 * time.Millisecond, 100 * time.Millisecond, 10},
		{0, 901 * time.Millisecond, 100 * time.Millisecond, 10},
		{0, 900 * time.Millisecond, 100 * time.Millisecond, 9},
		{time.Second, time.Second, 100 * time.Millisecond, 0},
		{0, time.Second, 0, 0},
	} {
		if got := sends(t0.Add(c.first), t0.Add(c.end), c.period); got != c.want {
			t.Errorf("sends(%v, %v, %v) = %d, want %d", c.first, c.end, c.period, got, c.want)
		}
	}
}

// The clients against the upstream's handler on loopback.
func TestClients(t *testing.T) {
	srv := httptest.NewServer(upstreamHandler())
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	req := request(addr, "Bearer token-x")

	lat, err := sequential(addr, req, 5, 20)
	if err != nil || len(lat) != 20 {
		t.Fatalf("sequential: %d latencies, %v", len(lat), err)
	}
	for i := 1; i < len(lat); i++ {
		if lat[i] < lat[i-1] || lat[i] <= 0 {
			t.Fatalf("latencies not sorted or not positive: %v", lat)
		}
	}

	begun := 0
	l, err := openLoop(addr, req, 200, 4, 300*time.Millisecond, func() { begun++ })
	if err != nil {
		t.Fatal(err)
	}
	// 200 a second for 0.3 s over 4 connections: 15 each.
	if begun != 1 || l.sent != 60 || l.answered != 60 || l.failed != 0 {
		t.Errorf("open loop: begun %d times, %+v", begun, l)
	}

	if _, err := sequential("127.0.0.1:1", req, 0, 1); err == nil {
		t.Error("no error for an address nobody serves")
	}
}

func TestMedianOfRuns(t *testing.T) {
	r := newResults()
	r.add(mThroughput, rowNginx, figures{"rps": 300, "non2xx": 0})
	r.add(mThroughput, rowNginx, figures{"rps": 100, "non2xx": 5})
	r.add(mThroughput, rowNginx, figures{"rps": 200, "non2xx": 0})
	f, ok := r.median(mThroughput, rowNginx)
	if !ok || f["rps"] != 200 || f["non2xx"] != 0 {
		t.Errorf("median %v, %v", f, ok)
	}
	if _, ok := r.median(mThroughput, rowAPF); ok {
		t.Error("a median of no runs")
	}
}

func TestTables(t *testing.T) {
	b := &bench{s: settings{workers: 2, connections: 64, streams: 10, duration: 10 * time.Second, rate: 5000, rateConns: 50, latencyRequests: 5000, warmup: 500},
		rows: []string{rowDirect, rowNginx, rowAPF}, measures: []string{mLatency, mThroughput, mTLS}, res: newResults()}
	b.res.add(mThroughput, rowDirect, figures{"rps": 40000, "non2xx": 0})
	b.res.add(mThroughput, rowNginx, figures{"rps": 20000, "non2xx": 0})
	b.res.add(mThroughput, rowAPF, figures{"rps": 10000, "non2xx": 12})
	b.res.add(mTLS, rowNginx, figures{"rps": 15000, "non2xx": 0})
	b.res.add(mTLS, rowAPF, figures{"rps": 12000, "non2xx": 0})
	b.res.add(mLatency, rowDirect, figures{"p50": 50e3, "p99": 100e3})
	b.res.add(mLatency, rowNginx, figures{"p50": 100e3, "p99": 200e3})
	b.res.add(mLatency, rowAPF, figures{"p50": 150e3, "p99": 12.5e6})
	var got strings.Builder
	for _, tb := range b.tables() {
		got.WriteString(tb.String())
		got.WriteString("\n")
	}
	want := `Throughput: wrk -t2 -c64 -d10s, HTTP/1.1 keep-alive, 1 KiB answers, requests answered 2xx a second:

| in front of the upstream | requests/s | of direct | of nginx |
|---|---|---|---|
| nothing (the upstream itself) | 40,000 | 1.00 | 2.00 |
| nginx | 20,000 | 0.50 | 1.00 |
| apf serve | 10,000 | 0.25 | 0.50 |

apf serve: 12 answers not 2xx (median of the runs).

TLS terminated by the proxy: wrk -t2 -c64 -d10s over HTTPS (HTTP/1.1 keep-alive), requests answered 2xx a second:

| terminating TLS | requests/s | of nginx |
|---|---|---|
| nginx | 15,000 | 1.00 |
| apf serve | 12,000 | 0.80 |

Latency at low load: one client, 5000 sequential requests on one keep-alive connection after 500:

| in front of the upstream | p50 | p99 | p50 added | p99 added | p50, of nginx's | p99, of nginx's |
|---|---|---|---|---|---|---|
| nothing (the upstream itself) | 50 µs | 100 µs | – | – | 0.50 | 0.50 |
| nginx | 100 µs | 200 µs | 50 µs | 100 µs | 1.00 | 1.00 |
| apf serve | 150 µs | 12.5 ms | 100 µs | 12.4 ms | 1.50 | 62.50 |

`
	if got.String() != want {
		t.Errorf("tables:\n%s\nwant:\n%s", got.String(), want)
	}
}

func TestFormats(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999.4: "999", 1000: "1,000", 12345.6: "12,346", 1234567: "1,234,567", -4321: "-4,321"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
	if ratio(1, true, 4, true) != "0.25" || ratio(1, false, 4, true) != "–" || ratio(1, true, 0, true) != "–" {
		t.Error("ratio")
	}
	if micro(1234*time.Microsecond) != "1,234 µs" || micro(12340*time.Microsecond) != "12.3 ms" {
		t.Error(micro(1234*time.Microsecond), micro(12340*time.Microsecond))
	}
	if v := versionLine("HAProxy version 2.6.12-1+deb12u4 2026/10/17 - https://haproxy.org/\nStatus: x\n"); v != "HAProxy version 2.6.12-1+deb12u4 2026/10/17" {
		t.Error(v)
	}
	if v := versionLine("nginx version: nginx/1.22.1\n"); v != "nginx/1.22.1" {
		t.Error(v)
	}
	if v := versionLine("wrk debian/4.1.0-3+b2 [epoll] Copyright (C) 2012 Will Glozer\nUsage: ..."); v != "wrk debian/4.1.0-3+b2" {
		t.Error(v)
	}
	if v := apfVersion("Version:            v1.2.3\nCommit:             0123456789abcdef0123\n"); v != "apf v1.2.3 (0123456789ab)" {
		t.Error(v)
	}
}

func TestParseH2load(t *testing.T) {
	out := `starting benchmark...
spawning thread #0: 32 total client(s). Timing-based test with 0s of warm-up time and 10s of main duration for measurements.
TLS Protocol: TLSv1.3
Cipher: TLS_AES_128_GCM_SHA256
Server Temp Key: X25519 253 bits
Application protocol: h2

finished in 10.00s, 12000.50 req/s, 13.20MB/s
requests: 120005 total, 120645 started, 120005 done, 119000 succeeded, 1005 failed, 0 errored, 0 timeout
status codes: 119000 2xx, 0 3xx, 1005 4xx, 0 5xx
traffic: 132.00MB (138412032) total, 1.20MB (1258291) headers (space savings 94.72%), 117.19MB (122880000) data
`
	r, err := parseH2load(out)
	if err != nil || r.failed != 1005 || r.ok != 119000 || r.seconds != 10 {
		t.Errorf("%+v, %v", r, err)
	}
	r, err = parseH2load(strings.Replace(out, "10.00s", "500.00ms", 1))
	if err != nil || r.seconds != 0.5 {
		t.Errorf("%+v, %v", r, err)
	}
	if _, err := parseH2load(strings.Replace(out, "Application protocol: h2", "Application protocol: http/1.1", 1)); err == nil {
		t.Error("no error when h2load spoke HTTP/1.1")
	}
	if _, err := parseH2load("Application protocol: h2\nconnect: Connection refused\n"); err == nil {
		t.Error("no error for output without a summary")
	}
}

func TestList(t *testing.T) {
	got, err := list("rows", " nginx,apf,nginx,", rowNames())
	if err != nil || strings.Join(got, ",") != "nginx,apf" {
		t.Errorf("%v, %v", got, err)
	}
	if _, err := list("rows", "nginx,envoy", rowNames()); err == nil || !strings.Contains(err.Error(), `"envoy"`) {
		t.Errorf("unknown row: %v", err)
	}
	if _, err := list("rows", ",", rowNames()); err == nil {
		t.Error("no error for no rows")
	}
	if !applies(mCPU, rowDirect) || applies(mTLS, rowDirect) || applies(mH2, rowGo) || !applies(mH2, rowAPF) {
		t.Error("applies")
	}
}

// TestFloorRelay: the apf-floor row's relay answers through apf's own
// server and transport what the upstream answers, and 502 when the
// upstream cannot be reached.
func TestFloorRelay(t *testing.T) {
	up := httptest.NewServer(upstreamHandler())
	defer up.Close()
	// Served by h1, as the row serves it: its requests without a body
	// have one that is not http.NoBody.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &h1.Server{Handler: floorRelay(&wire.Transport{}, strings.TrimPrefix(up.URL, "http://"))}
	go srv.Serve(l)
	defer srv.Close()
	for range 3 {
		resp, err := http.Get("http://" + l.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(body) != answerSize || resp.Header.Get("Content-Type") != "text/plain" {
			t.Fatalf("answered %d, %d bytes, %q, %v", resp.StatusCode, len(body), resp.Header.Get("Content-Type"), err)
		}
	}
	gone := httptest.NewServer(floorRelay(&wire.Transport{}, "127.0.0.1:1"))
	defer gone.Close()
	resp, err := http.Get(gone.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("an unreachable upstream: %d, want 502", resp.StatusCode)
	}
}
