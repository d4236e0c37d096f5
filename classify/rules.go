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
	// byScope files resources by scope when there are more than shortList
	// of them, so that a request looks only at those that can match its
	// namespace.
	byScope *scopeIndex
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
// included, is compared literally. A long list is also kept as a set, so
// that a rule naming thousands of namespaces costs one lookup.
type stringSet struct {
	all    bool
	values []string
	set    map[string]struct{} // nil for short lists
}

// shortList is the longest list compared element by element: up to this
// length a scan is faster than hashing.
const shortList = 8

func newStringSet(values []string) stringSet {
	s := stringSet{all: len(values) == 1 && values[0] == "*", values: values}
	if !s.all && len(values) > shortList {
		s.set = make(map[string]struct{}, len(values))
		for _, v := range values {
			s.set[v] = struct{}{}
		}
	}
	return s
}

func (s *stringSet) has(v string) bool {
	if s.all {
		return true
	}
	if s.set != nil {
		_, ok := s.set[v]
		return ok
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
// become the prefix "/a/". A "*" entry anywhere matches every path. Every
// prefix ends with a slash, so a long list is kept as two sets and a path is
// tested by looking up each of its own slash-ended prefixes.
type nonResourceRule struct {
	verbs    stringSet
	allPaths bool
	exact    []string
	prefixes []string

	exactSet, prefixSet map[string]struct{} // nil for short lists
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
		if len(c.exact) > shortList {
			c.exactSet = make(map[string]struct{}, len(c.exact))
			c.prefixSet = make(map[string]struct{}, len(c.prefixes))
			for i := range c.exact {
				c.exactSet[c.exact[i]] = struct{}{}
				c.prefixSet[c.prefixes[i]] = struct{}{}
			}
		}
		out.nonResources = append(out.nonResources, c)
	}
	if len(out.resources) > shortList {
		out.byScope = indexResources(out.resources)
	}
	return out
}

func indexResources(rrs []resourceRule) *scopeIndex {
	x := &scopeIndex{}
	for i := range rrs {
		x.add(&rrs[i], int32(i))
	}
	return x
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

// matchesRequest reports whether the rule's resource rules (for a resource
// request) or non-resource rules (otherwise) match the request; the caller
// has established that one of its subjects matches the user.
func (r *rule) matchesRequest(a *request.Attributes) bool {
	if !a.Info.IsResourceRequest {
		for i := range r.nonResources {
			if r.nonResources[i].matches(&a.Info) {
				return true
			}
		}
		return false
	}
	if r.byScope != nil {
		return r.matchesIndexed(&a.Info)
	}
	for i := range r.resources {
		if r.resources[i].matches(&a.Info) {
			return true
		}
	}
	return false
}

func (r *rule) matchesIndexed(info *request.Info) bool {
	a, b := r.byScope.lookup(info.Namespace)
	for _, ids := range [2][]int32{a, b} {
		for _, i := range ids {
			if r.resources[i].matches(info) {
				return true
			}
		}
	}
	return false
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
	if r.resources.set != nil {
		// Look the joined name up without allocating it: indexing a map
		// with a converted byte slice does not copy.
		var buf [128]byte
		key := append(append(append(buf[:0], resource...), '/'), subresource...)
		_, ok := r.resources.set[string(key)]
		return ok
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
	if r.exactSet != nil {
		if _, ok := r.exactSet[info.Path]; ok {
			return true
		}
		for i := 0; i < len(info.Path); i++ {
			if info.Path[i] != '/' {
				continue
			}
			if _, ok := r.prefixSet[info.Path[:i+1]]; ok {
				return true
			}
		}
		return false
	}
	for i, exact := range r.exact {
		if info.Path == exact || strings.HasPrefix(info.Path, r.prefixes[i]) {
			return true
		}
	}
	return false
}
