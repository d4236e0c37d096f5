// Package borrow decides how many seats each priority level may occupy at
// once: the nominal limits a configuration implies, and the current limits
// that periodic borrowing between levels derives from recent demand. It
// follows kube-apiserver's API Priority and Fairness arithmetic exactly
// (docs/spec/concurrency.md), so that the same configuration and the same
// demand give the same limits, to the seat, as upstream.
//
// The package is pure computation. It knows nothing of HTTP, storage or
// the Kubernetes API types (package engine maps PriorityLevelConfigurations
// to LevelConfig values), starts no goroutines, takes no locks and reads no
// clock: time is an argument.
//
// # Nominal limits
//
// The server has a total of SCL seats, the sum of --max-requests-inflight
// and --max-mutating-requests-inflight (600 by default). Each level holds
// nominalConcurrencyShares (NCS); its nominal limit is its share of SCL,
// rounded up, so the nominal limits may add up to a little more than SCL.
// The exempt level's shares count too: a positive exempt NCS shrinks every
// other level's nominal limit although exempt requests are never limited.
//
// # Lending and borrowing
//
// A level may lend lendablePercent of its nominal seats to others when it
// does not need them, and borrow up to borrowingLimitPercent of its nominal
// limit (unbounded, which means SCL, when unset) from others. That gives
// each level a band, Lower = nominal - lendable to Upper = nominal +
// borrowing, inside which its current limit moves. The current limit is
// what the fair-queuing dispatcher enforces.
//
// # The periodic adjustment
//
// Every AdjustmentPeriod, and right after every configuration change, the
// current limits are recomputed from each level's seat demand (seats in use
// plus seats waiting) over the window since the previous adjustment:
//
//  1. Each level's demand window (an Integrator's) yields the time-weighted
//     average, standard deviation and maximum. The high watermark is the
//     rounded maximum; the envelope, average plus one standard deviation,
//     feeds the smoothed demand (below).
//  2. The exempt level first takes max(Lower, high watermark) out of the
//     nominal sum: it will use those seats whatever anyone decides. Every
//     other level is guaranteed max(Lower, min(nominal, high watermark)) —
//     recent use protects seats up to the nominal limit, not beyond — and
//     targets the larger of that floor and its smoothed demand.
//  3. If what is left does not even cover the Lower limits, everyone gets
//     Lower. If it covers those but not the floors, each level gets Lower
//     plus the same fraction of its floor's excess over Lower. Otherwise
//     the allocation hands out seats in proportion to the targets, clamped to
//     [floor, Upper], and each level's current limit is its rounded share.
//
// The allocation finds the proportion (the "fair fraction") by walking the
// sorted breakpoints at which items hit their bounds; the sum of the
// clamped shares is piecewise linear in the proportion, so the walk ends in
// a single division.
//
// # Why smoothing
//
// Demand is bursty, and lending seats away the moment a level falls idle
// would leave it short when the burst comes back. The smoothed demand
// follows a rise at once (it is at least the latest envelope) but decays
// by a factor of 0.977 per period when demand falls, a half-life of
// about five minutes. Seats that a level actually used in the last period
// are protected anyway by its floor, so a lender whose demand returns gets
// its seats back, up to its nominal limit, at the next adjustment.
//
// # Upstream quirks
//
// The specification notes mark two points of upstream behaviour as probably
// accidental (docs/spec/concurrency.md#three-regimes and
// docs/spec/concurrency.md#applying-the-limits). This package:
//
//   - reproduces the first: in the fair regime upstream allocates the whole
//     nominal sum among the non-exempt levels, not what the exempt level
//     left over, so the non-exempt limits add up to about the nominal sum
//     even while the exempt level is busy;
//   - does not reproduce the second: for the exempt level upstream reports
//     as target_seats the target of whichever non-exempt level its map
//     iteration happens to put first. That value depends on Go's randomized
//     map order, so no implementation could match it; Adjustment.Target of
//     the exempt level is its own floor, max(Lower, high watermark), which
//     is also its current limit.
//
// One consequence of the first quirk is worth knowing: the fair allocation
// needs the non-exempt Upper limits to add up to the nominal sum, which
// fails when the exempt level has shares and the others' borrowing limits
// are too small to cover them. The allocation then errs and, as upstream,
// every non-exempt level keeps its previous limit (Adjustment.Backstop).
//
// # Other departures from upstream
//
// Everything else matches upstream to the bit (the allocation's results, the
// integrator's floating-point sums, the order in which tied bounds are
// swept), with these deliberate exceptions, none of which changes a limit:
//
//   - Levels are processed in configuration order, not Go map order, so
//     results are deterministic; only the last bits of float sums inside
//     the allocation could depend on the order, and upstream's order is random.
//   - MaxSeats is 0 for a level that does not queue, always. Upstream
//     records max seats only for queuing levels and forgets them only when
//     a level is removed, so a level that switches from Queue to Reject
//     keeps its old cap there.
//   - An Integrator treats a time earlier than its previous one as no time
//     passing, and reports 0 rather than NaN for the average and standard
//     deviation of a window of no duration. Upstream's clock never goes
//     backwards and its only consumer ignores those values.
//
// # Internal organization
//
// limits.go holds the per-configuration arithmetic (Limits, Validate),
// alloc.go the allocation problem, integrator.go the demand statistics,
// and adjuster.go the driver that ties them together. Only the driver keeps state; its scratch space is reused, so a
// steady-state Update allocates just the slice it returns.
//
// Nothing here synchronizes. The driver (package engine) owns one
// Adjuster and an Integrator per level, which it feeds wherever the
// level's seat demand changes; on every configuration digest it calls
// SetLevels, and every AdjustmentPeriod Update, with each level's closed
// window, and hands each level's Current to its queue set. The Adjuster
// never sees an Integrator, so a driver that runs each level under a lock
// of its own closes each window under that level's lock and needs no lock
// over all of them.
package borrow
