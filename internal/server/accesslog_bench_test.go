package server

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkGatewayAccessLog serves the gateway benchmark's upstream
// through two gateways, one without access log and one writing every
// request's line in JSON to a file (sample 1), with the same load
// generator in alternating bursts of one run (as BenchmarkGateway
// compares the gateway with a plain proxy). log-ratio is the logging
// gateway's requests/s over the other's; cpu-ns/req is the whole
// process's CPU per request in the bursts of each (clients included).
func BenchmarkGatewayAccessLog(b *testing.B) {
	upstream := benchUpstream(b)
	defer upstream.Close()
	tokens := gatewayTokens(b, "carol")
	off := startGateway(b, upstream.URL, tokens, func(o *Options) { o.InsecureHTTP = true })
	defer off.stop()
	logFile := filepath.Join(b.TempDir(), "access.log")
	on := startGateway(b, upstream.URL, tokens, func(o *Options) {
		o.InsecureHTTP = true
		o.AccessLog.Destination, o.AccessLog.Format, o.AccessLog.Sample = logFile, "json", 1
	})
	defer on.stop()
	plain, logged := newBenchRig(off.url, "token-carol"), newBenchRig(on.url, "token-carol")
	plain.burst(b, benchClients)
	logged.burst(b, benchClients)
	time.Sleep(2 * flushInterval)
	before := fileSize(logFile)
	b.ResetTimer()
	var offTook, onTook, offCPU, onCPU time.Duration
	// The timer runs for the logging gateway's bursts only; which of the
	// two goes first alternates.
	runOn := func(n int) {
		cpu0 := cpuTime()
		d, _, rej := logged.burst(b, n)
		onCPU += cpuTime() - cpu0
		onTook += d
		if rej > 0 {
			b.Fatalf("%d requests rejected: the gateway is saturated", rej)
		}
	}
	runOff := func(n int) {
		b.StopTimer()
		cpu0 := cpuTime()
		d, _, rej := plain.burst(b, n)
		offCPU += cpuTime() - cpu0
		offTook += d
		if rej > 0 {
			b.Fatalf("%d requests rejected: the gateway is saturated", rej)
		}
		b.StartTimer()
	}
	for i, left := 0, b.N; left > 0; i++ {
		n := min(left, benchBurst)
		left -= n
		if i%2 == 0 {
			runOn(n)
			runOff(n)
		} else {
			runOff(n)
			runOn(n)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/onTook.Seconds(), "req/s")
	b.ReportMetric(offTook.Seconds()/onTook.Seconds(), "log-ratio")
	b.ReportMetric(float64(onCPU.Nanoseconds())/float64(b.N), "cpu-ns/req-on")
	b.ReportMetric(float64(offCPU.Nanoseconds())/float64(b.N), "cpu-ns/req-off")
	on.stop() // writes out the buffered lines
	if grew := fileSize(logFile) - before; grew <= 0 {
		b.Fatal("the access log wrote nothing")
	} else {
		b.ReportMetric(float64(grew)/float64(b.N), "log-B/req")
	}
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// BenchmarkEdgeAccessLog is BenchmarkEdge's get through the edge chain
// without the access log, with it (JSON to a file, every request) and
// with it sampling none: what the log adds to a request in process,
// without the network.
func BenchmarkEdgeAccessLog(b *testing.B) {
	upstream := benchUpstream(b)
	defer upstream.Close()
	tokens := gatewayTokens(b, "carol")
	for _, c := range []struct {
		name string
		tune func(*Options)
	}{
		{"off", nil},
		{"json-file", func(o *Options) {
			o.AccessLog.Destination, o.AccessLog.Format, o.AccessLog.Sample = filepath.Join(b.TempDir(), "access.log"), "json", 1
		}},
		{"text-file", func(o *Options) {
			o.AccessLog.Destination, o.AccessLog.Format, o.AccessLog.Sample = filepath.Join(b.TempDir(), "access.log"), "text", 1
		}},
		{"sample-0", func(o *Options) {
			o.AccessLog.Destination, o.AccessLog.Format, o.AccessLog.Sample = filepath.Join(b.TempDir(), "access.log"), "json", 0
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			gw := startGateway(b, upstream.URL, tokens, c.tune)
			defer gw.stop()
			var ran int
			h := gw.server.chain(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran++ }))
			r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/shop/pods/p", nil)
			r.Header.Set("Authorization", "Bearer token-carol")
			w := &edgeWriter{h: http.Header{}}
			if h.ServeHTTP(w, r); ran != 1 || w.code != 0 {
				b.Fatalf("the request did not reach the handler (answered %d)", w.code)
			}
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, r)
			}
		})
	}
}
