package impersonation

import (
	"context"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/apfproject/apf/internal/api/apistatus"
	"github.com/apfproject/apf/internal/auth/authz"
	"github.com/apfproject/apf/request"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/lru"
)

// API groups and names of the impersonation checks.
const (
	// authenticationGroup holds the uids and userextras resources, and
	// every resource of the constrained modes.
	authenticationGroup = "authentication.k8s.io"
	// nodeUsernamePrefix starts the user name of every kubelet.
	nodeUsernamePrefix = "system:node:"
	// nodeNameExtraKey is the extra a service account's token carries
	// when it is bound to a pod: the node the pod runs on.
	nodeNameExtraKey = "authentication.kubernetes.io/node-name"
	// associatedNodeKeysExtra replaces a requestor's extras in the
	// associated-node mode's checks: only the keys, never the values,
	// which name the node.
	associatedNodeKeysExtra = "authentication.kubernetes.io/associated-node-keys"
	// manyChecks is how many groups, or extra values, make a constrained
	// mode first ask once for all of them (name "*").
	manyChecks = 4
	// lastModes is how many requestors the Checker remembers the
	// successful mode of.
	lastModes = 10000
)

// mode is one way of impersonating. The four constrained modes apply to a
// kind of user each and ask for the verb "impersonate:<mode>" in the
// authentication.k8s.io group, after "impersonate-on:<mode>:<verb>" on
// what the request itself does; the legacy mode applies to everyone and
// asks for "impersonate" on users, groups and serviceaccounts in the core
// group and on uids and userextras in authentication.k8s.io.
type mode struct {
	// name is the constrained mode's name, "" for the legacy mode.
	name string
	// applies says whether the mode can give requestor the user wanted.
	applies func(want, requestor *request.User) bool
	// associated marks the associated-node mode, whose checks hide the
	// node: every check names the requestor with only the keys of its
	// extras, and its node check names the node "*".
	associated bool
}

// modes in the order they are tried.
var modes = [...]mode{
	{name: "associated-node", associated: true, applies: func(want, requestor *request.User) bool {
		node, ok := nodeName(want.Name)
		if !ok || !onlyName(want) {
			return false
		}
		if _, _, sa := request.SplitServiceAccountUsername(requestor.Name); !sa {
			return false
		}
		v := requestor.Extra[nodeNameExtraKey]
		return len(v) == 1 && v[0] == node
	}},
	{name: "arbitrary-node", applies: func(want, _ *request.User) bool {
		_, ok := nodeName(want.Name)
		return ok && onlyName(want)
	}},
	{name: "serviceaccount", applies: func(want, _ *request.User) bool {
		_, _, ok := request.SplitServiceAccountUsername(want.Name)
		return ok && onlyName(want)
	}},
	{name: "user-info", applies: func(want, _ *request.User) bool {
		if _, ok := nodeName(want.Name); ok {
			return false
		}
		_, _, sa := request.SplitServiceAccountUsername(want.Name)
		return !sa
	}},
	{name: "", applies: func(*request.User, *request.User) bool { return true }},
}

// nodeName returns the node a kubelet's user name names, if it is one: the
// prefix system:node: and a valid node name (a DNS subdomain).
func nodeName(user string) (string, bool) {
	name, ok := strings.CutPrefix(user, nodeUsernamePrefix)
	if !ok || len(validation.IsDNS1123Subdomain(name)) != 0 {
		return "", false
	}
	return name, true
}

// onlyName says whether nothing but the user name is asked for.
func onlyName(u *request.User) bool {
	return u.UID == "" && len(u.Groups) == 0 && len(u.Extra) == 0
}

// Checker decides whether a requestor may act as the user it asks to be,
// with kube-apiserver's rules. It remembers, for each requestor (up to
// 10,000, the least recently seen forgotten first), which mode last gave
// it a user, and tries that mode first next time, as kube-apiserver does:
// which refusal a requestor that no mode serves gets depends on it. It is
// safe for concurrent use.
type Checker struct {
	last *lru.Cache // requestor name's hash → index into modes
}

// NewChecker returns a Checker that remembers nothing yet.
func NewChecker() *Checker {
	return &Checker{last: lru.New(lastModes)}
}

// requestorKey is the key under which a requestor's mode is remembered:
// a hash of its name, so that the memory is bounded whatever the names.
func requestorKey(name string) [16]byte {
	h := fnv.New128a()
	_, _ = h.Write([]byte(name))
	var k [16]byte
	h.Sum(k[:0])
	return k
}

// Impersonate returns the user the request of a, made by a.User, acts as
// when it asks to be want (as read by Wanted), with z deciding each check;
// or the 403 Status of the first refusal. Every mode that applies is tried
// (the one that last served the requestor first) until one grants: each
// check of a mode must be allowed by z. The user granted is want with the
// groups kube-apiserver adds: a service account asked for without groups
// gets system:serviceaccounts and system:serviceaccounts:<namespace>, a
// node asked for by name alone (through a node mode) system:nodes; then
// system:anonymous joins system:unauthenticated, and everyone else
// system:authenticated unless in system:unauthenticated already.
func (c *Checker) Impersonate(ctx context.Context, z authz.Authorizer, want *request.User, a *request.Attributes) (*request.User, *metav1.Status) {
	key := requestorKey(a.User.Name)
	var refused *metav1.Status
	tried := -1
	if v, ok := c.last.Get(key); ok {
		tried = v.(int)
		u, st := modes[tried].check(ctx, z, want, a)
		if u != nil {
			return u, nil
		}
		refused = st
	}
	for i := range modes {
		if i == tried {
			continue
		}
		u, st := modes[i].check(ctx, z, want, a)
		if st != nil {
			if refused == nil {
				refused = st
			}
			continue
		}
		if u == nil {
			continue
		}
		c.last.Add(key, i)
		return u, nil
	}
	if refused != nil {
		return nil, refused
	}
	// Not reached: the legacy mode applies to everyone and either
	// grants or refuses. Refuse rather than grant anything.
	return nil, apistatus.New(http.StatusInternalServerError, metav1.StatusReasonInternalError, "all impersonation modes failed")
}

// check returns the user m grants, the Status of its refusal, or neither
// when m does not apply.
func (m *mode) check(ctx context.Context, z authz.Authorizer, want *request.User, a *request.Attributes) (*request.User, *metav1.Status) {
	if !m.applies(want, &a.User) {
		return nil, nil
	}
	requestor := a.User
	if m.associated {
		requestor.Extra = map[string][]string{associatedNodeKeysExtra: sortedKeys(a.User.Extra)}
	}
	verb, group := "impersonate", ""
	if m.name != "" {
		// The requestor must first be allowed to do what the request
		// does while impersonating in this mode.
		on := request.Attributes{Info: a.Info, User: requestor}
		on.Info.Verb = "impersonate-on:" + m.name + ":" + a.Info.Verb
		if st := allowed(ctx, z, &on); st != nil {
			return nil, st
		}
		verb, group = "impersonate:"+m.name, authenticationGroup
	}
	return m.grant(ctx, z, want, requestor, verb, group)
}

// grant asks z for each thing want names, in kube-apiserver's order (user
// name, UID, groups, extras), with verb; group is the API group of users,
// groups, service accounts and nodes.
func (m *mode) grant(ctx context.Context, z authz.Authorizer, want *request.User, requestor request.User, verb, group string) (*request.User, *metav1.Status) {
	constrained := m.name != ""
	got := *want

	user := check(requestor, verb, group, "users", want.Name)
	if node, ok := nodeName(want.Name); ok && constrained {
		user.Info.Resource, user.Info.Name = "nodes", node
		if m.associated {
			user.Info.Name = "*"
		}
		if len(want.Groups) > 0 {
			return nil, forbidden(&user, fmt.Sprintf("when impersonating a node, cannot impersonate groups %q", want.Groups))
		}
		got.Groups = []string{request.NodesGroup}
	}
	if ns, name, ok := request.SplitServiceAccountUsername(want.Name); ok {
		user.Info.Resource, user.Info.Namespace, user.Info.Name = "serviceaccounts", ns, name
		if constrained && len(want.Groups) > 0 {
			return nil, forbidden(&user, fmt.Sprintf("when impersonating a service account, cannot impersonate groups %q", want.Groups))
		}
		if len(want.Groups) == 0 {
			got.Groups = []string{request.AllServiceAccountsGroup, request.ServiceAccountNamespaceGroup(ns)}
		}
	}
	if st := allowed(ctx, z, &user); st != nil {
		return nil, st
	}

	if want.UID != "" {
		uid := check(requestor, verb, authenticationGroup, "uids", want.UID)
		if st := allowed(ctx, z, &uid); st != nil {
			return nil, st
		}
	}

	if len(want.Groups) > 0 {
		if st := m.grantGroups(ctx, z, want.Groups, check(requestor, verb, group, "groups", "")); st != nil {
			return nil, st
		}
	}

	if len(want.Extra) > 0 {
		if st := m.grantExtra(ctx, z, want.Extra, check(requestor, verb, authenticationGroup, "userextras", "")); st != nil {
			return nil, st
		}
	}

	if got.Name == request.AnonymousUser {
		got.Groups = withGroup(got.Groups, request.AllUnauthenticatedGroup)
	} else if !slices.Contains(got.Groups, request.AllUnauthenticatedGroup) {
		got.Groups = withGroup(got.Groups, request.AllAuthenticatedGroup)
	}
	return &got, nil
}

// grantGroups asks for each group. The constrained modes refuse the empty
// group and system:masters outright, and ask once for every group ("*")
// when there are many, before asking for each.
func (m *mode) grantGroups(ctx context.Context, z authz.Authorizer, groups []string, c request.Attributes) *metav1.Status {
	if m.name != "" {
		if slices.Contains(groups, "") {
			return forbidden(&c, "impersonating the empty string group is not allowed")
		}
		if slices.Contains(groups, request.SystemMastersGroup) {
			c.Info.Name = request.SystemMastersGroup
			return forbidden(&c, "impersonating the system:masters group is not allowed")
		}
		if len(groups) >= manyChecks {
			c.Info.Name = "*"
			if allowed(ctx, z, &c) == nil {
				return nil
			}
		}
	}
	for _, g := range groups {
		c.Info.Name = g
		if st := allowed(ctx, z, &c); st != nil {
			return st
		}
	}
	return nil
}

// grantExtra asks for each value of each extra key (the key is the
// subresource, the value the name), keys in order. The constrained modes
// first refuse extras that are not well formed (validExtra), and ask once
// for every extra ("*" and "*") when there are many.
func (m *mode) grantExtra(ctx context.Context, z authz.Authorizer, extra map[string][]string, c request.Attributes) *metav1.Status {
	keys := sortedKeys(extra)
	if m.name != "" {
		if msg := validExtra(keys, extra); msg != "" {
			return forbidden(&c, msg)
		}
		if manyExtra(extra) {
			c.Info.Subresource, c.Info.Name = "*", "*"
			if allowed(ctx, z, &c) == nil {
				return nil
			}
		}
	}
	for _, k := range keys {
		c.Info.Subresource = k
		for _, v := range extra[k] {
			c.Info.Name = v
			if st := allowed(ctx, z, &c); st != nil {
				return st
			}
		}
	}
	return nil
}

// validExtra is what the constrained modes refuse in extras, "" for none:
// an empty key, a key that is not a domain-prefixed path or has upper
// case, a key without values or with an empty one.
func validExtra(keys []string, extra map[string][]string) string {
	path := field.NewPath("extra", "key")
	for _, k := range keys {
		vs := extra[k]
		switch {
		case k == "":
			return "impersonating the empty string key in extra is not allowed"
		case len(validation.IsDomainPrefixedPath(path, k)) > 0:
			return "impersonating an invalid key in extra is not allowed: " + validation.IsDomainPrefixedPath(path, k).ToAggregate().Error()
		case k != strings.ToLower(k):
			return fmt.Sprintf("impersonating a non-lowercase key in extra is not allowed: %q", k)
		case len(vs) == 0:
			return "impersonating empty values in extra is not allowed"
		case slices.Contains(vs, ""):
			return "impersonating the empty string value in extra is not allowed"
		}
	}
	return ""
}

// manyExtra says whether extras hold many keys or many values in all.
func manyExtra(extra map[string][]string) bool {
	if len(extra) >= manyChecks {
		return true
	}
	n := 0
	for _, vs := range extra {
		if n += len(vs); n >= manyChecks {
			return true
		}
	}
	return false
}

// check is the attributes of one impersonation check: requestor doing
// verb on a resource named name in group (version v1), at the cluster
// scope.
func check(requestor request.User, verb, group, resource, name string) request.Attributes {
	return request.Attributes{User: requestor, Info: request.Info{
		IsResourceRequest: true, Verb: verb, APIGroup: group, APIVersion: "v1", Resource: resource, Name: name,
	}}
}

// allowed asks z about c: nil when it allows, else the 403 naming what
// was asked, with the reason (and the error, first, when z failed).
func allowed(ctx context.Context, z authz.Authorizer, c *request.Attributes) *metav1.Status {
	d, reason, err := z.Authorize(ctx, c)
	if d == authz.Allow {
		return nil
	}
	msg := reason
	if err != nil {
		msg = err.Error()
		if reason != "" {
			msg += ": " + reason
		}
	}
	return forbidden(c, msg)
}

// forbidden is kube-apiserver's 403 for c, reason after it.
func forbidden(c *request.Attributes, reason string) *metav1.Status {
	return authz.ForbiddenStatus(c.User.Name, c.Info, reason)
}

// withGroup returns groups with g at the end, unless it is there already;
// it never writes into groups' array.
func withGroup(groups []string, g string) []string {
	if slices.Contains(groups, g) {
		return groups
	}
	return append(slices.Clip(groups), g)
}

// sortedKeys returns the keys of m in order, an empty (not nil) list for
// none.
func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
