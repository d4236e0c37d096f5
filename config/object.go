package config

import (
	"errors"
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Object is one FlowSchema or PriorityLevelConfiguration in hub form (the
// defaulted v1 Go type), together with the version it was written in and the
// place it was read from. Exactly one of FlowSchema and PriorityLevel is set.
//
// Version matters after conversion for one reason only: validation errors
// name the concurrency-shares field the way the author's version spells it.
type Object struct {
	FlowSchema    *flowcontrolv1.FlowSchema
	PriorityLevel *flowcontrolv1.PriorityLevelConfiguration

	// Version is the version the object was written in.
	Version Version
	// Source says where the object came from. Objects not decoded from
	// bytes have no file name in it.
	Source Source
}

// Kind returns KindFlowSchema or KindPriorityLevel, or "" for an Object that
// holds neither.
func (o Object) Kind() string {
	switch {
	case o.FlowSchema != nil:
		return KindFlowSchema
	case o.PriorityLevel != nil:
		return KindPriorityLevel
	}
	return ""
}

// DeepCopy returns o with a deep copy of the held object, which the
// caller may change without touching o's.
func (o Object) DeepCopy() Object {
	out := o
	if o.FlowSchema != nil {
		out.FlowSchema = o.FlowSchema.DeepCopy()
	}
	if o.PriorityLevel != nil {
		out.PriorityLevel = o.PriorityLevel.DeepCopy()
	}
	return out
}

// Name returns metadata.name of the held object, or "" if there is none.
func (o Object) Name() string {
	switch {
	case o.FlowSchema != nil:
		return o.FlowSchema.Name
	case o.PriorityLevel != nil:
		return o.PriorityLevel.Name
	}
	return ""
}

// check reports an Object that does not hold exactly one object. Such values
// can only be built by hand; every function taking an Object refuses them
// rather than guessing.
func (o Object) check() error {
	switch {
	case o.FlowSchema != nil && o.PriorityLevel != nil:
		return errors.New("config: Object holds both a FlowSchema and a PriorityLevelConfiguration")
	case o.FlowSchema == nil && o.PriorityLevel == nil:
		return errors.New("config: Object holds no object")
	}
	return nil
}

// Validate checks the object by the API server's rules for its kind
// (docs/spec/configuration.md#validation), naming fields the way
// o.Version spells them.
func (o Object) Validate() field.ErrorList {
	if err := o.check(); err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	if o.FlowSchema != nil {
		return validateFlowSchema(o.FlowSchema)
	}
	return validatePriorityLevel(o.PriorityLevel, o.Version)
}

// Source locates an object in its input: the file name given to Decode, the
// 0-based index of the document among the non-empty documents of the file,
// the 0-based index of the item when the document is a list (-1
// otherwise), and the line of the file the object starts on.
//
// A Source made by Decode also remembers the object's text, so that At can
// find the line of any of its fields: errors found on the decoded object,
// validation's among them, name the line they are about.
type Source struct {
	File string
	Doc  int
	Item int
	// Line is the line (from 1) the document, or the list item, starts on;
	// 0 when it is not known (objects not decoded from bytes).
	Line int

	pos    *fieldPositions // the document's text; nil when not decoded
	prefix string          // the object's path in the document: "items[2]" for an item
}

// At returns s with Line set to the line of the object's field at path
// (a field path such as "spec.rules[0].subjects", as validation errors
// carry), or of the deepest part of it that is written. Without the
// object's text, s is returned as it is.
func (s Source) At(path string) Source {
	if s.pos == nil {
		return s
	}
	full := s.prefix
	if path != "" {
		if full != "" && path[0] != '[' {
			full += "."
		}
		full += path
	}
	s.Line = s.pos.line(full)
	return s
}

// String renders s for people and for editors: "file:line" when the line
// is known; otherwise "file: document D" or "file: document D (item I)",
// counting from 1. Without a file name the file is dropped ("line 7",
// "document 1"), and a Source that names no document (Doc < 0) is just the
// file.
func (s Source) String() string {
	if s.Line > 0 {
		if s.File == "" {
			return fmt.Sprintf("line %d", s.Line)
		}
		return fmt.Sprintf("%s:%d", s.File, s.Line)
	}
	if s.Doc < 0 {
		return s.File
	}
	out := fmt.Sprintf("document %d", s.Doc+1)
	if s.Item >= 0 {
		out += fmt.Sprintf(" (item %d)", s.Item+1)
	}
	if s.File != "" {
		out = s.File + ": " + out
	}
	return out
}
