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
// share, as in TestGatewayFairness. The process's memory, sampled every
// second, stops growing once the queues are full: the peak of the last
// third of the run stays within 20% (plus a small allowance) of the peak
// of the first third. The mice get no 429 and keep their p99 within 3x of
// their p99 alone. The rejections are cheap: the test reports them per
// second and the CPU the whole process spent per rejection.
func TestOverload(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for a minute")
	}
	run := 60 * time.Second
	if os.Getenv("APF_SOAK") != "" {
		run = 10 * time.Minute
	}
	// Plain HTTP, as in BenchmarkGateway: the load generator closes 429
	// bodies unread, so the client transport reconnects after each
	// rejection, and the TLS handshakes would swamp the CPU figures.
	rig := newFairnessRig(t, true)
	gw, capacity, mice := rig.gw, rig.capacity, rig.mice
	t.Logf("the flood runs %v", run)

	alone, rejAlone, badAlone := mice(3 * time.Second)
	if rejAlone != 0 || badAlone != 0 || len(alone) < 50 {
		t.Fatalf("mice alone: %d answers, %d rejected, %d bad", len(alone), rejAlone, badAlone)
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
	flood := &loadResult{}
	done := make(chan struct{})
	// Ten times the capacity from closed-loop workers, each at most 20
	// requests/s, as in TestGatewayFairness.
	workers := int(10*capacity/20) + 1
	go func() {
		defer close(done)
		end := time.Now().Add(run)
		var wg sync.WaitGroup
		for i := range workers {
			wg.Go(func() {
				flood.run(gw, "token-flood", time.Duration(i)*50*time.Millisecond/time.Duration(workers), 50*time.Millisecond, end, false)
			})
		}
		wg.Wait()
	}()
	time.Sleep(time.Second) // let the flood fill its queues
	loaded, rejLoaded, badLoaded := mice(run - 2*time.Second)
	<-done
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
	bareCPU0, bareStart := cpuTime(), time.Now()
	bareEnd := bareStart.Add(5 * time.Second)
	var bareWG sync.WaitGroup
	for i := range workers {
		bareWG.Go(func() {
			bareFlood.run(bareSrv, "token-flood", time.Duration(i)*50*time.Millisecond/time.Duration(workers), 50*time.Millisecond, bareEnd, false)
		})
	}
	bareWG.Wait()
	bareCPU := cpuTime() - bareCPU0
	bareN := max(bareFlood.rejected, 1)

	pAlone, pLoaded := p99of(alone), p99of(loaded)
	rejPerSec := float64(flood.rejected) / took.Seconds()
	t.Logf("mice: alone p99 %v over %d, with the flood p99 %v over %d, %d rejected, %d bad",
		pAlone, len(alone), pLoaded, len(loaded), rejLoaded, badLoaded)
	answered := len(flood.latencies) + flood.rejected + len(loaded) + rejLoaded
	perReq := cpu / time.Duration(max(answered, 1))
	barePer := bareCPU / time.Duration(bareN)
	t.Logf("flood: %d served (%.0f/s), %d rejected (%.0f/s), %d bad; the process used %.2f CPU cores: %v per request answered, all its work included (served requests, the upstream, the clients); the same clients against a bare 429 server: %v per request; the gateway's own cost per answer: %v",
		len(flood.latencies), float64(len(flood.latencies))/took.Seconds(), flood.rejected, rejPerSec, flood.bad,
		cpu.Seconds()/took.Seconds(), perReq.Round(time.Microsecond), barePer.Round(time.Microsecond), (perReq - barePer).Round(time.Microsecond))
	if rejLoaded != 0 || badLoaded != 0 {
		t.Errorf("mice with the flood: %d rejected, %d bad answers", rejLoaded, badLoaded)
	}
	if pLoaded > 3*pAlone {
		t.Errorf("mice p99 %v with the flood, more than 3x their %v alone", pLoaded, pAlone)
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

	if err := waitFor(5*time.Second, func() bool {
		for _, v := range gauges(t, gw, "apiserver_flowcontrol_current_executing_", "apiserver_flowcontrol_current_inqueue_") {
			if v != 0 {
				return false
			}
		}
		return true
	}); err != nil {
		t.Errorf("requests still executing or queued after the run")
	}
}
