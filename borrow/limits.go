package borrow

import (
	"errors"
	"fmt"
	"math"
)

// Defaults of the two kube-apiserver flags whose sum is the server
// concurrency limit, 400 + 200 = 600 seats.
const (
	// DefaultMaxRequestsInflight is the default of --max-requests-inflight.
	DefaultMaxRequestsInflight = 400
	// DefaultMaxMutatingRequestsInflight is the default of
	// --max-mutating-requests-inflight.
	DefaultMaxMutatingRequestsInflight = 200
	// DefaultServerConcurrencyLimit is the server concurrency limit (SCL) the
	// two defaults give.
	DefaultServerConcurrencyLimit = DefaultMaxRequestsInflight + DefaultMaxMutatingRequestsInflight
)

// maxSeatsFraction is the share of a level's nominal limit that one request
// may occupy at most, before the hand-size cap: a Queue level's max seats are
// max(1, min(ceil(0.15*nominal), floor(nominal/handSize))). At SCL 600 it
// keeps the historical cap of 10 seats for the default levels.
const maxSeatsFraction = 0.15

// errInvalidConfig is wrapped by every error Validate and SetLevels return.
var errInvalidConfig = errors.New("borrow: invalid configuration")

// LevelConfig is what the concurrency computation needs to know about one
// priority level. The controller builds it from a PriorityLevelConfiguration
// (real, imagined mandatory, or quiescing).
type LevelConfig struct {
	// Name identifies the level; state persists across SetLevels by name.
	Name string
	// Exempt marks the exempt level: its limit is never enforced, but its
	// demand still takes seats out of what the others share.
	Exempt bool
	// Shares is nominalConcurrencyShares (NCS): limited.NCS, or exempt.NCS
	// for the exempt level (nil counts as 0).
	Shares int
	// LendablePercent is lendablePercent, 0..100 (nil counts as 0).
	LendablePercent int
	// BorrowingLimitPercent is borrowingLimitPercent; nil means no limit
	// (the level may borrow up to SCL seats). Ignored for exempt levels.
	BorrowingLimitPercent *int
	// HandSize is the queuing hand size for levels whose limitResponse is
	// Queue, and 0 for every other level (Reject, exempt).
	HandSize int
}

// LevelLimits are the seat limits derived from one LevelConfig
// (docs/spec/concurrency.md#per-level-limits).
type LevelLimits struct {
	// Name is the level's name.
	Name string
	// Exempt repeats LevelConfig.Exempt.
	Exempt bool
	// Nominal is the nominal concurrency limit, ceil(SCL*NCS/shareSum).
	Nominal int
	// Lendable is round(Nominal*lendablePercent/100).
	Lendable int
	// Borrowing is round(Nominal*borrowingLimitPercent/100), or SCL when
	// there is no borrowing limit or the level is exempt.
	Borrowing int
	// Lower is the least the level's current limit can be: Nominal-Lendable
	// (upstream's minCL; the lower_limit_seats metric).
	Lower int
	// Upper is the most the level's current limit can be: Nominal+Borrowing
	// (upstream's maxCL; the upper_limit_seats metric).
	Upper int
	// Initial is the current limit a newly created level starts with,
	// Nominal - floor(Lendable/2). It survives only if the first adjustment
	// fails to allocate.
	Initial int
	// MaxSeats is the most seats one request may occupy at this level,
	// max(1, min(ceil(0.15*Nominal), floor(Nominal/HandSize))), for levels
	// that queue; 0 means unset (the work estimator's global cap applies).
	MaxSeats int
}

// Sums are the configuration-wide totals Limits computes alongside the
// per-level limits.
type Sums struct {
	// ServerLimit is the server concurrency limit the limits were computed
	// for.
	ServerLimit int
	// ShareSum is the sum of every level's NCS, exempt included.
	ShareSum float64
	// NominalCLSum is the sum of the nominal limits. Because each is rounded
	// up it can exceed ServerLimit a little; it is the total the periodic
	// adjustment distributes and the executing denominator of
	// read_vs_write_current_requests.
	NominalCLSum int
}

// Limits computes each level's seat limits for a server concurrency limit of
// serverLimit, in the order of levels
// (docs/spec/concurrency.md#per-level-limits). The inputs are taken as valid
// (see Validate); in particular, when the shares sum to zero every nominal
// limit is 0 rather than the undefined result of 0/0. Upstream never gets
// there: the mandatory catch-all level alone brings 5 shares.
func Limits(serverLimit int, levels []LevelConfig) ([]LevelLimits, Sums) {
	out := make([]LevelLimits, len(levels))
	sums := Sums{ServerLimit: serverLimit}
	for _, lc := range levels {
		sums.ShareSum += float64(lc.Shares)
	}
	scl := float64(serverLimit)
	for i, lc := range levels {
		var nominal int
		if sums.ShareSum > 0 {
			// Float math, multiplication first, then ceil: the
			// nominal limits may sum to a little more than SCL.
			nominal = int(math.Ceil(scl * float64(lc.Shares) / sums.ShareSum))
		}
		lendable := int(math.Round(float64(nominal) * float64(lc.LendablePercent) / 100))
		borrowing := serverLimit
		if lc.BorrowingLimitPercent != nil && !lc.Exempt {
			borrowing = int(math.Round(float64(nominal) * float64(*lc.BorrowingLimitPercent) / 100))
		}
		maxSeats := 0
		if !lc.Exempt && lc.HandSize > 0 {
			maxSeats = int(math.Max(1, math.Min(math.Ceil(float64(nominal)*maxSeatsFraction), float64(nominal/lc.HandSize))))
		}
		out[i] = LevelLimits{
			Name:      lc.Name,
			Exempt:    lc.Exempt,
			Nominal:   nominal,
			Lendable:  lendable,
			Borrowing: borrowing,
			Lower:     nominal - lendable,
			Upper:     nominal + borrowing,
			Initial:   nominal - lendable/2,
			MaxSeats:  maxSeats,
		}
		sums.NominalCLSum += nominal
	}
	return out, sums
}

// Validate reports whether Limits and SetLevels can use the configuration:
// a positive server limit, unique non-empty names, non-negative shares,
// lendablePercent in 0..100, a non-negative borrowingLimitPercent, a
// non-negative hand size, and at least one share in total (unless there are
// no levels at all). API validation of
// PriorityLevelConfigurations is stricter; this only guards the arithmetic.
func Validate(serverLimit int, levels []LevelConfig) error {
	if serverLimit <= 0 {
		return fmt.Errorf("%w: server concurrency limit %d must be positive", errInvalidConfig, serverLimit)
	}
	seen := make(map[string]struct{}, len(levels))
	shareSum := 0.0
	for i, lc := range levels {
		if lc.Name == "" {
			return fmt.Errorf("%w: level %d has no name", errInvalidConfig, i)
		}
		if _, dup := seen[lc.Name]; dup {
			return fmt.Errorf("%w: level %q appears twice", errInvalidConfig, lc.Name)
		}
		seen[lc.Name] = struct{}{}
		if lc.Shares < 0 {
			return fmt.Errorf("%w: level %q: shares %d must not be negative", errInvalidConfig, lc.Name, lc.Shares)
		}
		if lc.LendablePercent < 0 || lc.LendablePercent > 100 {
			return fmt.Errorf("%w: level %q: lendablePercent %d must be in 0..100", errInvalidConfig, lc.Name, lc.LendablePercent)
		}
		if p := lc.BorrowingLimitPercent; p != nil && *p < 0 {
			return fmt.Errorf("%w: level %q: borrowingLimitPercent %d must not be negative", errInvalidConfig, lc.Name, *p)
		}
		if lc.HandSize < 0 {
			return fmt.Errorf("%w: level %q: handSize %d must not be negative", errInvalidConfig, lc.Name, lc.HandSize)
		}
		shareSum += float64(lc.Shares)
	}
	if len(levels) > 0 && shareSum <= 0 {
		return fmt.Errorf("%w: the levels' shares sum to zero", errInvalidConfig)
	}
	return nil
}
