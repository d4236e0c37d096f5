package config

import (
	"errors"
	"fmt"
	"math"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Priority level limits (docs/spec/configuration.md#prioritylevelconfiguration-spec).
const (
	// maxQueues is the largest number of queues validation accepts.
	maxQueues int32 = 10_000_000
)

// Sorted value sets, as they appear in "supported values" messages.
var (
	supportedPriorityLevelTypes = []flowcontrolv1.PriorityLevelEnablement{flowcontrolv1.PriorityLevelEnablementExempt, flowcontrolv1.PriorityLevelEnablementLimited}
	supportedLimitResponseTypes = []flowcontrolv1.LimitResponseType{flowcontrolv1.LimitResponseTypeQueue, flowcontrolv1.LimitResponseTypeReject}
)

// validatePriorityLevel checks a PriorityLevelConfiguration in hub form
// (after defaulting) against every rule the API server applies on create
// and update: metadata, spec, the fixed spec of the mandatory levels, and
// status. from is the version the object was written in; it only changes
// how the shares field is named in errors (assuredConcurrencyShares for
// v1alpha1, v1beta1 and v1beta2), so that users see the name they wrote.
// It stops after MaxErrors errors (see Truncated).
func validatePriorityLevel(pl *flowcontrolv1.PriorityLevelConfiguration, from Version) field.ErrorList {
	if pl == nil {
		return field.ErrorList{field.InternalError(nil, errors.New("nil PriorityLevelConfiguration"))}
	}
	meta := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&pl.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, meta)
	if _, ok := pl.Annotations[PreserveZeroSharesAnnotation]; ok {
		// Conversion from v1beta3 consumes the marker; one still present was
		// sent through another version, where it would mean nothing and
		// would resurface on the next read in v1beta3.
		errs = append(errs, field.Forbidden(meta.Child("annotations"), fmt.Sprintf("annotation '%s' is forbidden", PreserveZeroSharesAnnotation)))
	}
	spec := field.NewPath("spec")
	errs = append(errs, validatePriorityLevelSpec(pl.Name, &pl.Spec, from, spec)...)
	errs = append(errs, validateMandatoryPriorityLevel(pl, spec)...)
	types := make([]string, len(pl.Status.Conditions))
	for i, c := range pl.Status.Conditions {
		types[i] = string(c.Type)
	}
	return capErrors(append(errs, validateConditionTypes(types, field.NewPath("status", "conditions"), room(errs))...))
}

// validatePriorityLevelSpec checks the type and the section that goes with
// it. The name "exempt" and the type Exempt go together both ways: the
// controller treats exactly that level as the exempt one.
func validatePriorityLevelSpec(name string, spec *flowcontrolv1.PriorityLevelConfigurationSpec, from Version, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	isExemptName := name == flowcontrolv1.PriorityLevelConfigurationNameExempt
	if isExemptName != (spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		errs = append(errs, field.Invalid(path.Child("type"), spec.Type, "must be 'Exempt' if and only if `name` is 'exempt'"))
	}
	switch spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if spec.Limited != nil {
			errs = append(errs, field.Forbidden(path.Child("limited"), ""))
		}
		if spec.Exempt != nil {
			errs = append(errs, validateExempt(spec.Exempt, path.Child("exempt"))...)
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if spec.Exempt != nil {
			errs = append(errs, field.Forbidden(path.Child("exempt"), ""))
		}
		if spec.Limited == nil {
			errs = append(errs, field.Required(path.Child("limited"), ""))
		} else {
			errs = append(errs, validateLimited(spec.Limited, from, path.Child("limited"))...)
		}
	case "":
		errs = append(errs, field.Required(path.Child("type"), ""))
	default:
		errs = append(errs, field.NotSupported(path.Child("type"), spec.Type, supportedPriorityLevelTypes))
	}
	return errs
}

// validateExempt checks the optional exempt section. Its shares only count
// in the denominator of other levels' limits, so zero is fine.
func validateExempt(e *flowcontrolv1.ExemptPriorityLevelConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s := e.NominalConcurrencyShares; s != nil && *s < 0 {
		errs = append(errs, field.Invalid(path.Child("nominalConcurrencyShares"), *s, "must be a non-negative integer"))
	}
	return append(errs, validateLendable(e.LendablePercent, path.Child("lendablePercent"))...)
}

// validateLendable checks a lendablePercent of either section.
func validateLendable(p *int32, path *field.Path) field.ErrorList {
	if p != nil && (*p < 0 || *p > 100) {
		return field.ErrorList{field.Invalid(path, *p, "must be between 0 and 100, inclusive")}
	}
	return nil
}

// validateLimited checks the limited section. Zero shares are allowed (a
// level that only runs what it borrows); a nil share is left alone because
// defaulting, which has not run on this object, would make it 30.
func validateLimited(l *flowcontrolv1.LimitedPriorityLevelConfiguration, from Version, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s := l.NominalConcurrencyShares; s != nil && *s < 0 {
		errs = append(errs, field.Invalid(path.Child(from.SharesField()), *s, "must be a non-negative integer"))
	}
	errs = append(errs, validateLimitResponse(&l.LimitResponse, path.Child("limitResponse"))...)
	errs = append(errs, validateLendable(l.LendablePercent, path.Child("lendablePercent"))...)
	if b := l.BorrowingLimitPercent; b != nil && *b < 0 {
		// Above 100 is fine: a level may borrow more than its own nominal limit.
		errs = append(errs, field.Invalid(path.Child("borrowingLimitPercent"), *b, "if specified, must be a non-negative integer"))
	}
	return errs
}

// validateLimitResponse checks that queuing parameters are present exactly
// when the response is to queue.
func validateLimitResponse(lr *flowcontrolv1.LimitResponse, path *field.Path) field.ErrorList {
	switch lr.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if lr.Queuing != nil {
			return field.ErrorList{field.Forbidden(path.Child("queuing"), "")}
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		if lr.Queuing == nil {
			return field.ErrorList{field.Required(path.Child("queuing"), "")}
		}
		return validateQueuing(lr.Queuing, path.Child("queuing"))
	case "":
		return field.ErrorList{field.Required(path.Child("type"), "")}
	default:
		return field.ErrorList{field.NotSupported(path.Child("type"), lr.Type, supportedLimitResponseTypes)}
	}
	return nil
}

// validateQueuing checks the queuing parameters. The handSize checks form a
// chain: only the first failing one is reported, as each assumes the
// previous held.
func validateQueuing(q *flowcontrolv1.QueuingConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.QueueLengthLimit <= 0 {
		errs = append(errs, field.Invalid(path.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
	}
	queues := path.Child("queues")
	if q.Queues <= 0 {
		errs = append(errs, field.Invalid(queues, q.Queues, "must be positive"))
	} else if q.Queues > maxQueues {
		errs = append(errs, field.Invalid(queues, q.Queues, fmt.Sprintf("must not be greater than %d", maxQueues)))
	}
	hand := path.Child("handSize")
	switch {
	case q.HandSize <= 0:
		errs = append(errs, field.Invalid(hand, q.HandSize, "must be positive"))
	case q.HandSize > q.Queues:
		errs = append(errs, field.Invalid(hand, q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
	case requiredEntropyBits(q.Queues, q.HandSize) > maxHashBits:
		errs = append(errs, field.Invalid(hand, q.HandSize,
			fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d", q.Queues, q.HandSize, maxHashBits)))
	}
	return errs
}

// maxHashBits is the most bits of a flow's 64-bit hash that shuffle
// sharding may consume to deal a hand: API validation refuses a queuing
// configuration whose hands would need more (60, as upstream). Package
// shuffle's dealer enforces the same rule (shuffle.MaxHashBits); the
// rule is stated here too so that validation needs nothing of the queuing
// packages, and a test checks that the two agree.
const maxHashBits = 60

// requiredEntropyBits is ceil(log2(queues)·handSize), computed in float64
// as upstream's validation does, bit for bit.
func requiredEntropyBits(queues, handSize int32) int {
	return int(math.Ceil(math.Log2(float64(queues)) * float64(handSize)))
}
