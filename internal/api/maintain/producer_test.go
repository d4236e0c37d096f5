package maintain

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/internal/api/store"
)

const (
	fsRes = store.ResourceFlowSchemas
	plRes = store.ResourcePriorityLevels
)

// The order of one pass (docs/spec/maintenance.md#one-pass), written out
// rather than derived from plan(). The suggested FlowSchemas come in the
// order package bootstrap lists them, not in upstream's list order.
var (
	wantSuggestedPL = []string{"system", "node-high", "leader-election", "workload-high", "workload-low", "global-default"}
	wantSuggestedFS = []string{"probes", "system-leader-election", "system-node-high", "system-nodes",
		"kube-controller-manager", "kube-scheduler", "kube-system-service-accounts", "service-accounts", "global-default"}
	wantMandatoryPL = []string{"catch-all", "exempt"}
	wantMandatoryFS = []string{"exempt", "catch-all"}
)

func ensure(t *testing.T, f *fakeObjects) {
	t.Helper()
	if err := NewProducer(f, newRecordingClock(), nil).Ensure(context.Background()); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
}

// populated returns a fake holding every bootstrap object as created by a
// first pass, with the calls forgotten.
func populated(t *testing.T) *fakeObjects {
	t.Helper()
	f := newFake()
	ensure(t, f)
	f.Calls()
	return f
}

func bootFS(name string) *flowcontrolv1.FlowSchema {
	if o := bootstrap.MandatoryFlowSchema(name); o != nil {
		return o
	}
	return bootstrap.SuggestedFlowSchema(name)
}

func bootPL(name string) *flowcontrolv1.PriorityLevelConfiguration {
	if o := bootstrap.MandatoryPriorityLevel(name); o != nil {
		return o
	}
	return bootstrap.SuggestedPriorityLevel(name)
}

func TestEnsureEmptyStoreCreatesAllInOrder(t *testing.T) {
	f := newFake()
	ensure(t, f)

	var want []string
	add := func(res store.Resource, names []string) {
		for _, n := range names {
			want = append(want, "get "+string(res)+"/"+n, "create "+string(res)+"/"+n)
		}
	}
	add(plRes, wantSuggestedPL)
	add(plRes, wantMandatoryPL)
	add(fsRes, wantSuggestedFS)
	add(fsRes, wantMandatoryFS)
	want = append(want, "list flowschemas", "list prioritylevelconfigurations")
	if got := f.Calls(); !slices.Equal(got, want) {
		t.Fatalf("calls of one pass on an empty store:\n got %q\nwant %q", got, want)
	}

	for _, b := range bootstrap.FlowSchemas() {
		got, ok := f.get(fsRes, b.Name)
		if !ok {
			t.Fatalf("FlowSchema %q not created", b.Name)
		}
		if !apiequality.Semantic.DeepEqual(got.FlowSchema.Spec, b.Spec) || got.FlowSchema.Annotations[bootstrap.AutoUpdateAnnotation] != "true" {
			t.Errorf("FlowSchema %q created as %+v", b.Name, got.FlowSchema)
		}
	}
	for _, b := range bootstrap.PriorityLevels() {
		got, ok := f.get(plRes, b.Name)
		if !ok {
			t.Fatalf("level %q not created", b.Name)
		}
		if !apiequality.Semantic.DeepEqual(got.PriorityLevel.Spec, b.Spec) || got.PriorityLevel.Annotations[bootstrap.AutoUpdateAnnotation] != "true" {
			t.Errorf("level %q created as %+v", b.Name, got.PriorityLevel)
		}
	}

	// A second pass finds everything in place and writes nothing.
	ensure(t, f)
	for _, c := range f.Calls() {
		if verb := c[:3]; verb != "get" && verb != "lis" {
			t.Errorf("second pass wrote: %s", c)
		}
	}
}

// On an empty store no FlowSchema is created before the level it names,
// mandatory levels included: none dangles, even for a moment.
func TestEnsureCreatesLevelsBeforeTheirSchemas(t *testing.T) {
	f := newFake()
	ensure(t, f)
	created := map[string]bool{}
	for _, c := range f.Calls() {
		name, ok := strings.CutPrefix(c, "create ")
		if !ok {
			continue
		}
		created[name] = true
		if fsName, ok := strings.CutPrefix(name, string(fsRes)+"/"); ok {
			pl := bootFS(fsName).Spec.PriorityLevelConfiguration.Name
			if !created[string(plRes)+"/"+pl] {
				t.Errorf("FlowSchema %s created before its level %s", fsName, pl)
			}
		}
	}
	if len(created) != len(bootstrap.FlowSchemas())+len(bootstrap.PriorityLevels()) {
		t.Errorf("created %d objects", len(created))
	}
}

func TestEnsureRecreatesDeletedSuggestedObjects(t *testing.T) {
	f := populated(t)
	if _, err := f.Delete(context.Background(), fsRes, "service-accounts", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Delete(context.Background(), plRes, "workload-low", nil); err != nil {
		t.Fatal(err)
	}
	f.Calls()
	ensure(t, f)
	for _, c := range []struct {
		res  store.Resource
		name string
	}{{fsRes, "service-accounts"}, {plRes, "workload-low"}} {
		if _, ok := f.get(c.res, c.name); !ok {
			t.Errorf("%s/%s not recreated", c.res, c.name)
		}
	}
	var writes []string
	for _, c := range f.Calls() {
		if c[:3] != "get" && c[:3] != "lis" {
			writes = append(writes, c)
		}
	}
	want := []string{"create prioritylevelconfigurations/workload-low", "create flowschemas/service-accounts"}
	if !slices.Equal(writes, want) {
		t.Errorf("writes %q, want %q", writes, want)
	}
}

// editedFS is the bootstrap FlowSchema of that name with another
// precedence, the given annotation (absent when ann is nil) and generation.
func editedFS(name string, ann *string) config.Object {
	fs := bootFS(name)
	fs.Spec.MatchingPrecedence = 4242
	delete(fs.Annotations, bootstrap.AutoUpdateAnnotation)
	if ann != nil {
		fs.Annotations[bootstrap.AutoUpdateAnnotation] = *ann
	}
	return config.Object{FlowSchema: fs, Version: config.V1}
}

func TestEnsureSuggestedAutoUpdate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ann        *string
		generation int64
		restored   bool
		wantAnn    string
		wantUpdate bool
	}{
		{"annotation false is left alone", str("false"), 2, false, "false", false},
		{"annotation false at generation 1 is left alone", str("false"), 1, false, "false", false},
		{"annotation False", str("False"), 3, false, "False", false},
		{"annotation 0", str("0"), 3, false, "0", false},
		{"missing annotation at generation 1 is restored", nil, 1, true, "true", true},
		{"missing annotation at generation 2 is marked false", nil, 2, false, "false", true},
		{"annotation TRUE is restored", str("TRUE"), 2, true, "TRUE", true},
		{"annotation 1 is restored", str("1"), 2, true, "1", true},
		{"annotation t is restored", str("t"), 7, true, "t", true},
		{"annotation true is restored", str("true"), 2, true, "true", true},
		{"unparsable annotation at generation 2 is rewritten false", str("yes"), 2, false, "false", true},
		{"unparsable annotation at generation 1 is rewritten true", str("on"), 1, true, "true", true},
		{"empty annotation counts as unparsable", str(""), 5, false, "false", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := populated(t)
			f.put(editedFS("global-default", tc.ann), tc.generation)
			ensure(t, f)

			got, _ := f.get(fsRes, "global-default")
			if prec := got.FlowSchema.Spec.MatchingPrecedence; (prec == bootFS("global-default").Spec.MatchingPrecedence) != tc.restored {
				t.Errorf("precedence %d after the pass, restored=%v wanted", prec, tc.restored)
			}
			if a, ok := got.FlowSchema.Annotations[bootstrap.AutoUpdateAnnotation]; !ok || a != tc.wantAnn {
				t.Errorf("annotation %q (present %v), want %q", a, ok, tc.wantAnn)
			}
			updates := 0
			for _, c := range f.Calls() {
				if c == "update flowschemas/global-default" {
					updates++
				} else if c[:3] != "get" && c[:3] != "lis" {
					t.Errorf("unexpected write %s", c)
				}
			}
			if want := map[bool]int{false: 0, true: 1}[tc.wantUpdate]; updates != want {
				t.Errorf("%d updates, want %d", updates, want)
			}
		})
	}
}

func TestEnsureSuggestedLevelRestored(t *testing.T) {
	f := populated(t)
	pl := bootPL("workload-high")
	pl.Spec.Limited.NominalConcurrencyShares = i32(1)
	pl.Spec.Limited.LimitResponse = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
	f.put(config.Object{PriorityLevel: pl, Version: config.V1}, 1)
	ensure(t, f)
	got, _ := f.get(plRes, "workload-high")
	if !apiequality.Semantic.DeepEqual(got.PriorityLevel.Spec, bootPL("workload-high").Spec) {
		t.Errorf("spec not restored: %+v", got.PriorityLevel.Spec)
	}
}

func TestEnsureMandatoryRestoredAndAnnotationForced(t *testing.T) {
	for _, ann := range []*string{str("false"), nil, str("nope"), str("true")} {
		f := populated(t)
		f.put(editedFS("catch-all", ann), 3)
		pl := bootPL("catch-all")
		pl.Spec.Limited.NominalConcurrencyShares = i32(100)
		pl.Annotations[bootstrap.AutoUpdateAnnotation] = "false"
		f.put(config.Object{PriorityLevel: pl, Version: config.V1}, 4)
		ensure(t, f)

		gotFS, _ := f.get(fsRes, "catch-all")
		if !apiequality.Semantic.DeepEqual(gotFS.FlowSchema.Spec, bootFS("catch-all").Spec) {
			t.Errorf("annotation %v: catch-all FlowSchema not restored: %+v", ann, gotFS.FlowSchema.Spec)
		}
		if a := gotFS.FlowSchema.Annotations[bootstrap.AutoUpdateAnnotation]; a != "true" {
			t.Errorf("annotation %v: catch-all FlowSchema annotation %q, want true", ann, a)
		}
		gotPL, _ := f.get(plRes, "catch-all")
		if !apiequality.Semantic.DeepEqual(gotPL.PriorityLevel.Spec, bootPL("catch-all").Spec) ||
			gotPL.PriorityLevel.Annotations[bootstrap.AutoUpdateAnnotation] != "true" {
			t.Errorf("catch-all level not restored: %+v", gotPL.PriorityLevel)
		}
	}
}

func TestEnsureExemptLevel(t *testing.T) {
	t.Run("other exempt values are the administrator's", func(t *testing.T) {
		f := populated(t)
		pl := bootPL("exempt")
		pl.Spec.Exempt.NominalConcurrencyShares = i32(10)
		pl.Spec.Exempt.LendablePercent = i32(50)
		f.put(config.Object{PriorityLevel: pl, Version: config.V1}, 2)
		ensure(t, f)
		if slices.Contains(f.Calls(), "update prioritylevelconfigurations/exempt") {
			t.Error("exempt level updated for its spec.exempt values")
		}
		got, _ := f.get(plRes, "exempt")
		if *got.PriorityLevel.Spec.Exempt.NominalConcurrencyShares != 10 || *got.PriorityLevel.Spec.Exempt.LendablePercent != 50 {
			t.Errorf("exempt values changed: %+v", got.PriorityLevel.Spec.Exempt)
		}
	})
	t.Run("unset exempt values are defaulted before comparing", func(t *testing.T) {
		f := populated(t)
		pl := bootPL("exempt")
		pl.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{}
		f.put(config.Object{PriorityLevel: pl, Version: config.V1}, 2)
		ensure(t, f)
		if slices.Contains(f.Calls(), "update prioritylevelconfigurations/exempt") {
			t.Error("exempt level updated for an empty spec.exempt")
		}
	})
	t.Run("nil exempt is a difference", func(t *testing.T) {
		f := populated(t)
		pl := bootPL("exempt")
		pl.Spec.Exempt = nil
		f.put(config.Object{PriorityLevel: pl, Version: config.V1}, 2)
		ensure(t, f)
		if !slices.Contains(f.Calls(), "update prioritylevelconfigurations/exempt") {
			t.Error("exempt level without spec.exempt not updated")
		}
		got, _ := f.get(plRes, "exempt")
		if !apiequality.Semantic.DeepEqual(got.PriorityLevel.Spec, bootPL("exempt").Spec) {
			t.Errorf("spec not restored: %+v", got.PriorityLevel.Spec)
		}
	})
	t.Run("another difference replaces the whole spec", func(t *testing.T) {
		f := populated(t)
		pl := bootPL("exempt")
		pl.Spec.Exempt.NominalConcurrencyShares = i32(10)
		pl.Spec.Limited = &flowcontrolv1.LimitedPriorityLevelConfiguration{}
		f.put(config.Object{PriorityLevel: pl, Version: config.V1}, 2)
		ensure(t, f)
		got, _ := f.get(plRes, "exempt")
		if !apiequality.Semantic.DeepEqual(got.PriorityLevel.Spec, bootPL("exempt").Spec) {
			t.Errorf("spec not replaced: %+v", got.PriorityLevel.Spec)
		}
	})
}

func TestEnsureRemovesUnwantedAnnotatedTrue(t *testing.T) {
	f := populated(t)
	extraFS := func(name string, ann *string) {
		fs := bootFS("global-default")
		fs.Name = name
		delete(fs.Annotations, bootstrap.AutoUpdateAnnotation)
		if ann != nil {
			fs.Annotations[bootstrap.AutoUpdateAnnotation] = *ann
		}
		f.put(config.Object{FlowSchema: fs, Version: config.V1}, 1)
	}
	extraPL := func(name string, ann *string) {
		pl := bootPL("global-default")
		pl.Name = name
		delete(pl.Annotations, bootstrap.AutoUpdateAnnotation)
		if ann != nil {
			pl.Annotations[bootstrap.AutoUpdateAnnotation] = *ann
		}
		f.put(config.Object{PriorityLevel: pl, Version: config.V1}, 1)
	}
	extraFS("old-true", str("true"))
	extraFS("old-one", str("1"))
	extraFS("old-false", str("false"))
	extraFS("old-missing", nil)
	extraFS("old-malformed", str("maybe"))
	extraPL("old-true", str("True"))
	extraPL("old-false", str("0"))
	extraPL("old-missing", nil)
	extraPL("old-malformed", str("yes"))
	f.Calls()
	ensure(t, f)

	var deletes []string
	for _, c := range f.Calls() {
		if c[:6] == "delete" {
			deletes = append(deletes, c)
		}
	}
	want := []string{"delete flowschemas/old-one", "delete flowschemas/old-true", "delete prioritylevelconfigurations/old-true"}
	if !slices.Equal(deletes, want) {
		t.Errorf("deletes %q, want %q", deletes, want)
	}
	for _, n := range []string{"old-false", "old-missing", "old-malformed"} {
		if _, ok := f.get(fsRes, n); !ok {
			t.Errorf("FlowSchema %q removed", n)
		}
		if _, ok := f.get(plRes, n); !ok {
			t.Errorf("level %q removed", n)
		}
	}
	// Bootstrap objects carry the annotation true and are never removed.
	for _, b := range bootstrap.FlowSchemas() {
		if _, ok := f.get(fsRes, b.Name); !ok {
			t.Errorf("bootstrap FlowSchema %q removed", b.Name)
		}
	}
}

func TestEnsureRemovalToleratesNotFoundAndConflict(t *testing.T) {
	f := populated(t)
	for _, n := range []string{"gone", "raced", "zz-after"} {
		fs := bootFS("global-default")
		fs.Name = n
		f.put(config.Object{FlowSchema: fs, Version: config.V1}, 1)
	}
	f.fail = func(call string) error {
		switch call {
		case "delete flowschemas/gone":
			return apierrors.NewNotFound(gr(fsRes), "gone")
		case "delete flowschemas/raced":
			return apierrors.NewConflict(gr(fsRes), "raced", errors.New("changed"))
		}
		return nil
	}
	ensure(t, f)
	if _, ok := f.get(fsRes, "zz-after"); ok {
		t.Error("removal stopped before zz-after")
	}
}

func TestEnsureConflictIgnoredUntilNextRound(t *testing.T) {
	f := populated(t)
	f.put(editedFS("global-default", str("true")), 2)
	f.put(editedFS("catch-all", nil), 2)
	f.fail = func(call string) error {
		if call == "update flowschemas/global-default" {
			return apierrors.NewConflict(gr(fsRes), "global-default", errors.New("changed"))
		}
		return nil
	}
	ensure(t, f)
	got, _ := f.get(fsRes, "global-default")
	if got.FlowSchema.Spec.MatchingPrecedence != 4242 {
		t.Error("the conflicting update was applied")
	}
	// The pass went on past the conflict.
	if got, _ := f.get(fsRes, "catch-all"); got.FlowSchema.Spec.MatchingPrecedence != 10000 {
		t.Error("catch-all, after the conflict, not restored")
	}

	f.fail = nil
	ensure(t, f)
	if got, _ := f.get(fsRes, "global-default"); got.FlowSchema.Spec.MatchingPrecedence != 9900 {
		t.Error("next round did not restore global-default")
	}
}

func TestEnsureCreateRaceReadsAgain(t *testing.T) {
	f := populated(t)
	if _, err := f.Delete(context.Background(), fsRes, "global-default", nil); err != nil {
		t.Fatal(err)
	}
	// Another server creates an edited copy between our Get and Create.
	f.fail = func(call string) error {
		if call == "create flowschemas/global-default" {
			f.fail = nil
			f.putLocked(editedFS("global-default", nil), 2)
		}
		return nil
	}
	ensure(t, f)
	calls := f.Calls()
	i := slices.Index(calls, "create flowschemas/global-default")
	if i < 0 || i+2 >= len(calls) || calls[i+1] != "get flowschemas/global-default" || calls[i+2] != "update flowschemas/global-default" {
		t.Fatalf("after AlreadyExists want a read and an update, calls %q", calls)
	}
	got, _ := f.get(fsRes, "global-default")
	if got.FlowSchema.Annotations[bootstrap.AutoUpdateAnnotation] != "false" || got.FlowSchema.Spec.MatchingPrecedence != 4242 {
		t.Errorf("the concurrently created object was not judged as an existing one: %+v", got.FlowSchema)
	}
}

func TestEnsureStopsAtFirstError(t *testing.T) {
	boom := errors.New("store down")
	for _, failing := range []string{
		"get prioritylevelconfigurations/workload-high",
		"create flowschemas/system-nodes",
		"update prioritylevelconfigurations/catch-all",
		"list flowschemas",
		"delete flowschemas/old",
	} {
		t.Run(failing, func(t *testing.T) {
			f := newFake()
			pl := bootPL("catch-all")
			pl.Spec.Limited.NominalConcurrencyShares = i32(1)
			f.put(config.Object{PriorityLevel: pl, Version: config.V1}, 2)
			old := bootFS("global-default")
			old.Name = "old"
			f.put(config.Object{FlowSchema: old, Version: config.V1}, 1)
			f.fail = func(call string) error {
				if call == failing {
					return boom
				}
				return nil
			}
			err := NewProducer(f, newRecordingClock(), nil).Ensure(context.Background())
			if !errors.Is(err, boom) {
				t.Fatalf("Ensure returned %v, want the store's error", err)
			}
			calls := f.Calls()
			if last := calls[len(calls)-1]; last != failing {
				t.Errorf("the pass went on after %q; last call %q", failing, last)
			}
		})
	}
}

func TestEnsureRefusesWrongKind(t *testing.T) {
	f := &wrongKind{newFake()}
	if err := NewProducer(f, nil, nil).Ensure(context.Background()); err == nil {
		t.Fatal("Ensure accepted a level where a FlowSchema was asked for")
	}
}

// wrongKind answers every Get with a level.
type wrongKind struct{ *fakeObjects }

func (w *wrongKind) Get(ctx context.Context, res store.Resource, name string) (config.Object, error) {
	return config.Object{PriorityLevel: bootPL("system"), Version: config.V1}, nil
}

// runProducer starts Run and returns the recording clock, a channel of pass
// results and a stop function waiting for Run to return.
func runProducer(t *testing.T, f *fakeObjects) (*recordingClock, <-chan error, func()) {
	t.Helper()
	clock := newRecordingClock()
	p := NewProducer(f, clock, nil)
	passes := make(chan error, 1024)
	p.onPass = func(err error) { passes <- err }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		p.Run(ctx)
		close(done)
	}()
	stop := func() {
		cancel()
		receive(t, done, "Run to return")
		if clock.Pending() != 0 {
			t.Errorf("%d timers left pending after Run returned", clock.Pending())
		}
	}
	t.Cleanup(cancel)
	return clock, passes, stop
}

func TestRunRetriesEverySecondThenEveryMinute(t *testing.T) {
	f := newFake()
	failures := 3
	boom := errors.New("not yet")
	f.fail = func(call string) error {
		if failures > 0 && call == "get prioritylevelconfigurations/system" {
			failures--
			return boom
		}
		return nil
	}
	clock, passes, stop := runProducer(t, f)

	for i := 0; i < 3; i++ {
		if err := receive(t, passes, "a failing pass"); !errors.Is(err, boom) {
			t.Fatalf("pass %d: %v, want failure", i, err)
		}
		if d := receive(t, clock.armed, "the retry timer"); d != time.Second {
			t.Fatalf("retry after %v, want 1s", d)
		}
		clock.Advance(time.Second)
	}
	start := clock.Now()
	// The first success is followed at once by the periodic loop's pass.
	for i := 0; i < 2; i++ {
		if err := receive(t, passes, "a passing pass"); err != nil {
			t.Fatalf("pass: %v", err)
		}
	}
	for i := 0; i < 3; i++ {
		if d := receive(t, clock.armed, "the period timer"); d != time.Minute {
			t.Fatalf("next pass after %v, want 1m", d)
		}
		if !clock.Now().Equal(start.Add(time.Duration(i) * time.Minute)) {
			t.Fatalf("timer armed at %v", clock.Now())
		}
		clock.Advance(time.Minute)
		if err := receive(t, passes, "a periodic pass"); err != nil {
			t.Fatalf("pass: %v", err)
		}
	}
	select {
	case err := <-passes:
		t.Fatalf("extra pass: %v", err)
	default:
	}
	stop()
}

func TestRunPeriodicPassesKeepGoingAfterErrors(t *testing.T) {
	f := newFake()
	boom := errors.New("flaky")
	fail := false
	f.fail = func(call string) error {
		if fail && call == "list flowschemas" {
			return boom
		}
		return nil
	}
	clock, passes, stop := runProducer(t, f)
	receive(t, passes, "first pass")
	receive(t, passes, "second pass")
	receive(t, clock.armed, "period timer")
	f.mu.Lock()
	fail = true
	f.mu.Unlock()
	clock.Advance(time.Minute)
	if err := receive(t, passes, "failing periodic pass"); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if d := receive(t, clock.armed, "period timer after failure"); d != time.Minute {
		t.Fatalf("after a failed periodic pass the next one is in %v, want 1m", d)
	}
	stop()
}

func TestRunGivesUpRetryingAfterFiveMinutes(t *testing.T) {
	f := newFake()
	boom := errors.New("store unreachable")
	f.fail = func(string) error { return boom }
	clock, passes, stop := runProducer(t, f)
	start := clock.Now()
	attempts := 0
	for {
		if err := receive(t, passes, "an attempt"); !errors.Is(err, boom) {
			t.Fatalf("got %v", err)
		}
		attempts++
		d := receive(t, clock.armed, "a timer")
		if d == time.Minute {
			break
		}
		if d != time.Second {
			t.Fatalf("retry in %v", d)
		}
		clock.Advance(d)
	}
	if elapsed := clock.Now().Sub(start); elapsed != 5*time.Minute {
		t.Errorf("gave up after %v, want 5m", elapsed)
	}
	if attempts != 301 {
		t.Errorf("%d attempts in the first five minutes, want 301 (one a second, both ends included)", attempts)
	}
	// The minute loop carries on and picks up once the store is back.
	f.mu.Lock()
	f.fail = nil
	f.mu.Unlock()
	clock.Advance(time.Minute)
	if err := receive(t, passes, "the pass after a minute"); err != nil {
		t.Fatalf("got %v", err)
	}
	if d := receive(t, clock.armed, "period"); d != time.Minute {
		t.Fatalf("then %v, want 1m", d)
	}
	stop()
}

func TestRunClosesInitialized(t *testing.T) {
	f := newFake()
	clock := newRecordingClock()
	p := NewProducer(f, clock, nil)
	select {
	case <-p.Initialized():
		t.Fatal("initialized before any pass")
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	receive(t, p.Initialized(), "Initialized")
	cancel()
	receive(t, done, "Run to return")
}

func str(s string) *string { return &s }

func i32(v int32) *int32 { return &v }
