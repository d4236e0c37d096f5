package workestimate

import (
	"time"

	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/request"
)

// seatSecondResolution is the resolution of the queue set's seat-second
// arithmetic (10^8 units per seat-second). Upstream rounds a write's final
// work to it before dividing it among the final seats.
const seatSecondResolution = 10 * time.Nanosecond

// mutating estimates a create, update, patch or delete
// (docs/spec/work-estimation.md#writes). A write holds one seat while it
// runs, then final seats for a while to pay for the watch events it causes:
// one final seat per WatchesPerSeat interested watches, each for
// EventAdditionalDuration. When the level cannot give that many seats the
// same work is spread over fewer seats for longer.
func (e *Estimator) mutating(info *request.Info, levelMax int) (est fairqueue.WorkEstimate, watches int, observed bool) {
	maxSeats := capSeats(levelMax, e.cfg.MaximumMutatingSeats)
	est.InitialSeats = e.cfg.MinimumSeats
	// Token requests create no stored object, so no watch sees them.
	if info.Resource == "serviceaccounts" && info.Subresource == "token" {
		return est, 0, false
	}
	if e.watches != nil {
		watches = e.watches.InterestedIn(WatchScope{Group: info.APIGroup, Resource: info.Resource, Namespace: info.Namespace, Name: info.Name})
	}
	if watches < e.cfg.WatchesPerSeat {
		return est, watches, true
	}
	final := (watches + e.cfg.WatchesPerSeat - 1) / e.cfg.WatchesPerSeat
	work := roundTo(time.Duration(final)*e.cfg.EventAdditionalDuration, seatSecondResolution)
	final = min(final, maxSeats)
	est.FinalSeats = final
	est.AdditionalLatency = work / time.Duration(final)
	return est, watches, true
}

// roundTo rounds a non-negative d to a multiple of unit, halves up.
func roundTo(d, unit time.Duration) time.Duration {
	return (d + unit/2) / unit * unit
}
