package workestimate

import (
	"strings"
	"sync"
	"time"
)

// Default bounds of a Learned.
const (
	// defaultLearnedResources is how many resources a Learned keeps at
	// most, unless told otherwise.
	defaultLearnedResources = 4096
	// defaultLearnedNamespaces is how many namespaces a Learned keeps at
	// most per resource, unless told otherwise.
	defaultLearnedNamespaces = 4096
)

// maxLearnedFigure bounds each figure of an observation, and
// maxLearnedNamespaces the namespaces of a resource, so that a resource's
// sums stay below 2^62.
const (
	maxLearnedFigure     = 1 << 40
	maxLearnedNamespaces = 1 << 22
)

// ListObservation is what one list response says about the objects of a
// resource.
type ListObservation struct {
	// Resource is the ObjectCounts key of the listed resource (see Key).
	Resource string
	// Namespace is the namespace listed; "" means a list across all
	// namespaces, or of a cluster-scoped resource.
	Namespace string
	// Count is the number of objects the list covers: the items returned,
	// plus those a paginated answer says remain. A Count smaller than Items
	// is taken to be Items.
	Count int64
	// Items is the number of items whose encodings Bytes sums; zero means
	// the observation says nothing about object sizes.
	Items int64
	// Bytes is the total size of the encodings of those Items items.
	Bytes int64
	// Complete says the list covers every object of its scope: it had no
	// label or field selector and is the first page of its list (or the
	// only one). Observe ignores observations that are not complete.
	Complete bool
}

// Learned is an ObjectCounts that learns the counts from the list
// responses it is shown (Observe), for a program that relays an API
// server's answers but has no access to its storage. It is safe for
// concurrent use.
//
// The model: a complete list across all namespaces counts the whole
// resource exactly, and replaces whatever namespaced lists said before. A
// complete list of one namespace counts that namespace; a later list of
// the same namespace replaces it. Get answers the larger of the last
// whole-resource count and the sum of the namespace counts learned since,
// together with the average object size of the observations the chosen
// figure comes from (when those carried no sizes, the other ones are
// used; when none did, the size is unknown).
//
// Learned counts do not go stale the way storage counts do. A storage
// that stops reporting is broken, so its last count is no longer
// believed; a resource nobody has listed for a while has simply not been
// listed, and its last count is still the best figure there is. Get
// therefore never reports a count stale. It returns ErrCountNotFound for a
// resource never observed, or observed last an hour or more before the
// latest Prune.
//
// Memory is bounded, whatever the paths clients send: a Learned keeps at
// most a fixed number of resources, and of namespaces per resource. Once a
// bound is reached, observations of further resources, or of further
// namespaces of that resource, are ignored until Prune makes room;
// resources and namespaces already known are still updated.
//
// The zero value is ready to use, with the default bounds.
type Learned struct {
	maxResources, maxNamespaces int

	mu        sync.RWMutex
	resources map[string]*learnedResource
}

// learnedResource is what a Learned knows about one resource.
type learnedResource struct {
	// cluster is the last complete list across all namespaces.
	cluster learnedScope
	// namespaces are the complete namespaced lists seen since then.
	namespaces map[string]*learnedScope
	// nsCount, nsBytes and nsItems are the sums of namespaces' fields,
	// kept up to date so that Get need not add them up.
	nsCount, nsBytes, nsItems int64
}

// learnedScope is the last observation of one scope: a whole resource or
// one of its namespaces.
type learnedScope struct {
	seen         bool
	count        int64
	bytes, items int64 // the last sizes observed, kept when a list has none
	lastObserved time.Time
}

// NewLearned returns an empty Learned that keeps at most maxResources
// resources and maxNamespaces namespaces per resource; zero or less means
// 4096 of each, and namespaces are never more than 2^22 per resource.
func NewLearned(maxResources, maxNamespaces int) *Learned {
	return &Learned{maxResources: maxResources, maxNamespaces: maxNamespaces}
}

func (l *Learned) resourceLimit() int {
	if l.maxResources > 0 {
		return l.maxResources
	}
	return defaultLearnedResources
}

func (l *Learned) namespaceLimit() int {
	if l.maxNamespaces > 0 {
		return min(l.maxNamespaces, maxLearnedNamespaces)
	}
	return defaultLearnedNamespaces
}

// Observe records a list response seen at now. Observations that are not
// complete, or that have a negative figure, are ignored, and so are new
// resources or namespaces beyond the bounds.
func (l *Learned) Observe(now time.Time, o ListObservation) {
	if !o.Complete || o.Count < 0 || o.Items < 0 || o.Bytes < 0 {
		return
	}
	// Figures are clamped so that the sums over namespaces cannot
	// overflow; no real list comes near.
	o.Count = min(max(o.Count, o.Items), maxLearnedFigure)
	o.Items = min(o.Items, maxLearnedFigure)
	o.Bytes = min(o.Bytes, maxLearnedFigure)
	if o.Items == 0 {
		o.Bytes = 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.resources[o.Resource]
	if r == nil {
		if len(l.resources) >= l.resourceLimit() {
			return
		}
		if l.resources == nil {
			l.resources = make(map[string]*learnedResource)
		}
		r = &learnedResource{}
		l.resources[strings.Clone(o.Resource)] = r
	}
	if o.Namespace == "" {
		r.cluster.set(now, &o)
		// The whole resource has just been counted: what namespaced
		// lists said before is included in that count.
		clear(r.namespaces)
		r.nsCount, r.nsBytes, r.nsItems = 0, 0, 0
		return
	}
	ns := r.namespaces[o.Namespace]
	if ns == nil {
		if len(r.namespaces) >= l.namespaceLimit() {
			return
		}
		if r.namespaces == nil {
			r.namespaces = make(map[string]*learnedScope)
		}
		ns = &learnedScope{}
		r.namespaces[strings.Clone(o.Namespace)] = ns
	}
	r.nsCount -= ns.count
	r.nsBytes -= ns.bytes
	r.nsItems -= ns.items
	ns.set(now, &o)
	r.nsCount += ns.count
	r.nsBytes += ns.bytes
	r.nsItems += ns.items
}

// set records an observation of the scope.
func (s *learnedScope) set(now time.Time, o *ListObservation) {
	s.seen = true
	s.count = o.Count
	s.lastObserved = now
	if o.Items > 0 {
		s.bytes, s.items = o.Bytes, o.Items
	}
}

// Get implements ObjectCounts. It does not allocate, and it takes only a
// read lock. now is not used: learned counts do not go stale.
func (l *Learned) Get(_ time.Time, resourceKey string) (Stats, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	r := l.resources[resourceKey]
	if r == nil {
		return Stats{}, ErrCountNotFound
	}
	var s Stats
	clusterAvg := average(r.cluster.bytes, r.cluster.items)
	nsAvg := average(r.nsBytes, r.nsItems)
	if r.cluster.seen && r.cluster.count >= r.nsCount {
		s.Count, s.AvgSizeBytes = r.cluster.count, clusterAvg
		if s.AvgSizeBytes <= 0 {
			s.AvgSizeBytes = nsAvg
		}
	} else {
		s.Count, s.AvgSizeBytes = r.nsCount, nsAvg
		if s.AvgSizeBytes <= 0 {
			s.AvgSizeBytes = clusterAvg
		}
	}
	return s, nil
}

// average returns bytes/items, or 0 (unknown) without items.
func average(bytes, items int64) int64 {
	if items <= 0 || bytes <= 0 {
		return 0
	}
	return bytes / items
}

// Prune forgets every scope (a resource's whole-resource count, or one of
// its namespaces) last observed an hour or longer before now, and every
// resource left with nothing. It returns how many resources it forgot.
// Call it now and then (hourly, say); Observe never prunes by itself.
func (l *Learned) Prune(now time.Time) int {
	oldest := now.Add(-pruneAfter)
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for key, r := range l.resources {
		if r.cluster.seen && !r.cluster.lastObserved.After(oldest) {
			r.cluster = learnedScope{}
		}
		for name, ns := range r.namespaces {
			if !ns.lastObserved.After(oldest) {
				r.nsCount -= ns.count
				r.nsBytes -= ns.bytes
				r.nsItems -= ns.items
				delete(r.namespaces, name)
			}
		}
		if !r.cluster.seen && len(r.namespaces) == 0 {
			delete(l.resources, key)
			n++
		}
	}
	return n
}
