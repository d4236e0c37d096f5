package registry

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/store"
	"k8s.io/apimachinery/pkg/watch"
)

// sourceResources are the resources a Source follows, levels first so that
// Objects lists a FlowSchema's level before the schema.
var sourceResources = []store.Resource{store.ResourcePriorityLevels, store.ResourceFlowSchemas}

// Source is the registry as the APF controller's configuration source
// (controller.Source): Objects returns every stored FlowSchema and
// PriorityLevelConfiguration, and Watch keeps a cache of them up to date
// and reports every change.
//
// Objects always answers with both kinds as they were at one revision of
// the store. The two kinds are followed by two watches, and one of them
// can be behind the other: a FlowSchema created right after its level may
// reach the cache before the level does. A configuration put together from
// the two caches as they stand would then name a level that does not
// exist, and the schema would be reported dangling for a moment though no
// state of the store ever held it so. Each cache knows the revision it is
// exact at; Objects reads the kind whose cache is older again from the
// store, at the newer cache's revision.
type Source struct {
	reg *Registry
	// MinBackoff and MaxBackoff bound the delay before a failed list or a
	// broken watch is retried; the delay doubles after each failure in a
	// row. Zero values mean 100 ms and 30 s.
	MinBackoff, MaxBackoff time.Duration

	mu    sync.Mutex
	cache map[store.Resource]*resourceCache
}

// resourceCache is what Watch has seen of one resource: its objects by
// name, exact as of revision rev (the revision of the list that filled it
// or of the latest event applied since).
type resourceCache struct {
	objs map[string]config.Object
	rev  int64
}

// NewSource returns a Source over r.
func NewSource(r *Registry) *Source {
	return &Source{reg: r, cache: map[store.Resource]*resourceCache{}}
}

// listTimeout bounds a direct read by Objects.
const listTimeout = 30 * time.Second

// Objects returns every FlowSchema and PriorityLevelConfiguration stored,
// as of one revision: levels first, each kind sorted by name.
func (s *Source) Objects() ([]config.Object, error) {
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	snap := make(map[store.Resource][]config.Object, len(sourceResources))
	var at int64 // the revision of the snapshot; 0 until one is known
	s.mu.Lock()
	for _, res := range sourceResources {
		if c := s.cache[res]; c != nil {
			at = max(at, c.rev)
		}
	}
	for _, res := range sourceResources {
		if c := s.cache[res]; c != nil && c.rev == at {
			objs := make([]config.Object, 0, len(c.objs))
			for _, o := range c.objs {
				objs = append(objs, o)
			}
			snap[res] = objs
		}
	}
	s.mu.Unlock()

	for _, res := range sourceResources {
		if _, ok := snap[res]; ok {
			continue
		}
		objs, rev, err := s.listAt(ctx, res, at)
		if errors.Is(err, store.ErrCompacted) {
			// The store was compacted past the caches' revision: read
			// everything afresh, at the revision of this first read.
			return s.readAll(ctx)
		}
		if err != nil {
			return nil, err
		}
		snap[res], at = objs, rev
	}
	return flatten(snap), nil
}

// readAll reads both resources from the store at one revision.
func (s *Source) readAll(ctx context.Context) ([]config.Object, error) {
	snap := make(map[store.Resource][]config.Object, len(sourceResources))
	var at int64
	for _, res := range sourceResources {
		objs, rev, err := s.listAt(ctx, res, at)
		if err != nil {
			return nil, err
		}
		snap[res], at = objs, rev
	}
	return flatten(snap), nil
}

// listAt reads every object of res as of revision at (0: the current
// revision) and returns them with the revision read.
func (s *Source) listAt(ctx context.Context, res store.Resource, at int64) ([]config.Object, int64, error) {
	page, err := s.reg.ListPage(ctx, res, ListRequest{Revision: at})
	if err != nil {
		return nil, 0, err
	}
	return page.Objects, page.Revision, nil
}

// flatten lists a snapshot's objects in Objects' order.
func flatten(snap map[store.Resource][]config.Object) []config.Object {
	var out []config.Object
	for _, res := range sourceResources {
		objs := snap[res]
		slices.SortFunc(objs, func(a, b config.Object) int { return strings.Compare(a.Name(), b.Name()) })
		out = append(out, objs...)
	}
	return out
}

// Watch follows both resources until ctx ends, calling changed after every
// change to the cache. A failed list or a broken watch is retried, with a
// fresh list, after a delay that grows while failures repeat.
func (s *Source) Watch(ctx context.Context, changed func()) {
	var wg sync.WaitGroup
	for _, res := range sourceResources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.follow(ctx, res, changed)
		}()
	}
	wg.Wait()
}

func (s *Source) backoffBounds() (time.Duration, time.Duration) {
	lo, hi := s.MinBackoff, s.MaxBackoff
	if lo <= 0 {
		lo = 100 * time.Millisecond
	}
	if hi < lo {
		hi = max(lo, 30*time.Second)
	}
	return lo, hi
}

// follow lists and watches one resource, again and again, until ctx ends.
func (s *Source) follow(ctx context.Context, res store.Resource, changed func()) {
	lo, hi := s.backoffBounds()
	delay := lo
	for ctx.Err() == nil {
		ok := s.listAndWatch(ctx, res, changed)
		if ctx.Err() != nil {
			return
		}
		if ok {
			delay = lo
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if !ok {
			delay = min(2*delay, hi)
		}
	}
}

// listAndWatch fills the cache of res from a list and applies the watch
// that follows it until the watch breaks. It reports whether the list
// succeeded and the watch delivered at least one event, i.e. whether the
// store was healthy enough to reset the backoff.
func (s *Source) listAndWatch(ctx context.Context, res store.Resource, changed func()) bool {
	objs, rv, err := s.reg.List(ctx, res)
	if err != nil {
		return false
	}
	listed, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return false
	}
	fresh := &resourceCache{objs: make(map[string]config.Object, len(objs)), rev: listed}
	for _, o := range objs {
		fresh.objs[o.Name()] = o
	}
	s.mu.Lock()
	s.cache[res] = fresh
	s.mu.Unlock()
	changed()

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := s.reg.Watch(wctx, res, rv)
	if err != nil {
		return false
	}
	healthy := false
	for ev := range events {
		if ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted {
			// An error event (410 Gone after a compaction, a broken
			// connection): the caller lists afresh.
			return healthy
		}
		// An event's object carries the revision of the write (of the
		// deletion, for a deleted one) as its resource version.
		rev, err := strconv.ParseInt(objectMeta(ev.Object).ResourceVersion, 10, 64)
		if err != nil {
			return healthy
		}
		s.mu.Lock()
		if ev.Type == watch.Deleted {
			delete(fresh.objs, ev.Object.Name())
		} else {
			fresh.objs[ev.Object.Name()] = ev.Object
		}
		fresh.rev = max(fresh.rev, rev)
		s.mu.Unlock()
		healthy = true
		changed()
	}
	return healthy
}
