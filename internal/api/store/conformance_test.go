package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// eventWait bounds how long a test waits for an event that must come; a
// passing run never waits that long.
const eventWait = 10 * time.Second

// subject is one implementation under test: a fresh, empty store and the
// way to compact its history.
type subject struct {
	name    string
	open    func(t *testing.T) Store
	compact func(t *testing.T, s Store, rev int64)
}

func memorySubject() subject {
	return subject{
		name: "memory",
		open: func(t *testing.T) Store {
			m := NewMemory()
			t.Cleanup(func() { _ = m.Close() })
			return m
		},
		compact: func(_ *testing.T, s Store, rev int64) { s.(*Memory).Compact(rev) },
	}
}

// The embedded etcd the tests share: started on first use, stopped by
// TestMain. Each test gets a prefix of its own on it, so tests never see
// each other's items.
var (
	sharedOnce sync.Once
	shared     *Embedded
	sharedDir  string
	sharedErr  error
	prefixSeq  atomic.Int64
)

func sharedEmbedded(t *testing.T) *Embedded {
	t.Helper()
	sharedOnce.Do(func() {
		sharedDir, sharedErr = os.MkdirTemp("", "apf-store-etcd-")
		if sharedErr != nil {
			return
		}
		shared, sharedErr = StartEmbedded(sharedDir, EmbeddedOptions{})
	})
	if sharedErr != nil {
		t.Fatalf("embedded etcd: %v", sharedErr)
	}
	return shared
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		if err := shared.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "closing embedded etcd:", err)
			code = 1
		}
	}
	if sharedDir != "" {
		_ = os.RemoveAll(sharedDir)
	}
	os.Exit(code)
}

func testPrefix() string { return fmt.Sprintf("/apf-test-%d/", prefixSeq.Add(1)) }

func etcdSubject() subject {
	return subject{
		name: "etcd",
		open: func(t *testing.T) Store {
			e := NewEtcd(sharedEmbedded(t).Client(), testPrefix())
			t.Cleanup(func() { _ = e.Close() })
			return e
		},
		compact: func(t *testing.T, s Store, rev int64) {
			if err := s.(*Etcd).Compact(context.Background(), rev); err != nil {
				t.Fatalf("Compact(%d): %v", rev, err)
			}
		},
	}
}

// behaviours is the contract every Store keeps, one entry per behaviour.
var behaviours = []struct {
	name string
	run  func(t *testing.T, sub subject, s Store)
}{
	{"CreateGetList", testCreateGetList},
	{"CreateExisting", testCreateExisting},
	{"UpdateExpect", testUpdateExpect},
	{"NotFound", testNotFound},
	{"Delete", testDelete},
	{"BadName", testBadName},
	{"TooLarge", testTooLarge},
	{"WatchFromNow", testWatchFromNow},
	{"WatchReplay", testWatchReplay},
	{"WatchOneResource", testWatchOneResource},
	{"WatchCompacted", testWatchCompacted},
	{"WatchCancel", testWatchCancel},
	{"ListAtCurrent", testListAtCurrent},
	{"ListAtPast", testListAtPast},
	{"ListAtPages", testListAtPages},
	{"ListAtCompacted", testListAtCompacted},
	{"ListAtFuture", testListAtFuture},
	{"ListAtBadOptions", testListAtBadOptions},
	{"Close", testClose},
}

func TestConformance(t *testing.T) {
	for _, sub := range []subject{memorySubject(), etcdSubject()} {
		t.Run(sub.name, func(t *testing.T) {
			for _, b := range behaviours {
				t.Run(b.name, func(t *testing.T) { b.run(t, sub, sub.open(t)) })
			}
		})
	}
}

const (
	fs = ResourceFlowSchemas
	pl = ResourcePriorityLevels
)

func mustCreate(t *testing.T, s Store, res Resource, name, data string) int64 {
	t.Helper()
	rev, err := s.Create(context.Background(), res, name, []byte(data))
	if err != nil {
		t.Fatalf("Create(%s, %s): %v", res, name, err)
	}
	return rev
}

func mustUpdate(t *testing.T, s Store, res Resource, name, data string, expect int64) int64 {
	t.Helper()
	rev, err := s.Update(context.Background(), res, name, []byte(data), expect)
	if err != nil {
		t.Fatalf("Update(%s, %s, expect %d): %v", res, name, expect, err)
	}
	return rev
}

func mustRevision(t *testing.T, s Store) int64 {
	t.Helper()
	rev, err := s.Revision(context.Background())
	if err != nil {
		t.Fatalf("Revision: %v", err)
	}
	return rev
}

func checkItem(t *testing.T, what string, got Item, name, data string, create, mod int64) {
	t.Helper()
	if got.Name != name || string(got.Data) != data || got.CreateRevision != create || got.ModRevision != mod {
		t.Errorf("%s = {%s %q create %d mod %d}, want {%s %q create %d mod %d}",
			what, got.Name, got.Data, got.CreateRevision, got.ModRevision, name, data, create, mod)
	}
}

// next returns the next event of a watch, failing the test if none comes.
func next(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch closed, want an event")
		}
		return ev
	case <-time.After(eventWait):
		t.Fatal("no event from the watch")
	}
	return Event{}
}

func checkEvent(t *testing.T, ev Event, typ EventType, name, data string, create, mod int64) {
	t.Helper()
	if ev.Err != nil {
		t.Fatalf("event error %v, want %v %s", ev.Err, typ, name)
	}
	if ev.Type != typ {
		t.Errorf("event type %v, want %v (item %s)", ev.Type, typ, ev.Item.Name)
	}
	checkItem(t, typ.String()+" event", ev.Item, name, data, create, mod)
}

// waitClosed fails unless the watch ends: any error event it sends first
// is returned.
func waitClosed(t *testing.T, ch <-chan Event) error {
	t.Helper()
	var err error
	deadline := time.After(eventWait)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return err
			}
			if ev.Err == nil {
				t.Fatalf("unexpected %v %s while waiting for the end", ev.Type, ev.Item.Name)
			}
			err = ev.Err
		case <-deadline:
			t.Fatal("watch not closed")
		}
	}
}

func testCreateGetList(t *testing.T, _ subject, s Store) {
	ctx := context.Background()
	start := mustRevision(t, s)
	rb := mustCreate(t, s, fs, "b", "B")
	ra := mustCreate(t, s, fs, "a", "A")
	rc := mustCreate(t, s, fs, "c", "C")
	rp := mustCreate(t, s, pl, "a", "PA")
	if !(start < rb && rb < ra && ra < rc && rc < rp) {
		t.Fatalf("revisions %d, %d, %d, %d after %d: want strictly increasing", rb, ra, rc, rp, start)
	}
	got, err := s.Get(ctx, fs, "a")
	if err != nil {
		t.Fatal(err)
	}
	checkItem(t, "Get(a)", got, "a", "A", ra, ra)

	items, rev, err := s.List(ctx, fs)
	if err != nil {
		t.Fatal(err)
	}
	if want := mustRevision(t, s); rev != want || rev < rp {
		t.Errorf("List revision %d, want the current %d (>= %d)", rev, want, rp)
	}
	if len(items) != 3 {
		t.Fatalf("List = %d items, want 3", len(items))
	}
	checkItem(t, "List[0]", items[0], "a", "A", ra, ra)
	checkItem(t, "List[1]", items[1], "b", "B", rb, rb)
	checkItem(t, "List[2]", items[2], "c", "C", rc, rc)

	pls, _, err := s.List(ctx, pl)
	if err != nil {
		t.Fatal(err)
	}
	if len(pls) != 1 {
		t.Fatalf("List(pl) = %d items, want 1", len(pls))
	}
	checkItem(t, "List(pl)[0]", pls[0], "a", "PA", rp, rp)
}

func testCreateExisting(t *testing.T, _ subject, s Store) {
	r := mustCreate(t, s, fs, "a", "A")
	if _, err := s.Create(context.Background(), fs, "a", []byte("again")); !errors.Is(err, ErrExists) {
		t.Fatalf("second Create: %v, want ErrExists", err)
	}
	got, err := s.Get(context.Background(), fs, "a")
	if err != nil {
		t.Fatal(err)
	}
	checkItem(t, "Get after refused Create", got, "a", "A", r, r)
	// The same name under the other resource is another item.
	mustCreate(t, s, pl, "a", "PA")
}

func testUpdateExpect(t *testing.T, _ subject, s Store) {
	ctx := context.Background()
	r1 := mustCreate(t, s, fs, "a", "v1")
	r2 := mustUpdate(t, s, fs, "a", "v2", r1)
	if r2 <= r1 {
		t.Fatalf("update revision %d, want > %d", r2, r1)
	}
	if _, err := s.Update(ctx, fs, "a", []byte("stale"), r1); !errors.Is(err, ErrConflict) {
		t.Fatalf("Update with stale expect: %v, want ErrConflict", err)
	}
	r3 := mustUpdate(t, s, fs, "a", "v3", 0)
	if r3 <= r2 {
		t.Fatalf("unconditional update revision %d, want > %d", r3, r2)
	}
	got, err := s.Get(ctx, fs, "a")
	if err != nil {
		t.Fatal(err)
	}
	checkItem(t, "Get after updates", got, "a", "v3", r1, r3)
}

func testNotFound(t *testing.T, _ subject, s Store) {
	ctx := context.Background()
	mustCreate(t, s, pl, "a", "other resource")
	if _, err := s.Get(ctx, fs, "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get: %v, want ErrNotFound", err)
	}
	for _, expect := range []int64{0, 1, 1 << 40} {
		if _, err := s.Update(ctx, fs, "a", []byte("x"), expect); !errors.Is(err, ErrNotFound) {
			t.Errorf("Update expect %d: %v, want ErrNotFound", expect, err)
		}
		if _, err := s.Delete(ctx, fs, "a", expect); !errors.Is(err, ErrNotFound) {
			t.Errorf("Delete expect %d: %v, want ErrNotFound", expect, err)
		}
	}
}

func testDelete(t *testing.T, _ subject, s Store) {
	ctx := context.Background()
	r1 := mustCreate(t, s, fs, "a", "v1")
	r2 := mustUpdate(t, s, fs, "a", "v2", 0)
	if _, err := s.Delete(ctx, fs, "a", r1); !errors.Is(err, ErrConflict) {
		t.Fatalf("Delete with stale expect: %v, want ErrConflict", err)
	}
	it, err := s.Delete(ctx, fs, "a", r2)
	if err != nil {
		t.Fatal(err)
	}
	rd := mustRevision(t, s)
	if rd <= r2 {
		t.Fatalf("revision after delete %d, want > %d", rd, r2)
	}
	checkItem(t, "deleted item", it, "a", "v2", r1, rd)
	if _, err := s.Get(ctx, fs, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	// A name can be created again, as a new item.
	r3 := mustCreate(t, s, fs, "a", "v3")
	got, err := s.Get(ctx, fs, "a")
	if err != nil {
		t.Fatal(err)
	}
	checkItem(t, "recreated", got, "a", "v3", r3, r3)
	// Delete without a condition.
	mustCreate(t, s, fs, "b", "B")
	if _, err := s.Delete(ctx, fs, "b", 0); err != nil {
		t.Fatalf("unconditional Delete: %v", err)
	}
}

// testTooLarge: a write over etcd's request limit is refused with
// ErrTooLarge by both stores, and one just under it is taken.
func testTooLarge(t *testing.T, _ subject, s Store) {
	ctx := context.Background()
	big := strings.Repeat("x", MaxRequestBytes+1)
	if _, err := s.Create(ctx, fs, "big", []byte(big)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Create of %d bytes: %v, want ErrTooLarge", len(big), err)
	}
	rev := mustCreate(t, s, fs, "big", "small")
	if _, err := s.Update(ctx, fs, "big", []byte(big), rev); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Update to %d bytes: %v, want ErrTooLarge", len(big), err)
	}
	fits := strings.Repeat("x", MaxRequestBytes-4096)
	if _, err := s.Update(ctx, fs, "big", []byte(fits), rev); err != nil {
		t.Errorf("Update to %d bytes: %v", len(fits), err)
	}
}

func testBadName(t *testing.T, _ subject, s Store) {
	ctx := context.Background()
	for _, name := range []string{"", "a/b"} {
		if _, err := s.Create(ctx, fs, name, nil); err == nil {
			t.Errorf("Create(%q) succeeded, want an error", name)
		}
		if _, err := s.Get(ctx, fs, name); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q): %v, want a bad-name error", name, err)
		}
	}
	if _, err := s.Create(ctx, "", "a", nil); err == nil {
		t.Error("Create with no resource succeeded")
	}
}

func testWatchFromNow(t *testing.T, _ subject, s Store) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mustCreate(t, s, fs, "before", "old")
	w := s.Watch(ctx, fs, 0)
	ra := mustCreate(t, s, fs, "a", "A1")
	rm := mustUpdate(t, s, fs, "a", "A2", ra)
	it, err := s.Delete(ctx, fs, "a", rm)
	if err != nil {
		t.Fatal(err)
	}
	checkEvent(t, next(t, w), Added, "a", "A1", ra, ra)
	checkEvent(t, next(t, w), Modified, "a", "A2", ra, rm)
	checkEvent(t, next(t, w), Deleted, "a", "A2", ra, it.ModRevision)
}

func testWatchReplay(t *testing.T, _ subject, s Store) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	from := mustRevision(t, s)
	ra := mustCreate(t, s, fs, "a", "A1")
	rm := mustUpdate(t, s, fs, "a", "A2", ra)
	del, err := s.Delete(ctx, fs, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	rb := mustCreate(t, s, fs, "b", "B")

	w := s.Watch(ctx, fs, from)
	checkEvent(t, next(t, w), Added, "a", "A1", ra, ra)
	checkEvent(t, next(t, w), Modified, "a", "A2", ra, rm)
	checkEvent(t, next(t, w), Deleted, "a", "A2", ra, del.ModRevision)
	checkEvent(t, next(t, w), Added, "b", "B", rb, rb)
	// After the replay the watch follows new changes.
	rb2 := mustUpdate(t, s, fs, "b", "B2", rb)
	checkEvent(t, next(t, w), Modified, "b", "B2", rb, rb2)

	// From the middle of the history: only what came after.
	w2 := s.Watch(ctx, fs, rm)
	checkEvent(t, next(t, w2), Deleted, "a", "A2", ra, del.ModRevision)
}

func testWatchOneResource(t *testing.T, _ subject, s Store) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := s.Watch(ctx, fs, 0)
	mustCreate(t, s, pl, "a", "PA")
	mustUpdate(t, s, pl, "a", "PA2", 0)
	rf := mustCreate(t, s, fs, "a", "FA")
	checkEvent(t, next(t, w), Added, "a", "FA", rf, rf)
}

func testWatchCompacted(t *testing.T, sub subject, s Store) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	from := mustRevision(t, s)
	rc := mustCreate(t, s, fs, "a", "A1")
	r := mustUpdate(t, s, fs, "a", "A2", rc)
	r = mustUpdate(t, s, fs, "a", "A3", r)
	sub.compact(t, s, r)
	if err := waitClosed(t, s.Watch(ctx, fs, from)); !errors.Is(err, ErrCompacted) {
		t.Fatalf("watch from compacted revision ended with %v, want ErrCompacted", err)
	}
	// From the compaction on, watching still works.
	w := s.Watch(ctx, fs, r)
	r2 := mustUpdate(t, s, fs, "a", "A4", r)
	checkEvent(t, next(t, w), Modified, "a", "A4", rc, r2)
}

func testWatchCancel(t *testing.T, _ subject, s Store) {
	ctx, cancel := context.WithCancel(context.Background())
	w := s.Watch(ctx, fs, 0)
	r := mustCreate(t, s, fs, "a", "A")
	checkEvent(t, next(t, w), Added, "a", "A", r, r)
	cancel()
	if err := waitClosed(t, w); err != nil {
		t.Fatalf("cancelled watch sent %v, want a plain close", err)
	}
}

func testClose(t *testing.T, _ subject, s Store) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := s.Watch(ctx, fs, 0)
	r := mustCreate(t, s, fs, "a", "A")
	checkEvent(t, next(t, w), Added, "a", "A", r, r)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := waitClosed(t, w); !errors.Is(err, ErrClosed) {
		t.Fatalf("watch ended with %v after Close, want ErrClosed", err)
	}
	if _, err := s.Get(ctx, fs, "a"); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Create(ctx, fs, "b", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Create after Close: %v, want ErrClosed", err)
	}
	if err := waitClosed(t, s.Watch(ctx, fs, 0)); !errors.Is(err, ErrClosed) {
		t.Errorf("Watch after Close ended with %v, want ErrClosed", err)
	}
	if _, err := s.ListAt(ctx, fs, ListOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("ListAt after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// mustListAt reads with ListAt and fails the test on an error.
func mustListAt(t *testing.T, s Store, res Resource, o ListOptions) ListResult {
	t.Helper()
	got, err := s.ListAt(context.Background(), res, o)
	if err != nil {
		t.Fatalf("ListAt(%s, %+v): %v", res, o, err)
	}
	return got
}

// want is an item as a test expects it from a list.
type want struct {
	name, data  string
	create, mod int64
}

func checkList(t *testing.T, what string, got []Item, want ...want) {
	t.Helper()
	if len(got) != len(want) {
		var names []string
		for _, it := range got {
			names = append(names, it.Name)
		}
		t.Fatalf("%s: %d items %v, want %d", what, len(got), names, len(want))
	}
	for i, w := range want {
		checkItem(t, fmt.Sprintf("%s[%d]", what, i), got[i], w.name, w.data, w.create, w.mod)
	}
}

func testListAtCurrent(t *testing.T, _ subject, s Store) {
	rb := mustCreate(t, s, fs, "b", "B")
	ra := mustCreate(t, s, fs, "a", "A")
	rc := mustCreate(t, s, fs, "c", "C")
	mustCreate(t, s, pl, "a", "PA")
	cur := mustRevision(t, s)

	got := mustListAt(t, s, fs, ListOptions{})
	checkList(t, "ListAt()", got.Items, want{"a", "A", ra, ra}, want{"b", "B", rb, rb}, want{"c", "C", rc, rc})
	if got.Revision != cur || got.Remaining != 0 {
		t.Errorf("ListAt(): revision %d, remaining %d; want %d, 0", got.Revision, got.Remaining, cur)
	}
	got = mustListAt(t, s, fs, ListOptions{Limit: 2})
	checkList(t, "ListAt(limit 2)", got.Items, want{"a", "A", ra, ra}, want{"b", "B", rb, rb})
	if got.Revision != cur || got.Remaining != 1 {
		t.Errorf("ListAt(limit 2): revision %d, remaining %d; want %d, 1", got.Revision, got.Remaining, cur)
	}
	// From need not name an item; a NUL after a name starts after it.
	got = mustListAt(t, s, fs, ListOptions{From: "a\x00", Limit: 1})
	checkList(t, "ListAt(from a+NUL, limit 1)", got.Items, want{"b", "B", rb, rb})
	if got.Remaining != 1 {
		t.Errorf("ListAt(from a+NUL, limit 1): remaining %d, want 1", got.Remaining)
	}
	got = mustListAt(t, s, fs, ListOptions{From: "bb", Limit: 5})
	checkList(t, "ListAt(from bb)", got.Items, want{"c", "C", rc, rc})
	got = mustListAt(t, s, fs, ListOptions{From: "d"})
	checkList(t, "ListAt(from d)", got.Items)
	if got.Items == nil {
		t.Error("ListAt(from d): nil items, want an empty slice")
	}
	// No From reaches out of the resource.
	got = mustListAt(t, s, fs, ListOptions{From: "/../" + string(pl) + "/"})
	checkList(t, "ListAt(from a path out)", got.Items, want{"a", "A", ra, ra}, want{"b", "B", rb, rb}, want{"c", "C", rc, rc})
	got = mustListAt(t, s, fs, ListOptions{From: "\xff"})
	checkList(t, "ListAt(from 0xff)", got.Items)
}

func testListAtPast(t *testing.T, _ subject, s Store) {
	ra := mustCreate(t, s, fs, "a", "A1")
	rb := mustCreate(t, s, fs, "b", "B1")
	rc := mustCreate(t, s, fs, "c", "C1")
	r1 := mustRevision(t, s)
	ra2 := mustUpdate(t, s, fs, "a", "A2", ra)
	if _, err := s.Delete(context.Background(), fs, "b", 0); err != nil {
		t.Fatal(err)
	}
	rd := mustCreate(t, s, fs, "d", "D1")
	mustCreate(t, s, pl, "b", "PB") // another resource changes nothing here
	rb2 := mustCreate(t, s, fs, "b", "B2")
	mustUpdate(t, s, fs, "a", "A3", ra2)

	got := mustListAt(t, s, fs, ListOptions{Revision: r1})
	checkList(t, "ListAt(r1)", got.Items, want{"a", "A1", ra, ra}, want{"b", "B1", rb, rb}, want{"c", "C1", rc, rc})
	if got.Revision != r1 {
		t.Errorf("ListAt(r1): revision %d, want %d", got.Revision, r1)
	}
	got = mustListAt(t, s, fs, ListOptions{Revision: rd})
	checkList(t, "ListAt(rd)", got.Items, want{"a", "A2", ra, ra2}, want{"c", "C1", rc, rc}, want{"d", "D1", rd, rd})
	got = mustListAt(t, s, fs, ListOptions{Revision: rb2, From: "b", Limit: 1})
	checkList(t, "ListAt(rb2, from b, limit 1)", got.Items, want{"b", "B2", rb2, rb2})
	if got.Remaining != 2 {
		t.Errorf("ListAt(rb2, from b, limit 1): remaining %d, want 2", got.Remaining)
	}
	// Before anything was created there was nothing.
	got = mustListAt(t, s, fs, ListOptions{Revision: ra - 1})
	checkList(t, "ListAt(before a)", got.Items)
	got = mustListAt(t, s, pl, ListOptions{Revision: r1})
	checkList(t, "ListAt(pl, r1)", got.Items)
}

// testListAtPages reads a past state page by page while it changes: the
// pages add up to that state.
func testListAtPages(t *testing.T, _ subject, s Store) {
	var names []string
	for i := range 7 {
		n := fmt.Sprintf("n%d", i)
		mustCreate(t, s, fs, n, n)
		names = append(names, n)
	}
	first := mustListAt(t, s, fs, ListOptions{Limit: 3})
	rev := first.Revision
	if first.Remaining != 4 {
		t.Fatalf("first page: remaining %d, want 4", first.Remaining)
	}
	got := first.Items
	if _, err := s.Delete(context.Background(), fs, "n4", 0); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, fs, "n35", "new")
	mustUpdate(t, s, fs, "n6", "changed", 0)
	for page := first; page.Remaining > 0; {
		last := page.Items[len(page.Items)-1].Name
		page = mustListAt(t, s, fs, ListOptions{Revision: rev, From: last + "\x00", Limit: 3})
		if page.Revision != rev {
			t.Fatalf("page revision %d, want %d", page.Revision, rev)
		}
		got = append(got, page.Items...)
	}
	var gotNames []string
	for _, it := range got {
		gotNames = append(gotNames, it.Name)
		if string(it.Data) != it.Name {
			t.Errorf("%s has data %q, want its data at revision %d", it.Name, it.Data, rev)
		}
	}
	if fmt.Sprint(gotNames) != fmt.Sprint(names) {
		t.Errorf("pages hold %v, want %v", gotNames, names)
	}
}

func testListAtCompacted(t *testing.T, sub subject, s Store) {
	ra := mustCreate(t, s, fs, "a", "A1")
	r1 := mustRevision(t, s)
	ra2 := mustUpdate(t, s, fs, "a", "A2", ra)
	rb := mustCreate(t, s, fs, "b", "B1")
	mustUpdate(t, s, fs, "b", "B2", rb)
	sub.compact(t, s, rb)
	for _, rev := range []int64{r1, ra2, rb - 1} {
		if _, err := s.ListAt(context.Background(), fs, ListOptions{Revision: rev}); !errors.Is(err, ErrCompacted) {
			t.Errorf("ListAt(%d) after compacting at %d: %v, want ErrCompacted", rev, rb, err)
		}
	}
	// The state at the compacted revision itself is kept.
	got := mustListAt(t, s, fs, ListOptions{Revision: rb})
	checkList(t, "ListAt(compacted revision)", got.Items, want{"a", "A2", ra, ra2}, want{"b", "B1", rb, rb})
}

func testListAtFuture(t *testing.T, _ subject, s Store) {
	mustCreate(t, s, fs, "a", "A")
	cur := mustRevision(t, s)
	if _, err := s.ListAt(context.Background(), fs, ListOptions{Revision: cur + 1}); !errors.Is(err, ErrFutureRevision) {
		t.Errorf("ListAt(current+1): %v, want ErrFutureRevision", err)
	}
	got := mustListAt(t, s, fs, ListOptions{Revision: cur})
	if len(got.Items) != 1 || got.Revision != cur {
		t.Errorf("ListAt(current) = %d items at %d, want 1 at %d", len(got.Items), got.Revision, cur)
	}
}

func testListAtBadOptions(t *testing.T, _ subject, s Store) {
	ctx := context.Background()
	for _, o := range []ListOptions{{Revision: -1}, {Limit: -1}} {
		if _, err := s.ListAt(ctx, fs, o); err == nil {
			t.Errorf("ListAt(%+v) succeeded, want an error", o)
		}
	}
	if _, err := s.ListAt(ctx, "", ListOptions{}); err == nil {
		t.Error("ListAt of no resource succeeded, want an error")
	}
}
