package metrics

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The integer bounds the stripes bucket by are the exported buckets.
func TestStripedBoundsMatchBuckets(t *testing.T) {
	if len(requestSecondBoundsNs) != len(requestSecondBuckets) {
		t.Fatalf("%d duration bounds for %d buckets", len(requestSecondBoundsNs), len(requestSecondBuckets))
	}
	for i, ns := range requestSecondBoundsNs {
		if time.Duration(ns).Seconds() != requestSecondBuckets[i] {
			t.Errorf("bound %d: %d ns, bucket %v s", i, ns, requestSecondBuckets[i])
		}
	}
	for name, c := range map[string]struct {
		bounds  [countBounds]int64
		buckets []float64
	}{"work seats": {workSeatsBounds, workSeatsBuckets}, "queue length": {queueLengthBounds, queueLengthBuckets}} {
		if len(c.bounds) != len(c.buckets) {
			t.Fatalf("%s: %d bounds for %d buckets", name, len(c.bounds), len(c.buckets))
		}
		for i, n := range c.bounds {
			if float64(n) != c.buckets[i] {
				t.Errorf("%s: bound %d is %d, bucket %v", name, i, n, c.buckets[i])
			}
		}
	}
}

// written is what a Prometheus metric writes of itself.
func written(t *testing.T, m prometheus.Metric) *dto.Metric {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// A duration lands in the bucket its seconds land in in a Prometheus
// histogram, whichever stripe observes it, and the sums agree.
func TestStripedHistogramMatchesPrometheus(t *testing.T) {
	s, reg, _ := newTestSet(t)
	f := s.Flow("L", "F")
	ref := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ref", Buckets: requestSecondBuckets})
	var ds []time.Duration
	for _, ns := range requestSecondBoundsNs {
		ds = append(ds, time.Duration(ns-1), time.Duration(ns), time.Duration(ns+1))
	}
	ds = append(ds, time.Hour, 3*time.Millisecond, 1234567891)
	for i, d := range ds {
		f.Stripe(i).ObserveWait(d, true)
		ref.Observe(d.Seconds())
	}
	got := histogramOf(t, gather(t, reg), "apiserver_flowcontrol_request_wait_duration_seconds", labelExecute, "true")
	want := written(t, ref).GetHistogram()
	if got.GetSampleCount() != want.GetSampleCount() {
		t.Errorf("count %d, want %d", got.GetSampleCount(), want.GetSampleCount())
	}
	if math.Abs(got.GetSampleSum()-want.GetSampleSum()) > 1e-9*want.GetSampleSum() {
		t.Errorf("sum %v, want %v", got.GetSampleSum(), want.GetSampleSum())
	}
	for i, b := range want.GetBucket() {
		g := got.GetBucket()[i]
		if g.GetUpperBound() != b.GetUpperBound() || g.GetCumulativeCount() != b.GetCumulativeCount() {
			t.Errorf("bucket %d: le=%v %d, want le=%v %d", i, g.GetUpperBound(), g.GetCumulativeCount(), b.GetUpperBound(), b.GetCumulativeCount())
		}
	}
}

// The exposition sums the stripes: a request counted in on one stripe and
// out on another leaves its gauges at zero, still exported.
func TestStripesSum(t *testing.T) {
	s, reg, _ := newTestSet(t)
	f := s.Flow("L", "F")
	for n := range 2 * maxStripes {
		f.Stripe(n).Dispatched(3)
		f.Stripe(n+1).Finished(time.Millisecond, false, 3)
	}
	f.Stripe(0).ObserveWorkSeats(3)
	f.Stripe(1).ObserveWorkSeats(200)
	f.Stripe(2).ObserveQueueLength(1)
	f.Stripe(3).ObserveQueueLength(10)
	f.Stripe(4).ObserveQueueLength(11)
	got := gather(t, reg)
	value := func(name string) float64 {
		ms := got[name].GetMetric()
		if len(ms) != 1 {
			t.Fatalf("%s: %d series exported, want 1", name, len(ms))
		}
		if c := ms[0].GetCounter(); c != nil {
			return c.GetValue()
		}
		return ms[0].GetGauge().GetValue()
	}
	if v := value("apiserver_flowcontrol_dispatched_requests_total"); v != 2*maxStripes {
		t.Errorf("dispatched %v, want %d", v, 2*maxStripes)
	}
	for _, name := range []string{"apiserver_flowcontrol_current_executing_requests", "apiserver_flowcontrol_current_executing_seats"} {
		if v := value(name); v != 0 {
			t.Errorf("%s = %v, want 0", name, v)
		}
	}
	h := histogramOf(t, got, "apiserver_flowcontrol_request_execution_seconds", labelType, "regular")
	if h.GetSampleCount() != 2*maxStripes || math.Abs(h.GetSampleSum()-0.002*maxStripes) > 1e-12 {
		t.Errorf("execution: count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
	}
	w := got["apiserver_flowcontrol_work_estimated_seats"].GetMetric()[0].GetHistogram()
	if w.GetSampleCount() != 2 || w.GetSampleSum() != 203 || w.GetBucket()[len(w.GetBucket())-1].GetCumulativeCount() != 1 {
		t.Errorf("work seats: %v", w)
	}
	q := got["apiserver_flowcontrol_request_queue_length_after_enqueue"].GetMetric()[0].GetHistogram()
	if q.GetSampleCount() != 3 || q.GetSampleSum() != 22 || q.GetBucket()[1].GetCumulativeCount() != 2 || q.GetBucket()[2].GetCumulativeCount() != 3 {
		t.Errorf("queue length: %v", q)
	}
	if c := f.Counts(); c.Dispatched != 2*maxStripes {
		t.Errorf("Counts().Dispatched = %d", c.Dispatched)
	}
}

func TestStripeNumbers(t *testing.T) {
	if stripeCount < 1 || stripeCount > maxStripes || stripeCount&(stripeCount-1) != 0 {
		t.Fatalf("stripeCount %d", stripeCount)
	}
	for range 100 {
		if n := Stripe(); n < 0 || n >= stripeCount {
			t.Fatalf("Stripe() = %d with %d stripes", n, stripeCount)
		}
	}
}

func TestStripedUpdatesDoNotAllocate(t *testing.T) {
	s, _, _ := newTestSet(t)
	f := s.Flow("L", "F")
	f.Stripe(0) // the stripes are allocated at the pair's first use
	for name, fn := range map[string]func(){
		"Stripe":             func() { _ = Stripe() },
		"Dispatched":         func() { f.Stripe(Stripe()).Dispatched(1) },
		"Finished":           func() { f.Stripe(1).Finished(time.Second, true, 1) },
		"ObserveWait":        func() { f.Stripe(2).ObserveWait(time.Second, false) },
		"ObserveWorkSeats":   func() { f.Stripe(3).ObserveWorkSeats(2) },
		"AddExecutingSeats":  func() { f.Stripe(4).AddExecutingSeats(-2) },
		"ObserveQueueLength": func() { f.Stripe(5).ObserveQueueLength(3) },
	} {
		if a := testing.AllocsPerRun(100, fn); a != 0 {
			t.Errorf("%s: %v allocs per run, want 0", name, a)
		}
	}
}

// A striped series carries the created timestamp of its first use, as a
// Prometheus child does, whichever stripe used it first.
func TestStripedCreatedTimestamps(t *testing.T) {
	s, reg, clk := newTestSet(t)
	f := s.Flow("L", "F")
	first := clk.now()
	f.Stripe(0).Dispatched(1)
	clk.step(time.Minute)
	f.Stripe(1).Dispatched(1)
	f.Stripe(1).ObserveWait(time.Second, false)
	got := gather(t, reg)
	c := got["apiserver_flowcontrol_dispatched_requests_total"].GetMetric()[0].GetCounter()
	if !c.GetCreatedTimestamp().AsTime().Equal(first) {
		t.Errorf("dispatched created %v, want %v", c.GetCreatedTimestamp().AsTime(), first)
	}
	h := histogramOf(t, got, "apiserver_flowcontrol_request_wait_duration_seconds", labelExecute, "false")
	if !h.GetCreatedTimestamp().AsTime().Equal(clk.now()) {
		t.Errorf("wait created %v, want %v", h.GetCreatedTimestamp().AsTime(), clk.now())
	}
}
