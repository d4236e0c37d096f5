package fairqueue

import (
	"fmt"
	"math"
	"time"
)

// SeatSeconds is an amount of work: seats held multiplied by the time they
// are held. It is fixed point, 1 seat-second = 10^8 units, so a uint64 covers
// about 5,800 years of one seat and additions are exact.
//
// Virtual time (R, NextDispatchR) is measured in the same unit. Arithmetic
// on it wraps around like any uint64; the queue set relies on that for the
// service-time correction (see Finish) exactly as upstream does.
type SeatSeconds uint64

// seatSecondsPerSecond is the fixed-point scale: units in one seat-second.
const seatSecondsPerSecond = 100_000_000

// nanosPerUnit is how many nanoseconds of one seat make one unit (10).
const nanosPerUnit = float64(time.Second) / seatSecondsPerSecond

// maxSeatSeconds is the largest representable amount.
const maxSeatSeconds = SeatSeconds(math.MaxUint64)

// seatsTimesNanos is seatsTimesDuration for integer seats and nanoseconds,
// the form the hot path has at hand.
func seatsTimesNanos(seats int, ns int64) SeatSeconds {
	return SeatSeconds(int64(math.Round(float64(seats) * float64(ns) / nanosPerUnit)))
}

// ToFloat returns the amount in seat-seconds as a float64 (for metrics; it
// loses precision above 2^53 units).
func (ss SeatSeconds) ToFloat() float64 {
	return float64(ss) / seatSecondsPerSecond
}

// durationPerSeat returns how long seats seats must be held to do ss of
// work: ss/seats, truncated to a nanosecond.
func (ss SeatSeconds) durationPerSeat(seats float64) time.Duration {
	return time.Duration(float64(ss) / seats * nanosPerUnit)
}

// String formats the amount as "<seconds>.<8 digits>ss", the format of the
// debug dumps, e.g. "0.02100000ss".
func (ss SeatSeconds) String() string {
	whole := ss / seatSecondsPerSecond
	return fmt.Sprintf("%d.%08dss", whole, ss-whole*seatSecondsPerSecond)
}
