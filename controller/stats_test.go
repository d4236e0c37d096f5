package controller

import (
	"context"
	"errors"
	"testing"
	"time"
)

// statsLevel returns the named level of st.
func statsLevel(t *testing.T, st Stats, name string) LevelStats {
	t.Helper()
	for _, l := range st.Levels {
		if l.Name == name {
			return l
		}
	}
	t.Fatalf("no level %q in stats", name)
	return LevelStats{}
}

func statsSchema(t *testing.T, st Stats, name string) SchemaStats {
	t.Helper()
	for _, s := range st.FlowSchemas {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no schema %q in stats", name)
	return SchemaStats{}
}

// TestStatsCountsByReason: dispatches, the three rejection reasons, the
// per-second history and the FlowSchema hits, all read from counters the
// request path already keeps.
func TestStatsCountsByReason(t *testing.T) {
	c, clk := newTest(t, StaticSource(decode(t, manifests(true))), 21)
	ctx := context.Background()
	c.sampleMetrics() // the first sample: the counters' starting point

	// queued: fill its seats, two waiters, one queue-full, then the two
	// time out.
	q := level(c, "queued").Queue
	held := holdSeats(t, c, q.Stats().ConcurrencyLimit, "mouse")
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := c.Admit(ctx, attrs(t, "mouse", "GET", "/healthz", ""))
			errs <- err
		}()
	}
	waitFor(t, "two waiters", func() bool { return q.Stats().WaitingRequests == 2 })
	// While they wait, the live figures show them, before any sample.
	st := c.Stats()
	if l := statsLevel(t, st, "queued"); l.Now.WaitingRequests != 2 || l.Now.ExecutingRequests != len(held) || l.Config.Queues != 1 {
		t.Fatalf("queued now: %+v config %+v", l.Now, l.Config)
	}
	c.sampleMetrics()
	if _, err := c.Admit(ctx, attrs(t, "mouse", "GET", "/healthz", "")); !isReject(err) {
		t.Fatalf("queue-full: %v", err)
	}
	clk.Advance(15 * time.Second)
	for range 2 {
		if err := <-errs; !isReject(err) {
			t.Fatalf("time-out: %v", err)
		}
	}

	// tight: a reject level; fill it and get one concurrency-limit.
	tl := level(c, "tight").Queue
	held = append(held, holdSeats(t, c, tl.Stats().ConcurrencyLimit, "elephant")...)
	if _, err := c.Admit(ctx, attrs(t, "elephant", "GET", "/healthz", "")); !isReject(err) {
		t.Fatalf("concurrency-limit: %v", err)
	}
	c.sampleMetrics()
	for _, tk := range held {
		tk.Done()
	}

	st = c.Stats()
	ql, tlv := statsLevel(t, st, "queued"), statsLevel(t, st, "tight")
	nq := uint64(q.Stats().ConcurrencyLimit)
	if ql.Counts != (LevelCounts{Dispatched: nq, QueueFull: 1, TimeOut: 2}) {
		t.Errorf("queued counts %+v, want %d dispatched, 1 queue-full, 2 time-out", ql.Counts, nq)
	}
	nt := uint64(tl.Stats().ConcurrencyLimit)
	if tlv.Counts != (LevelCounts{Dispatched: nt, ConcurrencyLimit: 1}) {
		t.Errorf("tight counts %+v, want %d dispatched, 1 concurrency-limit", tlv.Counts, nt)
	}
	if tlv.Limits == nil || tlv.Limits.Nominal < 1 || tlv.Exempt || tlv.Config.Queues != 0 {
		t.Errorf("tight: limits %+v exempt %v config %+v", tlv.Limits, tlv.Exempt, tlv.Config)
	}
	// Three samples: the start, two waiting, then the rejections.
	if len(ql.History) != 3 {
		t.Fatalf("queued history %+v", ql.History)
	}
	if h := ql.History[1]; h.Waiting != 2 || h.Executing != int(nq) || h.Dispatched != int(nq) {
		t.Errorf("second sample %+v", h)
	}
	if h := ql.History[2]; h.Waiting != 0 || h.QueueFull != 1 || h.TimeOut != 2 || !h.Time.After(ql.History[1].Time) {
		t.Errorf("third sample %+v", h)
	}
	if h := statsLevel(t, st, "tight").History[2]; h.ConcurrencyLimit != 1 || h.Executing != int(nt) {
		t.Errorf("tight third sample %+v", h)
	}

	fs := statsSchema(t, st, "queued")
	if fs.Counts.Dispatched != nq || fs.Counts.QueueFull != 1 || fs.Counts.TimeOut != 2 || fs.PriorityLevel != "queued" || fs.Precedence != 200 {
		t.Errorf("queued schema %+v", fs)
	}
	if fs.Recent != fs.Counts {
		t.Errorf("recent %+v, want the totals, all after the first mark", fs.Recent)
	}
	if ts := statsSchema(t, st, "tight"); ts.Counts.ConcurrencyLimit != 1 || ts.Counts.Dispatched != nt {
		t.Errorf("tight schema %+v", ts)
	}
	if st.RecentPeriod != 15*time.Second {
		t.Errorf("recent period %v", st.RecentPeriod)
	}
	// Schemas come in matching order: exempt (precedence 1) first.
	if st.FlowSchemas[0].Name != "exempt" {
		t.Errorf("first schema %q", st.FlowSchemas[0].Name)
	}
}

// TestStatsHistoryBounded: the ring keeps HistoryLength samples, oldest
// first, and recent hits are measured against a reading at most 70 s old.
func TestStatsHistoryBounded(t *testing.T) {
	c, clk := newTest(t, StaticSource(decode(t, manifests(false))), 12)
	ctx := context.Background()
	for i := range HistoryLength + 5 {
		if i == HistoryLength {
			tk, err := c.Admit(ctx, attrs(t, "mouse", "GET", "/healthz", ""))
			if err != nil {
				t.Fatal(err)
			}
			tk.Done()
		}
		c.sampleMetrics()
		clk.Advance(time.Second)
	}
	st := c.Stats()
	l := statsLevel(t, st, "queued")
	if len(l.History) != HistoryLength {
		t.Fatalf("history of %d samples", len(l.History))
	}
	first, last := l.History[0], l.History[HistoryLength-1]
	if want := t0.Add(5 * time.Second); !first.Time.Equal(want) || !last.Time.Equal(t0.Add((HistoryLength+4)*time.Second)) {
		t.Errorf("history from %v to %v", first.Time.Sub(t0), last.Time.Sub(t0))
	}
	if st.RecentPeriod < 60*time.Second || st.RecentPeriod > 70*time.Second {
		t.Errorf("recent period %v", st.RecentPeriod)
	}
	if fs := statsSchema(t, st, "queued"); fs.Recent.Dispatched != 1 || fs.Counts.Dispatched != 1 {
		t.Errorf("queued schema %+v", fs)
	}
}

func isReject(err error) bool {
	var rej *RejectedError
	return errors.As(err, &rej)
}
