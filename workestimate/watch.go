package workestimate

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/fields"

	"github.com/apfproject/apf/request"
)

// watchKey identifies a set of watches with the same scope. Empty
// namespace or name means "all".
type watchKey struct {
	group, resource, namespace, name string
}

// nodeNameIndexed is the only watch-cache index that matters here: watches
// on pods selecting one node by spec.nodeName are served from an index and
// cost a write to other pods nothing. Upstream keys the index by resource
// name alone, whatever the group, and so does this.
const (
	nodeNameIndexedResource = "pods"
	nodeNameField           = "spec.nodeName"
)

// WatchTracker counts the watches in progress, so that a write can be
// charged for the watch events it will cause
// (docs/spec/work-estimation.md#watch-tracker). It is safe for concurrent
// use. A watch registers when it starts executing and calls the returned
// forget function when its handler returns.
//
// One read-write mutex guards a map keyed by (group, resource, namespace,
// name). InterestedIn only reads, allocates nothing and takes the shared lock,
// so writes do not queue behind each other here.
type WatchTracker struct {
	mu     sync.RWMutex
	counts map[watchKey]int
}

// NewWatchTracker returns a tracker with no watches.
func NewWatchTracker() *WatchTracker {
	return &WatchTracker{counts: make(map[watchKey]int)}
}

// Register counts a watch request and returns the function that forgets it.
// Requests that are not watches, and pod watches selecting a non-empty
// spec.nodeName, are not counted; they get a forget function that does
// nothing. Calling forget more than once has no further effect.
func (t *WatchTracker) Register(info *request.Info) (forget func()) {
	if info == nil || info.Verb != "watch" || nodeScoped(info) {
		return func() {}
	}
	k := watchKey{group: info.APIGroup, resource: info.Resource, namespace: info.Namespace, name: info.Name}
	t.mu.Lock()
	t.counts[k]++
	t.mu.Unlock()
	var done atomic.Bool
	return func() {
		if done.Swap(true) {
			return
		}
		t.mu.Lock()
		if n := t.counts[k] - 1; n > 0 {
			t.counts[k] = n
		} else {
			delete(t.counts, k)
		}
		t.mu.Unlock()
	}
}

// nodeScoped reports whether a watch is a pod watch that the watch cache
// serves from its spec.nodeName index. A selector that does not parse
// leaves the watch counted.
//
// Upstream treats an empty node name like no selector: writes to pods that
// are not bound yet go to those watches too.
func nodeScoped(info *request.Info) bool {
	if info.Resource != nodeNameIndexedResource || info.FieldSelector == "" {
		return false
	}
	sel, err := fields.ParseSelector(info.FieldSelector)
	if err != nil {
		return false
	}
	node, ok := sel.RequiresExactMatch(nodeNameField)
	return ok && node != ""
}

// InterestedIn returns the number of registered watches a write to scope
// may have to notify: the watches of its resource, namespace and object;
// it implements WatchCounter.
func (t *WatchTracker) InterestedIn(s WatchScope) int {
	k := watchKey{group: s.Group, resource: s.Resource}
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.counts[k]
	if s.Namespace != "" {
		k.namespace = s.Namespace
		n += t.counts[k]
	}
	if s.Name != "" {
		k.name = s.Name
		n += t.counts[k]
	}
	return n
}
