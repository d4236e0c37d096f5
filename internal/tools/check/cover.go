package check

import (
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/request"
)

// Shadowing is judged on a model of who sends requests, the one Kubernetes'
// authenticators and impersonation produce: every request is either
// authenticated, and then its user is in system:authenticated, or
// anonymous, and then its user is system:anonymous in
// system:unauthenticated and no other group; a service account's user
// name, system:serviceaccount:NS:NAME, comes with the groups
// system:serviceaccounts and system:serviceaccounts:NS. Within that model
// the judgement is sound: a schema is reported only when every request it
// matches is matched by a schema earlier in the matching order. It is not
// complete: coverage that needs more reasoning than the common shapes
// (lists, "*", URL prefixes, the groups above) goes unreported.

// userCase is a set of users that a subject matches, described so that
// whether another subject matches all of them can be told. The users a
// subject matches are the union of its cases.
type userCase struct {
	kind caseKind
	// name is the group (caseGroup) or user name (caseName); ns and sa
	// the service account (sa "" for every one of ns).
	name, ns, sa string
}

type caseKind uint8

const (
	caseAuthenticated   caseKind = iota // every authenticated user
	caseUnauthenticated                 // the anonymous user
	caseGroup                           // the authenticated members of a group
	caseName                            // an authenticated user of that name
	caseServiceAccount                  // a service account, or those of a namespace
)

// casesOf splits the users a subject matches into cases; a subject
// missing its member (possible only unvalidated) matches nobody.
func casesOf(s *flowcontrolv1.Subject) []userCase {
	everyone := []userCase{{kind: caseAuthenticated}, {kind: caseUnauthenticated}}
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil {
			return nil
		}
		name := s.User.Name
		if name == "*" {
			return everyone
		}
		if ns, sa, ok := request.SplitServiceAccountUsername(name); ok {
			return []userCase{{kind: caseServiceAccount, ns: ns, sa: sa}}
		}
		if name == request.AnonymousUser {
			return []userCase{{kind: caseUnauthenticated}, {kind: caseName, name: name}}
		}
		return []userCase{{kind: caseName, name: name}}
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			return nil
		}
		switch s.Group.Name {
		case "*":
			return everyone
		case request.AllAuthenticatedGroup:
			return everyone[:1]
		case request.AllUnauthenticatedGroup:
			return everyone[1:]
		}
		return []userCase{{kind: caseGroup, name: s.Group.Name}}
	case flowcontrolv1.SubjectKindServiceAccount:
		if s.ServiceAccount == nil {
			return nil
		}
		sa := s.ServiceAccount.Name
		if sa == "*" {
			sa = ""
		}
		return []userCase{{kind: caseServiceAccount, ns: s.ServiceAccount.Namespace, sa: sa}}
	}
	return nil
}

// subjectCovers reports whether subject a matches every user of case c.
func subjectCovers(a *flowcontrolv1.Subject, c userCase) bool {
	switch a.Kind {
	case flowcontrolv1.SubjectKindUser:
		if a.User == nil {
			return false
		}
		n := a.User.Name
		switch c.kind {
		case caseUnauthenticated:
			return n == "*" || n == request.AnonymousUser
		case caseName:
			return n == "*" || n == c.name
		case caseServiceAccount:
			return n == "*" || c.sa != "" && n == request.ServiceAccountUsername(c.ns, c.sa)
		}
		return n == "*"
	case flowcontrolv1.SubjectKindGroup:
		if a.Group == nil {
			return false
		}
		g := a.Group.Name
		if g == "*" {
			return true
		}
		switch c.kind {
		case caseUnauthenticated:
			return g == request.AllUnauthenticatedGroup
		case caseGroup:
			return g == request.AllAuthenticatedGroup || g == c.name
		case caseServiceAccount:
			return g == request.AllAuthenticatedGroup || g == request.AllServiceAccountsGroup ||
				g == request.ServiceAccountNamespaceGroup(c.ns)
		}
		return g == request.AllAuthenticatedGroup
	case flowcontrolv1.SubjectKindServiceAccount:
		sa := a.ServiceAccount
		if sa == nil || c.kind != caseServiceAccount || sa.Namespace != c.ns {
			return false
		}
		return sa.Name == "*" || c.sa != "" && sa.Name == c.sa
	}
	return false
}

func anyCovers(as []flowcontrolv1.Subject, c userCase) bool {
	for i := range as {
		if subjectCovers(&as[i], c) {
			return true
		}
	}
	return false
}

// list is one of a rule's lists, where "*" is a wildcard only as the sole
// element, as the API defines.
type list []string

func (l list) all() bool { return len(l) == 1 && l[0] == "*" }

// holds reports whether every request with coordinate v (any value when
// any) is in the list.
func (l list) holds(v string, any bool) bool {
	if l.all() {
		return true
	}
	if any {
		return false
	}
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}

// coords are the values a list matches, one coordinate per element, or one
// "any" coordinate for a wildcard.
func (l list) coords() []coord {
	if l.all() {
		return []coord{{any: true}}
	}
	out := make([]coord, len(l))
	for i, v := range l {
		out[i] = coord{v: v}
	}
	return out
}

type coord struct {
	v   string
	any bool
}

// resourcePoint is a piece of what a resource rule matches: one verb,
// group and resource (or any), in one namespace (or any) or at cluster
// scope. A rule matches exactly the union of its points.
type resourcePoint struct {
	verb, group, resource, namespace coord
	cluster                          bool
}

// maxPoints bounds the points a rule is split into; a larger rule is
// judged whole, against one rule at a time.
const maxPoints = 4096

func resourcePoints(rr *flowcontrolv1.ResourcePolicyRule) []resourcePoint {
	scopes := list(rr.Namespaces).coords()
	if len(rr.Namespaces) == 0 {
		scopes = nil
	}
	n := len(rr.Verbs) * len(rr.APIGroups) * len(rr.Resources) * (len(scopes) + 1)
	if n > maxPoints {
		return nil
	}
	var out []resourcePoint
	for _, v := range list(rr.Verbs).coords() {
		for _, g := range list(rr.APIGroups).coords() {
			for _, r := range list(rr.Resources).coords() {
				p := resourcePoint{verb: v, group: g, resource: r}
				for _, ns := range scopes {
					q := p
					q.namespace = ns
					out = append(out, q)
				}
				if rr.ClusterScope {
					q := p
					q.cluster = true
					out = append(out, q)
				}
			}
		}
	}
	return out
}

func (p resourcePoint) coveredBy(a *flowcontrolv1.ResourcePolicyRule) bool {
	if !list(a.Verbs).holds(p.verb.v, p.verb.any) || !list(a.APIGroups).holds(p.group.v, p.group.any) ||
		!list(a.Resources).holds(p.resource.v, p.resource.any) {
		return false
	}
	if p.cluster {
		return a.ClusterScope
	}
	return len(a.Namespaces) > 0 && list(a.Namespaces).holds(p.namespace.v, p.namespace.any)
}

// nonResourcePoint is one verb (or any) on one URL entry of a
// non-resource rule: the path it names and those under its prefix.
type nonResourcePoint struct {
	verb coord
	url  string
}

func nonResourcePoints(nr *flowcontrolv1.NonResourcePolicyRule) []nonResourcePoint {
	if len(nr.Verbs)*len(nr.NonResourceURLs) > maxPoints {
		return nil
	}
	var out []nonResourcePoint
	for _, v := range list(nr.Verbs).coords() {
		for _, u := range nr.NonResourceURLs {
			out = append(out, nonResourcePoint{verb: v, url: u})
		}
	}
	return out
}

func (p nonResourcePoint) coveredBy(a *flowcontrolv1.NonResourcePolicyRule) bool {
	if !list(a.Verbs).holds(p.verb.v, p.verb.any) {
		return false
	}
	for _, v := range a.NonResourceURLs {
		if urlCovers(v, p.url) {
			return true
		}
	}
	return false
}

// setCovers: the API's lists, where "*" is a wildcard only as the sole
// element.
func setCovers(a, b []string) bool {
	if list(a).all() {
		return true
	}
	if list(b).all() {
		return false
	}
	for _, x := range b {
		if !list(a).holds(x, false) {
			return false
		}
	}
	return true
}

// resourceRuleCovers judges a rule too large to split: a covers all of b.
func resourceRuleCovers(a, b *flowcontrolv1.ResourcePolicyRule) bool {
	if !setCovers(a.Verbs, b.Verbs) || !setCovers(a.APIGroups, b.APIGroups) || !setCovers(a.Resources, b.Resources) {
		return false
	}
	if b.ClusterScope && !a.ClusterScope {
		return false
	}
	return len(b.Namespaces) == 0 || len(a.Namespaces) > 0 && setCovers(a.Namespaces, b.Namespaces)
}

func nonResourceRuleCovers(a, b *flowcontrolv1.NonResourcePolicyRule) bool {
	if !setCovers(a.Verbs, b.Verbs) {
		return false
	}
	for _, u := range b.NonResourceURLs {
		if !(nonResourcePoint{verb: coord{any: true}, url: u}).coveredBy(&flowcontrolv1.NonResourcePolicyRule{Verbs: []string{"*"}, NonResourceURLs: a.NonResourceURLs}) {
			return false
		}
	}
	return true
}

// urlPrefix is the prefix under which an entry also matches: "/a" and
// "/a/*" both cover everything under "/a/", as the classifier reads them.
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
