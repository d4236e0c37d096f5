package workestimate

import (
	"errors"
	"sync"
	"time"
)

// Staleness rules of object counts
// (docs/spec/work-estimation.md#object-count-tracker).
const (
	// staleAfter is how long a count stays trusted after its last update.
	// Storage refreshes counts about once a minute, so a count this old
	// means its source has stopped reporting.
	staleAfter = 3 * time.Minute
	// pruneAfter is how long Learned keeps an entry without an update.
	pruneAfter = time.Hour
)

// Errors an ObjectCounts returns.
var (
	// ErrCountNotFound means the resource has no count: nobody has ever
	// reported one, or it was pruned. The list estimate then charges the
	// minimum, which also covers aggregated APIs whose objects live
	// elsewhere.
	ErrCountNotFound = errors.New("workestimate: object count not found")
	// errCountStale means the count is older than staleAfter.
	errCountStale = errors.New("workestimate: object count is stale")
)

// Stats is what is known about the stored objects of one resource.
type Stats struct {
	// Count is the number of objects.
	Count int64
	// AvgSizeBytes is their estimated average encoded size; zero or less
	// means unknown.
	AvgSizeBytes int64
}

// ObjectCounts reports object statistics per resource. The key is
// "resource" for the core group and "resource.group" otherwise (see Key).
// Get returns ErrCountNotFound (possibly wrapped) for a resource nobody
// counts, which then costs the minimum; any other error means the count
// cannot be trusted, and the list estimate assumes the worst.
type ObjectCounts interface {
	Get(now time.Time, resourceKey string) (Stats, error)
}

// Key returns the ObjectCounts key of a resource: "pods" for the core
// group, "deployments.apps" for the others.
func Key(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

// Tracker is the ObjectCounts kept in memory, fed by whoever knows the
// counts (Set), for example an embedding program with figures from its
// storage. A count Set longer than three minutes ago is stale. It is safe
// for concurrent use.
type Tracker struct {
	mu     sync.RWMutex
	counts map[string]trackedStats
}

// trackedStats is one entry of a Tracker.
type trackedStats struct {
	Stats
	updated time.Time
}

// NewTracker returns an empty Tracker.
func NewTracker() *Tracker {
	return &Tracker{counts: make(map[string]trackedStats)}
}

// Set records the stats of a resource as of now.
func (t *Tracker) Set(now time.Time, resourceKey string, s Stats) {
	t.mu.Lock()
	t.counts[resourceKey] = trackedStats{Stats: s, updated: now}
	t.mu.Unlock()
}

// Get implements ObjectCounts. A count last updated more than three
// minutes before now is returned with an error: it is stale.
func (t *Tracker) Get(now time.Time, resourceKey string) (Stats, error) {
	t.mu.RLock()
	e, ok := t.counts[resourceKey]
	t.mu.RUnlock()
	if !ok {
		return Stats{}, ErrCountNotFound
	}
	if e.updated.Before(now.Add(-staleAfter)) {
		return e.Stats, errCountStale
	}
	return e.Stats, nil
}
