package kube

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBootstrapObjects compares the mandatory and suggested objects both
// servers create at start: the same names, and for each the same spec,
// labels and annotations (apf.kubernetes.io/autoupdate-spec). uid,
// resourceVersion, timestamps and status are each server's own.
func TestBootstrapObjects(t *testing.T) {
	e := testEnv(t)
	for _, res := range []struct{ name, path string }{{"flowschemas", flowschemas}, {"prioritylevelconfigurations", levels}} {
		t.Run(res.name, func(t *testing.T) {
			k := bootstrapObjects(t, e.kube, res.path)
			a := bootstrapObjects(t, e.apf, res.path)
			if len(k) == 0 {
				t.Fatalf("kube has no %s", res.name)
			}
			if d := cmp.Diff(slices.Sorted(maps.Keys(k)), slices.Sorted(maps.Keys(a))); d != "" {
				t.Errorf("names differ (-kube +apf):\n%s", d)
			}
			for name, ko := range k {
				ao, ok := a[name]
				if !ok {
					continue
				}
				t.Run(name, func(t *testing.T) {
					if d := cmp.Diff(ko, ao); d != "" {
						t.Errorf("%s %s differs (-kube +apf):\n%s", res.name, name, d)
					}
				})
			}
		})
	}
}

// bootstrapObjects lists the objects of path on s that are not the tests'
// own, each reduced to its spec, labels and annotations, by name.
func bootstrapObjects(t *testing.T, s *server, path string) map[string]map[string]any {
	t.Helper()
	a := s.mustSend(t, get(path))
	if a.code != 200 {
		t.Fatalf("%s: GET %s: %d %s", s.name, path, a.code, a.raw)
	}
	out := map[string]map[string]any{}
	for _, it := range items(a.body) {
		name := nameOf(it)
		if strings.HasPrefix(name, testPrefix) || isLabelled(it) {
			continue
		}
		md, _ := it["metadata"].(map[string]any)
		out[name] = map[string]any{"spec": it["spec"], "labels": md["labels"], "annotations": md["annotations"]}
	}
	return out
}
