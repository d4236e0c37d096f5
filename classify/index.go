package classify

import (
	"slices"
	"strings"

	"github.com/apfproject/apf/request"
)

// ruleIndex finds the first rule of the matching order that matches a
// request without scanning the configuration.
//
// Every rule of every usable schema gets an id: its position in the
// matching order, counting the rules of the first schema, then those of the
// second, and so on. The first matching rule therefore belongs to the first
// matching schema, and the index can work on rules alone.
//
// Two kinds of posting lists, each a sorted list of rule ids, are kept:
//
//   - by subject: the rules having a subject that names a user, a group, a
//     service-account namespace ("ns/*"), or anyone ("*");
//   - by scope: the rules having a resource rule for a namespace, for every
//     namespace, for cluster-scoped resources, or a non-resource rule.
//
// A rule is filed once per subject and once per namespace it names, so the
// index grows with the size of the configuration and nothing else. (Filing
// a rule's namespaces under each of its subjects would multiply the two.)
//
// A request's candidates are the rules in one of its subject lists (its
// user name, each of its groups, each service-account namespace its name
// could belong to, the wildcard) that are also in its scope lists; each
// subject list is intersected with the scope lists by leapfrogging through
// them, skipping ahead by galloping search, and stops at the best match
// found so far. Being filed under one of the request's keys is exactly the
// API's test of a subject (a user or group of that name, "*", a service
// account of that user name, or "<ns>/*" for a user name beginning
// "system:serviceaccount:<ns>:"), so a candidate only needs the rest of its
// rule checked. Subjects missing their member match nobody and are not
// filed.
type ruleIndex struct {
	rules []*rule // by id
	owner []int32 // the schema position of each rule, by id

	wildcard     []int32
	users        map[string][]int32 // user names; service accounts with a fixed name as their user name
	groups       map[string][]int32
	saNamespaces map[string][]int32 // service accounts "<ns>/*"

	scopes      scopeIndex // rules by the scopes of their resource rules
	nonResource []int32    // rules with a non-resource rule
}

// scopeIndex files ids (of rules, or of the resource rules of one rule) by
// the scopes their resource rules cover: each namespace named, every
// namespace, cluster-scoped resources.
type scopeIndex struct {
	namespaces   map[string][]int32
	anyNamespace []int32
	cluster      []int32
}

func (x *scopeIndex) add(rr *resourceRule, id int32) {
	if rr.clusterScope {
		x.cluster = appendID(x.cluster, id)
	}
	if rr.namespaces.all {
		x.anyNamespace = appendID(x.anyNamespace, id)
		return
	}
	if x.namespaces == nil {
		x.namespaces = map[string][]int32{}
	}
	for _, ns := range rr.namespaces.values {
		fileID(x.namespaces, ns, id)
	}
}

// lookup returns the lists that can hold a match for a resource request in
// namespace ("" for a cluster-scoped one).
func (x *scopeIndex) lookup(namespace string) (a, b []int32) {
	if namespace == "" {
		return x.cluster, nil
	}
	return x.namespaces[namespace], x.anyNamespace
}

// appendID adds id to a list unless it already ends with it: the ids of one
// rule arrive together, so this keeps every list free of duplicates.
func appendID(list []int32, id int32) []int32 {
	if n := len(list); n > 0 && list[n-1] == id {
		return list
	}
	return append(list, id)
}

func fileID(m map[string][]int32, key string, id int32) {
	m[key] = appendID(m[key], id)
}

func buildIndex(schemas []*FlowSchema) ruleIndex {
	n := 0
	for _, fs := range schemas {
		n += len(fs.rules)
	}
	ix := ruleIndex{
		rules:        make([]*rule, 0, n),
		owner:        make([]int32, 0, n),
		users:        map[string][]int32{},
		groups:       map[string][]int32{},
		saNamespaces: map[string][]int32{},
	}
	for pos, fs := range schemas {
		for ri := range fs.rules {
			r := &fs.rules[ri]
			id := int32(len(ix.rules))
			ix.rules = append(ix.rules, r)
			ix.owner = append(ix.owner, int32(pos))
			ix.fileSubjects(r, id)
			ix.fileScopes(r, id)
		}
	}
	return ix
}

func (ix *ruleIndex) fileSubjects(r *rule, id int32) {
	for _, s := range r.subjects {
		switch {
		case !s.valid:
		case s.kind == subjectServiceAccount && s.anyName:
			fileID(ix.saNamespaces, s.namespace, id)
		case s.anyName:
			ix.wildcard = appendID(ix.wildcard, id)
		case s.kind == subjectGroup:
			fileID(ix.groups, s.name, id)
		default: // users and fixed service accounts
			fileID(ix.users, s.name, id)
		}
	}
}

func (ix *ruleIndex) fileScopes(r *rule, id int32) {
	for i := range r.resources {
		ix.scopes.add(&r.resources[i], id)
	}
	if len(r.nonResources) > 0 {
		ix.nonResource = appendID(ix.nonResource, id)
	}
}

// scope returns the scope lists a request's candidates must be in: the
// rules for its namespace and for every namespace, the rules for
// cluster-scoped resources, or the non-resource rules.
func (ix *ruleIndex) scope(info *request.Info) (a, b []int32) {
	if !info.IsResourceRequest {
		return ix.nonResource, nil
	}
	return ix.scopes.lookup(info.Namespace)
}

// first returns the position of the first schema in the matching order that
// matches the request, or len(schemas) if none does.
func (m *Matcher) first(a *request.Attributes) int {
	ix := &m.index
	sa, sb := ix.scope(&a.Info)
	best := int32(len(ix.rules))
	if len(sa) == 0 && len(sb) == 0 {
		return len(m.schemas)
	}
	best = ix.firstIn(ix.wildcard, sa, sb, a, best)
	if list, ok := ix.users[a.User.Name]; ok {
		best = ix.firstIn(list, sa, sb, a, best)
	}
	for _, g := range a.User.Groups {
		if list, ok := ix.groups[g]; ok {
			best = ix.firstIn(list, sa, sb, a, best)
		}
	}
	if len(ix.saNamespaces) > 0 {
		// "<ns>/*" matches "system:serviceaccount:<ns>:..."; try every
		// prefix of the rest that a colon ends, since an unvalidated
		// namespace may itself hold colons.
		if rest, ok := strings.CutPrefix(a.User.Name, request.ServiceAccountUsernamePrefix); ok {
			for i := 0; i < len(rest); i++ {
				if rest[i] != ':' {
					continue
				}
				if list, ok := ix.saNamespaces[rest[:i]]; ok {
					best = ix.firstIn(list, sa, sb, a, best)
				}
			}
		}
	}
	if best == int32(len(ix.rules)) {
		return len(m.schemas)
	}
	return int(ix.owner[best])
}

// firstIn returns the first rule, before best, of the subject list that is
// also in one of the scope lists sa and sb and matches the request.
func (ix *ruleIndex) firstIn(list, sa, sb []int32, a *request.Attributes, best int32) int32 {
	for len(list) > 0 && list[0] < best {
		id := list[0]
		sa, sb = seek(sa, id), seek(sb, id)
		next := best
		if len(sa) > 0 && sa[0] < next {
			next = sa[0]
		}
		if len(sb) > 0 && sb[0] < next {
			next = sb[0]
		}
		if next >= best {
			break
		}
		if next != id {
			// Nothing in scope at id: skip the subject list ahead.
			list = seek(list, next)
			continue
		}
		if ix.rules[id].matchesRequest(a) {
			return id
		}
		list = list[1:]
	}
	return best
}

// seek drops the ids of a sorted list that are less than v. It gallops
// (probes 1, 2, 4, ... ahead, then searches the last step), so skipping k
// ids costs O(log k).
func seek(list []int32, v int32) []int32 {
	if len(list) == 0 || list[0] >= v {
		return list
	}
	lo, hi := 0, 1 // list[lo] < v
	for hi < len(list) && list[hi] < v {
		lo, hi = hi, 2*hi
	}
	hi = min(hi, len(list))
	i, _ := slices.BinarySearch(list[lo+1:hi], v)
	return list[lo+1+i:]
}
