package peer

import (
	"runtime"
	"sort"
	"sync/atomic"
	"time"
)

// crossCoreRoundTrip measures how long one cache line takes to go from one
// processor to another and back: two goroutines, on two processors, pass a
// counter to and fro. It returns the median of five rounds in nanoseconds,
// or 0 with fewer than two processors (or if the partner never answers).
//
// The saturated scenario reports it beside its time, read before the run
// and after it (xcore-rtt-ns, xcore-rtt-after-ns). The two processors of a
// virtual machine are not always the same two cores: on a two-processor
// cloud VM the round trip has been seen at about 55 ns for minutes at a
// time, then at about 320 ns, as if the host had moved one of them to a
// distant core, and back. Every request of the saturated scenario hands
// the level's lock, the queue set's lines and the goroutine it wakes from
// one processor to the other, so its time follows the round trip
// (docs/benchmarks.md, "The saturated scenario and the machine"). The two
// figures say which kind of machine a run had; cmd/peermodes splits the
// runs by them.
func crossCoreRoundTrip() float64 {
	if runtime.GOMAXPROCS(0) < 2 {
		return 0
	}
	const rounds, trips = 5, 10_000
	var line struct {
		_ [64]byte
		n atomic.Int64
		_ [56]byte
	}
	var stop atomic.Bool
	done := make(chan struct{})
	// The partner answers odd values with the next even one until told to
	// stop; both sides look at stop while they wait, so that a partner the
	// scheduler never runs cannot hang the benchmark.
	go func() {
		defer close(done)
		for want := int64(1); ; want += 2 {
			for line.n.Load() != want {
				if stop.Load() {
					return
				}
			}
			line.n.Store(want + 1)
		}
	}()
	var times [rounds]float64
	deadline := time.Now().Add(time.Second)
	v := int64(0)
	for r := range times {
		start := time.Now()
		for range trips {
			line.n.Store(v + 1)
			for spins := 0; line.n.Load() != v+2; spins++ {
				if spins&0xfff == 0xfff && time.Now().After(deadline) {
					stop.Store(true)
					<-done
					return 0
				}
			}
			v += 2
		}
		times[r] = float64(time.Since(start).Nanoseconds()) / trips
	}
	stop.Store(true)
	<-done
	return median(times[:])
}

// median returns the middle value of xs (sorted in place).
func median(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}
