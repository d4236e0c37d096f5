package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Memory is a Store in memory, with the whole history of changes kept
// until Compact drops it. It serves tests, the simulator and apf serve
// --config-dir (which compacts it every hour), and is the reference the
// etcd store is checked against.
type Memory struct {
	mu        sync.Mutex
	rev       int64
	compacted int64 // history at or below this revision is gone
	items     map[Resource]map[string]Item
	log       []logEntry
	// changed is closed, and replaced, on every write and on Close.
	changed chan struct{}
	closed  bool
}

// logEntry is one change: the event a watch sees, and what the item was
// before it (had is false for a creation), so that ListAt can undo the
// change to read an earlier state.
type logEntry struct {
	res  Resource
	ev   Event
	prev Item
	had  bool
}

// NewMemory returns an empty Memory at revision 1, the revision etcd starts
// at.
func NewMemory() *Memory {
	return &Memory{rev: 1, items: map[Resource]map[string]Item{}, changed: make(chan struct{})}
}

var _ Store = (*Memory)(nil)

func checkName(res Resource, name string) error {
	if res == "" || name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("store: bad key %q/%q", res, name)
	}
	return nil
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, res Resource, name string) (Item, error) {
	if err := checkName(res, name); err != nil {
		return Item{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Item{}, ErrClosed
	}
	it, ok := m.items[res][name]
	if !ok {
		return Item{}, ErrNotFound
	}
	return it, nil
}

// List implements Store.
func (m *Memory) List(_ context.Context, res Resource) ([]Item, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, 0, ErrClosed
	}
	out := make([]Item, 0, len(m.items[res]))
	for _, it := range m.items[res] {
		out = append(out, it)
	}
	slices.SortFunc(out, func(a, b Item) int { return strings.Compare(a.Name, b.Name) })
	return out, m.rev, nil
}

// ListAt implements Store. The state at an earlier revision is the
// current one with the changes made since undone: each item changed
// after the revision is taken as it was before the first of those
// changes. So a read costs the items of the resource plus the history
// after the revision, which the log holds back to the compacted revision.
func (m *Memory) ListAt(_ context.Context, res Resource, o ListOptions) (ListResult, error) {
	if res == "" {
		return ListResult{}, errors.New("store: empty resource")
	}
	if o.Revision < 0 || o.Limit < 0 {
		return ListResult{}, fmt.Errorf("store: list at revision %d with limit %d", o.Revision, o.Limit)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ListResult{}, ErrClosed
	}
	rev := m.rev
	if o.Revision != 0 {
		switch {
		case o.Revision > m.rev:
			return ListResult{}, ErrFutureRevision
		case o.Revision < m.compacted:
			return ListResult{}, ErrCompacted
		}
		rev = o.Revision
	}
	// then holds, for every item changed after rev, its state at rev.
	then := map[string]*Item{}
	i, _ := slices.BinarySearchFunc(m.log, rev+1, func(e logEntry, r int64) int {
		return cmp.Compare(e.ev.Item.ModRevision, r)
	})
	for _, e := range m.log[i:] {
		if _, seen := then[e.ev.Item.Name]; seen || e.res != res {
			continue
		}
		if e.had {
			then[e.ev.Item.Name] = &e.prev
		} else {
			then[e.ev.Item.Name] = nil
		}
	}
	var all []Item
	for name, it := range m.items[res] {
		if _, changed := then[name]; !changed && name >= o.From {
			all = append(all, it)
		}
	}
	for name, it := range then {
		if it != nil && name >= o.From {
			all = append(all, *it)
		}
	}
	slices.SortFunc(all, func(a, b Item) int { return strings.Compare(a.Name, b.Name) })
	out := ListResult{Items: all, Revision: rev}
	if o.Limit > 0 && int64(len(all)) > o.Limit {
		out.Items = all[:o.Limit:o.Limit]
		out.Remaining = int64(len(all)) - o.Limit
	}
	if out.Items == nil {
		out.Items = []Item{}
	}
	return out, nil
}

// writeLocked records one change at the next revision and wakes watches.
func (m *Memory) writeLocked(res Resource, t EventType, it Item) int64 {
	prev, had := m.items[res][it.Name]
	m.rev++
	it.ModRevision = m.rev
	if t == Added {
		it.CreateRevision = m.rev
	}
	if t == Deleted {
		delete(m.items[res], it.Name)
	} else {
		if m.items[res] == nil {
			m.items[res] = map[string]Item{}
		}
		m.items[res][it.Name] = it
	}
	m.log = append(m.log, logEntry{res: res, ev: Event{Type: t, Item: it}, prev: prev, had: had})
	close(m.changed)
	m.changed = make(chan struct{})
	return m.rev
}

// Create implements Store.
func (m *Memory) Create(_ context.Context, res Resource, name string, data []byte) (int64, error) {
	if err := checkName(res, name); err != nil {
		return 0, err
	}
	if err := checkSize(name, data); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrClosed
	}
	if _, ok := m.items[res][name]; ok {
		return 0, ErrExists
	}
	return m.writeLocked(res, Added, Item{Name: name, Data: slices.Clone(data)}), nil
}

// Update implements Store.
func (m *Memory) Update(_ context.Context, res Resource, name string, data []byte, expect int64) (int64, error) {
	if err := checkName(res, name); err != nil {
		return 0, err
	}
	if err := checkSize(name, data); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrClosed
	}
	it, ok := m.items[res][name]
	if !ok {
		return 0, ErrNotFound
	}
	if expect != 0 && it.ModRevision != expect {
		return 0, ErrConflict
	}
	it.Data = slices.Clone(data)
	return m.writeLocked(res, Modified, it), nil
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, res Resource, name string, expect int64) (Item, error) {
	if err := checkName(res, name); err != nil {
		return Item{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Item{}, ErrClosed
	}
	it, ok := m.items[res][name]
	if !ok {
		return Item{}, ErrNotFound
	}
	if expect != 0 && it.ModRevision != expect {
		return Item{}, ErrConflict
	}
	it.ModRevision = m.writeLocked(res, Deleted, it)
	return it, nil
}

// Revision implements Store.
func (m *Memory) Revision(context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrClosed
	}
	return m.rev, nil
}

// Compact drops the history at and below revision rev: a later Watch from
// an earlier revision fails with ErrCompacted.
func (m *Memory) Compact(rev int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rev = min(rev, m.rev)
	if rev <= m.compacted {
		return
	}
	m.compacted = rev
	i, _ := slices.BinarySearchFunc(m.log, rev+1, func(e logEntry, r int64) int {
		return int(e.ev.Item.ModRevision - r)
	})
	m.log = slices.Clone(m.log[i:])
}

// Close implements Store.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.closed {
		m.closed = true
		close(m.changed)
	}
	return nil
}

// Watch implements Store.
func (m *Memory) Watch(ctx context.Context, res Resource, from int64) <-chan Event {
	ch := make(chan Event, 16)
	m.mu.Lock()
	if from == 0 {
		from = m.rev
	}
	m.mu.Unlock()
	go m.watch(ctx, res, from, ch)
	return ch
}

func (m *Memory) watch(ctx context.Context, res Resource, from int64, ch chan<- Event) {
	defer close(ch)
	send := func(ev Event) bool {
		select {
		case ch <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	next := from // the last revision delivered
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			send(Event{Err: ErrClosed})
			return
		}
		if next < m.compacted {
			m.mu.Unlock()
			send(Event{Err: ErrCompacted})
			return
		}
		i, _ := slices.BinarySearchFunc(m.log, next+1, func(e logEntry, r int64) int {
			return int(e.ev.Item.ModRevision - r)
		})
		var batch []Event
		for _, e := range m.log[i:] {
			if e.res == res {
				batch = append(batch, e.ev)
			}
		}
		if len(m.log) > i {
			next = m.log[len(m.log)-1].ev.Item.ModRevision
		}
		wake := m.changed
		m.mu.Unlock()
		for _, ev := range batch {
			if !send(ev) {
				return
			}
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return
		}
	}
}

// checkSize refuses a write etcd would refuse for its size. The key and
// value are what a write request is made of, less a little framing; the
// margin errs on refusing less than etcd does.
func checkSize(name string, data []byte) error {
	if len(name)+len(data) > MaxRequestBytes {
		return fmt.Errorf("store: writing %s: %d bytes: %w", name, len(data), ErrTooLarge)
	}
	return nil
}
