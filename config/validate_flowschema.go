package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FlowSchema limits (docs/spec/configuration.md#flowschema-spec).
const (
	// maxMatchingPrecedence is the largest allowed matchingPrecedence.
	maxMatchingPrecedence int32 = flowcontrolv1.FlowSchemaMaxMatchingPrecedence
	// exemptMatchingPrecedence is the precedence reserved for the FlowSchema
	// named "exempt", so that nothing can be placed ahead of it.
	exemptMatchingPrecedence int32 = 1
)

// MaxErrors is the most errors validation reports for one object. An
// object can be wrong in as many places as its size allows (a FlowSchema of
// 20,000 empty rules has 40,000 errors, each of which the API server would
// spell out twice in its answer), so validation stops looking once it has
// found more than MaxErrors: the list it returns then holds the first
// MaxErrors errors, in the order it would report them all, and one more,
// which says that the list is truncated. What validation costs, and what
// its answer weighs, is then bounded by this constant and the size of the
// values it quotes, whatever the size of the object.
const MaxErrors = 100

// Truncated says whether errs, returned by validation, stopped at
// MaxErrors: the errors after the first MaxErrors were not all looked for.
func Truncated(errs field.ErrorList) bool { return len(errs) > MaxErrors }

// capErrors keeps the first MaxErrors errors of errs and one more, the
// witness that validation stopped.
func capErrors(errs field.ErrorList) field.ErrorList {
	if len(errs) > MaxErrors+1 {
		return errs[: MaxErrors+1 : MaxErrors+1]
	}
	return errs
}

// room is how many more errors validation looks for, having found errs.
func room(errs field.ErrorList) int { return MaxErrors + 1 - len(errs) }

// wildcard is the "match everything" entry of every list-valued rule field.
// It only has that meaning when alone, which validation enforces.
const wildcard = "*"

// Sorted value sets, as they appear in "supported values" messages.
var (
	supportedVerbs          = []string{"create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"}
	supportedDistinguishers = []flowcontrolv1.FlowDistinguisherMethodType{flowcontrolv1.FlowDistinguisherMethodByNamespaceType, flowcontrolv1.FlowDistinguisherMethodByUserType}
	supportedSubjectKinds   = []flowcontrolv1.SubjectKind{flowcontrolv1.SubjectKindGroup, flowcontrolv1.SubjectKindServiceAccount, flowcontrolv1.SubjectKindUser}
)

// validateFlowSchema checks a FlowSchema in hub form (after defaulting)
// against every rule the API server applies on create and update: metadata,
// spec, the fixed spec of the mandatory schemas, and status. The errors
// carry Kubernetes field paths, e.g.
// `spec.rules[0].subjects: Required value: subjects must contain at least one value`.
// It stops after MaxErrors errors (see Truncated).
func validateFlowSchema(fs *flowcontrolv1.FlowSchema) field.ErrorList {
	if fs == nil {
		return field.ErrorList{field.InternalError(nil, errors.New("nil FlowSchema"))}
	}
	errs := apivalidation.ValidateObjectMeta(&fs.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	errs = append(errs, validateFlowSchemaSpec(fs.Name, &fs.Spec, spec, room(errs))...)
	if room(errs) > 0 {
		errs = append(errs, validateMandatoryFlowSchema(fs, spec)...)
	}
	types := make([]string, len(fs.Status.Conditions))
	for i, c := range fs.Status.Conditions {
		types[i] = string(c.Type)
	}
	return capErrors(append(errs, validateConditionTypes(types, field.NewPath("status", "conditions"), room(errs))...))
}

// validateFlowSchemaSpec checks precedence, distinguisher, the priority
// level reference and the rules, until it has found max errors or more.
func validateFlowSchemaSpec(name string, spec *flowcontrolv1.FlowSchemaSpec, path *field.Path, max int) field.ErrorList {
	var errs field.ErrorList
	prec := path.Child("matchingPrecedence")
	switch p := spec.MatchingPrecedence; {
	case p <= 0:
		errs = append(errs, field.Invalid(prec, p, "must be a positive value"))
	case p > maxMatchingPrecedence:
		errs = append(errs, field.Invalid(prec, p, fmt.Sprintf("must not be greater than %d", maxMatchingPrecedence)))
	case p == exemptMatchingPrecedence && name != flowcontrolv1.FlowSchemaNameExempt:
		errs = append(errs, field.Invalid(prec, p, "only the schema named 'exempt' may have matchingPrecedence 1"))
	}
	if dm := spec.DistinguisherMethod; dm != nil && !slices.Contains(supportedDistinguishers, dm.Type) {
		errs = append(errs, field.NotSupported(path.Child("distinguisherMethod", "type"), goNamed{dm}, supportedDistinguishers))
	}
	plName := path.Child("priorityLevelConfiguration", "name")
	if ref := spec.PriorityLevelConfiguration.Name; ref == "" {
		errs = append(errs, field.Required(plName, "must reference a priority level"))
	} else {
		for _, msg := range apivalidation.NameIsDNSSubdomain(ref, false) {
			errs = append(errs, field.Invalid(plName, ref, msg))
		}
	}
	for i := 0; i < len(spec.Rules) && len(errs) < max; i++ {
		errs = append(errs, validateRule(&spec.Rules[i], path.Child("rules").Index(i), max-len(errs))...)
	}
	return errs
}

// validateRule checks one PolicyRulesWithSubjects. A rule without subjects
// or without any resource or non-resource rule could never match, which is
// surely a mistake, so both are required. It stops once it has found max
// errors or more.
func validateRule(rule *flowcontrolv1.PolicyRulesWithSubjects, path *field.Path, max int) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Subjects) == 0 {
		errs = append(errs, field.Required(path.Child("subjects"), "subjects must contain at least one value"))
	}
	for i := 0; i < len(rule.Subjects) && len(errs) < max; i++ {
		errs = append(errs, validateSubject(&rule.Subjects[i], path.Child("subjects").Index(i))...)
	}
	if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
		errs = append(errs, field.Required(path, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i := 0; i < len(rule.ResourceRules) && len(errs) < max; i++ {
		errs = append(errs, validateResourceRule(&rule.ResourceRules[i], path.Child("resourceRules").Index(i), max-len(errs))...)
	}
	for i := 0; i < len(rule.NonResourceRules) && len(errs) < max; i++ {
		errs = append(errs, validateNonResourceRule(&rule.NonResourceRules[i], path.Child("nonResourceRules").Index(i), max-len(errs))...)
	}
	return errs
}

// validateSubject checks that the member matching the kind is there and
// valid, and that the other two are absent: a subject is one thing.
func validateSubject(s *flowcontrolv1.Subject, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	forbid := func(present bool, member, kind string) {
		if present {
			errs = append(errs, field.Forbidden(path.Child(member), fmt.Sprintf("%s is forbidden when subject kind is not '%s'", member, kind)))
		}
	}
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil {
			errs = append(errs, field.Required(path.Child("user"), "user is required when subject kind is 'User'"))
		} else if s.User.Name == "" {
			errs = append(errs, field.Required(path.Child("user", "name"), ""))
		}
		// serviceAccount before group: the order of the API server's causes.
		forbid(s.ServiceAccount != nil, "serviceAccount", string(flowcontrolv1.SubjectKindServiceAccount))
		forbid(s.Group != nil, "group", string(flowcontrolv1.SubjectKindGroup))
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			errs = append(errs, field.Required(path.Child("group"), "group is required when subject kind is 'Group'"))
		} else if s.Group.Name == "" {
			errs = append(errs, field.Required(path.Child("group", "name"), ""))
		}
		forbid(s.User != nil, "user", string(flowcontrolv1.SubjectKindUser))
		forbid(s.ServiceAccount != nil, "serviceAccount", string(flowcontrolv1.SubjectKindServiceAccount))
	case flowcontrolv1.SubjectKindServiceAccount:
		errs = append(errs, validateServiceAccount(s.ServiceAccount, path.Child("serviceAccount"))...)
		forbid(s.User != nil, "user", string(flowcontrolv1.SubjectKindUser))
		forbid(s.Group != nil, "group", string(flowcontrolv1.SubjectKindGroup))
	default:
		errs = append(errs, field.NotSupported(path.Child("kind"), s.Kind, supportedSubjectKinds))
	}
	return errs
}

// validateServiceAccount checks a ServiceAccount subject. The name may be
// the wildcard (every account of the namespace); the namespace may not,
// because the matcher builds "system:serviceaccount:<ns>:" from it.
func validateServiceAccount(sa *flowcontrolv1.ServiceAccountSubject, path *field.Path) field.ErrorList {
	if sa == nil {
		return field.ErrorList{field.Required(path, "serviceAccount is required when subject kind is 'ServiceAccount'")}
	}
	var errs field.ErrorList
	if sa.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else if sa.Name != wildcard {
		for _, msg := range apivalidation.ValidateServiceAccountName(sa.Name, false) {
			errs = append(errs, field.Invalid(path.Child("name"), sa.Name, msg))
		}
	}
	if sa.Namespace == "" {
		errs = append(errs, field.Required(path.Child("namespace"), "must specify namespace for service account"))
	} else {
		for _, msg := range apivalidation.ValidateNamespaceName(sa.Namespace, false) {
			errs = append(errs, field.Invalid(path.Child("namespace"), sa.Namespace, msg))
		}
	}
	return errs
}

// validateVerbs checks a verbs list of either rule type. HTTP verbs such as
// "post" are not in the set; they can only be matched through the wildcard.
func validateVerbs(verbs []string, path *field.Path) field.ErrorList {
	switch {
	case len(verbs) == 0:
		return field.ErrorList{field.Required(path, "verbs must contain at least one value")}
	case slices.Contains(verbs, wildcard):
		if len(verbs) > 1 {
			return field.ErrorList{field.Invalid(path, verbs, "if '*' is present, must not specify other verbs")}
		}
		return nil
	}
	for _, v := range verbs {
		if !slices.Contains(supportedVerbs, v) {
			// The whole list is quoted, once, as the API server does.
			return field.ErrorList{field.NotSupported(path, verbs, supportedVerbs)}
		}
	}
	return nil
}

// validateWildcardList checks a list that must be non-empty and may hold the
// wildcard only alone. what names the entries in messages ("api group").
func validateWildcardList(list []string, path *field.Path, what string) field.ErrorList {
	switch {
	case len(list) == 0:
		return field.ErrorList{field.Required(path, fmt.Sprintf("resource rules must supply at least one %s", what))}
	case len(list) > 1 && slices.Contains(list, wildcard):
		return field.ErrorList{field.Invalid(path, list, fmt.Sprintf("if '*' is present, must not specify other %ss", what))}
	}
	return nil
}

// validateResourceRule checks one resource rule, until it has found max
// errors or more.
func validateResourceRule(r *flowcontrolv1.ResourcePolicyRule, path *field.Path, max int) field.ErrorList {
	errs := validateVerbs(r.Verbs, path.Child("verbs"))
	errs = append(errs, validateWildcardList(r.APIGroups, path.Child("apiGroups"), "api group")...)
	errs = append(errs, validateWildcardList(r.Resources, path.Child("resources"), "resource")...)
	ns := path.Child("namespaces")
	switch {
	case len(r.Namespaces) == 0:
		// An empty list matches no namespaced request, so the rule is only
		// useful for cluster-scoped ones.
		if !r.ClusterScope {
			errs = append(errs, field.Required(ns, "resource rules that are not cluster scoped must supply at least one namespace"))
		}
	case slices.Contains(r.Namespaces, wildcard):
		if len(r.Namespaces) > 1 {
			errs = append(errs, field.Invalid(ns, r.Namespaces, "if '*' is present, must not specify other namespaces"))
		}
	default:
		for i, n := range r.Namespaces {
			if len(errs) >= max {
				break
			}
			for _, msg := range apivalidation.ValidateNamespaceName(n, false) {
				errs = append(errs, field.Invalid(ns.Index(i), n, "each member of this list must be '*' or a DNS-1123 label; "+msg))
			}
		}
	}
	return errs
}

// validateNonResourceRule checks one non-resource rule, until it has
// found max errors or more.
func validateNonResourceRule(r *flowcontrolv1.NonResourcePolicyRule, path *field.Path, max int) field.ErrorList {
	errs := validateVerbs(r.Verbs, path.Child("verbs"))
	urls := path.Child("nonResourceURLs")
	switch {
	case len(r.NonResourceURLs) == 0:
		errs = append(errs, field.Required(urls, "nonResourceURLs must contain at least one value"))
	case slices.Contains(r.NonResourceURLs, wildcard):
		if len(r.NonResourceURLs) > 1 {
			errs = append(errs, field.Invalid(urls, r.NonResourceURLs, "if '*' is present, must not specify other non-resource URLs"))
		}
	default:
		for i, u := range r.NonResourceURLs {
			if len(errs) >= max {
				break
			}
			if msg := checkNonResourceURL(u); msg != "" {
				errs = append(errs, field.Invalid(urls.Index(i), u, msg))
			}
		}
	}
	return errs
}

// checkNonResourceURL returns why u is not a valid non-resource URL pattern,
// or "". The matcher treats a pattern as an exact path or, with a trailing
// "/*", as a prefix; anything else with a '*' would look like a glob but
// never match as one, so it is refused.
func checkNonResourceURL(u string) string {
	switch {
	case u == "":
		return "must not be empty"
	case u == "/":
		return ""
	case !strings.HasPrefix(u, "/"):
		return "must start with slash"
	case strings.Contains(u, " "):
		return "must not contain white-space"
	case strings.Contains(u, "//"):
		return "must not contain double slash"
	}
	if n := strings.Count(u, wildcard); n > 1 || (n == 1 && !strings.HasSuffix(u, "/*")) {
		return "wildcard can only do suffix matching"
	}
	return ""
}

// validateConditionTypes checks the status conditions of either kind: each
// type is set and appears once, since conditions form a map keyed by type.
// It stops once it has found max errors or more.
func validateConditionTypes(types []string, path *field.Path, max int) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[string]bool, len(types))
	for i, t := range types {
		if len(errs) >= max {
			break
		}
		p := path.Index(i).Child("type")
		if seen[t] {
			errs = append(errs, field.Duplicate(p, t))
		}
		seen[t] = true
		if t == "" {
			errs = append(errs, field.Required(p, ""))
		}
	}
	return errs
}
