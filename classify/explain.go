package classify

import (
	"fmt"
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/request"
)

// This file explains a classification: which FlowSchema wins, by which of
// its rules, and why every schema ahead of it in the matching order did
// not match. It is for people (apf classify, a debug endpoint), never for
// the request path: Explain scans the schemas in order rather than using
// the rule index, allocates, and writes sentences. It tests each field of
// a rule with the very functions Classify's matching uses (stringSet.has,
// resourceRule.matchesResource, nonResourceRule.matches), so a rule it
// finds no fault with is exactly a rule Classify matches; the fuzz tests
// hold the two to the same winner.

// Field names a part of a rule that a request is tested against.
type Field string

// The parts of a rule a request can fail on, in the order an explanation
// lists them.
const (
	// FieldSubject: none of the rule's subjects is the user (its name, one
	// of its groups, its service account, or a wildcard).
	FieldSubject Field = "subject"
	// FieldVerb: the request's verb is not among the policy rule's verbs.
	FieldVerb Field = "verb"
	// FieldAPIGroup: the request's API group is not among apiGroups.
	FieldAPIGroup Field = "apiGroup"
	// FieldResource: the resource (or "resource/subresource") is not among
	// resources.
	FieldResource Field = "resource"
	// FieldNamespace: a namespaced request whose namespace is not among
	// namespaces.
	FieldNamespace Field = "namespace"
	// FieldClusterScope: a cluster-scoped (or all-namespaces) request, and
	// the policy rule is not for cluster scope.
	FieldClusterScope Field = "clusterScope"
	// FieldNonResourceURL: the path is not one of nonResourceURLs nor
	// under one of them.
	FieldNonResourceURL Field = "nonResourceURL"
	// FieldResourceRules: a resource request, and the rule has no
	// resourceRules.
	FieldResourceRules Field = "resourceRules"
	// FieldNonResourceRules: a non-resource request, and the rule has no
	// nonResourceRules.
	FieldNonResourceRules Field = "nonResourceRules"
)

// RuleMiss says why one rule (one entry of spec.rules) did not match a
// request.
type RuleMiss struct {
	// Rule is the rule's index in spec.rules.
	Rule int `json:"rule"`
	// Failed lists what did not match, in the order of the Field
	// constants: FieldSubject when no subject is the user, then the fields
	// on which the closest policy rule (see PolicyRule) differs from the
	// request, or FieldResourceRules / FieldNonResourceRules when the rule
	// has no policy rule of the request's kind. Never empty.
	Failed []Field `json:"failed"`
	// PolicyRule is the index, in the rule's resourceRules (for a resource
	// request) or nonResourceRules (otherwise), of the policy rule that
	// came closest: the one failing on the fewest fields, the first of
	// equals. It is -1 when the rule has none of the request's kind.
	PolicyRule int `json:"policyRule"`
	// Detail says the same in a sentence, with the values compared.
	Detail string `json:"detail"`
}

// SchemaMiss is a FlowSchema that did not match a request, and why.
type SchemaMiss struct {
	// FlowSchema is the schema (not serialized: Name and Precedence are).
	FlowSchema *FlowSchema `json:"-"`
	Name       string      `json:"name"`
	Precedence int32       `json:"matchingPrecedence"`
	// Rules has one entry per rule of the schema, in order; it is empty
	// for a schema without rules, which matches nothing.
	Rules []RuleMiss `json:"rules"`
}

// Explanation is a classification with its reasons.
type Explanation struct {
	// Result is the classification, as Classify gives it.
	Result
	// Rule is the index, in the winning schema's spec.rules, of the first
	// rule that matches the request; -1 when no schema matched and the
	// request went to catch-all by default (a user in neither
	// system:authenticated nor system:unauthenticated, say).
	Rule int
	// Misses are the schemas tried before the winner, in matching order,
	// each with why it did not match; when no schema matched, every
	// schema, catch-all included.
	Misses []SchemaMiss
}

// Explain classifies a request as Classify does and says why: the rule of
// the winning schema that matched, and for each schema ahead of it why it
// did not. It costs time linear in the size of the schemas up to the
// winner (the whole configuration at worst) and allocates; it is not for
// the request path.
func (m *Matcher) Explain(a *request.Attributes) Explanation {
	ex := Explanation{Rule: -1}
	fs := m.catchAll
	for _, s := range m.schemas {
		sm, r := s.try(a)
		if r >= 0 {
			fs, ex.Rule = s, r
			break
		}
		ex.Misses = append(ex.Misses, sm)
	}
	ex.Result = Result{FlowSchema: fs, PriorityLevel: fs.PriorityLevel}
	// The flow, as Classify computes it, without going through the flow
	// cache: an explanation must not displace the flows of real requests.
	if fs.PriorityLevel.distinguishes {
		switch fs.distinguisher {
		case distinguishByUser:
			ex.FlowDistinguisher = a.User.Name
		case distinguishByNamespace:
			ex.FlowDistinguisher = a.Info.Namespace
		}
		ex.FlowHash = FlowHash(fs.Name, ex.FlowDistinguisher)
	}
	return ex
}

// try tests the schema's rules in order: the index of the first that
// matches the request, or -1 and why each rule did not.
func (fs *FlowSchema) try(a *request.Attributes) (SchemaMiss, int) {
	fields := make([]ruleFields, len(fs.rules))
	for i := range fs.rules {
		if fields[i] = fs.rules[i].fields(a); fields[i].none() {
			return SchemaMiss{}, i
		}
	}
	sm := SchemaMiss{FlowSchema: fs, Name: fs.Name, Precedence: fs.Object.Spec.MatchingPrecedence,
		Rules: make([]RuleMiss, len(fs.rules))}
	for i, f := range fields {
		sm.Rules[i] = RuleMiss{Rule: i, Failed: f.list(), PolicyRule: f.policy,
			Detail: describeMiss(&fs.Object.Spec.Rules[i], f, a)}
	}
	return sm, -1
}

// fieldSet is a set of Fields, one bit each in the order of the constants.
type fieldSet uint16

var fieldOrder = [...]Field{FieldSubject, FieldVerb, FieldAPIGroup, FieldResource, FieldNamespace,
	FieldClusterScope, FieldNonResourceURL, FieldResourceRules, FieldNonResourceRules}

func bit(f Field) fieldSet { return 1 << slices.Index(fieldOrder[:], f) }

func (s fieldSet) has(f Field) bool { return s&bit(f) != 0 }

func (s fieldSet) count() int {
	n := 0
	for ; s != 0; s &= s - 1 {
		n++
	}
	return n
}

// ruleFields is how a rule fares against a request: what failed, and
// which policy rule came closest.
type ruleFields struct {
	failed fieldSet
	policy int
}

func (r ruleFields) none() bool { return r.failed == 0 }

func (r ruleFields) list() []Field {
	var out []Field
	for _, f := range fieldOrder {
		if r.failed.has(f) {
			out = append(out, f)
		}
	}
	return out
}

// fields tests every part of the rule against the request. A rule matches
// exactly when nothing fails: a subject is the user and one policy rule of
// the request's kind matches on every field, which is rule.matchesRequest
// after the index has found the subject.
func (r *rule) fields(a *request.Attributes) ruleFields {
	out := ruleFields{policy: -1}
	if !slices.ContainsFunc(r.subjects, func(s subject) bool { return s.matches(&a.User) }) {
		out.failed |= bit(FieldSubject)
	}
	var best fieldSet
	if a.Info.IsResourceRequest {
		for i := range r.resources {
			if f := r.resources[i].fields(&a.Info); out.policy < 0 || f.count() < best.count() {
				out.policy, best = i, f
			}
		}
		if out.policy < 0 {
			best = bit(FieldResourceRules)
		}
	} else {
		for i := range r.nonResources {
			if f := r.nonResources[i].fields(&a.Info); out.policy < 0 || f.count() < best.count() {
				out.policy, best = i, f
			}
		}
		if out.policy < 0 {
			best = bit(FieldNonResourceRules)
		}
	}
	out.failed |= best
	return out
}

// matches reports whether the subject is the user, as the rule index
// files it: a subject missing its member matches nobody.
func (s *subject) matches(u *request.User) bool {
	switch {
	case !s.valid:
		return false
	case s.kind == subjectServiceAccount && s.anyName:
		return strings.HasPrefix(u.Name, request.ServiceAccountUsernamePrefix) &&
			strings.HasPrefix(u.Name[len(request.ServiceAccountUsernamePrefix):], s.namespace+":")
	case s.anyName:
		return true
	case s.kind == subjectGroup:
		return slices.Contains(u.Groups, s.name)
	default:
		return u.Name == s.name
	}
}

// fields composes resourceRule.matches from its parts.
func (r *resourceRule) fields(info *request.Info) fieldSet {
	var f fieldSet
	if !r.verbs.has(info.Verb) {
		f |= bit(FieldVerb)
	}
	if !r.apiGroups.has(info.APIGroup) {
		f |= bit(FieldAPIGroup)
	}
	if !r.matchesResource(info.Resource, info.Subresource) {
		f |= bit(FieldResource)
	}
	if info.Namespace == "" {
		if !r.clusterScope {
			f |= bit(FieldClusterScope)
		}
	} else if !r.namespaces.has(info.Namespace) {
		f |= bit(FieldNamespace)
	}
	return f
}

// fields tests the verbs, then the paths with a copy of the rule that
// takes every verb, so that the paths are judged by matches itself.
func (r *nonResourceRule) fields(info *request.Info) fieldSet {
	var f fieldSet
	if !r.verbs.has(info.Verb) {
		f |= bit(FieldVerb)
	}
	anyVerb := *r
	anyVerb.verbs = stringSet{all: true}
	if !anyVerb.matches(info) {
		f |= bit(FieldNonResourceURL)
	}
	return f
}

// describeMiss words a rule's failure with the values compared.
func describeMiss(r *flowcontrolv1.PolicyRulesWithSubjects, f ruleFields, a *request.Attributes) string {
	var parts []string
	if f.failed.has(FieldSubject) {
		subjects := make([]string, 0, min(len(r.Subjects), listItems))
		for _, s := range r.Subjects[:min(len(r.Subjects), listItems)] {
			subjects = append(subjects, subjectString(s))
		}
		parts = append(parts, "subject: the user is none of "+bracketed(subjects, len(r.Subjects)))
	}
	info := &a.Info
	switch {
	case f.failed.has(FieldResourceRules):
		parts = append(parts, "a resource request, and the rule has only nonResourceRules")
	case f.failed.has(FieldNonResourceRules):
		parts = append(parts, "a non-resource request, and the rule has only resourceRules")
	case info.IsResourceRequest:
		rr := &r.ResourceRules[f.policy]
		prefix := ""
		if len(r.ResourceRules) > 1 {
			prefix = fmt.Sprintf("resourceRules[%d]: ", f.policy)
		}
		var fs []string
		if f.failed.has(FieldVerb) {
			fs = append(fs, fmt.Sprintf("verb %s not in %s", shown(info.Verb), listOf(rr.Verbs)))
		}
		if f.failed.has(FieldAPIGroup) {
			fs = append(fs, fmt.Sprintf("apiGroup %s not in %s", shown(info.APIGroup), listOf(rr.APIGroups)))
		}
		if f.failed.has(FieldResource) {
			res := info.Resource
			if info.Subresource != "" {
				res += "/" + info.Subresource
			}
			fs = append(fs, fmt.Sprintf("resource %s not in %s", shown(res), listOf(rr.Resources)))
		}
		if f.failed.has(FieldNamespace) {
			fs = append(fs, fmt.Sprintf("namespace %s not in %s", shown(info.Namespace), listOf(rr.Namespaces)))
		}
		if f.failed.has(FieldClusterScope) {
			fs = append(fs, "cluster-scoped, and the rule is for namespaced resources only (clusterScope: false)")
		}
		if len(fs) > 0 {
			parts = append(parts, prefix+strings.Join(fs, ", "))
		}
	default:
		nr := &r.NonResourceRules[f.policy]
		prefix := ""
		if len(r.NonResourceRules) > 1 {
			prefix = fmt.Sprintf("nonResourceRules[%d]: ", f.policy)
		}
		var fs []string
		if f.failed.has(FieldVerb) {
			fs = append(fs, fmt.Sprintf("verb %s not in %s", shown(info.Verb), listOf(nr.Verbs)))
		}
		if f.failed.has(FieldNonResourceURL) {
			fs = append(fs, fmt.Sprintf("path %s not in nor under %s", shown(info.Path), listOf(nr.NonResourceURLs)))
		}
		if len(fs) > 0 {
			parts = append(parts, prefix+strings.Join(fs, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// subjectString names a subject as kubectl describe does: "User alice",
// "Group system:nodes", "ServiceAccount kube-system/*".
func subjectString(s flowcontrolv1.Subject) string {
	switch {
	case s.Kind == flowcontrolv1.SubjectKindUser && s.User != nil:
		return "User " + shown(s.User.Name)
	case s.Kind == flowcontrolv1.SubjectKindGroup && s.Group != nil:
		return "Group " + shown(s.Group.Name)
	case s.Kind == flowcontrolv1.SubjectKindServiceAccount && s.ServiceAccount != nil:
		return "ServiceAccount " + shown(s.ServiceAccount.Namespace) + "/" + shown(s.ServiceAccount.Name)
	}
	return string(s.Kind) + " (without its " + strings.ToLower(string(s.Kind)) + " member: matches nobody)"
}

// listItems is how many elements of a list a sentence shows.
const listItems = 6

// listOf shows a list as [a, b, c], its first listItems elements then
// how many more, so that a sentence about a rule of thousands of
// namespaces stays short.
func listOf(xs []string) string {
	shownXs := make([]string, 0, min(len(xs), listItems))
	for _, x := range xs[:min(len(xs), listItems)] {
		shownXs = append(shownXs, shown(x))
	}
	return bracketed(shownXs, len(xs))
}

// bracketed is listOf for elements already shown: the first listItems of
// items, of total.
func bracketed(items []string, total int) string {
	items = items[:min(len(items), listItems)]
	s := "[" + strings.Join(items, ", ")
	if total > len(items) {
		s += fmt.Sprintf(", … %d more", total-len(items))
	}
	return s + "]"
}

// shown quotes a value that would otherwise not read as one: the empty
// string (the core API group), and anything with spaces or control
// characters.
func shown(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Sprintf("%q", s)
	}
	return s
}
