package config

import (
	"fmt"
	"reflect"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta1 "k8s.io/api/flowcontrol/v1beta1"
	flowcontrolv1beta2 "k8s.io/api/flowcontrol/v1beta2"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NewObject returns an empty Go object for kind (KindFlowSchema or
// KindPriorityLevel) in version v, with its TypeMeta set. v1alpha1 has no Go
// types of its own in k8s.io/api; its schema is v1beta1's without
// spec.exempt, so it gets a v1beta1 type.
func NewObject(v Version, kind string) (runtime.Object, error) {
	var obj runtime.Object
	switch kind {
	case KindFlowSchema:
		switch v {
		case V1:
			obj = &flowcontrolv1.FlowSchema{}
		case V1Beta3:
			obj = &flowcontrolv1beta3.FlowSchema{}
		case V1Beta2:
			obj = &flowcontrolv1beta2.FlowSchema{}
		case V1Beta1, V1Alpha1:
			obj = &flowcontrolv1beta1.FlowSchema{}
		}
	case KindPriorityLevel:
		switch v {
		case V1:
			obj = &flowcontrolv1.PriorityLevelConfiguration{}
		case V1Beta3:
			obj = &flowcontrolv1beta3.PriorityLevelConfiguration{}
		case V1Beta2:
			obj = &flowcontrolv1beta2.PriorityLevelConfiguration{}
		case V1Beta1, V1Alpha1:
			obj = &flowcontrolv1beta1.PriorityLevelConfiguration{}
		}
	default:
		return nil, fmt.Errorf("config: unknown kind %q", kind)
	}
	if obj == nil {
		return nil, fmt.Errorf("config: unsupported version %q", v)
	}
	setKind(obj, v, kind)
	return obj, nil
}

// setKind writes apiVersion and kind into obj's TypeMeta.
func setKind(obj runtime.Object, v Version, kind string) {
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Group: Group, Version: string(v), Kind: kind})
}

// kindOf tells which of the two kinds obj is in version v, by its Go type.
func kindOf(obj runtime.Object, v Version) (string, error) {
	for _, kind := range []string{KindFlowSchema, KindPriorityLevel} {
		want, err := NewObject(v, kind)
		if err != nil {
			return "", err
		}
		if reflect.TypeOf(obj) == reflect.TypeOf(want) {
			return kind, nil
		}
	}
	return "", fmt.Errorf("config: %T is not a FlowSchema or PriorityLevelConfiguration of %s", obj, v)
}

// FromVersion brings obj, a FlowSchema or PriorityLevelConfiguration written
// in version v (a Go type as returned by NewObject), into hub form: it
// applies v's defaulting, converts to the v1 types, and for v1beta3 removes
// PreserveZeroSharesAnnotation, whose job is done once defaulting has seen it.
// obj is not modified. The result has Version v and a Source with no file
// (Item -1), for the caller to fill in if it knows better.
//
// A v1alpha1 PriorityLevelConfiguration with spec.exempt set is refused: that
// version has no such field.
func FromVersion(obj runtime.Object, v Version) (Object, error) {
	if rv := reflect.ValueOf(obj); obj == nil || (rv.Kind() == reflect.Pointer && rv.IsNil()) {
		return Object{}, fmt.Errorf("config: nil object")
	}
	return fromVersion(obj.DeepCopyObject(), v)
}

// fromVersion is FromVersion for an object the caller hands over: it is
// defaulted in place and its maps and slices end up shared with the result.
// Decode uses it to save a copy of what it has just allocated.
func fromVersion(in runtime.Object, v Version) (Object, error) {
	kind, err := kindOf(in, v)
	if err != nil {
		return Object{}, err
	}
	if err := checkExpressible(in, v); err != nil {
		return Object{}, err
	}
	if err := Default(in); err != nil {
		return Object{}, err
	}
	return toHub(in, v, kind)
}

// checkExpressible refuses what version v cannot hold although its Go
// type can: spec.exempt of a v1alpha1 level, which shares v1beta1's type.
func checkExpressible(in runtime.Object, v Version) error {
	if pl, ok := in.(*flowcontrolv1beta1.PriorityLevelConfiguration); ok && v == V1Alpha1 && pl.Spec.Exempt != nil {
		return fmt.Errorf("config: %s PriorityLevelConfiguration %q has spec.exempt, which %s cannot express", v, pl.Name, v)
	}
	return nil
}

// toHub copies in, an object of kind in version v's Go type, into the v1
// types. Its maps and slices end up shared with the result. v1beta3's
// zero-shares marker is dropped: the hub type says zero by itself.
func toHub(in runtime.Object, v Version, kind string) (Object, error) {
	out := Object{Version: v, Source: Source{Item: -1}}
	switch kind {
	case KindFlowSchema:
		fs := &flowcontrolv1.FlowSchema{}
		if err := copyShape(fs, in); err != nil {
			return Object{}, err
		}
		setKind(fs, Hub, kind)
		out.FlowSchema = fs
	default:
		pl := &flowcontrolv1.PriorityLevelConfiguration{}
		if err := copyShape(pl, in); err != nil {
			return Object{}, err
		}
		setKind(pl, Hub, kind)
		if v == V1Beta3 {
			dropAnnotation(&pl.ObjectMeta, PreserveZeroSharesAnnotation)
		}
		out.PriorityLevel = pl
	}
	return out, nil
}

// Convert converts obj, a FlowSchema or PriorityLevelConfiguration in
// version from's Go type, into version to's Go type, with TypeMeta set,
// by way of the hub and without defaulting: conversion changes how an
// object is written, never what it says, so that what a client sent and
// what defaulting added stay apart (server-side apply depends on that to
// tell the fields a manager set from those the server filled in). obj is
// not modified.
func Convert(obj runtime.Object, from, to Version) (runtime.Object, error) {
	if rv := reflect.ValueOf(obj); obj == nil || (rv.Kind() == reflect.Pointer && rv.IsNil()) {
		return nil, fmt.Errorf("config: nil object")
	}
	kind, err := kindOf(obj, from)
	if err != nil {
		return nil, err
	}
	if err := checkExpressible(obj, from); err != nil {
		return nil, err
	}
	hub, err := toHub(obj.DeepCopyObject(), from, kind)
	if err != nil {
		return nil, err
	}
	return ToVersion(hub, to)
}

// ToVersion converts the hub object held by o into version v's Go type (see
// NewObject), with TypeMeta set. o is not modified.
//
// Two things are handled around the field copy:
//   - v1beta3: a Limited level whose nominalConcurrencyShares is 0 gets
//     PreserveZeroSharesAnnotation with value "", so that v1beta3 defaulting
//     keeps the zero when the object is read back. A nil share (not yet
//     defaulted) becomes 0 without the annotation, which reads back as 30,
//     just as nil does in v1.
//   - v1alpha1: spec.exempt is dropped, as the version has no such field.
func ToVersion(o Object, v Version) (runtime.Object, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	kind := o.Kind()
	out, err := NewObject(v, kind)
	if err != nil {
		return nil, err
	}
	if o.FlowSchema != nil {
		if err := copyShape(out, o.FlowSchema.DeepCopy()); err != nil {
			return nil, err
		}
		setKind(out, v, kind)
		return out, nil
	}
	in := o.PriorityLevel.DeepCopy()
	if v == V1Alpha1 {
		in.Spec.Exempt = nil
	}
	if err := copyShape(out, in); err != nil {
		return nil, err
	}
	setKind(out, v, kind)
	if pl, ok := out.(*flowcontrolv1beta3.PriorityLevelConfiguration); ok && hasZeroShares(in) {
		if pl.Annotations == nil {
			pl.Annotations = map[string]string{}
		}
		pl.Annotations[PreserveZeroSharesAnnotation] = ""
	}
	return out, nil
}

// hasZeroShares reports a Limited section with an explicit zero share.
func hasZeroShares(pl *flowcontrolv1.PriorityLevelConfiguration) bool {
	l := pl.Spec.Limited
	return l != nil && l.NominalConcurrencyShares != nil && *l.NominalConcurrencyShares == 0
}

// dropAnnotation deletes key and leaves a nil map rather than an empty one,
// so that an object that only ever had the marker compares equal to one that
// never had it, even under reflect.DeepEqual.
func dropAnnotation(m *metav1.ObjectMeta, key string) {
	if _, ok := m.Annotations[key]; !ok {
		return
	}
	delete(m.Annotations, key)
	if len(m.Annotations) == 0 {
		m.Annotations = nil
	}
}
