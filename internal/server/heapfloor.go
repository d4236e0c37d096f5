package server

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The collector's pace on the data path.
//
// Go's collector starts a cycle whenever the heap has grown by GOGC per
// cent (100) of what the cycle before left live. A gateway keeps little
// live (its configuration, connections and buffers: a few MiB) and
// allocates a few KiB a request, so at tens of thousands of requests a
// second it would collect some twenty times a second, each cycle's fixed
// work (stacks, globals, the write barrier on, a processor for marking)
// paid again and again for a heap that hardly changes. While the loops
// serve, the collector is given a floor instead: the heap may grow to
// heapFloor before a cycle, however little was live, as a heap of
// heapFloor live would; past it, the usual GOGC of 100 applies. So the
// process uses up to heapFloor more memory than it would, and collects
// at most once per heapFloor allocated. With GOGC set in the
// environment, the operator's choice stands and nothing changes.

// heapFloor is the smallest heap goal kept (see above).
const heapFloor = 64 << 20

// heapFloorPeriod is how often the live heap is read again.
const heapFloorPeriod = time.Second

// gcPercentFor is the GOGC that sets the heap goal, live*(1+p/100), to
// floor at least, and is never below the default 100 (nor above 10,000,
// for a live heap near zero).
func gcPercentFor(live, floor uint64) int {
	if live == 0 {
		return 10000
	}
	p := 100
	if live*2 < floor {
		p = int((floor - live) * 100 / live)
	}
	return min(p, 10000)
}

// keepHeapFloor holds the heap goal at heapFloor or more until ctx ends,
// then gives back GOGC's default. It does nothing when GOGC is set.
func keepHeapFloor(ctx context.Context) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	set := 100
	defer func() {
		if set != 100 {
			debug.SetGCPercent(100)
		}
	}()
	t := time.NewTicker(heapFloorPeriod)
	defer t.Stop()
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			// Set again only on a change of a tenth or more.
			if p := gcPercentFor(sample[0].Value.Uint64(), heapFloor); p*10 < set*9 || p*10 > set*11 {
				debug.SetGCPercent(p)
				set = p
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
