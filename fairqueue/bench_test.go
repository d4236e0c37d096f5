package fairqueue

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkLevel measures one request's trip through a Level: Wait, then
// Done. The configuration is the default queuing level (64 queues, hands
// of 8, queue length limit 50).
//
//   - uncontended: one goroutine; the limit is never reached, so every
//     request is dispatched on arrival.
//   - parallel: GOMAXPROCS goroutines, still never reaching the limit: the
//     cost of sharing the mutex.
//   - saturated: a limit of 4 seats and 64 goroutines sending requests of
//     1,000 flows, so nearly every request queues and is woken by another
//     goroutine's Done.
func BenchmarkLevel(b *testing.B) {
	cfg := Config{ConcurrencyLimit: 1000, Queues: 64, HandSize: 8, QueueLengthLimit: 50}
	ctx := context.Background()

	b.Run("uncontended", func(b *testing.B) {
		l := mustLevel(b, cfg)
		r := &Request{Work: WorkEstimate{InitialSeats: 1}}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			r.Hash = flowHash(i % 1000)
			if err := l.Wait(ctx, r); err != nil {
				b.Fatal(err)
			}
			l.Done(r)
		}
	})

	b.Run("parallel", func(b *testing.B) {
		l := mustLevel(b, cfg)
		var g atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			r := &Request{Work: WorkEstimate{InitialSeats: 1}}
			i := int(g.Add(1)) * 7919
			for pb.Next() {
				i++
				r.Hash = flowHash(i % 1000)
				if err := l.Wait(ctx, r); err != nil {
					b.Error(err)
					return
				}
				l.Done(r)
			}
		})
	})

	b.Run("saturated", func(b *testing.B) {
		sat := cfg
		sat.ConcurrencyLimit = 4
		l := mustLevel(b, sat)
		var g atomic.Int64
		var rejected atomic.Int64
		b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			r := &Request{Work: WorkEstimate{InitialSeats: 1}}
			i := int(g.Add(1)) * 7919
			for pb.Next() {
				i++
				r.Hash = flowHash(i % 1000)
				if err := l.Wait(ctx, r); err != nil {
					rejected.Add(1)
					continue
				}
				l.Done(r)
			}
		})
		if st := l.Stats(); st.SeatsInUse != 0 || !l.IsIdle() {
			b.Fatalf("not idle: %+v", st)
		}
		b.ReportMetric(float64(rejected.Load())/float64(b.N), "rejected/op")
	})
}

// BenchmarkQueueSet measures the core alone (no lock, no clock): an
// arrival dispatched at once and its completion, and an arrival that
// queues behind a full level plus the completion that dispatches it.
func BenchmarkQueueSet(b *testing.B) {
	b.Run("dispatch-finish", func(b *testing.B) {
		qs, _ := New(Config{ConcurrencyLimit: 1000, Queues: 64, HandSize: 8, QueueLengthLimit: 50}, t0)
		r := &Request{Work: WorkEstimate{InitialSeats: 1}}
		now := t0
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			now = now.Add(time.Microsecond)
			r.Hash = flowHash(i % 1000)
			qs.Arrive(now, r)
			qs.Finish(now, r, nil)
		}
	})
	b.Run("queue-dispatch", func(b *testing.B) {
		qs, _ := New(Config{ConcurrencyLimit: 4, Queues: 64, HandSize: 8, QueueLengthLimit: 50}, t0)
		rs := make([]*Request, 64)
		for i := range rs {
			rs[i] = &Request{Hash: flowHash(i), Work: WorkEstimate{InitialSeats: 1}}
		}
		// Four run; the others wait. Each round finishes the oldest
		// running request (dispatching a waiter) and re-arrives it.
		running := make([]*Request, 0, 64)
		for _, r := range rs {
			if qs.Arrive(t0, r) == Dispatched {
				running = append(running, r)
			}
		}
		buf := make([]*Request, 0, 8)
		now := t0
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			now = now.Add(time.Microsecond)
			r := running[0]
			running = append(running[:0], running[1:]...)
			var d []*Request
			d, _ = qs.Finish(now, r, buf[:0])
			running = append(running, d...)
			r.Hash = flowHash(i % 1000)
			if qs.Arrive(now, r) == Dispatched {
				running = append(running, r)
			}
		}
	})
}

func mustLevel(b *testing.B, cfg Config) *Level {
	l, err := NewLevel(cfg, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// flowHash spreads flow numbers over 64 bits (splitmix64's finalizer).
func flowHash(i int) uint64 {
	z := uint64(i) + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
