package fairqueue

import (
	"testing"
	"time"
)

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
			arrive1(qs, now, r)
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
			if arrive1(qs, t0, r) == Dispatched {
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
			if arrive1(qs, now, r) == Dispatched {
				running = append(running, r)
			}
		}
	})
}

// flowHash spreads flow numbers over 64 bits (splitmix64's finalizer).
func flowHash(i int) uint64 {
	z := uint64(i) + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
