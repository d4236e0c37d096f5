package sim

import (
	"context"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// mixedWorkload is examples/sim/flood.yaml (a flood, users, controllers,
// leases, kubelets with watches, probes) stretched to about n requests.
func mixedWorkload(tb testing.TB, n int64) *Workload {
	tb.Helper()
	w, err := LoadWorkload("../examples/sim/flood.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	src, err := w.NewSource()
	if err != nil {
		tb.Fatal(err)
	}
	w.Duration = Duration(float64(w.Duration) * float64(n) / float64(src.Total()))
	return w
}

// liveHeap reads the heap in use by reachable objects as of the last
// garbage collection.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// simulate runs w and returns the result, the wall time and the peak
// live heap, sampled through Progress every 65536 arrivals.
func simulate(tb testing.TB, w *Workload) (*Result, time.Duration, uint64) {
	src, err := w.NewSource()
	if err != nil {
		tb.Fatal(err)
	}
	runtime.GC()
	var peak uint64
	cfg := Config{Progress: func(done, total int64) { peak = max(peak, liveHeap()) }}
	start := time.Now()
	res, err := Run(context.Background(), cfg, src)
	if err != nil {
		tb.Fatal(err)
	}
	return res, time.Since(start), peak
}

// BenchmarkSim1M simulates a million requests of a mixed workload
// (go test ./sim -run '^$' -bench Sim1M -benchtime 1x).
//
// Memory is checked by running the same workload for a tenth of the
// requests first: the run's live heap (what the last garbage collection
// found reachable, read every 65536 arrivals) must not grow with the
// number of requests, only with the requests in flight, which the two
// runs share. The benchmark fails if the 1M run's peak is more than
// twice the 100k run's plus 8 MiB (the series, one point per second,
// are the one part that grows with the simulated time).
func BenchmarkSim1M(b *testing.B) {
	const n = 1_000_000
	_, _, small := simulate(b, mixedWorkload(b, n/10))
	w := mixedWorkload(b, n)
	b.ResetTimer()
	for range b.N {
		res, wall, peak := simulate(b, w)
		b.ReportMetric(float64(res.Requests)/wall.Seconds(), "requests/s")
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(float64(peak)/(1<<20), "peak-live-MiB")
		b.ReportMetric(float64(small)/(1<<20), "peak-live-MiB-100k")
		if res.Requests < n*9/10 {
			b.Fatalf("simulated %d requests", res.Requests)
		}
		if peak > 2*small+8<<20 {
			b.Errorf("peak live heap %d B for 1M requests, %d B for 100k: memory grows with the run", peak, small)
		}
	}
}
