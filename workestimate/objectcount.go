package workestimate

import (
	"errors"
	"sync"
	"time"
)

// Staleness rules of object counts
// (docs/spec/work-estimation.md#object-count-tracker).
const (
	// StaleAfter is how long a count stays trusted after its last update.
	// Storage refreshes counts about once a minute, so a count this old
	// means its source has stopped reporting.
	StaleAfter = 3 * time.Minute
	// PruneAfter is how long an entry is kept without an update before
	// Prune drops it.
	PruneAfter = time.Hour
)

// Errors an ObjectCounts returns. Callers branch on them with errors.Is.
var (
	// ErrCountNotFound means the resource has no count: nobody has ever
	// reported one, or it was pruned. The list estimate then charges the
	// minimum, which also covers aggregated APIs whose objects live
	// elsewhere.
	ErrCountNotFound = errors.New("workestimate: object count not found")
	// ErrCountStale means the count is older than StaleAfter. The list
	// estimate then assumes the worst.
	ErrCountStale = errors.New("workestimate: object count is stale")
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
// Get returns ErrCountNotFound or ErrCountStale (possibly wrapped) when it
// has no usable answer; any other error is treated like ErrCountStale.
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

// Tracker is the ObjectCounts kept in memory. Whoever knows the counts feeds
// it: the embedding program with figures from its storage (Set), or a proxy
// with what it sees in list responses (Observe). It is safe for concurrent
// use. It has no timer of its own: call Prune now and then (hourly, as
// upstream does) to forget resources that stopped being reported.
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

// Observe records a complete list response of a resource: itemCount
// objects taking totalBytes together. The average size is unknown (zero)
// for an empty list.
func (t *Tracker) Observe(now time.Time, resourceKey string, itemCount, totalBytes int64) {
	s := Stats{Count: itemCount}
	if itemCount > 0 && totalBytes > 0 {
		s.AvgSizeBytes = totalBytes / itemCount
	}
	t.Set(now, resourceKey, s)
}

// Get implements ObjectCounts. A count last updated more than StaleAfter
// before now is returned together with ErrCountStale.
func (t *Tracker) Get(now time.Time, resourceKey string) (Stats, error) {
	t.mu.RLock()
	e, ok := t.counts[resourceKey]
	t.mu.RUnlock()
	if !ok {
		return Stats{}, ErrCountNotFound
	}
	if e.updated.Before(now.Add(-StaleAfter)) {
		return e.Stats, ErrCountStale
	}
	return e.Stats, nil
}

// Prune drops every entry not updated for PruneAfter or longer, and
// returns how many it dropped.
func (t *Tracker) Prune(now time.Time) int {
	oldest := now.Add(-PruneAfter)
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for k, e := range t.counts {
		if !e.updated.After(oldest) {
			delete(t.counts, k)
			n++
		}
	}
	return n
}

// Len returns the number of resources tracked.
func (t *Tracker) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.counts)
}

// CountsFunc adapts a function to ObjectCounts, for an embedding program
// that already keeps its own figures.
type CountsFunc func(now time.Time, resourceKey string) (Stats, error)

// Get implements ObjectCounts.
func (f CountsFunc) Get(now time.Time, resourceKey string) (Stats, error) {
	return f(now, resourceKey)
}
