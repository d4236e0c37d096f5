package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
)

// DecodeError reports a document, or one item of a list document, or one
// field of either, that Decode could not turn into an Object.
type DecodeError struct {
	// Source locates the problem: its Line is that of the field when Field
	// is set, else that of the document or item (or the line a YAML error
	// names).
	Source Source
	// Field is the field path the error is about ("spec.colour"), when it
	// is about one field.
	Field string
	Err   error
	// Object, when set, is what the document decoded to once the fields
	// it names wrongly are left out: strict decoding refused it (unknown
	// or duplicate fields), but the rest could be read, and a linter can
	// report that rest's problems too instead of hiding them until the
	// first are fixed. It is set on the first error of a document only.
	Object *Object
}

// Error renders the error prefixed with its source, e.g.
// `pl.yaml:12: unknown field "spec.limited.queues"`.
func (e *DecodeError) Error() string { return e.Source.String() + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *DecodeError) Unwrap() error { return e.Err }

// pathError is an error about the field at path, which Decode locates.
type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

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
// into one error, a *DecodeError for each problem: one per unknown or
// duplicate field, else one per document or list item it could not read.
// Each names the line of the input it is about. Decode does not validate;
// see Object.Validate, and Source.At to locate its errors.
func Decode(data []byte, file string) ([]Object, error) {
	var objs []Object
	var errs []error
	for _, doc := range splitDocuments(data) {
		pos := newFieldPositions(doc.text, doc.line)
		src := Source{File: file, Doc: doc.index, Item: -1, Line: pos.start(), pos: pos}
		if doc.err != nil {
			errs = append(errs, yamlError(src, doc.err, doc.line, doc.text))
			continue
		}
		o, e := decodeDocument(doc.json, src)
		objs = append(objs, o...)
		errs = append(errs, e...)
	}
	return objs, errors.Join(errs...)
}

// yamlLine finds the "line N" of the YAML parser's messages.
var yamlLine = regexp.MustCompile(`\bline (\d+)\b`)

// yamlError reports a document the YAML parser refused. The parser counts
// lines from the start of the document, text, which begins on line first
// of the input; its line numbers are rewritten to the input's, and the
// first one locates the error. A parser that ran off the end names the
// line after the last; that is the last.
func yamlError(src Source, err error, first int, text []byte) *DecodeError {
	last := first + bytes.Count(text, []byte("\n"))
	if len(text) > 0 && text[len(text)-1] == '\n' {
		last--
	}
	located := false
	msg := yamlLine.ReplaceAllStringFunc(err.Error(), func(m string) string {
		n, convErr := strconv.Atoi(yamlLine.FindStringSubmatch(m)[1])
		if convErr != nil {
			return m
		}
		line := min(max(first+n-1, first), max(last, first))
		if !located {
			src.Line, located = line, true
		}
		return "line " + strconv.Itoa(line)
	})
	return &DecodeError{Source: src, Err: errors.New(msg)}
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
	o, errs := decodeObject(data, v, kind, src)
	if len(errs) > 0 {
		return nil, errs
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
	if errs, _ := strictUnmarshal(data, &env, src); len(errs) > 0 {
		return nil, asErrors(errs)
	}
	var objs []Object
	var errs []error
	// The items' lines, found in one pass that keeps nothing parsed.
	var lines []int
	if src.pos != nil {
		paths := make([]string, len(env.Items))
		for i := range paths {
			paths[i] = "items[" + strconv.Itoa(i) + "]"
		}
		lines = src.pos.lines(paths...)
	}
	for i, item := range env.Items {
		isrc := src
		isrc.Item, isrc.prefix = i, "items["+strconv.Itoa(i)+"]"
		if lines != nil {
			isrc.Line = lines[i]
		}
		o, e := decodeItem(item, want, isrc)
		if len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		objs = append(objs, o)
	}
	return objs, errs
}

// decodeItem decodes one list item. Items of a typed list may omit
// apiVersion and kind (the API server writes them that way) but must not
// contradict the list; items of a core List must name their own.
func decodeItem(data []byte, want itemType, src Source) (Object, []error) {
	fail := func(err error) (Object, []error) {
		return Object{}, []error{&DecodeError{Source: src, Err: err}}
	}
	t, err := probeType(data)
	if err != nil {
		return fail(err)
	}
	if want.kind != "" {
		if (t.APIVersion != "" && t.APIVersion != want.version.APIVersion()) || (t.Kind != "" && t.Kind != want.kind) {
			return fail(fmt.Errorf("item of apiVersion %q, kind %q in a %s list of %s", t.APIVersion, t.Kind, want.version.APIVersion(), want.kind))
		}
		return decodeObject(data, want.version, want.kind, src)
	}
	v, kind, err := resolveType(t)
	if err != nil {
		return fail(err)
	}
	if kind == KindFlowSchemaList || kind == KindPriorityLevelList {
		return fail(fmt.Errorf("a %s cannot be an item of a List", kind))
	}
	return decodeObject(data, v, kind, src)
}

// decodeObject strictly decodes one object of a known version and kind and
// brings it to the hub. Its errors are *DecodeErrors, one per field where
// they are about fields. When strict decoding refused only some fields, the
// object read without them goes with the first error.
func decodeObject(data []byte, v Version, kind string, src Source) (Object, []error) {
	obj, err := NewObject(v, kind)
	if err != nil {
		return Object{}, []error{&DecodeError{Source: src, Err: err}}
	}
	errs, fatal := strictUnmarshal(data, obj, src)
	if v == V1Alpha1 && kind == KindPriorityLevel && hasSpecField(data, "exempt") {
		// The v1beta1 Go type stands in for v1alpha1 and knows the field,
		// so the strict decoder let it through; v1alpha1 does not know it.
		errs = append(errs, &DecodeError{Source: src.At("spec.exempt"), Field: "spec.exempt", Err: errors.New(`unknown field "spec.exempt"`)})
		fatal = true // the object would not convert: no partial one
	}
	if fatal {
		return Object{}, asErrors(errs)
	}
	o, err := fromVersion(obj, v)
	if err == nil {
		err = canonicalize(o)
	}
	if err != nil {
		de := &DecodeError{Source: src, Err: err}
		var pe *pathError
		if errors.As(err, &pe) {
			de.Source, de.Field = src.At(pe.path), pe.path
		}
		return Object{}, append(asErrors(errs), de)
	}
	o.Source = src
	if len(errs) > 0 {
		errs[0].Object = &o
		return Object{}, asErrors(errs)
	}
	return o, nil
}

func asErrors(errs []*DecodeError) []error {
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return out
}

// strictUnmarshal decodes JSON into v, refusing unknown and duplicate
// fields, and matching field names case-sensitively as the API server does.
// It returns one located error per refused field, and fatal when v could
// not be read at all (a value of the wrong type, say), not just some of
// its fields.
func strictUnmarshal(data []byte, v any, src Source) (errs []*DecodeError, fatal bool) {
	strict, err := sigsjson.UnmarshalStrict(data, v, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		de := &DecodeError{Source: src, Err: err}
		if off, ok := typeErrorOffset(err); ok {
			if path := pathAt(data, off); path != "" {
				de.Source, de.Field = src.At(path), path
			}
		}
		return []*DecodeError{de}, true
	}
	for _, e := range strict {
		de := &DecodeError{Source: src, Err: e}
		var fe sigsjson.FieldError
		if errors.As(e, &fe) {
			de.Source, de.Field = src.At(fe.FieldPath()), fe.FieldPath()
		}
		errs = append(errs, de)
	}
	return errs, false
}

// typeErrorOffset returns the input offset a JSON type error carries: the
// decoder's own UnmarshalTypeError, which has no exported type to assert
// (it lives in an internal package), is read by its exported Offset field.
func typeErrorOffset(err error) (int64, bool) {
	v := reflect.ValueOf(err)
	if v.Kind() != reflect.Pointer || v.IsNil() || !strings.HasSuffix(v.Type().Elem().Name(), "UnmarshalTypeError") {
		return 0, false
	}
	f := v.Elem().FieldByName("Offset")
	if !f.IsValid() || f.Kind() != reflect.Int64 {
		return 0, false
	}
	return f.Int(), true
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
