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
}

// Level resolves the handles of priority level pl. Calling it again for the
// same level returns handles on the same series. The ratio gauges of a new
// level start at numerator 0 and denominator 1; set the real denominators
// before use.
func (s *Set) Level(pl string) *LevelMetrics {
	v := s.v
	// The four occupancy gauges share a lock and a time origin:
	// SetOccupancy changes them together.
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

// SetOccupancy sets, at time now, the numerators of the four occupancy
// gauges: DemandSeats to demand (seats in use plus seats waiting),
// WaitingRequests to waiting, ExecutingRequests to executing and
// SeatUtilization to seatsInUse. The gauges of one level share a lock and
// a time origin, so this takes one lock and reads now once where four
// separate Sets would do each four times. (Gauges resolved at different
// times may not share them, in which case each is set in turn.)
func (m *LevelMetrics) SetOccupancy(now time.Time, demand, waiting, executing, seatsInUse float64) {
	lk := m.DemandSeats.mu
	if m.WaitingRequests.mu != lk || m.ExecutingRequests.mu != lk || m.SeatUtilization.mu != lk {
		m.DemandSeats.Set(now, demand)
		m.WaitingRequests.Set(now, waiting)
		m.ExecutingRequests.Set(now, executing)
		m.SeatUtilization.Set(now, seatsInUse)
		return
	}
	lk.Lock()
	t := lk.ns(now)
	// A gauge whose numerator stays the same needs nothing: the time
	// until its next change is credited then, to the same ratio.
	if m.DemandSeats.numerator != demand {
		m.DemandSeats.setLocked(t, demand)
	}
	if m.WaitingRequests.numerator != waiting {
		m.WaitingRequests.setLocked(t, waiting)
	}
	if m.ExecutingRequests.numerator != executing {
		m.ExecutingRequests.setLocked(t, executing)
	}
	if m.SeatUtilization.numerator != seatsInUse {
		m.SeatUtilization.setLocked(t, seatsInUse)
	}
	lk.Unlock()
}
