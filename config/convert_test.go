package config

import (
	"fmt"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta1 "k8s.io/api/flowcontrol/v1beta1"
	flowcontrolv1beta2 "k8s.io/api/flowcontrol/v1beta2"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"
)

// TestConvertRandomObjects fills hub objects with random values in every
// field, converts them to each version and back, and expects the defaulted
// original minus the documented losses. Random filling reaches every field,
// so a field the structural copier mishandled would show up here.
func TestConvertRandomObjects(t *testing.T) {
	f := randfill.NewWithSeed(1).NilChance(0.2).NumElements(0, 3)
	for i := 0; i < 300; i++ {
		var fs flowcontrolv1.FlowSchema
		var pl flowcontrolv1.PriorityLevelConfiguration
		f.Fill(&fs)
		f.Fill(&pl)
		if i%3 == 0 && pl.Spec.Limited != nil {
			pl.Spec.Limited.NominalConcurrencyShares = ptr(int32(0)) // exercise the v1beta3 marker
		}
		for _, o := range []Object{{FlowSchema: &fs}, {PriorityLevel: &pl}} {
			want := defaultedHub(o)
			for _, v := range Versions {
				before := want
				before.FlowSchema, before.PriorityLevel = fs.DeepCopy(), pl.DeepCopy()
				versioned, err := ToVersion(o, v)
				if err != nil {
					t.Fatalf("ToVersion(%s): %v", v, err)
				}
				if gvk := versioned.GetObjectKind().GroupVersionKind(); gvk.Version != string(v) || gvk.Group != Group || gvk.Kind != o.Kind() {
					t.Fatalf("ToVersion(%s) set kind %v", v, gvk)
				}
				back, err := FromVersion(versioned, v)
				if err != nil {
					t.Fatalf("FromVersion(%s): %v", v, err)
				}
				if back.Version != v {
					t.Errorf("FromVersion(%s) recorded version %s", v, back.Version)
				}
				if exp := project(want, v); !sameHub(back, exp) {
					t.Fatalf("%s round trip through %s:\n%s\nwant:\n%s", o.Kind(), v, dump(back), dump(exp))
				}
				if !equality.Semantic.DeepEqual(fs, *before.FlowSchema) || !equality.Semantic.DeepEqual(pl, *before.PriorityLevel) {
					t.Fatalf("conversion through %s modified its input", v)
				}
			}
		}
	}
}

// defaultedHub is o after v1 defaulting, with the hub's TypeMeta.
func defaultedHub(o Object) Object {
	out := o
	if o.FlowSchema != nil {
		fs := o.FlowSchema.DeepCopy()
		DefaultFlowSchemaV1(fs)
		setKind(fs, V1, KindFlowSchema)
		out.FlowSchema = fs
	} else {
		pl := o.PriorityLevel.DeepCopy()
		DefaultPriorityLevelV1(pl)
		setKind(pl, V1, KindPriorityLevel)
		out.PriorityLevel = pl
	}
	return out
}

func TestNewObjectTypes(t *testing.T) {
	cases := []struct {
		v       Version
		kind    string
		want    runtime.Object
		wantErr string
	}{
		{V1, KindFlowSchema, &flowcontrolv1.FlowSchema{}, ""},
		{V1Beta3, KindPriorityLevel, &flowcontrolv1beta3.PriorityLevelConfiguration{}, ""},
		{V1Beta2, KindFlowSchema, &flowcontrolv1beta2.FlowSchema{}, ""},
		{V1Beta1, KindPriorityLevel, &flowcontrolv1beta1.PriorityLevelConfiguration{}, ""},
		{V1Alpha1, KindPriorityLevel, &flowcontrolv1beta1.PriorityLevelConfiguration{}, ""},
		{"v2", KindFlowSchema, nil, `config: unsupported version "v2"`},
		{V1, "Pod", nil, `config: unknown kind "Pod"`},
	}
	for _, c := range cases {
		got, err := NewObject(c.v, c.kind)
		if c.wantErr != "" {
			if err == nil || err.Error() != c.wantErr {
				t.Errorf("NewObject(%s, %s) error = %v, want %q", c.v, c.kind, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if gotT, wantT := typeName(got), typeName(c.want); gotT != wantT {
			t.Errorf("NewObject(%s, %s) = %s, want %s", c.v, c.kind, gotT, wantT)
		}
		if av := got.GetObjectKind().GroupVersionKind().GroupVersion().String(); av != c.v.APIVersion() {
			t.Errorf("NewObject(%s, %s) apiVersion %s", c.v, c.kind, av)
		}
	}
}

func typeName(o runtime.Object) string { return fmt.Sprintf("%T", o) }

func TestFromVersionV1Beta3DropsMarker(t *testing.T) {
	in := &flowcontrolv1beta3.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "jail", Annotations: map[string]string{PreserveZeroSharesAnnotation: "yes"}},
		Spec: flowcontrolv1beta3.PriorityLevelConfigurationSpec{
			Type:    flowcontrolv1beta3.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1beta3.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1beta3.LimitResponse{Type: flowcontrolv1beta3.LimitResponseTypeReject}},
		},
	}
	o, err := FromVersion(in, V1Beta3)
	if err != nil {
		t.Fatal(err)
	}
	if got := o.PriorityLevel.Spec.Limited.NominalConcurrencyShares; got == nil || *got != 0 {
		t.Errorf("shares = %v, want 0 kept by the marker", got)
	}
	if o.PriorityLevel.Annotations != nil {
		t.Errorf("annotations = %v, want nil", o.PriorityLevel.Annotations)
	}
	if _, ok := in.Annotations[PreserveZeroSharesAnnotation]; !ok || in.Spec.Limited.NominalConcurrencyShares != 0 {
		t.Errorf("FromVersion modified its input: %+v", in)
	}
	if gvk := o.PriorityLevel.GroupVersionKind(); gvk.Version != "v1" || gvk.Kind != KindPriorityLevel {
		t.Errorf("hub kind = %v", gvk)
	}
}

func TestFromVersionErrors(t *testing.T) {
	exempt := &flowcontrolv1beta1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "exempt"},
		Spec: flowcontrolv1beta1.PriorityLevelConfigurationSpec{
			Type:   flowcontrolv1beta1.PriorityLevelEnablementExempt,
			Exempt: &flowcontrolv1beta1.ExemptPriorityLevelConfiguration{},
		},
	}
	cases := []struct {
		name string
		obj  runtime.Object
		v    Version
		want string
	}{
		{"nil", nil, V1, "config: nil object"},
		{"typed nil", (*flowcontrolv1.FlowSchema)(nil), V1, "config: nil object"},
		{"wrong version", &flowcontrolv1.FlowSchema{}, V1Beta3, "config: *v1.FlowSchema is not a FlowSchema or PriorityLevelConfiguration of v1beta3"},
		{"not ours", &metav1.Status{}, V1, "config: *v1.Status is not a FlowSchema or PriorityLevelConfiguration of v1"},
		{"bad version", &flowcontrolv1.FlowSchema{}, "v9", `config: unsupported version "v9"`},
		{"v1alpha1 exempt", exempt, V1Alpha1, `config: v1alpha1 PriorityLevelConfiguration "exempt" has spec.exempt, which v1alpha1 cannot express`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := FromVersion(c.obj, c.v)
			if err == nil || err.Error() != c.want {
				t.Errorf("error = %v, want %q", err, c.want)
			}
		})
	}
	if _, err := FromVersion(exempt, V1Beta1); err != nil {
		t.Errorf("v1beta1 with exempt: %v", err)
	}
}

func TestToVersionErrors(t *testing.T) {
	fs := &flowcontrolv1.FlowSchema{}
	pl := &flowcontrolv1.PriorityLevelConfiguration{}
	cases := []struct {
		name string
		o    Object
		v    Version
		want string
	}{
		{"empty", Object{}, V1, "config: Object holds no object"},
		{"both", Object{FlowSchema: fs, PriorityLevel: pl}, V1, "config: Object holds both a FlowSchema and a PriorityLevelConfiguration"},
		{"bad version", Object{FlowSchema: fs}, "v0", `config: unsupported version "v0"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ToVersion(c.o, c.v)
			if err == nil || err.Error() != c.want {
				t.Errorf("error = %v, want %q", err, c.want)
			}
		})
	}
}

// TestShapeMismatch checks that the structural copier refuses types that
// are not of the same shape instead of copying part of them.
func TestShapeMismatch(t *testing.T) {
	type a struct{ X, Y string }
	type b struct{ X, Z string }
	type c struct{ X string }
	type d struct {
		X string
		y string
	}
	_ = d{}.y // only there to be refused
	type e struct {
		X string
		Y int64
	}
	cases := []struct {
		dst, src any
		want     string
	}{
		{&b{}, &a{}, "config: field config.a.Y has no counterpart in config.b"},
		{&c{}, &a{}, "config: config.a has 2 fields but config.c has 1"},
		{&a{}, &d{}, "config: config.d has unexported field y"},
		{&e{}, &a{}, "config: cannot convert string to int64"},
		{a{}, &a{}, "config: copyShape needs two non-nil pointers, got config.a and *config.a"},
		{&a{}, (*a)(nil), "config: copyShape needs two non-nil pointers, got *config.a and *config.a"},
	}
	for _, tc := range cases {
		err := copyShape(tc.dst, tc.src)
		if err == nil || err.Error() != tc.want {
			t.Errorf("copyShape(%T, %T) = %v, want %q", tc.dst, tc.src, err, tc.want)
		}
		// A second call is answered from the cache and must agree.
		if err2 := copyShape(tc.dst, tc.src); (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Errorf("cached result differs: %v vs %v", err, err2)
		}
	}
}
