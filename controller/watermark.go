package controller

import (
	"sync/atomic"
	"time"

	"github.com/apfproject/apf/metrics"
	"github.com/apfproject/apf/request"
)

// watermark counts requests in one phase and remembers the highest count
// since the last roll. It is lock-free: add is an atomic add plus, when the
// count rises, a compare-and-swap loop on the high mark.
type watermark struct {
	cur, high atomic.Int64
}

func (w *watermark) add(d int64) {
	v := w.cur.Add(d)
	if d <= 0 {
		return
	}
	for {
		h := w.high.Load()
		if v <= h || w.high.CompareAndSwap(h, v) {
			return
		}
	}
}

// roll returns the high mark of the window that ends and starts the next
// window at the current count. A rise that races with the roll may be
// credited to either window.
func (w *watermark) roll() (high, cur int64) {
	cur = w.cur.Load()
	high = w.high.Swap(cur)
	return max(high, cur), cur
}

// kindCounts are the waiting and executing counts of one request kind.
type kindCounts struct {
	waiting, executing watermark
	m                  *metrics.KindMetrics
}

// kindTracker feeds apiserver_current_inflight_requests,
// apiserver_current_inqueue_requests (1-second high watermarks) and
// read_vs_write_current_requests. Requests are counted on the request path
// with atomics only; publish, called once a second by Run, sets the gauges.
type kindTracker struct {
	mutating, readOnly kindCounts
}

func newKindTracker(m *metrics.Set) *kindTracker {
	return &kindTracker{
		mutating: kindCounts{m: m.Mutating},
		readOnly: kindCounts{m: m.ReadOnly},
	}
}

// of returns the counts of a request with the given verb: get, list and
// watch (and, for non-resource requests, the lower-cased GET method) are
// read-only, everything else mutating.
func (k *kindTracker) of(verb string) *kindCounts {
	switch verb {
	case request.VerbGet, request.VerbList, request.VerbWatch:
		return &k.readOnly
	}
	return &k.mutating
}

// publish ends the current window at now: it sets the watermark gauges
// to the window's high marks and the read-vs-write ratio numerators to the
// current counts.
func (k *kindTracker) publish(now time.Time) {
	for _, kc := range [...]*kindCounts{&k.mutating, &k.readOnly} {
		hw, cw := kc.waiting.roll()
		he, ce := kc.executing.roll()
		kc.m.InqueueRequests.Set(float64(hw))
		kc.m.InflightRequests.Set(float64(he))
		kc.m.Waiting.Set(now, float64(cw))
		kc.m.Executing.Set(now, float64(ce))
	}
}

// setDenominators sets the read-vs-write denominators: the total queue
// capacity of the queuing levels and the sum of nominal limits.
func (k *kindTracker) setDenominators(now time.Time, waiting, executing float64) {
	for _, kc := range [...]*kindCounts{&k.mutating, &k.readOnly} {
		kc.m.Waiting.SetDenominator(now, max(waiting, 1))
		kc.m.Executing.SetDenominator(now, max(executing, 1))
	}
}
