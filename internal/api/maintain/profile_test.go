package maintain

import (
	"context"
	"slices"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/internal/api/store"
)

// ensureProfile makes one pass of a producer keeping profile p.
func ensureProfile(t *testing.T, f *fakeObjects, p bootstrap.Profile) {
	t.Helper()
	pr := NewProducer(f, newRecordingClock(), nil)
	pr.SetProfile(p)
	if err := pr.Ensure(context.Background()); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
}

func names(f *fakeObjects, res store.Resource) []string {
	objs, _, _ := f.List(context.Background(), res)
	var out []string
	for _, o := range objs {
		out = append(out, o.Name())
	}
	slices.Sort(out)
	return out
}

// The service profile's store holds the mandatory objects and the
// profile's suggested ones, and nothing of kube-apiserver's suggested
// configuration.
func TestEnsureServiceProfileCreatesItsObjects(t *testing.T) {
	f := newFake()
	ensureProfile(t, f, bootstrap.ProfileService)
	wantPL := []string{"catch-all", "exempt", "service-default", "service-health", "service-operator"}
	wantFS := []string{"catch-all", "exempt", "service-default", "service-health", "service-operator"}
	if got := names(f, plRes); !slices.Equal(got, wantPL) {
		t.Errorf("levels %q, want %q", got, wantPL)
	}
	if got := names(f, fsRes); !slices.Equal(got, wantFS) {
		t.Errorf("FlowSchemas %q, want %q", got, wantFS)
	}
	for _, pl := range bootstrap.ProfileService.PriorityLevels() {
		got, _ := f.get(plRes, pl.Name)
		if !apiequality.Semantic.DeepEqual(got.PriorityLevel.Spec, pl.Spec) {
			t.Errorf("level %s: spec %+v, want %+v", pl.Name, got.PriorityLevel.Spec, pl.Spec)
		}
	}
}

// Deleted objects come back, mandatory and suggested; an edited suggested
// object the administrator took over (annotation false) is kept as
// edited; mandatory objects are restored whatever their annotation.
func TestEnsureServiceProfileMaintained(t *testing.T) {
	f := newFake()
	ensureProfile(t, f, bootstrap.ProfileService)
	ctx := context.Background()
	for _, d := range []struct {
		res  store.Resource
		name string
	}{{fsRes, "catch-all"}, {plRes, "service-health"}, {fsRes, "service-health"}, {fsRes, "service-default"}} {
		if _, err := f.Delete(ctx, d.res, d.name, nil); err != nil {
			t.Fatal(err)
		}
	}
	edited := bootstrap.ProfileService.SuggestedPriorityLevel("service-default")
	edited.Spec.Limited.NominalConcurrencyShares = i32(300)
	edited.Annotations[bootstrap.AutoUpdateAnnotation] = "false"
	f.put(config.Object{PriorityLevel: edited, Version: config.V1}, 2)
	catchAll := bootstrap.MandatoryPriorityLevel("catch-all")
	catchAll.Spec.Limited.NominalConcurrencyShares = i32(100)
	catchAll.Annotations[bootstrap.AutoUpdateAnnotation] = "false"
	f.put(config.Object{PriorityLevel: catchAll, Version: config.V1}, 2)
	untouched := bootstrap.ProfileService.SuggestedPriorityLevel("service-operator")
	untouched.Spec.Limited.NominalConcurrencyShares = i32(50)
	f.put(config.Object{PriorityLevel: untouched, Version: config.V1}, 1)

	ensureProfile(t, f, bootstrap.ProfileService)

	for _, d := range []struct {
		res  store.Resource
		name string
	}{{fsRes, "catch-all"}, {plRes, "service-health"}, {fsRes, "service-health"}, {fsRes, "service-default"}} {
		if _, ok := f.get(d.res, d.name); !ok {
			t.Errorf("%s/%s not recreated", d.res, d.name)
		}
	}
	got, _ := f.get(plRes, "service-default")
	if s := *got.PriorityLevel.Spec.Limited.NominalConcurrencyShares; s != 300 {
		t.Errorf("the administrator's service-default (annotation false) has %d shares after the pass, want its 300", s)
	}
	got, _ = f.get(plRes, "catch-all")
	if !apiequality.Semantic.DeepEqual(got.PriorityLevel.Spec, bootstrap.MandatoryPriorityLevel("catch-all").Spec) ||
		got.PriorityLevel.Annotations[bootstrap.AutoUpdateAnnotation] != "true" {
		t.Errorf("mandatory catch-all not restored: %+v", got.PriorityLevel)
	}
	got, _ = f.get(plRes, "service-operator")
	if !apiequality.Semantic.DeepEqual(got.PriorityLevel.Spec, bootstrap.ProfileService.SuggestedPriorityLevel("service-operator").Spec) {
		t.Errorf("service-operator, edited at generation 1 with no annotation, not restored: %+v", got.PriorityLevel.Spec)
	}
}

// A store kept by a server of the kubernetes profile, then by one of the
// service profile: the kube suggested objects the server owned go, the
// service profile's come; an object the administrator owns stays. And
// back again.
func TestEnsureProfileSwitch(t *testing.T) {
	f := newFake()
	ensureProfile(t, f, bootstrap.ProfileKubernetes)
	mine := bootstrap.SuggestedPriorityLevel("workload-low")
	mine.Annotations[bootstrap.AutoUpdateAnnotation] = "false"
	f.put(config.Object{PriorityLevel: mine, Version: config.V1}, 2)

	ensureProfile(t, f, bootstrap.ProfileService)
	wantPL := []string{"catch-all", "exempt", "service-default", "service-health", "service-operator", "workload-low"}
	if got := names(f, plRes); !slices.Equal(got, wantPL) {
		t.Errorf("levels after the switch to service %q, want %q", got, wantPL)
	}
	wantFS := []string{"catch-all", "exempt", "service-default", "service-health", "service-operator"}
	if got := names(f, fsRes); !slices.Equal(got, wantFS) {
		t.Errorf("FlowSchemas after the switch to service %q, want %q", got, wantFS)
	}

	ensureProfile(t, f, bootstrap.ProfileKubernetes)
	var want []string
	for _, pl := range bootstrap.PriorityLevels() {
		want = append(want, pl.Name)
	}
	slices.Sort(want)
	if got := names(f, plRes); !slices.Equal(got, want) {
		t.Errorf("levels after the switch back %q, want %q", got, want)
	}
}
