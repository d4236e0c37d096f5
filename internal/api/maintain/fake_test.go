package maintain

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/apfproject/apf/clock/fakeclock"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/store"
)

// fakeObjects is an in-memory Objects with the registry's write rules
// (docs/spec/configuration.md#registry-behaviour): Create clears status and
// sets generation 1, Update bumps generation when the spec changes and keeps
// the status, ApplyStatus merges conditions into the status, and a set
// resourceVersion is a precondition. It records every call as
// "verb resource/name" (or "list resource").
type fakeObjects struct {
	mu    sync.Mutex
	items map[store.Resource]map[string]config.Object
	rv    int
	calls []string
	// fail, when set, may return an error for a call before it happens.
	fail func(call string) error
}

func newFake() *fakeObjects {
	return &fakeObjects{items: map[store.Resource]map[string]config.Object{
		store.ResourceFlowSchemas:    {},
		store.ResourcePriorityLevels: {},
	}}
}

func resOf(o config.Object) store.Resource {
	if o.FlowSchema != nil {
		return store.ResourceFlowSchemas
	}
	return store.ResourcePriorityLevels
}

func gr(res store.Resource) schema.GroupResource {
	return schema.GroupResource{Group: config.Group, Resource: string(res)}
}

func (f *fakeObjects) record(call string) error {
	f.calls = append(f.calls, call)
	if f.fail != nil {
		return f.fail(call)
	}
	return nil
}

// Calls returns the calls so far and forgets them.
func (f *fakeObjects) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// put stores o as is (no registry rules) with the given generation, giving
// it a UID and a resourceVersion.
func (f *fakeObjects) put(o config.Object, generation int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.putLocked(o, generation)
}

// putLocked is put for callers holding f.mu (the fail hook).
func (f *fakeObjects) putLocked(o config.Object, generation int64) {
	o = o.DeepCopy()
	m := objectMeta(o)
	f.rv++
	m.ResourceVersion = strconv.Itoa(f.rv)
	if m.UID == "" {
		m.UID = types.UID("uid-" + m.Name)
	}
	m.Generation = generation
	f.items[resOf(o)][m.Name] = o
}

// get returns a copy of the stored object, or ok false.
func (f *fakeObjects) get(res store.Resource, name string) (config.Object, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.items[res][name]
	return o.DeepCopy(), ok
}

func (f *fakeObjects) Get(ctx context.Context, res store.Resource, name string) (config.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("get " + string(res) + "/" + name); err != nil {
		return config.Object{}, err
	}
	o, ok := f.items[res][name]
	if !ok {
		return config.Object{}, apierrors.NewNotFound(gr(res), name)
	}
	return o.DeepCopy(), nil
}

func (f *fakeObjects) List(ctx context.Context, res store.Resource) ([]config.Object, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("list " + string(res)); err != nil {
		return nil, "", err
	}
	var names []string
	for n := range f.items[res] {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]config.Object, 0, len(names))
	for _, n := range names {
		out = append(out, f.items[res][n].DeepCopy())
	}
	return out, strconv.Itoa(f.rv), nil
}

func (f *fakeObjects) Create(ctx context.Context, obj config.Object) (config.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	res, name := resOf(obj), obj.Name()
	if err := f.record("create " + string(res) + "/" + name); err != nil {
		return config.Object{}, err
	}
	if _, ok := f.items[res][name]; ok {
		return config.Object{}, apierrors.NewAlreadyExists(gr(res), name)
	}
	o := obj.DeepCopy()
	m := objectMeta(o)
	if m.ResourceVersion != "" {
		return config.Object{}, apierrors.NewBadRequest("resourceVersion must not be set on create")
	}
	f.rv++
	m.ResourceVersion = strconv.Itoa(f.rv)
	m.UID = types.UID(fmt.Sprintf("uid-%d", f.rv))
	m.Generation = 1
	if o.FlowSchema != nil {
		o.FlowSchema.Status = flowcontrolv1.FlowSchemaStatus{}
	} else {
		o.PriorityLevel.Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
	}
	f.items[res][name] = o
	return o.DeepCopy(), nil
}

// check returns the stored object for a write of obj, or the error the
// registry would give: NotFound, or Conflict for a stale resourceVersion.
func (f *fakeObjects) check(obj config.Object) (config.Object, error) {
	res, name := resOf(obj), obj.Name()
	cur, ok := f.items[res][name]
	if !ok {
		return config.Object{}, apierrors.NewNotFound(gr(res), name)
	}
	if rv := objectMeta(obj).ResourceVersion; rv != "" && rv != objectMeta(cur).ResourceVersion {
		return config.Object{}, apierrors.NewConflict(gr(res), name, fmt.Errorf("resourceVersion %s is stale", rv))
	}
	return cur, nil
}

func (f *fakeObjects) Update(ctx context.Context, obj config.Object) (config.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	res, name := resOf(obj), obj.Name()
	if err := f.record("update " + string(res) + "/" + name); err != nil {
		return config.Object{}, err
	}
	cur, err := f.check(obj)
	if err != nil {
		return config.Object{}, err
	}
	o := obj.DeepCopy()
	m, cm := objectMeta(o), objectMeta(cur)
	m.UID, m.Generation = cm.UID, cm.Generation
	if o.FlowSchema != nil {
		o.FlowSchema.Status = *cur.FlowSchema.Status.DeepCopy()
		if !apiequality.Semantic.DeepEqual(o.FlowSchema.Spec, cur.FlowSchema.Spec) {
			m.Generation++
		}
	} else {
		o.PriorityLevel.Status = *cur.PriorityLevel.Status.DeepCopy()
		if !apiequality.Semantic.DeepEqual(o.PriorityLevel.Spec, cur.PriorityLevel.Spec) {
			m.Generation++
		}
	}
	f.rv++
	m.ResourceVersion = strconv.Itoa(f.rv)
	f.items[res][name] = o
	return o.DeepCopy(), nil
}

func (f *fakeObjects) ApplyStatus(ctx context.Context, obj config.Object, force bool) (config.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	res, name := resOf(obj), obj.Name()
	if err := f.record("applystatus " + string(res) + "/" + name); err != nil {
		return config.Object{}, err
	}
	cur, err := f.check(obj)
	if err != nil {
		return config.Object{}, err
	}
	// Conditions merge by type, as the apply's list map does.
	o := cur.DeepCopy()
	for _, c := range obj.FlowSchema.Status.Conditions {
		cs := &o.FlowSchema.Status.Conditions
		if i := slices.IndexFunc(*cs, func(have flowcontrolv1.FlowSchemaCondition) bool { return have.Type == c.Type }); i >= 0 {
			(*cs)[i] = c
		} else {
			*cs = append(*cs, c)
		}
	}
	f.rv++
	objectMeta(o).ResourceVersion = strconv.Itoa(f.rv)
	f.items[res][name] = o
	return o.DeepCopy(), nil
}

func (f *fakeObjects) Delete(ctx context.Context, res store.Resource, name string, pre *metav1.Preconditions) (config.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("delete " + string(res) + "/" + name); err != nil {
		return config.Object{}, err
	}
	cur, ok := f.items[res][name]
	if !ok {
		return config.Object{}, apierrors.NewNotFound(gr(res), name)
	}
	m := objectMeta(cur)
	if pre != nil && (pre.UID != nil && *pre.UID != m.UID || pre.ResourceVersion != nil && *pre.ResourceVersion != m.ResourceVersion) {
		return config.Object{}, apierrors.NewConflict(gr(res), name, fmt.Errorf("precondition failed"))
	}
	delete(f.items[res], name)
	return cur, nil
}

// recordingClock is a fake clock that also reports every delay armed on
// it, so a test can follow a loop's schedule without sleeping.
type recordingClock struct {
	*fakeclock.Clock
	armed chan time.Duration
}

func newRecordingClock() *recordingClock {
	return &recordingClock{
		Clock: fakeclock.New(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)),
		armed: make(chan time.Duration, 1024),
	}
}

func (c *recordingClock) AfterFunc(d time.Duration, f func()) func() bool {
	stop := c.Clock.AfterFunc(d, f)
	c.armed <- d
	return stop
}

// receive waits for a value from ch. The real-time limit only turns a hung
// loop into a failure; no assertion depends on it.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}
