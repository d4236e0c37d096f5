package classify

import (
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/request"
)

// distinguisherKind is a schema's distinguisherMethod, resolved once.
type distinguisherKind uint8

const (
	distinguishNone distinguisherKind = iota
	distinguishByUser
	distinguishByNamespace
)

// rule is one PolicyRulesWithSubjects, compiled.
type rule struct {
	subjects     []subject
	resources    []resourceRule
	nonResources []nonResourceRule
}

type subjectKind uint8

const (
	subjectUser subjectKind = iota
	subjectGroup
	subjectServiceAccount
)

// subject is one Subject, compiled. A subject whose member for its kind is
// missing (possible only in an unvalidated object) matches nobody.
type subject struct {
	kind      subjectKind
	valid     bool
	anyName   bool   // the name is "*"
	name      string // user or group name; for a service account, its user name
	namespace string // service accounts with any name: the namespace
}

// stringSet is a list from a rule in which "*" is a wildcard only when it is
// the sole element, as the API defines; otherwise every element, "*"
// included, is compared literally.
type stringSet struct {
	all    bool
	values []string
}

func newStringSet(values []string) stringSet {
	return stringSet{all: len(values) == 1 && values[0] == "*", values: values}
}

func (s *stringSet) has(v string) bool {
	if s.all {
		return true
	}
	for _, x := range s.values {
		if x == v {
			return true
		}
	}
	return false
}

type resourceRule struct {
	verbs, apiGroups, resources, namespaces stringSet
	clusterScope                            bool
}

// nonResourceRule holds each URL entry as the exact path it names and the
// prefix it covers: "/a" covers "/a/..." and "/a/*" covers the same, so both
// become the prefix "/a/". A "*" entry anywhere matches every path.
type nonResourceRule struct {
	verbs    stringSet
	allPaths bool
	exact    []string
	prefixes []string
}

func compileSchema(fs *flowcontrolv1.FlowSchema, pl *PriorityLevel, imagined bool) *FlowSchema {
	c := &FlowSchema{
		Name:          fs.Name,
		UID:           string(fs.UID),
		Object:        fs,
		PriorityLevel: pl,
		Imagined:      imagined,
	}
	if dm := fs.Spec.DistinguisherMethod; dm != nil {
		switch dm.Type {
		case flowcontrolv1.FlowDistinguisherMethodByUserType:
			c.distinguisher = distinguishByUser
		case flowcontrolv1.FlowDistinguisherMethodByNamespaceType:
			c.distinguisher = distinguishByNamespace
		}
	}
	c.rules = make([]rule, len(fs.Spec.Rules))
	for i, r := range fs.Spec.Rules {
		c.rules[i] = compileRule(r)
	}
	return c
}

func compileRule(r flowcontrolv1.PolicyRulesWithSubjects) rule {
	var out rule
	out.subjects = make([]subject, len(r.Subjects))
	for i, s := range r.Subjects {
		out.subjects[i] = compileSubject(s)
	}
	for _, rr := range r.ResourceRules {
		out.resources = append(out.resources, resourceRule{
			verbs:        newStringSet(rr.Verbs),
			apiGroups:    newStringSet(rr.APIGroups),
			resources:    newStringSet(rr.Resources),
			namespaces:   newStringSet(rr.Namespaces),
			clusterScope: rr.ClusterScope,
		})
	}
	for _, nr := range r.NonResourceRules {
		c := nonResourceRule{verbs: newStringSet(nr.Verbs)}
		for _, u := range nr.NonResourceURLs {
			if u == "*" {
				c.allPaths = true
				continue
			}
			prefix := strings.TrimSuffix(u, "*")
			if !strings.HasSuffix(prefix, "/") {
				prefix += "/"
			}
			c.exact = append(c.exact, u)
			c.prefixes = append(c.prefixes, prefix)
		}
		out.nonResources = append(out.nonResources, c)
	}
	return out
}

func compileSubject(s flowcontrolv1.Subject) subject {
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		if s.User != nil {
			return subject{kind: subjectUser, valid: true, anyName: s.User.Name == "*", name: s.User.Name}
		}
		return subject{kind: subjectUser}
	case flowcontrolv1.SubjectKindGroup:
		if s.Group != nil {
			return subject{kind: subjectGroup, valid: true, anyName: s.Group.Name == "*", name: s.Group.Name}
		}
		return subject{kind: subjectGroup}
	case flowcontrolv1.SubjectKindServiceAccount:
		if sa := s.ServiceAccount; sa != nil {
			if sa.Name == "*" {
				return subject{kind: subjectServiceAccount, valid: true, anyName: true, namespace: sa.Namespace}
			}
			return subject{kind: subjectServiceAccount, valid: true, name: request.ServiceAccountUsername(sa.Namespace, sa.Name)}
		}
	}
	return subject{}
}

// matches reports whether any rule of the schema matches the request.
func (fs *FlowSchema) matches(a *request.Attributes) bool {
	for i := range fs.rules {
		if fs.rules[i].matches(a) {
			return true
		}
	}
	return false
}

func (r *rule) matches(a *request.Attributes) bool {
	if !r.matchesUser(&a.User) {
		return false
	}
	if a.Info.IsResourceRequest {
		for i := range r.resources {
			if r.resources[i].matches(&a.Info) {
				return true
			}
		}
		return false
	}
	for i := range r.nonResources {
		if r.nonResources[i].matches(&a.Info) {
			return true
		}
	}
	return false
}

func (r *rule) matchesUser(u *request.User) bool {
	for i := range r.subjects {
		if r.subjects[i].matches(u) {
			return true
		}
	}
	return false
}

func (s *subject) matches(u *request.User) bool {
	if !s.valid {
		return false
	}
	switch s.kind {
	case subjectUser:
		return s.anyName || s.name == u.Name
	case subjectGroup:
		if s.anyName {
			return true
		}
		for _, g := range u.Groups {
			if g == s.name {
				return true
			}
		}
		return false
	default: // subjectServiceAccount
		if s.anyName {
			return inServiceAccountNamespace(u.Name, s.namespace)
		}
		return s.name == u.Name
	}
}

// inServiceAccountNamespace reports whether a user name is
// "system:serviceaccount:<namespace>:" followed by anything.
func inServiceAccountNamespace(user, namespace string) bool {
	rest, ok := strings.CutPrefix(user, request.ServiceAccountUsernamePrefix)
	return ok && len(rest) > len(namespace) && rest[len(namespace)] == ':' && rest[:len(namespace)] == namespace
}

// matches tests the namespace first: it is the field most likely to tell
// one schema of a large configuration from the next.
func (r *resourceRule) matches(info *request.Info) bool {
	if info.Namespace == "" {
		if !r.clusterScope {
			return false
		}
	} else if !r.namespaces.has(info.Namespace) {
		return false
	}
	return r.matchesResource(info.Resource, info.Subresource) && r.apiGroups.has(info.APIGroup) && r.verbs.has(info.Verb)
}

// matchesResource compares rule entries with "resource" or
// "resource/subresource" without building the joined string.
func (r *resourceRule) matchesResource(resource, subresource string) bool {
	if r.resources.all {
		return true
	}
	if subresource == "" {
		return r.resources.has(resource)
	}
	n := len(resource)
	for _, x := range r.resources.values {
		if len(x) == n+1+len(subresource) && x[n] == '/' && x[:n] == resource && x[n+1:] == subresource {
			return true
		}
	}
	return false
}

func (r *nonResourceRule) matches(info *request.Info) bool {
	if !r.verbs.has(info.Verb) {
		return false
	}
	if r.allPaths {
		return true
	}
	for i, exact := range r.exact {
		if info.Path == exact || strings.HasPrefix(info.Path, r.prefixes[i]) {
			return true
		}
	}
	return false
}
