package check

import (
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/request"
)

// covers reports whether schema a matches every request that schema b
// matches, judged rule by rule: each rule of b must be covered by a single
// rule of a. The test is sound but not complete: when it says yes, b can
// never win against a; when b is covered only by the union of several rules
// or several schemas, it says no.
func covers(a, b *flowcontrolv1.FlowSchema) bool {
	if len(b.Spec.Rules) == 0 {
		return true // b matches nothing at all
	}
	for i := range b.Spec.Rules {
		covered := false
		for j := range a.Spec.Rules {
			if ruleCovers(&a.Spec.Rules[j], &b.Spec.Rules[i]) {
				covered = true
				break
			}
		}
		if !covered {
			return false
		}
	}
	return true
}

// ruleCovers: every subject of b is covered by a subject of a, and every
// resource and non-resource rule of b by one of a's. A rule of b with no
// resource rules matches no resource request, so that half holds vacuously.
func ruleCovers(a, b *flowcontrolv1.PolicyRulesWithSubjects) bool {
	for i := range b.Subjects {
		if !anySubjectCovers(a.Subjects, &b.Subjects[i]) {
			return false
		}
	}
	for i := range b.ResourceRules {
		ok := false
		for j := range a.ResourceRules {
			if resourceRuleCovers(&a.ResourceRules[j], &b.ResourceRules[i]) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for i := range b.NonResourceRules {
		ok := false
		for j := range a.NonResourceRules {
			if nonResourceRuleCovers(&a.NonResourceRules[j], &b.NonResourceRules[i]) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// subjectKey describes the users a subject matches: everyone, the members
// of a group, one user name, or every user name with a prefix (service
// accounts of a namespace).
type subjectKey struct {
	everyone bool
	group    string
	user     string
	prefix   string
	valid    bool
}

func keyOf(s *flowcontrolv1.Subject) subjectKey {
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil {
			return subjectKey{}
		}
		if s.User.Name == "*" {
			return subjectKey{everyone: true, valid: true}
		}
		return subjectKey{user: s.User.Name, valid: true}
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			return subjectKey{}
		}
		if s.Group.Name == "*" {
			return subjectKey{everyone: true, valid: true}
		}
		return subjectKey{group: s.Group.Name, valid: true}
	case flowcontrolv1.SubjectKindServiceAccount:
		if s.ServiceAccount == nil {
			return subjectKey{}
		}
		if s.ServiceAccount.Name == "*" {
			return subjectKey{prefix: request.ServiceAccountUsernamePrefix + s.ServiceAccount.Namespace + ":", valid: true}
		}
		return subjectKey{user: request.ServiceAccountUsername(s.ServiceAccount.Namespace, s.ServiceAccount.Name), valid: true}
	}
	return subjectKey{}
}

func anySubjectCovers(as []flowcontrolv1.Subject, b *flowcontrolv1.Subject) bool {
	kb := keyOf(b)
	if !kb.valid {
		return true // matches nobody
	}
	for i := range as {
		ka := keyOf(&as[i])
		switch {
		case !ka.valid:
		case ka.everyone:
			return true
		case kb.everyone:
		case ka.group != "":
			if kb.group == ka.group {
				return true
			}
		case ka.user != "":
			if kb.user == ka.user {
				return true
			}
		case ka.prefix != "":
			if kb.user != "" && strings.HasPrefix(kb.user, ka.prefix) || kb.prefix != "" && strings.HasPrefix(kb.prefix, ka.prefix) {
				return true
			}
		}
	}
	return false
}

// setCovers: the API's lists, where "*" is a wildcard only as the sole
// element.
func setCovers(a, b []string) bool {
	if len(a) == 1 && a[0] == "*" {
		return true
	}
	if len(b) == 1 && b[0] == "*" {
		return false
	}
	for _, x := range b {
		found := false
		for _, y := range a {
			if x == y {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func resourceRuleCovers(a, b *flowcontrolv1.ResourcePolicyRule) bool {
	if !setCovers(a.Verbs, b.Verbs) || !setCovers(a.APIGroups, b.APIGroups) || !setCovers(a.Resources, b.Resources) {
		return false
	}
	if b.ClusterScope && !a.ClusterScope {
		return false
	}
	return len(b.Namespaces) == 0 || setCovers(a.Namespaces, b.Namespaces)
}

func nonResourceRuleCovers(a, b *flowcontrolv1.NonResourcePolicyRule) bool {
	if !setCovers(a.Verbs, b.Verbs) {
		return false
	}
	for _, u := range b.NonResourceURLs {
		ok := false
		for _, v := range a.NonResourceURLs {
			if urlCovers(v, u) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// urlPrefix is the prefix under which an entry also matches: "/a" and
// "/a/*" both cover everything under "/a/".
func urlPrefix(u string) string {
	p := strings.TrimSuffix(u, "*")
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// urlCovers: entry u matches the path u itself and every path under its
// prefix; v covers u when v matches u and everything under u's prefix.
func urlCovers(v, u string) bool {
	if v == "*" {
		return true
	}
	if u == "*" {
		return false
	}
	pv := urlPrefix(v)
	return (u == v || strings.HasPrefix(u, pv)) && strings.HasPrefix(urlPrefix(u), pv)
}
