package classify

import (
	"strings"

	"github.com/apfproject/apf/request"
)

// subjectIndex maps each key a subject can name to the schemas having such
// a subject. A schema can match a request only if it is filed under one of
// the request's keys: its user name, one of its groups, its service-account
// namespace, or the wildcard.
type subjectIndex struct {
	wildcard     candidates // "*" users or groups: every request
	users        map[string]*candidates
	groups       map[string]*candidates
	saNamespaces map[string]*candidates // service accounts "<ns>/*"
}

// candidates are the schemas filed under one subject key, as positions in
// the matching order, ascending. Resource requests in a namespace need only
// look at the schemas naming that namespace (byNamespace) and those that
// could match any namespace or none (rest); the two lists are walked
// together in order. This keeps a configuration of many per-namespace
// schemas for the same group as cheap as a small one. Non-resource and
// cluster-scoped requests look at all.
type candidates struct {
	all         []int32
	byNamespace map[string][]int32
	rest        []int32
}

func (c *candidates) add(i int32, fs *FlowSchema) {
	if n := len(c.all); n > 0 && c.all[n-1] == i {
		return
	}
	c.all = append(c.all, i)
	namespaces, ok := fs.namespaceSet()
	if !ok {
		c.rest = append(c.rest, i)
		return
	}
	if c.byNamespace == nil {
		c.byNamespace = map[string][]int32{}
	}
	for _, ns := range namespaces {
		if list := c.byNamespace[ns]; len(list) == 0 || list[len(list)-1] != i {
			c.byNamespace[ns] = append(list, i)
		}
	}
}

// namespaceSet returns the namespaces a schema's resource rules name, with
// ok false when the schema could match a namespaced request in some other
// namespace ("*" namespaces, or a wildcard literal compared as a value).
// A schema with no resource rules matches no resource request at all, and
// so is filed under no namespace.
func (fs *FlowSchema) namespaceSet() (namespaces []string, ok bool) {
	for _, r := range fs.rules {
		for _, rr := range r.resources {
			if rr.namespaces.all {
				return nil, false
			}
			namespaces = append(namespaces, rr.namespaces.values...)
		}
	}
	return namespaces, true
}

func buildIndex(schemas []*FlowSchema) subjectIndex {
	ix := subjectIndex{
		users:        map[string]*candidates{},
		groups:       map[string]*candidates{},
		saNamespaces: map[string]*candidates{},
	}
	file := func(m map[string]*candidates, key string, i int32, fs *FlowSchema) {
		c := m[key]
		if c == nil {
			c = &candidates{}
			m[key] = c
		}
		c.add(i, fs)
	}
	for i, fs := range schemas {
		at := int32(i)
		for _, r := range fs.rules {
			for _, s := range r.subjects {
				switch {
				case !s.valid:
				case s.kind == subjectServiceAccount && s.anyName:
					file(ix.saNamespaces, s.namespace, at, fs)
				case s.anyName:
					ix.wildcard.add(at, fs)
				case s.kind == subjectGroup:
					file(ix.groups, s.name, at, fs)
				default: // users and fixed service accounts
					file(ix.users, s.name, at, fs)
				}
			}
		}
	}
	return ix
}

// first returns the position of the first schema in the matching order that
// matches the request, or len(schemas) if none does.
func (m *Matcher) first(a *request.Attributes) int {
	best := int32(len(m.schemas))
	best = m.firstIn(&m.index.wildcard, a, best)
	if c, ok := m.index.users[a.User.Name]; ok {
		best = m.firstIn(c, a, best)
	}
	for _, g := range a.User.Groups {
		if c, ok := m.index.groups[g]; ok {
			best = m.firstIn(c, a, best)
		}
	}
	if len(m.index.saNamespaces) > 0 {
		// "<ns>/*" matches "system:serviceaccount:<ns>:..."; try every
		// prefix of the rest that a colon ends, since an unvalidated
		// namespace may itself hold colons.
		if rest, ok := strings.CutPrefix(a.User.Name, request.ServiceAccountUsernamePrefix); ok {
			for i := 0; i < len(rest); i++ {
				if rest[i] != ':' {
					continue
				}
				if c, ok := m.index.saNamespaces[rest[:i]]; ok {
					best = m.firstIn(c, a, best)
				}
			}
		}
	}
	return int(best)
}

// firstIn returns the first schema among c, before best, that matches.
func (m *Matcher) firstIn(c *candidates, a *request.Attributes, best int32) int32 {
	if !a.Info.IsResourceRequest || a.Info.Namespace == "" || c.byNamespace == nil {
		return m.firstOf(c.all, a, best)
	}
	// Walk the namespace's list and the rest together, in order.
	ns, rest := c.byNamespace[a.Info.Namespace], c.rest
	for len(ns) > 0 || len(rest) > 0 {
		var i int32
		if len(rest) == 0 || len(ns) > 0 && ns[0] < rest[0] {
			i, ns = ns[0], ns[1:]
		} else {
			i, rest = rest[0], rest[1:]
		}
		if i >= best {
			break
		}
		if m.schemas[i].matches(a) {
			return i
		}
	}
	return best
}

func (m *Matcher) firstOf(list []int32, a *request.Attributes, best int32) int32 {
	for _, i := range list {
		if i >= best {
			break
		}
		if m.schemas[i].matches(a) {
			return i
		}
	}
	return best
}
