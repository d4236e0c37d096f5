package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// countingStore records the reads ListAt makes.
type countingStore struct {
	store.Store
	reads []store.ListOptions
	items int // items returned in all
}

func (c *countingStore) ListAt(ctx context.Context, res store.Resource, o store.ListOptions) (store.ListResult, error) {
	c.reads = append(c.reads, o)
	got, err := c.Store.ListAt(ctx, res, o)
	c.items += len(got.Items)
	return got, err
}

func names(objs []config.Object) string {
	var n []string
	for _, o := range objs {
		n = append(n, o.Name())
	}
	return strings.Join(n, ",")
}

func mustPage(t *testing.T, r *Registry, req ListRequest) Page {
	t.Helper()
	p, err := r.ListPage(context.Background(), store.ResourcePriorityLevels, req)
	if err != nil {
		t.Fatalf("ListPage(%+v): %v", req, err)
	}
	return p
}

// TestListPageSnapshot pages through a list while it changes: every page
// comes from the first one's revision, with the objects as they were.
func TestListPageSnapshot(t *testing.T) {
	r, _ := newTestRegistry(t)
	ctx := context.Background()
	for i, n := range []string{"a", "b", "c", "d", "e"} {
		if _, err := r.Create(ctx, plObj(n, int32(i+1)), Write{}); err != nil {
			t.Fatal(err)
		}
	}
	first := mustPage(t, r, ListRequest{Limit: 2})
	if names(first.Objects) != "a,b" || !first.More || first.Remaining != 3 {
		t.Fatalf("first page %s, more %v, remaining %d; want a,b, true, 3", names(first.Objects), first.More, first.Remaining)
	}
	if _, err := r.Delete(ctx, store.ResourcePriorityLevels, "c", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create(ctx, plObj("bb", 9), Write{}); err != nil {
		t.Fatal(err)
	}
	d := plObj("d", 40)
	if _, err := r.Update(ctx, d, Write{}); err != nil {
		t.Fatal(err)
	}
	second := mustPage(t, r, ListRequest{Revision: first.Revision, From: "b\x00", Limit: 2})
	if names(second.Objects) != "c,d" || !second.More || second.Remaining != 1 || second.Revision != first.Revision {
		t.Fatalf("second page %s, more %v, remaining %d, revision %d; want c,d, true, 1, %d",
			names(second.Objects), second.More, second.Remaining, second.Revision, first.Revision)
	}
	if s := *second.Objects[1].PriorityLevel.Spec.Limited.NominalConcurrencyShares; s != 4 {
		t.Errorf("d has shares %d on the second page, want 4 as at the first page's revision", s)
	}
	if rv := second.Objects[1].PriorityLevel.ResourceVersion; rv != fmt.Sprint(first.Revision-1) {
		t.Errorf("d has resourceVersion %s, want %d", rv, first.Revision-1)
	}
	last := mustPage(t, r, ListRequest{Revision: first.Revision, From: "d\x00", Limit: 2})
	if names(last.Objects) != "e" || last.More || last.Remaining != 0 {
		t.Errorf("last page %s, more %v, remaining %d; want e, false, 0", names(last.Objects), last.More, last.Remaining)
	}
	now := mustPage(t, r, ListRequest{})
	if names(now.Objects) != "a,b,bb,d,e" || now.More || now.Revision <= first.Revision {
		t.Errorf("current list %s at %d, more %v; want a,b,bb,d,e after %d", names(now.Objects), now.Revision, now.More, first.Revision)
	}
}

// TestListPageMatch fills filtered pages with reads that grow, none
// larger than needed, and says a full page has more after it even when
// nothing after it matches.
func TestListPageMatch(t *testing.T) {
	r, m := newTestRegistry(t)
	ctx := context.Background()
	for i := range 20 {
		if _, err := r.Create(ctx, plObj(fmt.Sprintf("n%02d", i), int32(i+1)), Write{}); err != nil {
			t.Fatal(err)
		}
	}
	c := &countingStore{Store: m}
	r.s = c
	// n00, n07, n10, n17.
	match := func(o config.Object) bool {
		return strings.HasSuffix(o.Name(), "0") || strings.HasSuffix(o.Name(), "7")
	}

	p := mustPage(t, r, ListRequest{Limit: 2, Match: match})
	if names(p.Objects) != "n00,n07" || !p.More || p.Remaining != 0 {
		t.Errorf("page %s, more %v, remaining %d; want n00,n07, true, 0", names(p.Objects), p.More, p.Remaining)
	}
	// Reads of 2, 4 and 8 items (n00-n01, n02-n05, n06-n13) reach n07.
	var limits []int64
	for _, o := range c.reads {
		limits = append(limits, o.Limit)
	}
	if fmt.Sprint(limits) != "[2 4 8]" || c.items != 14 {
		t.Errorf("reads with limits %v returning %d items, want [2 4 8] returning 14", limits, c.items)
	}
	for _, o := range c.reads[1:] {
		if o.Revision != p.Revision {
			t.Errorf("a later read at revision %d, want the first's %d", o.Revision, p.Revision)
		}
	}

	// n17 is the last match but not the last object: a full page ending
	// there says there is more.
	p = mustPage(t, r, ListRequest{From: "n10\x00", Limit: 1, Match: match})
	if names(p.Objects) != "n17" || !p.More {
		t.Errorf("page %s, more %v; want n17, true", names(p.Objects), p.More)
	}
	p = mustPage(t, r, ListRequest{From: "n17\x00", Limit: 1, Match: match})
	if len(p.Objects) != 0 || p.More {
		t.Errorf("page after the last match %s, more %v; want none, false", names(p.Objects), p.More)
	}
	// A page that ends with the last object has nothing after it.
	p = mustPage(t, r, ListRequest{From: "n17\x00", Limit: 1, Match: func(o config.Object) bool { return o.Name() == "n19" }})
	if names(p.Objects) != "n19" || p.More {
		t.Errorf("page of the last object %s, more %v; want n19, false", names(p.Objects), p.More)
	}
	// Without a limit, one read of everything.
	c.reads = nil
	p = mustPage(t, r, ListRequest{Match: match})
	if names(p.Objects) != "n00,n07,n10,n17" || p.More || len(c.reads) != 1 {
		t.Errorf("unlimited page %s, more %v, in %d reads; want n00,n07,n10,n17, false, 1", names(p.Objects), p.More, len(c.reads))
	}
}

func TestListPageErrors(t *testing.T) {
	r, m := newTestRegistry(t)
	ctx := context.Background()
	if _, err := r.Create(ctx, plObj("a", 1), Write{}); err != nil {
		t.Fatal(err)
	}
	old := mustPage(t, r, ListRequest{}).Revision
	if _, err := r.Create(ctx, plObj("b", 1), Write{}); err != nil {
		t.Fatal(err)
	}
	cur := mustPage(t, r, ListRequest{}).Revision
	m.Compact(cur)
	if _, err := r.ListPage(ctx, store.ResourcePriorityLevels, ListRequest{Revision: old}); !errors.Is(err, store.ErrCompacted) {
		t.Errorf("compacted revision: %v, want store.ErrCompacted", err)
	}
	if _, err := r.ListPage(ctx, store.ResourcePriorityLevels, ListRequest{Revision: cur + 1}); !errors.Is(err, store.ErrFutureRevision) {
		t.Errorf("future revision: %v, want store.ErrFutureRevision", err)
	}
	if _, err := r.ListPage(ctx, "pods", ListRequest{}); !apierrors.IsBadRequest(err) {
		t.Errorf("unknown resource: %v, want 400", err)
	}
	if _, err := r.ListPage(ctx, store.ResourcePriorityLevels, ListRequest{Limit: -1}); !apierrors.IsBadRequest(err) {
		t.Errorf("negative limit: %v, want 400", err)
	}
	down := New(downListStore{}, Options{})
	_, err := down.ListPage(ctx, store.ResourcePriorityLevels, ListRequest{Limit: 1})
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Code != http.StatusServiceUnavailable {
		t.Errorf("unavailable store: %v, want a 503", err)
	}
}

// downListStore lists as an unreachable etcd does.
type downListStore struct{ store.Store }

func (downListStore) ListAt(context.Context, store.Resource, store.ListOptions) (store.ListResult, error) {
	return store.ListResult{}, fmt.Errorf("store: etcd list /registry/x: no answer within 5s: %w", store.ErrUnavailable)
}
