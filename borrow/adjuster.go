package borrow

import (
	"math"
	"slices"
	"time"
)

const (
	// AdjustmentPeriod is how often the current limits are recomputed from
	// demand: every 10 s, counted from the end of one adjustment to the
	// start of the next. The caller drives Update at this period.
	AdjustmentPeriod = 10 * time.Second
	// smoothingCoefficient is the weight A the smoothed demand keeps from its
	// previous value at each adjustment. 0.977 per period is a half-life of
	// about 30 periods, five minutes.
	//
	// It stays an untyped constant so that 1-A is the exact decimal 0.023
	// before rounding, as upstream computes it.
	smoothingCoefficient = 0.977
)

// Adjustment is the outcome of one adjustment for one level: the limit to
// impose and everything the per-level metrics report.
type Adjustment struct {
	// Name is the level's name.
	Name string
	// Exempt marks the exempt level, whose Current is reported but never
	// enforced.
	Exempt bool
	// Nominal, Lower and Upper are the level's configured limits
	// (nominal_limit_seats, lower_limit_seats, upper_limit_seats).
	Nominal, Lower, Upper int
	// MaxSeats is the per-request seat cap, 0 when unset (see LevelLimits).
	MaxSeats int
	// Previous is the current limit before this adjustment.
	Previous int
	// Current is the concurrency limit to impose from now on
	// (current_limit_seats).
	Current int
	// Denominator is what seat ratios of this level (demand_seats, the
	// executing phase of priority_level_request_utilization) divide by:
	// Current, or max(1, round(SCL/10)) when Current is 0.
	Denominator int
	// HighWatermark is the rounded maximum demand of the window just ended
	// (demand_seats_high_watermark).
	HighWatermark int
	// Average and StdDev describe the demand of the last window that had a
	// positive duration (demand_seats_average, demand_seats_stdev).
	Average, StdDev float64
	// Smoothed is the smoothed demand (demand_seats_smoothed).
	Smoothed float64
	// Target is the level's target in the allocation (target_seats). For
	// the exempt level, which takes no part in the allocation, it is the
	// level's current limit; see the package documentation.
	Target float64
	// FairFrac is the configuration-wide fair proportion (seat_fair_frac),
	// the same in every Adjustment of one update.
	FairFrac float64
	// Backstop is true when the allocation failed and the level kept its
	// previous limit.
	Backstop bool
}

// regime says which of the three ways of setting limits an update took
// (docs/spec/concurrency.md#three-regimes).
type regime uint8

const (
	regimeNone     regime = iota // no update yet, or nothing to do
	regimeMinimum                // A: not even the lower limits fit
	regimeSqueezed               // B: the lower limits fit, the demanded minimums do not
	regimeFair                   // C: fair allocation of the rest
)

// Adjuster is the borrowing driver: it holds each priority level's limits
// and adjustment state, and recomputes the current limits from the demand
// windows it is given. The zero value has no levels and is ready to use.
//
// The demand itself is not the Adjuster's: whoever runs a level feeds an
// Integrator of its own wherever the level's seat demand changes, closes
// its window (Integrator.Reset) when an adjustment is due, and hands the
// windows to SetLevels or Update. A driver that runs each level under a
// lock of its own so reads each level's window under that level's lock,
// one at a time, and never holds two.
//
// An Adjuster does no I/O, starts no goroutines, takes no locks and reads
// no clock. It is not safe for concurrent use: the caller serializes
// SetLevels and Update.
type Adjuster struct {
	sums   Sums
	levels []*level // in configuration order
	byName map[string]*level

	// Scratch reused across updates.
	al     allocator
	items  []allocItem
	allocs []float64

	fairFrac float64
	allocErr error
	regime   regime
}

// level is the adjustment state of one priority level.
type level struct {
	LevelLimits

	highWatermark int
	avg, stdDev   float64
	smoothed      float64

	current    int
	minCurrent int // this update's floor for current (upstream's minCurrentCL)
	item       int // index in Adjuster.items, -1 for exempt levels
}

// SetLevels installs a new configuration and then runs an update with the
// demand windows of the levels (windows[i] is that of levels[i]), as
// upstream does at the end of every configuration digest.
//
// Levels are matched to the previous configuration by name. A level that
// persists keeps its smoothed demand and its current limit; only its
// configured limits change. A new level starts with zeroed statistics and
// current limit LevelLimits.Initial (its window, just begun, is empty). A
// level missing from levels is forgotten, so the caller keeps quiescing
// levels in the list until they have drained: like upstream's quiescing
// levels, they still take shares and get seats to drain with.
//
// On invalid input (see Validate) SetLevels returns the error and changes
// nothing.
func (a *Adjuster) SetLevels(serverLimit int, levels []LevelConfig, windows []Stats) ([]Adjustment, error) {
	if err := Validate(serverLimit, levels); err != nil {
		return nil, err
	}
	lims, sums := Limits(serverLimit, levels)
	next := make([]*level, len(lims))
	byName := make(map[string]*level, len(lims))
	for i, l := range lims {
		lv := a.byName[l.Name]
		if lv == nil {
			lv = &level{current: l.Initial}
		}
		lv.LevelLimits = l
		next[i] = lv
		byName[l.Name] = lv
	}
	a.sums, a.levels, a.byName = sums, next, byName
	return a.Update(windows), nil
}

// Update folds each level's demand window into its statistics and
// recomputes the current limits
// (docs/spec/concurrency.md#periodic-adjustment). windows[i] is the window
// of the i-th level of the configuration SetLevels installed last, closed
// by the caller (Integrator.Reset) when the adjustment is due; a level
// without one counts as having had an empty window. It returns one
// Adjustment per level, in configuration order.
//
// When the configuration has only exempt levels but a positive nominal sum
// (so there is nothing to allocate and no catch-all level, which real
// configurations always have) Update only folds the statistics in and
// returns nil, as upstream does.
func (a *Adjuster) Update(windows []Stats) []Adjustment {
	remaining := a.sums.NominalCLSum
	var minSum, minCurrentSum int // over non-exempt levels
	a.items = a.items[:0]
	for i, lv := range a.levels {
		var w Stats
		if i < len(windows) {
			w = windows[i]
		}
		lv.observe(w)
		if lv.Exempt {
			// The exempt level cannot be held back, so whatever it
			// demanded recently is set aside before anyone else shares.
			lv.minCurrent = max(lv.Lower, lv.highWatermark)
			lv.item = -1
			remaining -= lv.minCurrent
			continue
		}
		// A level that recently used seats up to its nominal limit does not
		// lend those out, but nothing is guaranteed beyond nominal.
		lv.minCurrent = max(lv.Lower, min(lv.Nominal, lv.highWatermark))
		lv.item = len(a.items)
		a.items = append(a.items, allocItem{
			Lower:  float64(lv.minCurrent),
			Upper:  float64(lv.Upper),
			Target: math.Max(float64(lv.minCurrent), lv.smoothed),
		})
		minSum += lv.Lower
		minCurrentSum += lv.minCurrent
	}
	a.allocErr = nil
	a.fairFrac = 0
	if len(a.items) == 0 && a.sums.NominalCLSum > 0 {
		a.regime = regimeNone
		return nil
	}

	var squeeze float64 // regime B: the fraction of each demanded floor above Lower granted
	switch {
	case remaining <= minSum:
		a.regime = regimeMinimum
	case remaining <= minCurrentSum:
		a.regime = regimeSqueezed
		squeeze = float64(remaining-minSum) / float64(minCurrentSum-minSum)
	default:
		a.regime = regimeFair
		// Upstream quirk, reproduced (see
		// docs/spec/concurrency.md#three-regimes): upstream allocates the
		// whole nominal sum here, not what the exempt level left over
		// (remaining), so the non-exempt limits add up to about NominalCLSum
		// even while the exempt level is busy. Kept for parity with
		// upstream's limits.
		allocs, fairFrac, err := a.al.allocateInto(a.allocs, float64(a.sums.NominalCLSum), a.items)
		if err != nil {
			a.allocErr = err
			allocs = slices.Grow(a.allocs[:0], len(a.items))[:len(a.items)]
			for _, lv := range a.levels {
				if lv.item >= 0 {
					allocs[lv.item] = float64(lv.current)
				}
			}
			fairFrac = 0
		}
		a.allocs = allocs
		a.fairFrac = fairFrac
	}

	denomFloor := int(math.Max(1, math.Round(float64(a.sums.ServerLimit)/10)))
	out := make([]Adjustment, len(a.levels))
	for i, lv := range a.levels {
		var current int
		var target float64
		switch {
		case lv.item < 0:
			current = lv.minCurrent
			// Upstream quirk, not reproduced (see
			// docs/spec/concurrency.md#applying-the-limits): upstream
			// reports, for the exempt level, the target of whichever
			// non-exempt level its map iteration put first, which is neither
			// meaningful nor deterministic. The exempt level's own floor is
			// reported.
			target = float64(lv.minCurrent)
		case a.regime == regimeMinimum:
			current = lv.Lower
		case a.regime == regimeSqueezed:
			current = lv.Lower + int(math.Round(float64(lv.minCurrent-lv.Lower)*squeeze))
		default:
			current = int(math.Round(a.allocs[lv.item]))
		}
		if lv.item >= 0 {
			target = a.items[lv.item].Target
		}
		denom := current
		if denom <= 0 {
			denom = denomFloor
		}
		out[i] = Adjustment{
			Name:          lv.Name,
			Exempt:        lv.Exempt,
			Nominal:       lv.Nominal,
			Lower:         lv.Lower,
			Upper:         lv.Upper,
			MaxSeats:      lv.MaxSeats,
			Previous:      lv.current,
			Current:       current,
			Denominator:   denom,
			HighWatermark: lv.highWatermark,
			Average:       lv.avg,
			StdDev:        lv.stdDev,
			Smoothed:      lv.smoothed,
			Target:        target,
			FairFrac:      a.fairFrac,
			Backstop:      a.allocErr != nil && lv.item >= 0,
		}
		lv.current = current
	}
	return out
}

// observe folds one closed demand window into the level's statistics
// (docs/spec/concurrency.md#demand-statistics). A window of no duration (a
// second update at the same instant) updates only the high watermark.
func (lv *level) observe(s Stats) {
	lv.highWatermark = int(math.Round(s.Max))
	if s.Duration <= 0 {
		return
	}
	lv.avg, lv.stdDev = s.Average, s.StdDev
	// Mean plus one standard deviation covers most of a bursty demand;
	// taking the max means a rise is followed at once while a fall decays
	// slowly, so a level that went quiet for a moment does not lend out
	// seats it will need again shortly.
	envelope := s.Average + s.StdDev
	lv.smoothed = math.Max(envelope, smoothingCoefficient*lv.smoothed+(1-smoothingCoefficient)*envelope)
}
