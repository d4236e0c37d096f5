package fairqueue

import (
	"testing"
	"time"
)

// QueueIndex names the queue the hand chose, for a queued, a dispatched
// and a queue-full request alike, and -1 where no queue is chosen.
func TestRequestQueueIndex(t *testing.T) {
	var zero Request
	if zero.QueueIndex() != -1 {
		t.Fatalf("a request that never arrived: queue %d", zero.QueueIndex())
	}
	// Hands of one queue out of four: the hash picks the queue.
	qs := mustNew(t, Config{ConcurrencyLimit: 1, Queues: 4, HandSize: 1, QueueLengthLimit: 1})
	const hash = 12345
	a := &Request{Hash: hash, Work: WorkEstimate{InitialSeats: 1}}
	b := &Request{Hash: hash, Work: WorkEstimate{InitialSeats: 1}}
	c := &Request{Hash: hash, Work: WorkEstimate{InitialSeats: 1}}
	if arrive1(qs, t0, a) != Dispatched || arrive1(qs, t0, b) != Queued || arrive1(qs, t0, c) != Rejected {
		t.Fatal("the setup did not dispatch, queue and reject")
	}
	want := int(qs.dealer.DealIntoHand(hash, nil)[0])
	for name, r := range map[string]*Request{"dispatched": a, "queued": b, "queue-full": c} {
		if got := r.QueueIndex(); got != want {
			t.Errorf("%s request: queue %d, want %d", name, got, want)
		}
	}
	if b.queue == nil || b.queue.index != want {
		t.Errorf("the queued request waits in another queue than the one it names")
	}

	for _, cfg := range []Config{{ConcurrencyLimit: 1, Queues: -1}, {ConcurrencyLimit: 1, Queues: 0}} {
		qs := mustNew(t, cfg)
		r := &Request{Hash: hash, Work: WorkEstimate{InitialSeats: 1}}
		arrive1(qs, t0.Add(time.Second), r)
		if r.QueueIndex() != -1 {
			t.Errorf("queues %d: queue %d, want -1", cfg.Queues, r.QueueIndex())
		}
	}
	// Reused after a queued life on a level without queues, a request
	// does not keep its old index.
	qs.Finish(t0, a, nil)
	qs.Finish(t0, b, nil)
	qsNoQueue := mustNew(t, Config{ConcurrencyLimit: 1, Queues: 0})
	arrive1(qsNoQueue, t0, b)
	if b.QueueIndex() != -1 {
		t.Errorf("a request reused on a reject level keeps queue %d", b.QueueIndex())
	}
}
