package workestimate

import "time"

// Defaults of the work estimator
// (docs/spec/work-estimation.md#estimator-constants). Each is what
// kube-apiserver v0.37 uses when nothing overrides it.
const (
	// defaultObjectsPerSeat is how many listed objects one seat stands for
	// in the count-based list estimate.
	defaultObjectsPerSeat = 100
	// defaultBytesPerSeat is how many bytes of listed objects held in
	// memory at once one seat stands for in the size-based list estimate.
	defaultBytesPerSeat = 100_000
	// defaultWatchesPerSeat is how many interested watches one final seat
	// of a write stands for.
	defaultWatchesPerSeat = 10
	// defaultEventAdditionalDuration is the extra time one final seat of
	// a write is held, per seat, to pay for sending its watch events.
	defaultEventAdditionalDuration = 5 * time.Millisecond
	// defaultMinimumSeats is the fewest seats any request occupies.
	defaultMinimumSeats = 1
	// defaultMaximumMutatingSeats caps the final seats of a write.
	defaultMaximumMutatingSeats = 10
	// defaultMaximumListSeats caps a list or watch estimate when the
	// size-based estimate is on.
	defaultMaximumListSeats = 100
	// defaultMaximumListSeatsCountBased caps a list or watch estimate when
	// the size-based estimate is off.
	defaultMaximumListSeatsCountBased = 10
)

// Constants the list estimate uses for objects it knows nothing about
// (steps 6 and 7 of docs/spec/work-estimation.md#lists-and-watches).
const (
	// staleObjectCount stands for "as many objects as there could be"
	// when the count of a resource has gone stale.
	staleObjectCount = 1_000_000_000
	// unknownObjectSize is the average object size assumed when none is
	// known; it is the largest object etcd accepts by default.
	unknownObjectSize = 1_500_000
	// cacheMemoryCap bounds the bytes a list served from the watch cache
	// is assumed to hold at once: the cache streams its answer.
	cacheMemoryCap = 1_000_000
)

// Config holds the estimator's parameters. Start from DefaultConfig; a zero
// or negative numeric field means its default (in parentheses below), so a
// partly filled Config is still sound.
type Config struct {
	// ObjectsPerSeat is used by the count-based list estimate (100).
	ObjectsPerSeat int64
	// BytesPerSeat is used by the size-based list estimate (100,000).
	BytesPerSeat int64
	// WatchesPerSeat turns interested watches into final seats of a
	// write (10).
	WatchesPerSeat int
	// EventAdditionalDuration is the final-phase time per final seat
	// (5 ms).
	EventAdditionalDuration time.Duration
	// MinimumSeats is the fewest seats an estimate gives (1).
	MinimumSeats int
	// MaximumMutatingSeats caps the final seats of a write, before the
	// priority level's own maximum applies (10).
	MaximumMutatingSeats int
	// MaximumListSeats caps list and watch estimates, before the priority
	// level's own maximum applies. Zero means 100 when SizeBasedListCost
	// is on and 10 when it is off, as upstream derives it from the same
	// feature gate.
	MaximumListSeats int

	// SizeBasedListCost selects the size-based list estimate (upstream
	// feature gate SizeBasedListCostEstimate, on by default); when false
	// the older count-based estimate is used.
	SizeBasedListCost bool
	// WatchListEstimated sends watches through the list estimate (upstream
	// feature gate WatchList, on by default); when false a watch costs the
	// minimum.
	WatchListEstimated bool
	// ConsistentReadsFromCache says that the storage behind the API can
	// serve consistent reads (resourceVersion "") from its watch cache;
	// for etcd that means it supports watch progress requests. It decides
	// whether such lists are priced as cache or storage reads (step 5 of
	// docs/spec/work-estimation.md#lists-and-watches). Upstream finds out by
	// probing etcd and answers false until the probe succeeds, so the default
	// is false: the dearer answer.
	ConsistentReadsFromCache bool
}

// DefaultConfig returns the upstream defaults: size-based list cost and
// watch-list estimation on, consistent reads priced as storage reads.
func DefaultConfig() Config {
	return Config{
		ObjectsPerSeat:          defaultObjectsPerSeat,
		BytesPerSeat:            defaultBytesPerSeat,
		WatchesPerSeat:          defaultWatchesPerSeat,
		EventAdditionalDuration: defaultEventAdditionalDuration,
		MinimumSeats:            defaultMinimumSeats,
		MaximumMutatingSeats:    defaultMaximumMutatingSeats,
		SizeBasedListCost:       true,
		WatchListEstimated:      true,
	}
}

// normalized returns c with every unset numeric field at its default.
func (c Config) normalized() Config {
	if c.ObjectsPerSeat <= 0 {
		c.ObjectsPerSeat = defaultObjectsPerSeat
	}
	if c.BytesPerSeat <= 0 {
		c.BytesPerSeat = defaultBytesPerSeat
	}
	if c.WatchesPerSeat <= 0 {
		c.WatchesPerSeat = defaultWatchesPerSeat
	}
	if c.EventAdditionalDuration <= 0 {
		c.EventAdditionalDuration = defaultEventAdditionalDuration
	}
	if c.MinimumSeats <= 0 {
		c.MinimumSeats = defaultMinimumSeats
	}
	if c.MaximumMutatingSeats <= 0 {
		c.MaximumMutatingSeats = defaultMaximumMutatingSeats
	}
	if c.MaximumListSeats <= 0 {
		c.MaximumListSeats = defaultMaximumListSeatsCountBased
		if c.SizeBasedListCost {
			c.MaximumListSeats = defaultMaximumListSeats
		}
	}
	return c
}
