package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkProxy compares requests per second through New with a plain
// httputil.NewSingleHostReverseProxy to the same loopback upstream (an
// empty 200), 64 keep-alive clients, in alternating bursts so that both
// see the same machine conditions. plain-ratio is the proxy's rate over
// the plain one's (1 means the proxy's own settings cost nothing).
func BenchmarkProxy(b *testing.B) {
	const clients = 64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	u := mustURL(b, up.URL)

	ours := newProxy(b, Options{Upstream: u, Credentials: func(*http.Request) string { return "Bearer t" }})
	plain := httputil.NewSingleHostReverseProxy(u)
	// The default transport keeps only two idle connections per host;
	// the plain proxy gets as many as ours so that only the proxies differ.
	pt := http.DefaultTransport.(*http.Transport).Clone()
	pt.MaxIdleConnsPerHost = 1000
	plain.Transport = pt
	plain.ErrorLog = nil

	fronts := [2]*httptest.Server{httptest.NewServer(ours), httptest.NewServer(plain)}
	defer fronts[0].Close()
	defer fronts[1].Close()
	ct := &http.Transport{MaxIdleConnsPerHost: clients, MaxIdleConns: 2 * clients}
	defer ct.CloseIdleConnections()
	client := &http.Client{Transport: ct}

	var failed atomic.Int64
	burst := func(url string, n int) time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(n) {
					resp, err := client.Get(url)
					if err != nil {
						failed.Add(1)
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						failed.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}

	const burstSize = 2048
	var spent [2]time.Duration
	b.ResetTimer()
	for done, round := 0, 0; done < b.N; round++ {
		n := min(burstSize, b.N-done)
		// Alternate which side goes first.
		first := round % 2
		spent[first] += burst(fronts[first].URL+"/api/v1/pods", n)
		spent[1-first] += burst(fronts[1-first].URL+"/api/v1/pods", n)
		done += n
	}
	b.StopTimer()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d requests failed", f)
	}
	oursRate := float64(b.N) / spent[0].Seconds()
	plainRate := float64(b.N) / spent[1].Seconds()
	b.ReportMetric(oursRate, "proxy-req/s")
	b.ReportMetric(plainRate, "plain-req/s")
	b.ReportMetric(oursRate/plainRate, "plain-ratio")
}
