package engine

import (
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/config"
)

// Compiled is a configuration digested and ready to install. Compiling
// costs time and memory linear in the size of the configuration and
// touches no state, so a driver compiles without holding anything and
// installs the result under its own serialization.
type Compiled struct {
	matcher *classify.Matcher
	// Invalid lists the objects that failed validation; they take no part
	// in the configuration.
	Invalid []error
}

// Compile validates objs and compiles the valid ones. Missing mandatory
// objects are imagined (see package classify); objects that cannot take
// part are reported by Matcher().Problems(), never refused: a
// configuration always has an answer for every request.
func Compile(objs []config.Object) *Compiled {
	var schemas []*flowcontrolv1.FlowSchema
	var levels []*flowcontrolv1.PriorityLevelConfiguration
	c := &Compiled{}
	for _, o := range objs {
		if errs := o.Validate(); len(errs) > 0 {
			c.Invalid = append(c.Invalid, fmt.Errorf("%s %q (%s) ignored: %w", o.Kind(), o.Name(), o.Source, errs.ToAggregate()))
			continue
		}
		if o.FlowSchema != nil {
			schemas = append(schemas, o.FlowSchema)
		} else if o.PriorityLevel != nil {
			levels = append(levels, o.PriorityLevel)
		}
	}
	c.matcher = classify.Compile(schemas, levels)
	return c
}

// CompileObjects compiles FlowSchemas and PriorityLevelConfigurations
// already in defaulted v1 form, without validating them (the bootstrap
// configuration, say).
func CompileObjects(schemas []*flowcontrolv1.FlowSchema, levels []*flowcontrolv1.PriorityLevelConfiguration) *Compiled {
	return &Compiled{matcher: classify.Compile(schemas, levels)}
}

// Matcher returns the compiled classification.
func (c *Compiled) Matcher() *classify.Matcher { return c.matcher }
