package registry

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/store"
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
// Until Watch has listed both resources, Objects reads the store itself;
// afterwards it answers from the cache, which costs no store round trip.
type Source struct {
	reg *Registry
	// MinBackoff and MaxBackoff bound the delay before a failed list or a
	// broken watch is retried; the delay doubles after each failure in a
	// row. Zero values mean 100 ms and 30 s.
	MinBackoff, MaxBackoff time.Duration

	mu     sync.Mutex
	cache  map[store.Resource]map[string]config.Object
	synced map[store.Resource]bool
}

// NewSource returns a Source over r.
func NewSource(r *Registry) *Source {
	return &Source{
		reg:    r,
		cache:  map[store.Resource]map[string]config.Object{},
		synced: map[store.Resource]bool{},
	}
}

// listTimeout bounds a direct read by Objects.
const listTimeout = 30 * time.Second

// Objects returns every FlowSchema and PriorityLevelConfiguration stored:
// levels first, each kind sorted by name.
func (s *Source) Objects() ([]config.Object, error) {
	var out []config.Object
	for _, res := range sourceResources {
		s.mu.Lock()
		if s.synced[res] {
			objs := make([]config.Object, 0, len(s.cache[res]))
			for _, o := range s.cache[res] {
				objs = append(objs, o)
			}
			s.mu.Unlock()
			slices.SortFunc(objs, func(a, b config.Object) int { return strings.Compare(a.Name(), b.Name()) })
			out = append(out, objs...)
			continue
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
		objs, _, err := s.reg.List(ctx, res)
		cancel()
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
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
	fresh := make(map[string]config.Object, len(objs))
	for _, o := range objs {
		fresh[o.Name()] = o
	}
	s.mu.Lock()
	s.cache[res] = fresh
	s.synced[res] = true
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
		switch ev.Type {
		case watch.Added, watch.Modified:
			s.mu.Lock()
			s.cache[res][ev.Object.Name()] = ev.Object
			s.mu.Unlock()
		case watch.Deleted:
			s.mu.Lock()
			delete(s.cache[res], ev.Object.Name())
			s.mu.Unlock()
		default:
			// An error event (410 Gone after a compaction, a broken
			// connection): the caller lists afresh.
			return healthy
		}
		healthy = true
		changed()
	}
	return healthy
}
