package proxies

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseWrk(t *testing.T) {
	out := `Running 20s test @ http://127.0.0.1:4000/work
  2 threads and 200 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   206.52ms   20.12ms 400.00ms   90.00%
  16000 requests in 20.00s, 2.00MB read
  Non-2xx or 3xx responses: 4000
Requests/sec:    800.00
`
	r, err := ParseWrk(out)
	if err != nil || r.Total != 16000 || r.Non2xx != 4000 || r.Seconds != 20 {
		t.Errorf("%+v, %v", r, err)
	}
	r, err = ParseWrk("  500 requests in 500.00ms, 1KB read\n")
	if err != nil || r.Total != 500 || r.Non2xx != 0 || r.Seconds != 0.5 {
		t.Errorf("%+v, %v", r, err)
	}
	r, err = ParseWrk("  600 requests in 1.00m, 1KB read\n")
	if err != nil || r.Seconds != 60 {
		t.Errorf("%+v, %v", r, err)
	}
	if _, err := ParseWrk("unable to connect to 127.0.0.1:4000 Connection refused\n"); err == nil {
		t.Error("no error for output without a count")
	}
	if _, err := ParseWrk("  0 requests in 0.00s, 0B read\n"); err == nil {
		t.Error("no error for a run of no time")
	}
}

func TestMedianPercentileTail(t *testing.T) {
	v := []float64{3, 1, 2}
	if m := Median(v); m != 2 {
		t.Errorf("median %v", m)
	}
	if v[0] != 3 {
		t.Error("Median sorted its argument")
	}
	if m := Median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median of four %v", m)
	}
	if Median(nil) != 0 {
		t.Error("median of nothing")
	}
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if p50, p99 := Percentile(d, 0.5), Percentile(d, 0.99); p50 != 50*time.Millisecond || p99 != 99*time.Millisecond {
		t.Errorf("p50 %v, p99 %v", p50, p99)
	}
	if Percentile(nil, 0.99) != 0 {
		t.Error("percentile of nothing")
	}
	if Tail("abcdef", 3) != "...def" || Tail("abc", 3) != "abc" {
		t.Error("tail")
	}
}

func TestConfigs(t *testing.T) {
	n := Nginx{Workers: 2, Listen: "127.0.0.1:1", Upstream: "127.0.0.1:2"}.Config("/d")
	for _, want := range []string{"worker_processes 2;", "    listen 127.0.0.1:1;\n", "server 127.0.0.1:2; keepalive 256;", "proxy_http_version 1.1;", "access_log off;"} {
		if !strings.Contains(n, want) {
			t.Errorf("nginx.conf lacks %q:\n%s", want, n)
		}
	}
	if strings.Contains(n, "ssl") {
		t.Errorf("plain nginx.conf has TLS:\n%s", n)
	}
	n = Nginx{Workers: 2, Listen: "127.0.0.1:1", Upstream: "127.0.0.1:2", Cert: "/c.pem", Key: "/k.pem", HTTP2: true}.Config("/d")
	if !strings.Contains(n, "listen 127.0.0.1:1 ssl http2;\n    ssl_certificate /c.pem;\n    ssl_certificate_key /k.pem;\n") {
		t.Errorf("TLS nginx.conf:\n%s", n)
	}
	h := HAProxy{Workers: 2, Listen: "127.0.0.1:1", Upstream: "127.0.0.1:2", Frontend: "  x y\n"}.Config()
	if !strings.Contains(h, "nbthread 2\n") || !strings.Contains(h, "  bind 127.0.0.1:1\n  x y\n  default_backend service\n") ||
		!strings.Contains(h, "http-reuse always") || !strings.Contains(h, "server s1 127.0.0.1:2 ") {
		t.Errorf("haproxy.cfg:\n%s", h)
	}
	h = HAProxy{Workers: 2, Listen: "127.0.0.1:1", Upstream: "127.0.0.1:2", PEM: "/p.pem", ALPN: "h2,http/1.1"}.Config()
	if !strings.Contains(h, "  bind 127.0.0.1:1 ssl crt /p.pem alpn h2,http/1.1\n  default_backend") {
		t.Errorf("TLS haproxy.cfg:\n%s", h)
	}
}

func TestWriteTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := WriteTokens(path, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "token-a,a,uid-0\ntoken-b,b,uid-1\n" {
		t.Errorf("%q, %v", b, err)
	}
	if Bearer("a") != "Bearer token-a" {
		t.Error(Bearer("a"))
	}
}

func TestProcExitAndStop(t *testing.T) {
	dir := t.TempDir()
	p, err := Start("the helper", exec.Command("sh", "-c", "echo started; exit 3"), "", filepath.Join(dir, "a.log"))
	if err != nil {
		t.Fatal(err)
	}
	err = p.Ready(time.Minute, func() error { return os.ErrNotExist })
	if err == nil || !strings.Contains(err.Error(), "the helper exited") || !strings.Contains(err.Error(), "started") {
		t.Errorf("Ready of an exited process: %v", err)
	}
	p.Stop()

	// Stop ends the whole group: the shell and the sleep it started.
	p, err = Start("the helper", exec.Command("sh", "-c", "sleep 600 & wait"), "", filepath.Join(dir, "b.log"))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	if err := p.Ready(time.Minute, func() error { calls++; return nil }); err != nil || calls != 1 {
		t.Errorf("Ready: %v after %d probes", err, calls)
	}
	p.Stop()
	select {
	case <-p.Done():
	default:
		t.Error("Stop returned before the process exited")
	}
	live.Lock()
	n := len(live.procs)
	live.Unlock()
	if n != 0 {
		t.Errorf("%d processes still recorded as live", n)
	}
}
