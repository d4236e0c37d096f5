package config

import (
	"fmt"

	"github.com/apfproject/apf/config/bootstrap"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The mandatory objects (FlowSchemas exempt and catch-all,
// PriorityLevelConfigurations exempt and catch-all) are what keeps the
// server usable whatever an administrator does: system:masters always gets
// through, and nothing is left unclassified. Their specs are therefore fixed
// to the built-in defaulted specs. The one allowance is spec.exempt of the
// exempt level, whose shares and lendable percentage tune how much it takes
// away from the others; the other parts of its spec are fixed.

// validateMandatoryFlowSchema refuses a mandatory FlowSchema whose spec
// differs from the built-in one.
func validateMandatoryFlowSchema(fs *flowcontrolv1.FlowSchema, path *field.Path) field.ErrorList {
	want := bootstrap.MandatoryFlowSchema(fs.Name)
	if want == nil || equality.Semantic.DeepEqual(fs.Spec, want.Spec) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, goNamed{fs.Spec}, fmt.Sprintf("spec of '%s' must equal the fixed value", fs.Name))}
}

// validateMandatoryPriorityLevel refuses a mandatory priority level whose
// spec differs from the built-in one, ignoring spec.exempt of "exempt".
func validateMandatoryPriorityLevel(pl *flowcontrolv1.PriorityLevelConfiguration, path *field.Path) field.ErrorList {
	want := bootstrap.MandatoryPriorityLevel(pl.Name)
	if want == nil {
		return nil
	}
	have := pl.Spec
	msg := fmt.Sprintf("spec of '%s' must equal the fixed value", pl.Name)
	if pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
		have.Exempt = want.Spec.Exempt // a shallow copy: pl is not touched
		msg = fmt.Sprintf("spec of '%s' except the 'spec.exempt' field must equal the fixed value", pl.Name)
	}
	if equality.Semantic.DeepEqual(have, want.Spec) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, goNamed{pl.Spec}, msg)}
}
