// The overload test measures latency, memory and CPU under load: make
// test runs it in its e2e step, without -race.

//go:build !race

package server

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// memSample is the process's memory at one moment.
type memSample struct {
	heapInuse, rss uint64 // bytes
}

// vmRSS reads the process's resident set size from /proc/self/status;
// 0 where there is no such file.
func vmRSS() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// peaks returns the largest heap and RSS of samples.
func peaks(samples []memSample) (heap, rss uint64) {
	for _, s := range samples {
		heap, rss = max(heap, s.heapInuse), max(rss, s.rss)
	}
	return
}

const mib = 1 << 20

// TestOverload: one flow sends ten times the capacity of its level for
// 60 s (10 min with APF_SOAK=1) beside six mice well below their fair
// share and their twins, as in TestGatewayFairness. The process's memory,
// sampled every second, stops growing once the queues are full: the peak
// of the last third of the run stays within 20% (plus a small allowance)
// of the peak of the first third. The mice get no 429 and take little
// longer than their twins (checkMiceLatency), measured at the same
// moments all along the run, so that whatever else the machine does
// meanwhile weighs on both alike. The rejections are cheap: the test
// reports them per second and the CPU the whole process spent per
// rejection.
func TestOverload(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for a minute")
	}
	length := 60 * time.Second
	if os.Getenv("APF_SOAK") != "" {
		length = 10 * time.Minute
	}
	// Plain HTTP, as in BenchmarkGateway: a new connection costs a TLS
	// handshake, which would swamp the CPU figures wherever a client
	// reconnects.
	rig := newFairnessRig(t, true)
	gw := rig.gw
	t.Logf("the flood runs %v", length)

	alone := rig.run(3 * time.Second)
	if alone.mice.rejected != 0 || alone.mice.bad != 0 || len(alone.mice.latencies) < 50 {
		t.Fatalf("mice alone: %d answers, %d rejected, %d bad", len(alone.mice.latencies), alone.mice.rejected, alone.mice.bad)
	}

	// Memory, every second while the flood runs.
	var samples []memSample
	stopSampling := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				samples = append(samples, memSample{heapInuse: ms.HeapInuse, rss: vmRSS()})
			}
		}
	})

	cpu0, start := cpuTime(), time.Now()
	stopFlood := rig.startFlood()
	beside := rig.run(length - time.Since(start))
	flood := stopFlood()
	cpu, took := cpuTime()-cpu0, time.Since(start)
	close(stopSampling)
	sampler.Wait()

	// The load generator runs in this process: the same flood against a
	// server that answers 429 at once, with nothing in front of it,
	// measures what the generator and net/http cost per request, so
	// that the difference is the gateway's own cost.
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprintln(w, "Too many requests, please try again later.")
	}))
	defer bare.Close()
	bareSrv := &e2eServer{t: t, url: bare.URL, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	bareFlood := &loadResult{}
	workers := rig.floodWorkers()
	bareCPU0, bareStart := cpuTime(), time.Now()
	bareStop := until(bareStart.Add(5 * time.Second))
	var bareWG sync.WaitGroup
	for i := range workers {
		bareWG.Go(func() {
			repeat(time.Duration(i)*50*time.Millisecond/time.Duration(workers), 50*time.Millisecond, bareStop, false, func() {
				bareFlood.send(bareSrv, "token-flood")
			})
		})
	}
	bareWG.Wait()
	bareCPU := cpuTime() - bareCPU0
	bareN := max(bareFlood.rejected, 1)

	rejPerSec := float64(flood.rejected) / took.Seconds()
	t.Logf("mice: alone p99 %v over %d, beside the flood p99 %v over %d, %d rejected, %d bad",
		p99of(alone.mice.latencies), len(alone.mice.latencies), p99of(beside.mice.latencies), len(beside.mice.latencies), beside.mice.rejected, beside.mice.bad)
	answered := len(flood.latencies) + flood.rejected + len(beside.mice.latencies) + beside.mice.rejected + len(beside.twins.latencies) + beside.twins.rejected
	perReq := cpu / time.Duration(max(answered, 1))
	barePer := bareCPU / time.Duration(bareN)
	t.Logf("flood: %d workers, %d served (%.0f/s), %d rejected (%.0f/s), %d bad; the process used %.2f CPU cores: %v per request answered, all its work included (served requests, the upstream, the clients); the same clients against a bare 429 server: %v per request; the gateway's own cost per answer: %v",
		workers, len(flood.latencies), float64(len(flood.latencies))/took.Seconds(), flood.rejected, rejPerSec, flood.bad,
		cpu.Seconds()/took.Seconds(), perReq.Round(time.Microsecond), barePer.Round(time.Microsecond), (perReq - barePer).Round(time.Microsecond))
	if beside.mice.rejected != 0 || beside.mice.bad != 0 || beside.twins.rejected != 0 || beside.twins.bad != 0 {
		t.Errorf("beside the flood: mice %d rejected, %d bad; twins %d rejected, %d bad", beside.mice.rejected, beside.mice.bad, beside.twins.rejected, beside.twins.bad)
	}
	if len(beside.mice.latencies) >= 60 && len(beside.twins.latencies) >= 60 {
		checkMiceLatency(t, beside)
	}
	if flood.rejected == 0 || flood.bad != 0 {
		t.Errorf("flood: %d rejected, %d bad", flood.rejected, flood.bad)
	}
	// A rejection must be cheap: the gateway's own cost per answer (an
	// upper bound for a rejection, since a tenth of the answers are
	// proxied) stays under 1 ms, or a small machine's 2 cores would
	// saturate at 2,000 rejections/s. BenchmarkGateway/saturated
	// measures it precisely.
	if own := perReq - barePer; own > time.Millisecond {
		t.Errorf("the gateway spends %v of CPU per answer under overload", own)
	}

	third := len(samples) / 3
	if third < 3 {
		t.Fatalf("only %d memory samples", len(samples))
	}
	firstHeap, firstRSS := peaks(samples[:third])
	lastHeap, lastRSS := peaks(samples[len(samples)-third:])
	peakHeap, peakRSS := peaks(samples)
	t.Logf("memory over %d samples: peak heap in use %.1f MiB (first third %.1f, last third %.1f), peak RSS %.1f MiB (first third %.1f, last third %.1f)",
		len(samples), float64(peakHeap)/mib, float64(firstHeap)/mib, float64(lastHeap)/mib,
		float64(peakRSS)/mib, float64(firstRSS)/mib, float64(lastRSS)/mib)
	if float64(lastHeap) > 1.2*float64(firstHeap)+4*mib {
		t.Errorf("the heap in use keeps growing: peak %.1f MiB in the last third, %.1f MiB in the first", float64(lastHeap)/mib, float64(firstHeap)/mib)
	}
	if firstRSS > 0 && float64(lastRSS) > 1.2*float64(firstRSS)+8*mib {
		t.Errorf("the RSS keeps growing: peak %.1f MiB in the last third, %.1f MiB in the first", float64(lastRSS)/mib, float64(firstRSS)/mib)
	}

	checkDrained(t, gw)
}
