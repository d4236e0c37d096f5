package check

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
)

// Severity tells findings that make a configuration invalid from those
// that only deserve a look.
type Severity uint8

const (
	// Error: a server would refuse the object, or could not use it.
	Error Severity = iota
	// Warning: a server accepts it, but it cannot do what it seems to.
	Warning
)

func (s Severity) String() string {
	if s == Error {
		return "error"
	}
	return "warning"
}

// MarshalText makes a Severity print as its name in JSON.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Finding is one thing the linter has to say.
type Finding struct {
	Severity Severity `json:"severity"`
	// Where says where the object is, as "file:line" when the line is
	// known, or "" for a finding about an input as a whole.
	Where string `json:"where,omitempty"`
	// File and Line are Where's parts, for tools.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Kind string `json:"kind,omitempty"`
	Name string `json:"name,omitempty"`
	// Field is the path of the field the finding is about, when it is
	// about one ("spec.rules[0].subjects").
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`

	src config.Source
}

func (f Finding) String() string {
	s := f.Severity.String() + ": "
	if f.Where != "" {
		s += f.Where + ": "
	}
	if f.Kind != "" {
		s += fmt.Sprintf("%s %q: ", f.Kind, f.Name)
	}
	return s + f.Message
}

// Notice is something the reader of the input has to say about it: an
// input that holds nothing, say. Inputs reports each as a warning.
type Notice struct {
	Where   string
	Message string
}

// Options shape the configuration the input is checked against.
type Options struct {
	// Base is the configuration under the input, as a server would hold
	// it before the input is applied: an object of the input replaces the
	// base's object of the same kind and name, and the base's objects are
	// not linted themselves. Nil means the bootstrap objects: the
	// mandatory ones, and the suggested ones unless WithoutSuggested.
	Base []config.Object
	// WithoutSuggested checks the input against the mandatory objects
	// only, as on a server whose suggested objects were removed or
	// replaced. It applies when Base is nil.
	WithoutSuggested bool
	// Profile names the built-in suggested objects (bootstrap.Profile;
	// "" is kube-apiserver's): those of Base when Base is nil, and the
	// levels a server maintains whether a schema names them or not.
	Profile bootstrap.Profile
	// Notices are reported as warnings, before the findings of the
	// objects.
	Notices []Notice
}

// Report is the outcome of a check.
type Report struct {
	// Objects are the objects decoded from the input, valid or not.
	Objects  []config.Object `json:"-"`
	Findings []Finding       `json:"findings"`

	// refused are the input's objects a server would refuse (invalid, or
	// decoded but for their fields): their references are still checked,
	// so that every error of an object comes in one report.
	refused []config.Object
}

// Count returns the number of findings of a severity.
func (r *Report) Count(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == s {
			n++
		}
	}
	return n
}

// add records a finding about the object at src, or about its field at
// path when path is not "".
func (r *Report) add(sev Severity, src config.Source, path, kind, name, msg string) {
	if path != "" {
		src = src.At(path)
	}
	f := Finding{Severity: sev, Kind: kind, Name: name, Field: path, Message: msg, src: src}
	if src != (config.Source{}) {
		f.Where, f.File, f.Line = src.String(), src.File, src.Line
	}
	r.Findings = append(r.Findings, f)
}

// Inputs checks decoded input: the objects Decode returned for every file,
// and the errors it gave. It returns a report with the notices first, then
// the findings ordered by file and line. An input that holds no object and
// no error, with no notice to say so, gets a warning: there was nothing to
// check, which is not the same as a sound configuration.
func Inputs(objs []config.Object, decodeErrs []error, opts Options) *Report {
	r := &Report{Objects: objs}
	for _, err := range decodeErrs {
		r.addDecodeError(err)
	}
	valid := r.validate(objs)
	r.crossCheck(valid, opts)
	slices.SortStableFunc(r.Findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.src.File, b.src.File), cmp.Compare(a.src.Line, b.src.Line),
			cmp.Compare(a.src.Doc, b.src.Doc), cmp.Compare(a.src.Item, b.src.Item))
	})
	var notes []Finding
	for _, n := range opts.Notices {
		notes = append(notes, Finding{Severity: Warning, Where: n.Where, File: n.Where, Message: n.Message})
	}
	if len(objs) == 0 && len(decodeErrs) == 0 && len(opts.Notices) == 0 {
		notes = append(notes, Finding{Severity: Warning, Message: "nothing to check: the input holds no FlowSchema or PriorityLevelConfiguration"})
	}
	r.Findings = append(notes, r.Findings...)
	return r
}

func (r *Report) addDecodeError(err error) {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			r.addDecodeError(e)
		}
		return
	}
	var de *config.DecodeError
	if errors.As(err, &de) {
		r.add(Error, de.Source, "", "", "", de.Err.Error())
		if o := de.Object; o != nil {
			// Refused for its fields, but the rest was read: its
			// validation errors are worth knowing now too.
			for _, e := range o.Validate() {
				r.add(Error, o.Source, e.Field, o.Kind(), o.Name(), e.Error())
			}
			r.refused = append(r.refused, *o)
		}
		return
	}
	r.add(Error, config.Source{}, "", "", "", err.Error())
}

// validate reports invalid objects and duplicates, and returns the objects
// a server would accept (the first of any duplicates).
func (r *Report) validate(objs []config.Object) []config.Object {
	type key struct{ kind, name string }
	first := map[key]config.Source{}
	var valid []config.Object
	for _, o := range objs {
		k := key{o.Kind(), o.Name()}
		if src, dup := first[k]; dup {
			r.add(Error, o.Source, "", o.Kind(), o.Name(), "defined again; first defined at "+src.String())
			continue
		}
		first[k] = o.Source
		errs := o.Validate()
		for _, e := range errs {
			r.add(Error, o.Source, e.Field, o.Kind(), o.Name(), e.Error())
		}
		if len(errs) == 0 {
			valid = append(valid, o)
		} else {
			r.refused = append(r.refused, o)
		}
	}
	return valid
}

// crossCheck compiles the valid objects over the base configuration
// and reports dangling references and schemas that can never match.
func (r *Report) crossCheck(valid []config.Object, opts Options) {
	var schemas []*flowcontrolv1.FlowSchema
	var levels []*flowcontrolv1.PriorityLevelConfiguration
	fromInput := map[*flowcontrolv1.FlowSchema]config.Source{}
	baseSource := map[*flowcontrolv1.FlowSchema]config.Source{}
	levelSource := map[string]config.Source{}
	for _, o := range valid {
		if o.FlowSchema != nil {
			schemas = append(schemas, o.FlowSchema)
			fromInput[o.FlowSchema] = o.Source
		} else {
			levels = append(levels, o.PriorityLevel)
			levelSource[o.PriorityLevel.Name] = o.Source
		}
	}
	base := opts.Base
	if base == nil {
		base = bootstrapObjects(opts.Profile, !opts.WithoutSuggested)
	}
	// An input object replaces the base's of the same kind and name.
	schemaNames, levelNames := map[string]bool{}, map[string]bool{}
	for _, fs := range schemas {
		schemaNames[fs.Name] = true
	}
	for _, pl := range levels {
		levelNames[pl.Name] = true
	}
	for _, o := range base {
		switch {
		case o.FlowSchema != nil && !schemaNames[o.FlowSchema.Name]:
			schemaNames[o.FlowSchema.Name] = true
			schemas = append(schemas, o.FlowSchema)
			baseSource[o.FlowSchema] = o.Source
		case o.PriorityLevel != nil && !levelNames[o.PriorityLevel.Name]:
			levelNames[o.PriorityLevel.Name] = true
			levels = append(levels, o.PriorityLevel)
		}
	}

	m := classify.Compile(schemas, levels)
	for _, fs := range schemas {
		src, mine := fromInput[fs]
		if mine && m.Dangling(fs.Name) {
			r.add(Error, src, "spec.priorityLevelConfiguration.name", config.KindFlowSchema, fs.Name, danglingMessage(fs.Spec.PriorityLevelConfiguration.Name))
		}
	}
	// A refused schema's reference is checked too, unless it names a
	// level of the input that was refused itself (whose errors say why).
	refusedLevels := map[string]bool{}
	for _, o := range r.refused {
		if o.PriorityLevel != nil {
			refusedLevels[o.PriorityLevel.Name] = true
		}
	}
	for _, o := range r.refused {
		if fs := o.FlowSchema; fs != nil {
			name := fs.Spec.PriorityLevelConfiguration.Name
			if name != "" && !refusedLevels[name] && m.PriorityLevel(name) == nil {
				r.add(Error, o.Source, "spec.priorityLevelConfiguration.name", config.KindFlowSchema, fs.Name, danglingMessage(name))
			}
		}
	}
	// A level can pass validation and still be unusable to the
	// controller: an "exempt" level written in v1alpha1, which has no
	// spec.exempt section, is the case that occurs.
	for _, p := range m.Problems() {
		if src, mine := levelSource[p.Name]; mine && p.Kind == config.KindPriorityLevel {
			what := "schemas referencing it dangle"
			if bootstrap.MandatoryPriorityLevel(p.Name) != nil {
				what = "the built-in definition stands in for it, and schemas naming it dangle"
			}
			r.add(Warning, src, "", p.Kind, p.Name, fmt.Sprintf("a server accepts it but ignores it (%s): %s", what, p.Reason))
		}
	}

	order := m.FlowSchemas()
	for i, b := range order {
		src, mine := fromInput[b.Object]
		// The mandatory catch-all is a fallback by design: it is shadowed
		// in every sensible configuration.
		if !mine || bootstrap.MandatoryFlowSchema(b.Name) != nil {
			continue
		}
		if len(b.Object.Spec.Rules) == 0 {
			r.add(Warning, src, "", config.KindFlowSchema, b.Name, "has no rules, so it matches no request")
			continue
		}
		by, shadowed := shadowers(order[:i], b.Object)
		if !shadowed {
			continue
		}
		args, to, ok := example(m, b.Object)
		if ok && to == b {
			continue // cannot happen while shadowers is sound; never warn falsely
		}
		origin := func(a *classify.FlowSchema) string {
			if _, aMine := fromInput[a.Object]; aMine {
				return ""
			}
			if bs := baseSource[a.Object]; bs.File != "" {
				return " (" + bs.String() + ")"
			}
			return " (bootstrap)"
		}
		r.add(Warning, src, "", config.KindFlowSchema, b.Name, shadowMessage(by, b, origin, args, to, ok))
	}

	// A level no schema names receives no request. The bootstrap levels
	// are left out: a server maintains them whoever uses them.
	named := map[string]bool{}
	for _, fs := range schemas {
		named[fs.Spec.PriorityLevelConfiguration.Name] = true
	}
	for _, pl := range levels {
		src, mine := levelSource[pl.Name]
		if !mine || named[pl.Name] || bootstrapLevel(opts.Profile, pl.Name) || m.PriorityLevel(pl.Name) == nil {
			continue
		}
		r.add(Warning, src, "", config.KindPriorityLevel, pl.Name,
			"no FlowSchema names it, so no request ever reaches it; its share of the server's seats is lent to other levels only up to its lendablePercent")
	}
}

// danglingMessage says that a schema names a level a server would not
// have.
func danglingMessage(level string) string {
	return fmt.Sprintf("spec.priorityLevelConfiguration.name: priority level %q does not exist (or is not usable): the schema dangles and matches nothing", level)
}

// bootstrapLevel reports whether name is a mandatory or suggested level.
func bootstrapLevel(profile bootstrap.Profile, name string) bool {
	return bootstrap.MandatoryPriorityLevel(name) != nil || profile.SuggestedPriorityLevel(name) != nil
}

// bootstrapObjects returns the mandatory objects, and the suggested ones
// too when suggested is set, as Objects with no source.
func bootstrapObjects(profile bootstrap.Profile, suggested bool) []config.Object {
	schemas, levels := bootstrap.MandatoryFlowSchemas(), bootstrap.MandatoryPriorityLevels()
	if suggested {
		schemas = append(schemas, profile.SuggestedFlowSchemas()...)
		levels = append(levels, profile.SuggestedPriorityLevels()...)
	}
	var objs []config.Object
	for _, pl := range levels {
		objs = append(objs, config.Object{PriorityLevel: pl, Version: config.V1, Source: config.Source{Item: -1}})
	}
	for _, fs := range schemas {
		objs = append(objs, config.Object{FlowSchema: fs, Version: config.V1, Source: config.Source{Item: -1}})
	}
	return objs
}

// shadowMessage says which earlier schemas match every request of b and
// which request shows it.
func shadowMessage(by []*classify.FlowSchema, b *classify.FlowSchema, origin func(*classify.FlowSchema) string, args string, to *classify.FlowSchema, ok bool) string {
	var s string
	if len(by) == 1 {
		a := by[0]
		s = fmt.Sprintf("can never match: FlowSchema %q%s, earlier in the matching order (precedence %d vs %d), matches every request it matches",
			a.Name, origin(a), a.Object.Spec.MatchingPrecedence, b.Object.Spec.MatchingPrecedence)
	} else {
		names := make([]string, len(by))
		for i, a := range by {
			names[i] = fmt.Sprintf("%q%s (precedence %d)", a.Name, origin(a), a.Object.Spec.MatchingPrecedence)
		}
		s = fmt.Sprintf("can never match: FlowSchemas %s, earlier in the matching order than its precedence %d, together match every request it matches",
			strings.Join(names, ", "), b.Object.Spec.MatchingPrecedence)
	}
	if !ok {
		return s + " (no request apf classify can write shows it)"
	}
	return s + fmt.Sprintf("; for example, apf classify %s goes to %q", args, to.Name)
}
