package classify

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/apfproject/apf/request"
)

// memoSize is the number of slots of a matcher's classification memo: 8
// KiB of pointers, like the flow cache, rebuilt with every configuration.
const memoSize = 1024

// memoMaxKeyBytes bounds the bytes of the fields an entry copies (user
// name, groups with their string headers, verb, API group, resource,
// subresource, namespace, path):
// a request with more, such as a non-resource request with a
// kilobytes-long path, is classified without being remembered, so the
// memo holds at most memoSize times this much whatever clients send.
const memoMaxKeyBytes = 1024

// memo remembers the classification of recent requests. A server sees the
// same kinds of request again and again (a controller's gets of its
// objects, a user's lists in a namespace), and a classification depends on
// a few fields only: the user's name and groups, whether the request is a
// resource request, its verb, API group, resource, subresource and
// namespace, and, for a non-resource request, its path. The memo keys an
// entry by all of them, so a hit is the answer the index would give; it
// also keeps the flow hash, which is a function of the schema and the
// distinguisher, both fixed by the key.
//
// The memo is direct-mapped, like the flow cache: each slot holds at most
// one entry, replaced on a miss, read and written with single atomic
// pointer operations, so readers never block and never see a torn entry.
// The slot is chosen by a hash of the fields that vary most (user name,
// verb, resource or path, namespace); the others are only compared. A hit
// allocates nothing; a miss allocates the new entry and copies of its
// strings, which must not point into the caller's memory.
type memo struct {
	seed  maphash.Seed
	slots [memoSize]atomic.Pointer[memoEntry]
}

// memoEntry is one remembered classification: the request fields it
// depends on and the answer.
type memoEntry struct {
	user                                        string
	groups                                      []string
	resource                                    bool
	verb, apiGroup, res, subresource, namespace string
	path                                        string // non-resource requests only

	// schema is the position of the matching schema in the matching
	// order, or len(schemas) when none matches (catch-all stands in).
	schema int
	// hash is the flow hash, when the schema's level distinguishes flows.
	hash uint64
}

func newMemo() *memo { return &memo{seed: maphash.MakeSeed()} }

// slot returns the slot of the request's fields.
func (c *memo) slot(a *request.Attributes) *atomic.Pointer[memoEntry] {
	in := &a.Info
	h := maphash.String(c.seed, a.User.Name)
	h = h*0x9e3779b97f4a7c15 ^ maphash.String(c.seed, in.Verb)
	if in.IsResourceRequest {
		h = h*0x9e3779b97f4a7c15 ^ maphash.String(c.seed, in.Resource)
		h = h*0x9e3779b97f4a7c15 ^ maphash.String(c.seed, in.Namespace)
	} else {
		h = h*0x9e3779b97f4a7c15 ^ maphash.String(c.seed, in.Path)
	}
	return &c.slots[h%memoSize]
}

// matches reports whether e was made for a request with a's fields.
func (e *memoEntry) matches(a *request.Attributes) bool {
	in := &a.Info
	if e.user != a.User.Name || e.resource != in.IsResourceRequest || e.verb != in.Verb || !slices.Equal(e.groups, a.User.Groups) {
		return false
	}
	if !in.IsResourceRequest {
		return e.path == in.Path
	}
	return e.res == in.Resource && e.namespace == in.Namespace && e.apiGroup == in.APIGroup && e.subresource == in.Subresource
}

// memoizable reports whether the request's fields fit in an entry (see
// memoMaxKeyBytes). It stops counting as soon as they do not.
func memoizable(a *request.Attributes) bool {
	in := &a.Info
	n := len(a.User.Name) + len(in.Verb) + len(in.APIGroup) + len(in.Resource) + len(in.Subresource) + len(in.Namespace)
	if !in.IsResourceRequest {
		n += len(in.Path)
	}
	for _, g := range a.User.Groups {
		if n > memoMaxKeyBytes {
			return false
		}
		// The copy keeps the group's string header too: empty groups
		// are not free.
		n += len(g) + 16
	}
	return n <= memoMaxKeyBytes
}

// newMemoEntry returns an entry for the request's fields, copied, with the
// given answer.
func newMemoEntry(a *request.Attributes, schema int, hash uint64) *memoEntry {
	in := &a.Info
	e := &memoEntry{
		user:     strings.Clone(a.User.Name),
		groups:   make([]string, len(a.User.Groups)),
		resource: in.IsResourceRequest,
		verb:     strings.Clone(in.Verb),
		schema:   schema,
		hash:     hash,
	}
	for i, g := range a.User.Groups {
		e.groups[i] = strings.Clone(g)
	}
	if in.IsResourceRequest {
		e.apiGroup, e.res = strings.Clone(in.APIGroup), strings.Clone(in.Resource)
		e.subresource, e.namespace = strings.Clone(in.Subresource), strings.Clone(in.Namespace)
	} else {
		e.path = strings.Clone(in.Path)
	}
	return e
}
