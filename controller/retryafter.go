package controller

import (
	"math"
	"sync"
	"time"
)

// maxRetryAfter is the ceiling of the adaptive Retry-After, in seconds.
const maxRetryAfter = 32

// retryAfter is the per-priority-level tracker that picks the Retry-After
// value of a rejection (docs/spec/requests.md#retry-after). It counts
// rejections per wall-clock second. When the rejections of the last n seconds
// reach 3n, n doubles (at most once per n seconds, up to 32); when they fall
// below n, n shrinks by one. A tracker that never rejected answers 1.
//
// The zero value is ready to use and safe for concurrent use.
type retryAfter struct {
	mu           sync.Mutex
	n            int64
	cur          retryBucket
	started      bool
	history      []retryBucket
	lastIncrease int64
}

type retryBucket struct {
	sec   int64
	count int64
}

// reject records a rejection at now and returns the Retry-After, in
// seconds, to send with it.
func (r *retryAfter) reject(now time.Time) int {
	t := now.Unix()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		r.n = 1
	}
	if r.started && t == r.cur.sec {
		r.cur.count++
		return int(r.n)
	}
	if r.started {
		pushed := r.cur
		r.history = append(r.history, pushed)
		window := min(2*r.n, maxRetryAfter)
		keep := r.history[:0]
		for _, e := range r.history {
			if pushed.sec-e.sec <= window {
				keep = append(keep, e)
			}
		}
		clear(r.history[len(keep):])
		r.history = keep
	}
	r.started = true
	r.cur = retryBucket{sec: t, count: 1}
	var d int64
	for _, e := range r.history {
		if e.sec < t && t-e.sec <= r.n {
			d += e.count
		}
	}
	switch {
	case t-r.lastIncrease >= r.n && d >= 3*r.n:
		r.n = min(2*r.n, maxRetryAfter)
		r.lastIncrease = t
	case d < r.n && r.n > 1:
		r.n--
	}
	return int(r.n)
}

// current returns the value the tracker would answer now without a new
// rejection: 1 for a level that never rejected.
func (r *retryAfter) current() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int(max(r.n, 1))
}

// maxDrainRetryAfter is the ceiling of a Retry-After from a level's drain
// time, in seconds.
const maxDrainRetryAfter = 60

// drainRetryAfter is the Retry-After, in seconds, of a rejection by a
// deadline-aware level that needs drain to dispatch what waits in it:
// drain scaled by a factor from 0.75 to 1.25 (u, uniform in [0, 1), picks
// it), so that the clients rejected in one burst do not all come back in
// the same second, rounded, at least 1 and at most maxDrainRetryAfter.
func drainRetryAfter(drain time.Duration, u float64) int {
	s := int(math.Round(drain.Seconds() * (0.75 + u/2)))
	return min(max(s, 1), maxDrainRetryAfter)
}
