package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// decodeFile decodes a testdata file and fails the test on any error.
func decodeFile(t *testing.T, name string) []Object {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(data, name)
	if err != nil {
		t.Fatalf("Decode(%s): %v", name, err)
	}
	return objs
}

// decodeOne decodes data that must hold exactly one object.
func decodeOne(t *testing.T, data []byte) Object {
	t.Helper()
	objs, err := Decode(data, "test")
	if err != nil {
		t.Fatalf("Decode: %v\n%s", err, data)
	}
	if len(objs) != 1 {
		t.Fatalf("Decode: got %d objects, want 1\n%s", len(objs), data)
	}
	return objs[0]
}

// find returns the object of the given kind and name.
func find(t *testing.T, objs []Object, kind, name string) Object {
	t.Helper()
	for _, o := range objs {
		if o.Kind() == kind && o.Name() == name {
			return o
		}
	}
	t.Fatalf("no %s %q among %d objects", kind, name, len(objs))
	return Object{}
}

// held returns the hub object inside o, for comparison.
func held(o Object) any {
	if o.FlowSchema != nil {
		return o.FlowSchema
	}
	return o.PriorityLevel
}

// sameHub reports whether two Objects hold semantically equal hub objects
// (Version and Source are not compared).
func sameHub(a, b Object) bool {
	return a.Kind() == b.Kind() && equality.Semantic.DeepEqual(held(a), held(b))
}

// dump renders an Object's hub object for failure messages.
func dump(o Object) string {
	b, err := json.MarshalIndent(held(o), "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// project returns what o is expected to look like after being written in
// version v and read back: the documented losses (see Losses) applied.
func project(o Object, v Version) Object {
	out := o
	if o.PriorityLevel == nil {
		return out
	}
	pl := o.PriorityLevel.DeepCopy()
	if !v.canExpressZeroShares() && hasZeroShares(pl) {
		s := DefaultShares
		pl.Spec.Limited.NominalConcurrencyShares = &s
	}
	if v == V1Alpha1 {
		pl.Spec.Exempt = nil
	}
	out.PriorityLevel = pl
	return out
}

// errorStrings renders a field.ErrorList one string per error.
func errorStrings(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// joinLines renders strings for failure messages.
func joinLines(s []string) string { return "\n\t" + strings.Join(s, "\n\t") }

// hubPL is a shorthand to decode one v1 PriorityLevelConfiguration spec.
func hubPL(t *testing.T, name, spec string) *flowcontrolv1.PriorityLevelConfiguration {
	t.Helper()
	doc := "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata:\n  name: " + name + "\nspec:\n" + spec
	return decodeOne(t, []byte(doc)).PriorityLevel
}

// readTestdata reads a file under testdata.
func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// losses lists, as human-readable field descriptions, what of o does not
// survive being written in version v and read back. It is empty when the
// trip is exact. The known losses are:
//   - a Limited level's zero shares in v1alpha1, v1beta1 and v1beta2, where
//     0 is defaulted to 30 on reading;
//   - the exempt section in v1alpha1, which has none.
func losses(o Object, v Version) []string {
	pl := o.PriorityLevel
	if pl == nil || o.FlowSchema != nil {
		return nil
	}
	var out []string
	if hasZeroShares(pl) && !v.canExpressZeroShares() {
		out = append(out, fmt.Sprintf("spec.limited.%s: 0 cannot be expressed in %s and reads back as %d", v.SharesField(), v, DefaultShares))
	}
	if pl.Spec.Exempt != nil && v == V1Alpha1 {
		out = append(out, fmt.Sprintf("spec.exempt: %s has no such field; it is dropped", v))
	}
	return out
}

// canExpressZeroShares reports whether a Limited level with zero nominal
// concurrency shares survives a trip through v. v1 has a pointer that tells
// nil from 0; v1beta3 uses a marker annotation; the older versions default 0
// to 30 and so cannot.
func (v Version) canExpressZeroShares() bool { return v == V1 || v == V1Beta3 }
