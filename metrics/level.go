package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LevelMetrics holds the resolved per-priority-level handles. Resolve it once
// per level with [Set.Level] when a configuration is compiled.
type LevelMetrics struct {
	// CurrentR is current_r: the queue set's virtual time R, in
	// seat-seconds.
	CurrentR prometheus.Gauge
	// DispatchR is dispatch_r: R at the latest dispatch.
	DispatchR prometheus.Gauge
	// LatestS is latest_s: nextDispatchR of the queue chosen at the latest
	// dispatch.
	LatestS prometheus.Gauge
	// NextSMin is next_s_bounds{bound="min"}.
	NextSMin prometheus.Gauge
	// NextSMax is next_s_bounds{bound="max"}.
	NextSMax prometheus.Gauge
	// NextDiscountedSMin is next_discounted_s_bounds{bound="min"}.
	NextDiscountedSMin prometheus.Gauge
	// NextDiscountedSMax is next_discounted_s_bounds{bound="max"}.
	NextDiscountedSMax prometheus.Gauge
	// EpochAdvanceSucceeded is epoch_advance_total{success="true"}.
	EpochAdvanceSucceeded prometheus.Counter
	// EpochAdvanceFailed is epoch_advance_total{success="false"}.
	EpochAdvanceFailed prometheus.Counter

	// NominalLimitSeats is nominal_limit_seats: nominalCL.
	NominalLimitSeats prometheus.Gauge
	// LowerLimitSeats is lower_limit_seats: minCL.
	LowerLimitSeats prometheus.Gauge
	// UpperLimitSeats is upper_limit_seats: maxCL.
	UpperLimitSeats prometheus.Gauge
	// CurrentLimitSeats is current_limit_seats: the limit the latest
	// borrowing adjustment set.
	CurrentLimitSeats prometheus.Gauge
	// DemandSeatsHighWatermark is demand_seats_high_watermark.
	DemandSeatsHighWatermark prometheus.Gauge
	// DemandSeatsAverage is demand_seats_average.
	DemandSeatsAverage prometheus.Gauge
	// DemandSeatsStdev is demand_seats_stdev.
	DemandSeatsStdev prometheus.Gauge
	// DemandSeatsSmoothed is demand_seats_smoothed.
	DemandSeatsSmoothed prometheus.Gauge
	// TargetSeats is target_seats.
	TargetSeats prometheus.Gauge

	// DemandSeats is the demand_seats ratio histogram: numerator seats in
	// use plus seats waiting, denominator the current concurrency limit.
	DemandSeats *RatioGauge
	// WaitingRequests is priority_level_request_utilization{phase="waiting"}:
	// numerator waiting requests, denominator max(1, queueLengthLimit)*queues.
	WaitingRequests *RatioGauge
	// ExecutingRequests is
	// priority_level_request_utilization{phase="executing"}: numerator
	// executing requests, denominator the concurrency-limit denominator.
	ExecutingRequests *RatioGauge
	// SeatUtilization is priority_level_seat_utilization (constant label
	// phase="executing"): numerator seats in use, denominator the
	// concurrency-limit denominator.
	SeatUtilization *RatioGauge

	// log, set by LogUnder, holds the occupancy changes NoteOccupancy
	// has not applied yet.
	log *occupancyLog
}

// Level resolves the handles of priority level pl. Calling it again for the
// same level returns handles on the same series. The ratio gauges of a new
// level start at numerator 0 and denominator 1; set the real denominators
// before use.
func (s *Set) Level(pl string) *LevelMetrics {
	v := s.v
	// The four occupancy gauges share a lock and a time origin:
	// NoteOccupancy changes them together.
	lk := newRatioLock(s.clock())
	return &LevelMetrics{
		CurrentR:                 v.currentR.WithLabelValues(pl),
		DispatchR:                v.dispatchR.WithLabelValues(pl),
		LatestS:                  v.latestS.WithLabelValues(pl),
		NextSMin:                 v.nextSBounds.WithLabelValues(pl, "min"),
		NextSMax:                 v.nextSBounds.WithLabelValues(pl, "max"),
		NextDiscountedSMin:       v.nextDiscSBounds.WithLabelValues(pl, "min"),
		NextDiscountedSMax:       v.nextDiscSBounds.WithLabelValues(pl, "max"),
		EpochAdvanceSucceeded:    v.epochAdvance.WithLabelValues(pl, "true"),
		EpochAdvanceFailed:       v.epochAdvance.WithLabelValues(pl, "false"),
		NominalLimitSeats:        v.nominalLimit.WithLabelValues(pl),
		LowerLimitSeats:          v.lowerLimit.WithLabelValues(pl),
		UpperLimitSeats:          v.upperLimit.WithLabelValues(pl),
		CurrentLimitSeats:        v.currentLimit.WithLabelValues(pl),
		DemandSeatsHighWatermark: v.demandHighWater.WithLabelValues(pl),
		DemandSeatsAverage:       v.demandAverage.WithLabelValues(pl),
		DemandSeatsStdev:         v.demandStdev.WithLabelValues(pl),
		DemandSeatsSmoothed:      v.demandSmoothed.WithLabelValues(pl),
		TargetSeats:              v.targetSeats.WithLabelValues(pl),
		DemandSeats:              v.demandSeats.child(lk, 0, 1, pl),
		WaitingRequests:          v.requestUtil.child(lk, 0, 1, phaseWaiting, pl),
		ExecutingRequests:        v.requestUtil.child(lk, 0, 1, phaseExecuting, pl),
		SeatUtilization:          v.seatUtil.child(lk, 0, 1, pl),
	}
}

// setOccupancy sets, at time now, the numerators of the four occupancy
// gauges: DemandSeats to demand (seats in use plus seats waiting),
// WaitingRequests to waiting, ExecutingRequests to executing and
// SeatUtilization to seatsInUse. The gauges of one level share a lock and
// a time origin, so this takes one lock and reads now once where four
// separate Sets would do each four times. (Gauges resolved at different
// times may not share them, in which case each is set in turn.)
func (m *LevelMetrics) setOccupancy(now time.Time, demand, waiting, executing, seatsInUse float64) {
	if !m.shareLock() {
		m.DemandSeats.Set(now, demand)
		m.WaitingRequests.Set(now, waiting)
		m.ExecutingRequests.Set(now, executing)
		m.SeatUtilization.Set(now, seatsInUse)
		return
	}
	lk := m.DemandSeats.mu
	lk.Lock()
	m.applyLocked(occupancy{lk.ns(now), demand, waiting, executing, seatsInUse})
	lk.Unlock()
}

// shareLock says whether the four occupancy gauges share one lock.
func (m *LevelMetrics) shareLock() bool {
	lk := m.DemandSeats.mu
	return m.WaitingRequests.mu == lk && m.ExecutingRequests.mu == lk && m.SeatUtilization.mu == lk
}

// occupancy is one change of a level's occupancy: its time, in
// nanoseconds since the gauges' time origin, and the four numerators.
type occupancy struct {
	at                                     int64
	demand, waiting, executing, seatsInUse float64
}

// applyLocked sets the numerators of the four gauges, whose lock is held.
func (m *LevelMetrics) applyLocked(o occupancy) {
	// A gauge whose numerator stays the same needs nothing: the time
	// until its next change is credited then, to the same ratio.
	if m.DemandSeats.numerator != o.demand {
		m.DemandSeats.setLocked(o.at, o.demand)
	}
	if m.WaitingRequests.numerator != o.waiting {
		m.WaitingRequests.setLocked(o.at, o.waiting)
	}
	if m.ExecutingRequests.numerator != o.executing {
		m.ExecutingRequests.setLocked(o.at, o.executing)
	}
	if m.SeatUtilization.numerator != o.seatsInUse {
		m.SeatUtilization.setLocked(o.at, o.seatsInUse)
	}
}

// occupancyLogLen is how many occupancy changes NoteOccupancy logs before
// it applies them.
const occupancyLogLen = 32

// NoteOccupancy sets, at time now, the numerators of the four occupancy
// gauges: DemandSeats to demand (seats in use plus seats waiting),
// WaitingRequests to waiting, ExecutingRequests to executing and
// SeatUtilization to seatsInUse. For a caller that makes every call under
// a lock of its own and has passed that lock to [LevelMetrics.LogUnder], the
// change is logged, and the log is applied to the gauges when it is full,
// and before the gauges are read or a denominator changes.
//
// A level's occupancy changes twice per request, under the level's lock,
// on whichever processor serves the request. Applied at once, each change
// takes the gauges' lock and writes the state of three or four gauges,
// all of it last written by the processor that served the previous
// request: a round of cache misses inside the level's lock, which holds
// up every other request of the level. Logged, a change writes one entry
// of a small array, and the gauges are updated for many changes in one
// go, from one processor's cache. The histograms are the same: each
// change is credited at its own time.
func (m *LevelMetrics) NoteOccupancy(now time.Time, demand, waiting, executing, seatsInUse float64) {
	if m.log == nil {
		m.setOccupancy(now, demand, waiting, executing, seatsInUse)
		return
	}
	l := m.log
	l.entries[l.n] = occupancy{int64(now.Sub(l.base)), demand, waiting, executing, seatsInUse}
	l.n++
	if l.n == len(l.entries) {
		m.applyLog()
	}
}

// occupancyLog holds the changes NoteOccupancy has not applied yet,
// guarded by the caller's lock, and a copy of the gauges' time origin, so
// that logging reads nothing of the gauges' lock, which shares its cache
// line with the lock's state.
type occupancyLog struct {
	base    time.Time
	n       int
	entries [occupancyLogLen]occupancy
}

// LogUnder makes NoteOccupancy log changes: withLock calls its argument
// under the lock the caller holds for every NoteOccupancy call, so that
// reading the gauges or changing a denominator can apply the log first.
// Call it once, before the first NoteOccupancy. It does nothing if the
// four gauges do not share a lock (NoteOccupancy then sets them at once).
func (m *LevelMetrics) LogUnder(withLock func(func())) {
	if !m.shareLock() {
		return
	}
	m.log = &occupancyLog{base: m.DemandSeats.mu.base}
	drain := func() { withLock(m.applyLog) }
	m.DemandSeats.mu.drain.Store(&drain)
}

// applyLog applies the logged changes, in order; the caller's lock is
// held.
func (m *LevelMetrics) applyLog() {
	l := m.log
	if l.n == 0 {
		return
	}
	lk := m.DemandSeats.mu
	lk.Lock()
	for _, o := range l.entries[:l.n] {
		m.applyLocked(o)
	}
	lk.Unlock()
	l.n = 0
}
