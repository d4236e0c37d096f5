package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The gateway benchmarks serve the same loopback upstream (an empty JSON
// answer) through `apf serve --upstream` (token authentication, APF with
// the bootstrap configuration, the proxy) and through a plain
// httputil.ReverseProxy, with the same load generator: benchClients
// keep-alive clients sharing b.N requests. The two are measured in
// alternating bursts of one run, with the timer stopped for the plain
// proxy, so that the reported plain-ratio (the gateway's requests/s over
// the plain proxy's) compares them under the same conditions. The plain
// proxy is httputil's with its defaults, which allocate a 32 KiB copy
// buffer per response; pooled-ratio compares the gateway with the same
// plain proxy given a buffer pool like the gateway's, so that it shows
// what authentication, APF and the gateway's proxy cost on their own.

const (
	benchClients = 64
	benchBurst   = 16 * benchClients
	benchPath    = "/api/v1/namespaces/shop/pods/web"
)

// benchRig is a server and clients keeping benchClients connections to it.
type benchRig struct {
	url    string
	token  string
	client *http.Client
}

func newBenchRig(url, token string) *benchRig {
	tr := &http.Transport{MaxIdleConns: 2 * benchClients, MaxIdleConnsPerHost: 2 * benchClients, IdleConnTimeout: time.Minute}
	return &benchRig{url: url + benchPath, token: token, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// burst sends n requests from benchClients clients and returns how long
// they took and how many were answered 200 and 429.
func (r *benchRig) burst(b *testing.B, n int) (took time.Duration, ok, rejected int64) {
	var next, okN, rejN, bad atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range benchClients {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				req, _ := http.NewRequest(http.MethodGet, r.url, nil)
				req.Header.Set("Authorization", "Bearer "+r.token)
				resp, err := r.client.Do(req)
				if err != nil {
					bad.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					okN.Add(1)
				case http.StatusTooManyRequests:
					rejN.Add(1)
				default:
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := bad.Load(); n > 0 {
		b.Fatalf("%d requests failed", n)
	}
	return time.Since(start), okN.Load(), rejN.Load()
}

func benchUpstream(b *testing.B) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"Pod"}`)
	}))
}

// benchBuffers is a buffer pool for the pooled plain proxy, the same
// size of buffer as the gateway's proxy pools.
type benchBuffers struct{}

var benchBufferPool = sync.Pool{New: func() any { return new([32 << 10]byte) }}

func (benchBuffers) Get() []byte  { return benchBufferPool.Get().(*[32 << 10]byte)[:] }
func (benchBuffers) Put(b []byte) { benchBufferPool.Put((*[32 << 10]byte)(b)) }

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGateway/unsaturated: the gateway against the plain proxy.
// BenchmarkGateway/saturated: a gateway whose clients land on a level of
// one seat that rejects what does not fit, so that nearly every request
// is a 429: rejections/s and the CPU each costs.
func BenchmarkGateway(b *testing.B) {
	upstream := benchUpstream(b)
	defer upstream.Close()

	b.Run("unsaturated", func(b *testing.B) {
		gw := startGateway(b, upstream.URL, gatewayTokens(b, "carol"), func(o *Options) { o.InsecureHTTP = true })
		defer gw.stop()
		u, _ := url.Parse(upstream.URL)
		rp := httputil.NewSingleHostReverseProxy(u)
		// The same connection pool as the gateway's proxy: the default
		// transport keeps only two idle connections per host.
		rp.Transport = &http.Transport{MaxIdleConns: 1000, MaxIdleConnsPerHost: 1000, IdleConnTimeout: 90 * time.Second}
		plain := httptest.NewServer(rp)
		defer plain.Close()
		prp := httputil.NewSingleHostReverseProxy(u)
		prp.Transport = &http.Transport{MaxIdleConns: 1000, MaxIdleConnsPerHost: 1000, IdleConnTimeout: 90 * time.Second}
		prp.BufferPool = benchBuffers{}
		pooledPlain := httptest.NewServer(prp)
		defer pooledPlain.Close()
		apf, direct, pooled := newBenchRig(gw.url, "token-carol"), newBenchRig(plain.URL, "token-carol"), newBenchRig(pooledPlain.URL, "token-carol")
		apf.burst(b, benchClients)
		direct.burst(b, benchClients)
		pooled.burst(b, benchClients)
		b.ResetTimer()
		var took, plainTook, pooledTook time.Duration
		for left := b.N; left > 0; {
			n := min(left, benchBurst)
			left -= n
			d, _, rej := apf.burst(b, n)
			if rej > 0 {
				b.Fatalf("%d requests rejected: the unsaturated gateway is saturated", rej)
			}
			took += d
			b.StopTimer()
			d, _, _ = direct.burst(b, n)
			plainTook += d
			d, _, _ = pooled.burst(b, n)
			pooledTook += d
			b.StartTimer()
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/took.Seconds(), "req/s")
		b.ReportMetric(plainTook.Seconds()/took.Seconds(), "plain-ratio")
		b.ReportMetric(pooledTook.Seconds()/took.Seconds(), "pooled-ratio")
	})

	b.Run("saturated", func(b *testing.B) {
		gw := startGateway(b, upstream.URL, gatewayTokens(b, "carol"), func(o *Options) { o.InsecureHTTP = true })
		defer gw.stop()
		// carol's group lands on a one-seat level that rejects.
		for _, obj := range []struct{ res, body string }{
			{"prioritylevelconfigurations", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"tiny"},
			  "spec":{"type":"Limited","limited":{"nominalConcurrencyShares":1,"lendablePercent":0,"borrowingLimitPercent":0,"limitResponse":{"type":"Reject"}}}}`},
			{"flowschemas", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"tiny"},
			  "spec":{"priorityLevelConfiguration":{"name":"tiny"},"matchingPrecedence":500,
			   "rules":[{"subjects":[{"kind":"Group","group":{"name":"clients"}}],
			    "resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"clusterScope":true,"namespaces":["*"]}]}]}}`},
		} {
			if code, _, body := gw.do(http.MethodPost, "/apis/flowcontrol.apiserver.k8s.io/v1/"+obj.res, adminToken, []byte(obj.body)); code != http.StatusCreated {
				b.Fatalf("create %s: %d %s", obj.res, code, body)
			}
		}
		rig := newBenchRig(gw.url, "token-carol")
		if err := waitFor(5*time.Second, func() bool {
			_, _, rej := rig.burst(b, 4*benchClients)
			return rej > 0
		}); err != nil {
			b.Fatal("the tiny level never rejected")
		}
		// The load generator runs in this process too: a server that
		// answers 429 at once, with nothing in front, measures what the
		// generator and net/http cost per request, so that the difference
		// is the gateway's own cost of a rejection.
		bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		}))
		defer bare.Close()
		bareRig := newBenchRig(bare.URL, "token-carol")
		bareRig.burst(b, benchClients)
		b.ResetTimer()
		var took time.Duration
		var rejected int64
		var cpu, bareCPU time.Duration
		var bareN int64
		for left := b.N; left > 0; {
			n := min(left, benchBurst)
			left -= n
			cpu0 := cpuTime()
			d, _, rej := rig.burst(b, n)
			cpu += cpuTime() - cpu0
			took += d
			rejected += rej
			b.StopTimer()
			cpu0 = cpuTime()
			_, _, rej = bareRig.burst(b, n)
			bareCPU += cpuTime() - cpu0
			bareN += rej
			b.StartTimer()
		}
		b.StopTimer()
		b.ReportMetric(float64(rejected)/took.Seconds(), "rejections/s")
		b.ReportMetric(float64(rejected)/float64(b.N), "rejected-share")
		if rejected > 0 && bareN > 0 {
			per := float64(cpu.Nanoseconds()) / float64(b.N)
			barePer := float64(bareCPU.Nanoseconds()) / float64(bareN)
			b.ReportMetric(per, "cpu-ns/req")
			b.ReportMetric(per-barePer, "gateway-cpu-ns/req")
		}
	})
}

// BenchmarkEdge sends one request at a time through apf serve's edge (the
// chain in front of the proxy: panic recovery, the one parse into request
// attributes, the request deadline, authentication and APF) to an empty
// handler, in process: what the gateway adds to each request, without the
// network. A get, and a list whose options work estimation reads.
func BenchmarkEdge(b *testing.B) {
	upstream := benchUpstream(b)
	defer upstream.Close()
	gw := startGateway(b, upstream.URL, gatewayTokens(b, "carol"), nil)
	defer gw.stop()
	var ran int
	h := gw.server.chain(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran++ }))
	for _, c := range []struct{ name, target string }{
		{"get", "/api/v1/namespaces/shop/pods/p"},
		{"list", "/api/v1/namespaces/shop/pods?limit=500&resourceVersion=0"},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, c.target, nil)
			r.Header.Set("Authorization", "Bearer token-carol")
			w := &edgeWriter{h: http.Header{}}
			ran = 0
			if h.ServeHTTP(w, r); ran != 1 || w.code != 0 {
				b.Fatalf("%s did not reach the handler (answered %d)", c.target, w.code)
			}
			b.ReportAllocs()
			for b.Loop() {
				// Each request starts with an empty header, as
				// net/http gives it.
				clear(w.h)
				h.ServeHTTP(w, r)
			}
		})
	}
}

// edgeWriter is a ResponseWriter that keeps only a status the edge wrote
// itself (a refusal).
type edgeWriter struct {
	h    http.Header
	code int
}

func (w *edgeWriter) Header() http.Header         { return w.h }
func (w *edgeWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *edgeWriter) WriteHeader(code int)        { w.code = code }
