package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
)

// DecodeError reports a document, or one item of a list document, that
// Decode could not turn into an Object.
type DecodeError struct {
	Source Source
	Err    error
}

// Error renders the error prefixed with its source, e.g.
// `pl.yaml: document 1: unknown field "spec.limited.queues"`.
func (e *DecodeError) Error() string { return e.Source.String() + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *DecodeError) Unwrap() error { return e.Err }

// fieldErrors gathers the strict-decoding complaints about one document
// (each naming a field) into one error, so that each document yields a
// single line in Decode's joined error.
type fieldErrors []error

func (e fieldErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e fieldErrors) Unwrap() []error { return e }

// Decode reads FlowSchema and PriorityLevelConfiguration objects of any
// supported version from YAML or JSON. The input may hold several documents
// (YAML separated by "---", or a JSON stream), and a document may be a
// FlowSchemaList, a PriorityLevelConfigurationList, or a core v1 List whose
// items mix both kinds and versions. file is only used to label sources.
//
// Each object is decoded strictly (an unknown or duplicated field is an
// error naming the field), defaulted by the rules of its own version, and
// converted to the hub. Empty documents are skipped. A document of any other
// apiVersion or kind is an error naming them.
//
// Decode returns every object it could decode, in input order, and, joined
// into one error, a *DecodeError for each document or list item it could
// not. It does not validate; see Object.Validate.
func Decode(data []byte, file string) ([]Object, error) {
	var objs []Object
	var errs []error
	for _, doc := range splitDocuments(data) {
		src := Source{File: file, Doc: doc.index, Item: -1}
		if doc.err != nil {
			errs = append(errs, &DecodeError{Source: src, Err: doc.err})
			continue
		}
		o, e := decodeDocument(doc.json, src)
		objs = append(objs, o...)
		errs = append(errs, e...)
	}
	return objs, errors.Join(errs...)
}

// typeInfo is the apiVersion and kind of a document, read before knowing
// which Go type to decode it into.
type typeInfo struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// probeType reads apiVersion and kind. Other fields are ignored here; the
// strict decode that follows checks them.
func probeType(data []byte) (typeInfo, error) {
	var t typeInfo
	if trimmed := bytes.TrimSpace(data); len(trimmed) == 0 || trimmed[0] != '{' {
		return t, fmt.Errorf("expected an object, got %s", describeJSON(trimmed))
	}
	var raw struct {
		APIVersion json.RawMessage `json:"apiVersion"`
		Kind       json.RawMessage `json:"kind"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &raw); err != nil {
		return t, err
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *string
	}{{"apiVersion", raw.APIVersion, &t.APIVersion}, {"kind", raw.Kind, &t.Kind}} {
		if len(f.raw) == 0 || isNull(f.raw) {
			continue
		}
		if err := json.Unmarshal(f.raw, f.dst); err != nil {
			return t, fmt.Errorf("%s must be a string, got %s", f.name, describeJSON(f.raw))
		}
	}
	return t, nil
}

// describeJSON names the kind of a non-object JSON value for error messages.
func describeJSON(j []byte) string {
	if len(j) == 0 {
		return "nothing"
	}
	switch j[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// itemType says what a list expects of its items: for a typed list the one
// version and kind, for a core v1 List nothing (each item names its own).
type itemType struct {
	version Version
	kind    string
}

// decodeDocument decodes one document, which is an object or a list.
func decodeDocument(data []byte, src Source) ([]Object, []error) {
	fail := func(err error) ([]Object, []error) {
		return nil, []error{&DecodeError{Source: src, Err: err}}
	}
	t, err := probeType(data)
	if err != nil {
		return fail(err)
	}
	if t.APIVersion == "v1" && t.Kind == "List" {
		return decodeList(data, src, itemType{})
	}
	v, kind, err := resolveType(t)
	if err != nil {
		return fail(err)
	}
	switch kind {
	case KindFlowSchemaList:
		return decodeList(data, src, itemType{v, KindFlowSchema})
	case KindPriorityLevelList:
		return decodeList(data, src, itemType{v, KindPriorityLevel})
	}
	o, err := decodeObject(data, v, kind, src)
	if err != nil {
		return fail(err)
	}
	return []Object{o}, nil
}

// resolveType checks that t is one of this package's kinds in a supported
// version of the group.
func resolveType(t typeInfo) (Version, string, error) {
	switch {
	case t.APIVersion == "" && t.Kind == "":
		return "", "", errors.New("missing apiVersion and kind")
	case t.APIVersion == "":
		return "", "", fmt.Errorf("kind %q: missing apiVersion", t.Kind)
	case t.Kind == "":
		return "", "", fmt.Errorf("apiVersion %q: missing kind", t.APIVersion)
	}
	v, problem := parseAPIVersion(t.APIVersion)
	if problem != "" {
		return "", "", fmt.Errorf("unsupported object of apiVersion %q, kind %q: %s", t.APIVersion, t.Kind, problem)
	}
	switch t.Kind {
	case KindFlowSchema, KindPriorityLevel, KindFlowSchemaList, KindPriorityLevelList:
		return v, t.Kind, nil
	}
	return "", "", fmt.Errorf("unsupported kind %q in apiVersion %q: expected one of %s, %s, %s, %s",
		t.Kind, t.APIVersion, KindFlowSchema, KindPriorityLevel, KindFlowSchemaList, KindPriorityLevelList)
}

// listEnvelope is the outer shape of every list kind. Items stay raw so that
// each is decoded, and fails, on its own.
type listEnvelope struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []json.RawMessage `json:"items"`
}

// decodeList decodes a list document item by item.
func decodeList(data []byte, src Source, want itemType) ([]Object, []error) {
	var env listEnvelope
	if err := strictUnmarshal(data, &env); err != nil {
		return nil, []error{&DecodeError{Source: src, Err: err}}
	}
	var objs []Object
	var errs []error
	for i, item := range env.Items {
		isrc := src
		isrc.Item = i
		o, err := decodeItem(item, want, isrc)
		if err != nil {
			errs = append(errs, &DecodeError{Source: isrc, Err: err})
			continue
		}
		objs = append(objs, o)
	}
	return objs, errs
}

// decodeItem decodes one list item. Items of a typed list may omit
// apiVersion and kind (the API server writes them that way) but must not
// contradict the list; items of a core List must name their own.
func decodeItem(data []byte, want itemType, src Source) (Object, error) {
	t, err := probeType(data)
	if err != nil {
		return Object{}, err
	}
	if want.kind != "" {
		if (t.APIVersion != "" && t.APIVersion != want.version.APIVersion()) || (t.Kind != "" && t.Kind != want.kind) {
			return Object{}, fmt.Errorf("item of apiVersion %q, kind %q in a %s list of %s", t.APIVersion, t.Kind, want.version.APIVersion(), want.kind)
		}
		return decodeObject(data, want.version, want.kind, src)
	}
	v, kind, err := resolveType(t)
	if err != nil {
		return Object{}, err
	}
	if kind == KindFlowSchemaList || kind == KindPriorityLevelList {
		return Object{}, fmt.Errorf("a %s cannot be an item of a List", kind)
	}
	return decodeObject(data, v, kind, src)
}

// decodeObject strictly decodes one object of a known version and kind and
// brings it to the hub.
func decodeObject(data []byte, v Version, kind string, src Source) (Object, error) {
	obj, err := NewObject(v, kind)
	if err != nil {
		return Object{}, err
	}
	if err := strictUnmarshal(data, obj); err != nil {
		return Object{}, err
	}
	if v == V1Alpha1 && kind == KindPriorityLevel && hasSpecField(data, "exempt") {
		// The v1beta1 Go type stands in for v1alpha1 and knows the field,
		// so the strict decoder let it through; v1alpha1 does not know it.
		return Object{}, errors.New(`unknown field "spec.exempt"`)
	}
	o, err := fromVersion(obj, v)
	if err != nil {
		return Object{}, err
	}
	if err := canonicalize(o); err != nil {
		return Object{}, err
	}
	o.Source = src
	return o, nil
}

// strictUnmarshal decodes JSON into v, refusing unknown and duplicate
// fields, and matching field names case-sensitively as the API server does.
func strictUnmarshal(data []byte, v any) error {
	strict, err := sigsjson.UnmarshalStrict(data, v, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		return fieldErrors(strict)
	}
	return nil
}

// hasSpecField reports whether the object in data has the key name in its
// spec, whatever the value (an explicit null counts: the field is there).
func hasSpecField(data []byte, name string) bool {
	var probe struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &probe); err != nil {
		return false
	}
	_, ok := probe.Spec[name]
	return ok
}
