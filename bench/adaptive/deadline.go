package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apfproject/apf/internal/server"
)

// The deadline-aware part (--deadline-aware-queueing,
// docs/spec/deadline-aware-queueing.md): the upstream serves a fixed
// capacity, apf serve a static limit of that capacity with a request
// timeout whose quarter is the wait limit, and a flood arrives at twice
// what the upstream serves, an open loop, so that the clients' level's
// queues fill up to the wait limit and the rest times out.
// The same flood runs with the option off and on. With it, a request that
// will not be dispatched within its wait limit is to be answered on
// arrival rather than at the end of the wait, the goodput is to be the
// same, and the Retry-After of each rejection within a factor of two of
// the level's time to drain (its waiting requests over its dispatch rate
// over the last second, sampled every 100 ms from the server's own
// counters).

// DeadlineConfig shapes the deadline-aware runs.
type DeadlineConfig struct {
	// Capacity is the upstream's (and apf's static limit); Service its
	// time a request.
	Capacity int
	Service  time.Duration
	// Timeout is apf serve's --request-timeout: a quarter of it is the
	// wait limit.
	Timeout time.Duration
	// Users send the flood, Rate requests a second in all, an open loop
	// (each request on its own, whatever the answers before it).
	Users int
	Rate  float64
	// Settle, then Measure: the run's figures are over Measure.
	Settle, Measure time.Duration
}

// DeadlineResult is one run.
type DeadlineResult struct {
	Run string
	// Goodput is the upstream's completions per second over its capacity.
	Goodput float64
	// Rejected is the 429s per second; RejectP50 and RejectP99 the time
	// from sending a request to its 429, Early the share of the 429s
	// answered within 10 ms.
	Rejected             float64
	RejectP50, RejectP99 time.Duration
	Early                float64
	// RetryWithin2x is the share of the 429s whose Retry-After is within a
	// factor of two of the level's time to drain when it was answered;
	// RetryRatio the median of Retry-After over that time. Both 0 when no
	// rejection carried one.
	RetryWithin2x, RetryRatio float64
	// Drain is the median time to drain over the run.
	Drain time.Duration
}

// RunDeadline measures the flood with deadline-aware queueing off, then
// on.
func RunDeadline(ctx context.Context, cfg DeadlineConfig) ([]DeadlineResult, error) {
	var out []DeadlineResult
	for _, aware := range []bool{false, true} {
		name := "deadline-aware off"
		if aware {
			name = "deadline-aware on"
		}
		r, err := measureDeadline(ctx, cfg, name, aware)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func measureDeadline(ctx context.Context, cfg DeadlineConfig, name string, aware bool) (DeadlineResult, error) {
	users := make([]string, cfg.Users)
	for i := range users {
		users[i] = fmt.Sprintf("flood-%d", i)
	}
	// Connections for the requests a wait limit and a second holds.
	conns := int(cfg.Rate * (cfg.Timeout/4 + time.Second).Seconds())
	r, err := newRig(ctx, cfg.Service, cfg.Capacity, conns, users, func(o *server.Options) {
		o.MaxRequestsInflight, o.MaxMutatingRequestsInflight = cfg.Capacity, 0
		o.RequestTimeout = cfg.Timeout
		o.DeadlineAwareQueueing = aware
	})
	if err != nil {
		return DeadlineResult{}, err
	}
	defer r.stop()

	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		mu       sync.Mutex
		drains   []drainSample
		rejected []rejection
	)
	wg.Go(func() {
		type count struct {
			at         time.Time
			dispatched int
		}
		var past []count
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for !stop.Load() {
			<-tick.C
			st, ok := levelStats(r.srv, "clients")
			if !ok {
				continue
			}
			now := time.Now()
			past = append(past, count{now, st.Dispatched})
			for len(past) > 0 && now.Sub(past[0].at) > time.Second {
				past = past[1:]
			}
			if len(past) < 2 || st.WaitingRequests == 0 {
				continue
			}
			rate := float64(st.Dispatched-past[0].dispatched) / now.Sub(past[0].at).Seconds()
			if rate <= 0 {
				continue
			}
			mu.Lock()
			drains = append(drains, drainSample{now, time.Duration(float64(st.WaitingRequests) / rate * float64(time.Second))})
			mu.Unlock()
		}
	})
	// The flood: an open loop at Rate, each request on its own, the
	// users in turn.
	wg.Go(func() {
		var inflight sync.WaitGroup
		defer inflight.Wait()
		gap := time.Duration(float64(time.Second) / cfg.Rate)
		next := time.Now()
		for i := 0; !stop.Load(); i++ {
			time.Sleep(time.Until(next))
			next = next.Add(gap)
			user := users[i%len(users)]
			inflight.Go(func() {
				code, ra, d := r.get(ctx, user)
				if code == http.StatusTooManyRequests {
					mu.Lock()
					rejected = append(rejected, rejection{time.Now(), d, ra})
					mu.Unlock()
				}
			})
		}
	})
	time.Sleep(cfg.Settle)
	from := time.Now()
	time.Sleep(cfg.Measure)
	to := time.Now()
	stop.Store(true)
	wg.Wait()

	res := DeadlineResult{Run: name}
	n, _ := r.up.window(from, to)
	secs := to.Sub(from).Seconds()
	res.Goodput = float64(n) / secs / (float64(cfg.Capacity) / cfg.Service.Seconds())
	mu.Lock()
	defer mu.Unlock()
	var took, ds []time.Duration
	var ratios []float64
	within, carried := 0, 0
	for _, d := range drains {
		if !d.at.Before(from) && d.at.Before(to) {
			ds = append(ds, d.drain)
		}
	}
	for _, rj := range rejected {
		if rj.at.Before(from) || !rj.at.Before(to) {
			continue
		}
		took = append(took, rj.took)
		secs, err := strconv.Atoi(rj.retryAfter)
		drain, ok := drainAt(drains, rj.at)
		if err != nil || !ok || drain <= 0 {
			continue
		}
		carried++
		ratio := float64(time.Duration(secs)*time.Second) / float64(drain)
		ratios = append(ratios, ratio)
		if ratio >= 0.5 && ratio <= 2 {
			within++
		}
	}
	res.Rejected = float64(len(took)) / secs
	res.RejectP50, res.RejectP99 = quantile(took, 0.5), quantile(took, 0.99)
	for _, d := range took {
		if d <= 10*time.Millisecond {
			res.Early++
		}
	}
	if len(took) > 0 {
		res.Early /= float64(len(took))
	}
	res.Drain = quantile(ds, 0.5)
	if carried > 0 {
		res.RetryWithin2x = float64(within) / float64(carried)
		slices.Sort(ratios)
		res.RetryRatio = ratios[len(ratios)/2]
	}
	return res, nil
}

// rejection is one 429: when it came, how long it took, its Retry-After.
type rejection struct {
	at         time.Time
	took       time.Duration
	retryAfter string
}

// drainSample is the level's time to drain at a moment.
type drainSample struct {
	at    time.Time
	drain time.Duration
}

// drainAt returns the latest time to drain sampled at or before t, within
// half a second of it.
func drainAt(ds []drainSample, t time.Time) (time.Duration, bool) {
	i, _ := slices.BinarySearchFunc(ds, t, func(d drainSample, t time.Time) int { return d.at.Compare(t) })
	if i == 0 {
		return 0, false
	}
	d := ds[i-1]
	return d.drain, t.Sub(d.at) <= 500*time.Millisecond
}

// levelStats returns the queue-set figures of the level name.
func levelStats(srv *server.Server, name string) (st struct{ WaitingRequests, Dispatched int }, ok bool) {
	for _, l := range srv.Controller().Levels() {
		if l.Name == name && l.Queue != nil {
			s := l.Queue.Stats()
			st.WaitingRequests, st.Dispatched = s.WaitingRequests, s.Dispatched
			return st, true
		}
	}
	return st, false
}

// quantile returns the q-quantile of ds (the smallest value at least a
// share q of them do not exceed), 0 for none.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(max(int(math.Ceil(q*float64(len(s))))-1, 0), len(s)-1)]
}

// DeadlineTable renders the deadline-aware runs with their bars.
func DeadlineTable(cfg DeadlineConfig, rs []DeadlineResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "deadline-aware queueing: upstream capacity %d at %v a request, apf's limit %d, --request-timeout %v (wait limit %v), %d flooding users at %.0f requests/s in all (an open loop); figures over %v after %v\n",
		cfg.Capacity, cfg.Service, cfg.Capacity, cfg.Timeout, cfg.Timeout/4, cfg.Users, cfg.Rate, cfg.Measure, cfg.Settle)
	fmt.Fprintf(&b, "bars, on: 429s answered within 10ms (p99), goodput as off's, Retry-After within 2x of the time to drain\n\n")
	fmt.Fprintf(&b, "%-20s %8s %8s %10s %10s %10s %9s %14s %12s\n", "RUN", "GOODPUT", "429/s", "429 P50", "429 P99", "429 ≤10MS", "DRAIN", "RA/DRAIN (MED)", "RA WITHIN 2X")
	for _, r := range rs {
		fmt.Fprintf(&b, "%-20s %8.3f %8.0f %10v %10v %10.3f %9v %14.2f %12.3f\n", r.Run, r.Goodput, r.Rejected,
			r.RejectP50.Round(100*time.Microsecond), r.RejectP99.Round(100*time.Microsecond), r.Early, r.Drain.Round(time.Millisecond), r.RetryRatio, r.RetryWithin2x)
	}
	return b.String()
}
