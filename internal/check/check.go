package check

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

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
	// Where says where the object is: a file and document, or "" for a
	// finding about an input as a whole.
	Where   string `json:"where,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Name    string `json:"name,omitempty"`
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

// Options shape the configuration the files are checked against.
type Options struct {
	// WithoutSuggested checks the files against the mandatory objects only,
	// as on a server whose suggested objects were removed or replaced.
	WithoutSuggested bool
}

// Report is the outcome of a check.
type Report struct {
	// Objects are the objects decoded from the input, valid or not.
	Objects  []config.Object `json:"-"`
	Findings []Finding       `json:"findings"`
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

func (r *Report) add(sev Severity, src config.Source, kind, name, msg string) {
	where := ""
	if src != (config.Source{}) {
		where = src.String()
	}
	r.Findings = append(r.Findings, Finding{Severity: sev, Where: where, Kind: kind, Name: name, Message: msg, src: src})
}

// Inputs checks decoded input: the objects Decode returned for every file,
// and the errors it gave. It returns a report with the findings ordered by
// file and document.
func Inputs(objs []config.Object, decodeErrs []error, opts Options) *Report {
	r := &Report{Objects: objs}
	for _, err := range decodeErrs {
		r.addDecodeError(err)
	}
	valid := r.validate(objs)
	r.crossCheck(valid, opts)
	slices.SortStableFunc(r.Findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.src.File, b.src.File), cmp.Compare(a.src.Doc, b.src.Doc), cmp.Compare(a.src.Item, b.src.Item))
	})
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
		r.add(Error, de.Source, "", "", de.Err.Error())
		return
	}
	r.add(Error, config.Source{}, "", "", err.Error())
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
			r.add(Error, o.Source, o.Kind(), o.Name(), "defined again; first defined at "+src.String())
			continue
		}
		first[k] = o.Source
		errs := o.Validate()
		for _, e := range errs {
			r.add(Error, o.Source, o.Kind(), o.Name(), e.Error())
		}
		if len(errs) == 0 {
			valid = append(valid, o)
		}
	}
	return valid
}

// crossCheck compiles the valid objects over the bootstrap configuration
// and reports dangling references and schemas that can never match.
func (r *Report) crossCheck(valid []config.Object, opts Options) {
	var schemas []*flowcontrolv1.FlowSchema
	var levels []*flowcontrolv1.PriorityLevelConfiguration
	fromFiles := map[*flowcontrolv1.FlowSchema]config.Source{}
	levelSource := map[string]config.Source{}
	for _, o := range valid {
		if o.FlowSchema != nil {
			schemas = append(schemas, o.FlowSchema)
			fromFiles[o.FlowSchema] = o.Source
		} else {
			levels = append(levels, o.PriorityLevel)
			levelSource[o.PriorityLevel.Name] = o.Source
		}
	}
	bootSchemas, bootLevels := bootstrap.MandatoryFlowSchemas(), bootstrap.MandatoryPriorityLevels()
	if !opts.WithoutSuggested {
		bootSchemas = append(bootSchemas, bootstrap.SuggestedFlowSchemas()...)
		bootLevels = append(bootLevels, bootstrap.SuggestedPriorityLevels()...)
	}
	for _, fs := range bootSchemas {
		if !slices.ContainsFunc(schemas, func(x *flowcontrolv1.FlowSchema) bool { return x.Name == fs.Name }) {
			schemas = append(schemas, fs)
		}
	}
	for _, pl := range bootLevels {
		if _, ok := levelSource[pl.Name]; !ok {
			levels = append(levels, pl)
		}
	}

	m := classify.Compile(schemas, levels)
	for _, fs := range schemas {
		src, mine := fromFiles[fs]
		if mine && m.Dangling(fs.Name) {
			r.add(Error, src, config.KindFlowSchema, fs.Name, fmt.Sprintf(
				"spec.priorityLevelConfiguration.name: priority level %q does not exist (or is not usable): the schema dangles and matches nothing",
				fs.Spec.PriorityLevelConfiguration.Name))
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
			r.add(Warning, src, p.Kind, p.Name, fmt.Sprintf("a server accepts it but ignores it (%s): %s", what, p.Reason))
		}
	}

	order := m.FlowSchemas()
	for i, b := range order {
		src, mine := fromFiles[b.Object]
		// The mandatory catch-all is a fallback by design: it is shadowed
		// in every sensible configuration.
		if !mine || bootstrap.MandatoryFlowSchema(b.Name) != nil {
			continue
		}
		for _, a := range order[:i] {
			if covers(a.Object, b.Object) {
				_, aMine := fromFiles[a.Object]
				r.add(Warning, src, config.KindFlowSchema, b.Name, shadowMessage(a, b, aMine))
				break
			}
		}
	}
}

func shadowMessage(a, b *classify.FlowSchema, aFromFiles bool) string {
	if len(b.Object.Spec.Rules) == 0 {
		return "has no rules, so it matches no request"
	}
	origin := ""
	if !aFromFiles {
		origin = " (bootstrap)"
	}
	return fmt.Sprintf("can never match: FlowSchema %q%s, earlier in the matching order (precedence %d vs %d), matches every request it matches",
		a.Name, origin, a.Object.Spec.MatchingPrecedence, b.Object.Spec.MatchingPrecedence)
}
