package registry

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/internal/api/store"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)

func newTestRegistry(t *testing.T) (*Registry, *store.Memory) {
	t.Helper()
	m := store.NewMemory()
	t.Cleanup(func() { _ = m.Close() })
	n := 0
	return New(m, Options{
		Clock:  func() time.Time { return t0 },
		NewUID: func() string { n++; return fmt.Sprintf("uid-%d", n) },
	}), m
}

func plObj(name string, shares int32) config.Object {
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: &shares,
				LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			},
		},
	}
	config.DefaultPriorityLevelV1(pl)
	return config.Object{PriorityLevel: pl, Version: config.V1}
}

func fsObj(name, level string) config.Object {
	fs := bootstrap.SuggestedFlowSchema("global-default")
	fs.ObjectMeta = metav1.ObjectMeta{Name: name}
	fs.Spec.PriorityLevelConfiguration.Name = level
	return config.Object{FlowSchema: fs, Version: config.V1}
}

func TestCreateSetsMetadata(t *testing.T) {
	r, _ := newTestRegistry(t)
	ctx := context.Background()
	in := plObj("a", 5)
	in.PriorityLevel.UID = "client-uid"
	in.PriorityLevel.Generation = 7
	in.PriorityLevel.CreationTimestamp = metav1.NewTime(time.Unix(1, 0))
	in.PriorityLevel.Status.Conditions = []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "X", Status: "True"}}
	out, err := r.Create(ctx, in, Write{})
	if err != nil {
		t.Fatal(err)
	}
	pl := out.PriorityLevel
	if pl.UID != "uid-1" || pl.Generation != 1 || !pl.CreationTimestamp.Time.Equal(t0.Truncate(time.Second)) || pl.ResourceVersion != "2" || len(pl.Status.Conditions) != 0 {
		t.Errorf("metadata after create: uid %q gen %d ts %v rv %q status %v", pl.UID, pl.Generation, pl.CreationTimestamp, pl.ResourceVersion, pl.Status)
	}
	if in.PriorityLevel.UID != "client-uid" {
		t.Error("Create modified its argument")
	}
	got, err := r.Get(ctx, store.ResourcePriorityLevels, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got.PriorityLevel.ResourceVersion != "2" || got.PriorityLevel.UID != "uid-1" {
		t.Errorf("Get: %+v", got.PriorityLevel.ObjectMeta)
	}
	if _, err := r.Create(ctx, in, Write{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: %v", err)
	}
	withRV := plObj("b", 5)
	withRV.PriorityLevel.ResourceVersion = "3"
	if _, err := r.Create(ctx, withRV, Write{}); !apierrors.IsBadRequest(err) || err.Error() != "resourceVersion should not be set on objects to be created" {
		t.Errorf("create with resourceVersion: %v", err)
	}
	gen := plObj("", 5)
	gen.PriorityLevel.GenerateName = "gen-"
	if out, err := r.Create(ctx, gen, Write{}); err != nil || !strings.HasPrefix(out.Name(), "gen-") || len(out.Name()) != 9 {
		t.Errorf("generateName: %q %v", out.Name(), err)
	}
}

func TestCreateInvalid(t *testing.T) {
	r, _ := newTestRegistry(t)
	cases := []struct {
		name string
		obj  config.Object
		path string
	}{
		{"no level", fsObj("x", ""), "spec.priorityLevelConfiguration.name"},
		{"bad name", fsObj("Bad_Name", "global-default"), "metadata.name"},
		{"no name", fsObj("", "global-default"), "metadata.name"},
		{"mandatory changed", func() config.Object {
			o := config.Object{FlowSchema: bootstrap.MandatoryFlowSchema("catch-all"), Version: config.V1}
			o.FlowSchema.Spec.MatchingPrecedence = 5000
			return o
		}(), "spec"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := r.Create(context.Background(), c.obj, Write{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want Invalid, got %v", err)
			}
			st := err.(apierrors.APIStatus).Status()
			if st.Details == nil || st.Details.Kind != config.KindFlowSchema || st.Details.Group != config.Group {
				t.Fatalf("details: %+v", st.Details)
			}
			found := false
			for _, c2 := range st.Details.Causes {
				if strings.HasPrefix(c2.Field, c.path) {
					found = true
				}
			}
			if !found {
				t.Errorf("no cause under %s in %+v", c.path, st.Details.Causes)
			}
		})
	}
	if _, err := r.Create(context.Background(), config.Object{}, Write{}); !apierrors.IsBadRequest(err) {
		t.Errorf("empty object: %v", err)
	}
}

func TestUpdateGenerationAndStatus(t *testing.T) {
	r, _ := newTestRegistry(t)
	ctx := context.Background()
	created, err := r.Create(ctx, plObj("a", 5), Write{})
	if err != nil {
		t.Fatal(err)
	}
	// Status through the status subresource.
	st := created.DeepCopy()
	st.PriorityLevel.Status.Conditions = []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "Ok", Status: "True"}}
	st.PriorityLevel.Spec.Limited.NominalConcurrencyShares = ptr(99) // ignored by UpdateStatus
	afterStatus, err := r.UpdateStatus(ctx, st, Write{})
	if err != nil {
		t.Fatal(err)
	}
	if g := afterStatus.PriorityLevel.Generation; g != 1 {
		t.Errorf("generation after status update %d", g)
	}
	if *afterStatus.PriorityLevel.Spec.Limited.NominalConcurrencyShares != 5 || len(afterStatus.PriorityLevel.Status.Conditions) != 1 {
		t.Errorf("status update changed spec or lost status: %+v", afterStatus.PriorityLevel)
	}

	steps := []struct {
		name    string
		mutate  func(o config.Object)
		wantGen int64
	}{
		{"labels only", func(o config.Object) { o.PriorityLevel.Labels = map[string]string{"x": "y"} }, 1},
		{"spec change", func(o config.Object) { o.PriorityLevel.Spec.Limited.NominalConcurrencyShares = ptr(6) }, 2},
		{"status sent on main resource is ignored", func(o config.Object) { o.PriorityLevel.Status.Conditions = nil }, 2},
		{"client generation ignored", func(o config.Object) { o.PriorityLevel.Generation = 40 }, 2},
		{"another spec change", func(o config.Object) { o.PriorityLevel.Spec.Limited.LendablePercent = ptr(10) }, 3},
	}
	cur := afterStatus
	for _, s := range steps {
		o := cur.DeepCopy()
		o.PriorityLevel.ResourceVersion = "" // unconditional
		s.mutate(o)
		next, err := r.Update(ctx, o, Write{})
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if g := next.PriorityLevel.Generation; g != s.wantGen {
			t.Errorf("%s: generation %d, want %d", s.name, g, s.wantGen)
		}
		if len(next.PriorityLevel.Status.Conditions) != 1 {
			t.Errorf("%s: status not kept: %+v", s.name, next.PriorityLevel.Status)
		}
		if next.PriorityLevel.UID != created.PriorityLevel.UID || !next.PriorityLevel.CreationTimestamp.Equal(&created.PriorityLevel.CreationTimestamp) {
			t.Errorf("%s: uid/creationTimestamp changed", s.name)
		}
		cur = next
	}
	// A no-op update writes nothing.
	same, err := r.Update(ctx, cur, Write{})
	if err != nil || same.PriorityLevel.ResourceVersion != cur.PriorityLevel.ResourceVersion {
		t.Errorf("no-op update: rv %q -> %q, %v", cur.PriorityLevel.ResourceVersion, same.PriorityLevel.ResourceVersion, err)
	}
}

func ptr(v int32) *int32 { return &v }

func TestUpdateConflictsAndMissing(t *testing.T) {
	r, _ := newTestRegistry(t)
	ctx := context.Background()
	created, err := r.Create(ctx, plObj("a", 5), Write{})
	if err != nil {
		t.Fatal(err)
	}
	o := created.DeepCopy()
	o.PriorityLevel.Labels = map[string]string{"a": "b"}
	if _, err := r.Update(ctx, o, Write{}); err != nil {
		t.Fatal(err)
	}
	stale := created.DeepCopy()
	stale.PriorityLevel.Labels = map[string]string{"a": "c"}
	_, err = r.Update(ctx, stale, Write{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "the object has been modified; please apply your changes to the latest version and try again") {
		t.Errorf("stale update: %v", err)
	}
	if _, err := r.UpdateStatus(ctx, stale, Write{}); !apierrors.IsConflict(err) {
		t.Errorf("stale status update: %v", err)
	}
	if _, err := r.Update(ctx, plObj("missing", 1), Write{}); !apierrors.IsNotFound(err) {
		t.Errorf("update of missing object: %v", err)
	}
	badUID := created.DeepCopy()
	badUID.PriorityLevel.ResourceVersion = ""
	badUID.PriorityLevel.UID = "other"
	// A uid sent is a precondition, as in the API server's storage.
	if _, err := r.Update(ctx, badUID, Write{}); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "Precondition failed: UID in precondition: other, UID in object meta: uid-1") {
		t.Errorf("uid change: %v", err)
	}
	badRV := created.DeepCopy()
	badRV.PriorityLevel.ResourceVersion = "abc"
	if _, err := r.Update(ctx, badRV, Write{}); !apierrors.IsInvalid(err) || err.Error() != `PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io "a" is invalid: metadata.resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax` {
		t.Errorf("bad rv: %v", err)
	}
}

func TestDelete(t *testing.T) {
	r, _ := newTestRegistry(t)
	ctx := context.Background()
	created, err := r.Create(ctx, fsObj("f", "global-default"), Write{})
	if err != nil {
		t.Fatal(err)
	}
	wrongUID := types.UID("nope")
	if _, err := r.Delete(ctx, store.ResourceFlowSchemas, "f", &metav1.Preconditions{UID: &wrongUID}); !apierrors.IsConflict(err) {
		t.Errorf("uid precondition: %v", err)
	}
	wrongRV := "1"
	if _, err := r.Delete(ctx, store.ResourceFlowSchemas, "f", &metav1.Preconditions{ResourceVersion: &wrongRV}); !apierrors.IsConflict(err) {
		t.Errorf("rv precondition: %v", err)
	}
	if _, err := r.DryRunDelete(ctx, store.ResourceFlowSchemas, "f", nil); err != nil {
		t.Fatal(err)
	}
	rv := created.FlowSchema.ResourceVersion
	gone, err := r.Delete(ctx, store.ResourceFlowSchemas, "f", &metav1.Preconditions{ResourceVersion: &rv, UID: &created.FlowSchema.UID})
	if err != nil {
		t.Fatal(err)
	}
	if gone.Name() != "f" || gone.FlowSchema.ResourceVersion == rv {
		t.Errorf("deleted object: %+v", gone.FlowSchema.ObjectMeta)
	}
	if _, err := r.Get(ctx, store.ResourceFlowSchemas, "f"); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v", err)
	}
	_, err = r.Delete(ctx, store.ResourceFlowSchemas, "f", nil)
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `flowschemas.flowcontrol.apiserver.k8s.io "f" not found`) {
		t.Errorf("delete of missing: %v", err)
	}
}

func collect(t *testing.T, ch <-chan WatchEvent, n int) []WatchEvent {
	t.Helper()
	var out []WatchEvent
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("watch closed after %d events", len(out))
			}
			out = append(out, ev)
		case <-timeout:
			t.Fatalf("only %d of %d events", len(out), n)
		}
	}
	return out
}

func TestWatch(t *testing.T) {
	r, m := newTestRegistry(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := r.Create(ctx, plObj("a", 1), Write{}); err != nil {
		t.Fatal(err)
	}
	objs, rv, err := r.List(ctx, store.ResourcePriorityLevels)
	if err != nil || len(objs) != 1 {
		t.Fatal(objs, err)
	}
	fromZero, err := r.Watch(ctx, store.ResourcePriorityLevels, "0")
	if err != nil {
		t.Fatal(err)
	}
	fromList, err := r.Watch(ctx, store.ResourcePriorityLevels, rv)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.Create(ctx, plObj("b", 2), Write{})
	b.PriorityLevel.Spec.Limited.NominalConcurrencyShares = ptr(3)
	if _, err := r.Update(ctx, b, Write{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Delete(ctx, store.ResourcePriorityLevels, "a", nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"ADDED b", "MODIFIED b", "DELETED a"}
	got := collect(t, fromList, 3)
	for i, ev := range got {
		if s := fmt.Sprintf("%s %s", ev.Type, ev.Object.Name()); s != want[i] {
			t.Errorf("event %d: %s, want %s", i, s, want[i])
		}
	}
	got = collect(t, fromZero, 4)
	if got[0].Type != watch.Added || got[0].Object.Name() != "a" {
		t.Errorf("synthetic event: %v %s", got[0].Type, got[0].Object.Name())
	}
	m.Compact(4)
	old, err := r.Watch(ctx, store.ResourcePriorityLevels, "2")
	if err != nil {
		t.Fatal(err)
	}
	ev := collect(t, old, 1)[0]
	if ev.Type != watch.Error || !apierrors.IsResourceExpired(ev.Err) && !apierrors.IsGone(ev.Err) {
		t.Errorf("watch from compacted revision: %v %v", ev.Type, ev.Err)
	}
	if _, err := r.Watch(ctx, store.ResourcePriorityLevels, "x"); !apierrors.IsBadRequest(err) {
		t.Errorf("bad rv: %v", err)
	}
}

// flakyStore breaks the first watch of each resource.
type flakyStore struct {
	store.Store
	broken sync.Map
	lists  atomic.Int32
}

func (f *flakyStore) List(ctx context.Context, res store.Resource) ([]store.Item, int64, error) {
	f.lists.Add(1)
	return f.Store.List(ctx, res)
}

func (f *flakyStore) Watch(ctx context.Context, res store.Resource, from int64) <-chan store.Event {
	if _, done := f.broken.LoadOrStore(res, true); !done {
		ch := make(chan store.Event, 1)
		ch <- store.Event{Err: fmt.Errorf("connection reset")}
		close(ch)
		return ch
	}
	return f.Store.Watch(ctx, res, from)
}

func TestSource(t *testing.T) {
	m := store.NewMemory()
	defer m.Close()
	fs := &flakyStore{Store: m}
	r := New(fs, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := r.Create(ctx, plObj("a", 1), Write{}); err != nil {
		t.Fatal(err)
	}
	src := NewSource(r)
	src.MinBackoff = time.Millisecond
	objs, err := src.Objects()
	if err != nil || len(objs) != 1 {
		t.Fatalf("before watch: %d objects, %v", len(objs), err)
	}
	changed := make(chan struct{}, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		src.Watch(ctx, func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		})
	}()
	// Keep writing until the source, past its broken first watch, sees
	// the latest object.
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		if _, err := r.Create(ctx, fsObj(fmt.Sprintf("f%d", i), "a"), Write{}); err != nil {
			t.Fatal(err)
		}
		<-changed
		objs, err := src.Objects()
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) == i+2 && objs[0].PriorityLevel != nil && slices.ContainsFunc(objs, func(o config.Object) bool { return o.Name() == fmt.Sprintf("f%d", i) }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("source never converged: %d objects", len(objs))
		}
	}
	// Each resource's broken first watch is followed by a second list.
	for fs.lists.Load() < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("expected a re-list of each resource after its broken watch, saw %d lists", fs.lists.Load())
		}
		time.Sleep(time.Millisecond)
	}
	// Deletions reach the cache too.
	if _, err := r.Delete(ctx, store.ResourcePriorityLevels, "a", nil); err != nil {
		t.Fatal(err)
	}
	for {
		objs, _ := src.Objects()
		if len(objs) > 0 && objs[0].PriorityLevel == nil {
			break
		}
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("deletion not seen")
		}
	}
	cancel()
	<-done
}

// gatedStore holds back the events of one resource's watches until gate
// is closed, as a watch that lags behind the other would.
type gatedStore struct {
	store.Store
	held store.Resource
	gate chan struct{}
}

func (g *gatedStore) Watch(ctx context.Context, res store.Resource, from int64) <-chan store.Event {
	in := g.Store.Watch(ctx, res, from)
	if res != g.held {
		return in
	}
	out := make(chan store.Event)
	go func() {
		defer close(out)
		for ev := range in {
			select {
			case <-g.gate:
			case <-ctx.Done():
				return
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// TestSourceSnapshotIsOneRevision: while the levels' watch lags behind
// the schemas', a schema created after its level is never seen without
// it, and once the lag ends the caches answer alone again.
func TestSourceSnapshotIsOneRevision(t *testing.T) {
	m := store.NewMemory()
	defer m.Close()
	g := &gatedStore{Store: m, held: store.ResourcePriorityLevels, gate: make(chan struct{})}
	r := New(g, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := NewSource(r)
	changed := make(chan struct{}, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		src.Watch(ctx, func() { changed <- struct{}{} })
	}()
	<-changed // both lists
	<-changed

	if _, err := r.Create(ctx, plObj("l", 1), Write{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create(ctx, fsObj("s", "l"), Write{}); err != nil {
		t.Fatal(err)
	}
	<-changed // the schema's event; the level's is held
	names := func() string {
		objs, err := src.Objects()
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, o := range objs {
			fmt.Fprintf(&b, "%s/%s ", o.Kind(), o.Name())
		}
		return b.String()
	}
	if got, want := names(), "PriorityLevelConfiguration/l FlowSchema/s "; got != want {
		t.Errorf("with the levels' watch behind: %q, want %q", got, want)
	}

	close(g.gate)
	<-changed // the level's event
	if got, want := names(), "PriorityLevelConfiguration/l FlowSchema/s "; got != want {
		t.Errorf("after the levels' watch caught up: %q, want %q", got, want)
	}
	cancel()
	<-done
}
