package impersonation

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/apfproject/apf/internal/auth/authz"
	"github.com/apfproject/apf/request"
)

// policy is an authorizer for the tests: it allows the checks whose
// description (see describe) starts with one of its prefixes, gives
// reason and err with every other answer, and records every check asked.
type policy struct {
	allow  []string
	reason string
	err    error
	asked  []string
}

// describe is one check as "USER VERB GROUP/RESOURCE[/SUBRESOURCE] [NAMESPACE/]NAME"
// for a resource, "USER VERB PATH" otherwise.
func describe(a *request.Attributes) string {
	i := a.Info
	if !i.IsResourceRequest {
		return fmt.Sprintf("%s %s %s", a.User.Name, i.Verb, i.Path)
	}
	r := i.APIGroup + "/" + i.Resource
	if i.Subresource != "" {
		r += "/" + i.Subresource
	}
	n := i.Name
	if i.Namespace != "" {
		n = i.Namespace + "/" + n
	}
	return fmt.Sprintf("%s %s %s %s", a.User.Name, i.Verb, r, n)
}

func (p *policy) Authorize(_ context.Context, a *request.Attributes) (authz.Decision, string, error) {
	d := describe(a)
	p.asked = append(p.asked, d)
	for _, prefix := range p.allow {
		if strings.HasPrefix(d, prefix) {
			return authz.Allow, "", nil
		}
	}
	return authz.NoOpinion, p.reason, p.err
}

// everything allows every check.
var everything = []string{""}

// getVersion is `GET /version` by requestor.
func getVersion(requestor request.User) *request.Attributes {
	return &request.Attributes{User: requestor, Info: request.Info{Path: "/version", Verb: "get"}}
}

// listPods is a list of pods in namespace "default" by requestor.
func listPods(requestor request.User) *request.Attributes {
	return &request.Attributes{User: requestor, Info: request.Info{
		IsResourceRequest: true, Path: "/api/v1/namespaces/default/pods", Verb: "list", APIPrefix: "api", APIVersion: "v1", Namespace: "default", Resource: "pods",
	}}
}

var (
	admin = request.User{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}
	bob   = request.User{Name: "bob", Groups: []string{"devs", "system:authenticated"}}
)

// TestImpersonate: the user granted and the checks asked, in order, for
// each kind of user, as kube-apiserver v1.37 asks them.
func TestImpersonate(t *testing.T) {
	for _, c := range []struct {
		name      string
		allow     []string
		a         *request.Attributes
		want      *request.User
		groups    []string // of the user granted
		asked     []string
		forbidden string // the 403's message, "" when granted
	}{
		{
			name: "the e2e test's: a user and system:authenticated, by an admin",
			a:    getVersion(admin), allow: everything,
			want:   &request.User{Name: "noxu", Groups: []string{"system:authenticated"}},
			groups: []string{"system:authenticated"},
			asked: []string{
				"admin impersonate-on:user-info:get /version",
				"admin impersonate:user-info authentication.k8s.io/users noxu",
				"admin impersonate:user-info authentication.k8s.io/groups system:authenticated",
			},
		},
		{
			name: "a user alone joins system:authenticated",
			a:    listPods(admin), allow: everything,
			want:   &request.User{Name: "noxu"},
			groups: []string{"system:authenticated"},
			asked: []string{
				"admin impersonate-on:user-info:list /pods default/",
				"admin impersonate:user-info authentication.k8s.io/users noxu",
			},
		},
		{
			name: "system:unauthenticated keeps a user out of system:authenticated",
			a:    listPods(admin), allow: everything,
			want:   &request.User{Name: "noxu", Groups: []string{"system:unauthenticated"}},
			groups: []string{"system:unauthenticated"},
		},
		{
			name: "system:anonymous joins system:unauthenticated, whatever it asks",
			a:    listPods(admin), allow: everything,
			want:   &request.User{Name: "system:anonymous", Groups: []string{"system:authenticated"}},
			groups: []string{"system:authenticated", "system:unauthenticated"},
		},
		{
			name: "a service account by name: its two groups",
			a:    listPods(admin), allow: everything,
			want:   &request.User{Name: "system:serviceaccount:kube-system:default"},
			groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
			asked: []string{
				"admin impersonate-on:serviceaccount:list /pods default/",
				"admin impersonate:serviceaccount authentication.k8s.io/serviceaccounts kube-system/default",
			},
		},
		{
			name: "a service account with groups: the legacy mode, the groups asked for",
			a:    listPods(admin), allow: everything,
			want:   &request.User{Name: "system:serviceaccount:kube-system:default", Groups: []string{"ops"}},
			groups: []string{"ops", "system:authenticated"},
			asked: []string{
				"admin impersonate /serviceaccounts kube-system/default",
				"admin impersonate /groups ops",
			},
		},
		{
			name: "a node by name: system:nodes",
			a:    listPods(admin), allow: everything,
			want:   &request.User{Name: "system:node:worker-1"},
			groups: []string{"system:nodes", "system:authenticated"},
			asked: []string{
				"admin impersonate-on:arbitrary-node:list /pods default/",
				"admin impersonate:arbitrary-node authentication.k8s.io/nodes worker-1",
			},
		},
		{
			name: "a node name that is not a valid node is a user",
			a:    listPods(admin), allow: everything,
			want:   &request.User{Name: "system:node:Not_A_Node"},
			groups: []string{"system:authenticated"},
			asked: []string{
				"admin impersonate-on:user-info:list /pods default/",
				"admin impersonate:user-info authentication.k8s.io/users system:node:Not_A_Node",
			},
		},
		{
			name: "uid, groups and extras in kube-apiserver's order",
			a:    listPods(admin), allow: everything,
			want: &request.User{Name: "noxu", UID: "u-1", Groups: []string{"devs"}, Extra: map[string][]string{
				"example.com/team": {"blue"}, "example.com/scopes": {"view", "edit"}}},
			groups: []string{"devs", "system:authenticated"},
			asked: []string{
				"admin impersonate-on:user-info:list /pods default/",
				"admin impersonate:user-info authentication.k8s.io/users noxu",
				"admin impersonate:user-info authentication.k8s.io/uids u-1",
				"admin impersonate:user-info authentication.k8s.io/groups devs",
				"admin impersonate:user-info authentication.k8s.io/userextras/example.com/scopes view",
				"admin impersonate:user-info authentication.k8s.io/userextras/example.com/scopes edit",
				"admin impersonate:user-info authentication.k8s.io/userextras/example.com/team blue",
			},
		},
		{
			name: "many groups are asked for at once first",
			a:    listPods(admin), allow: everything,
			want:   &request.User{Name: "noxu", Groups: []string{"a", "b", "c", "d"}},
			groups: []string{"a", "b", "c", "d", "system:authenticated"},
			asked: []string{
				"admin impersonate-on:user-info:list /pods default/",
				"admin impersonate:user-info authentication.k8s.io/users noxu",
				"admin impersonate:user-info authentication.k8s.io/groups *",
			},
		},
		{
			name: "system:masters is refused by the constrained modes, granted by the legacy one",
			a:    listPods(admin), allow: everything,
			want:   &request.User{Name: "noxu", Groups: []string{"system:masters"}},
			groups: []string{"system:masters", "system:authenticated"},
			asked: []string{
				"admin impersonate-on:user-info:list /pods default/",
				"admin impersonate:user-info authentication.k8s.io/users noxu",
				"admin impersonate /users noxu",
				"admin impersonate /groups system:masters",
			},
		},
		{
			name: "a malformed extra key is refused by the constrained modes, granted by the legacy one",
			a:    listPods(admin), allow: everything,
			want:   &request.User{Name: "noxu", Extra: map[string][]string{"scopes": {"x"}}},
			groups: []string{"system:authenticated"},
			asked: []string{
				"admin impersonate-on:user-info:list /pods default/",
				"admin impersonate:user-info authentication.k8s.io/users noxu",
				"admin impersonate /users noxu",
				"admin impersonate authentication.k8s.io/userextras/scopes x",
			},
		},
		{
			name: "legacy rights alone: the constrained check is refused, the legacy mode grants",
			a:    getVersion(bob), allow: []string{"bob impersonate /users noxu", "bob impersonate /groups "},
			want:   &request.User{Name: "noxu", Groups: []string{"devs"}},
			groups: []string{"devs", "system:authenticated"},
			asked: []string{
				"bob impersonate-on:user-info:get /version",
				"bob impersonate /users noxu",
				"bob impersonate /groups devs",
			},
		},
		{
			name: "no right: the first refusal, the constrained mode's",
			a:    getVersion(bob),
			want: &request.User{Name: "noxu", Groups: []string{"system:authenticated"}},
			asked: []string{
				"bob impersonate-on:user-info:get /version",
				"bob impersonate /users noxu",
			},
			forbidden: `forbidden: User "bob" cannot impersonate-on:user-info:get path "/version"`,
		},
		{
			name:      "no right on a resource request",
			a:         listPods(bob),
			want:      &request.User{Name: "noxu"},
			forbidden: `pods is forbidden: User "bob" cannot impersonate-on:user-info:list resource "pods" in API group "" in the namespace "default"`,
		},
		{
			name:      "the right to act, not to be the user",
			a:         listPods(bob),
			allow:     []string{"bob impersonate-on:user-info:list"},
			want:      &request.User{Name: "noxu"},
			forbidden: `users.authentication.k8s.io "noxu" is forbidden: User "bob" cannot impersonate:user-info resource "users" in API group "authentication.k8s.io" at the cluster scope`,
		},
		{
			name:      "a service account refused",
			a:         listPods(bob),
			want:      &request.User{Name: "system:serviceaccount:ns1:sa1"},
			forbidden: `pods is forbidden: User "bob" cannot impersonate-on:serviceaccount:list resource "pods" in API group "" in the namespace "default"`,
		},
		{
			name:      "a service account with groups refused: the legacy mode's words",
			a:         listPods(bob),
			want:      &request.User{Name: "system:serviceaccount:ns1:sa1", Groups: []string{"g"}},
			forbidden: `serviceaccounts "sa1" is forbidden: User "bob" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns1"`,
		},
		{
			name:      "the empty group",
			a:         listPods(bob),
			allow:     []string{"bob impersonate-on:", "bob impersonate:"},
			want:      &request.User{Name: "noxu", Groups: []string{""}},
			forbidden: `groups.authentication.k8s.io is forbidden: User "bob" cannot impersonate:user-info resource "groups" in API group "authentication.k8s.io" at the cluster scope: impersonating the empty string group is not allowed`,
		},
		{
			name:      "system:masters",
			a:         listPods(bob),
			allow:     []string{"bob impersonate-on:", "bob impersonate:"},
			want:      &request.User{Name: "noxu", Groups: []string{"devs", "system:masters"}},
			forbidden: `groups.authentication.k8s.io "system:masters" is forbidden: User "bob" cannot impersonate:user-info resource "groups" in API group "authentication.k8s.io" at the cluster scope: impersonating the system:masters group is not allowed`,
		},
		{
			name:      "an extra key with upper case",
			a:         listPods(bob),
			allow:     []string{"bob impersonate-on:", "bob impersonate:"},
			want:      &request.User{Name: "noxu", Extra: map[string][]string{"example.com/Team": {"blue"}}},
			forbidden: `userextras.authentication.k8s.io is forbidden: User "bob" cannot impersonate:user-info resource "userextras" in API group "authentication.k8s.io" at the cluster scope: impersonating a non-lowercase key in extra is not allowed: "example.com/Team"`,
		},
		{
			name:      "an extra key that is not a domain-prefixed path",
			a:         listPods(bob),
			allow:     []string{"bob impersonate-on:", "bob impersonate:"},
			want:      &request.User{Name: "noxu", Extra: map[string][]string{"scopes": {"x"}}},
			forbidden: `userextras.authentication.k8s.io is forbidden: User "bob" cannot impersonate:user-info resource "userextras" in API group "authentication.k8s.io" at the cluster scope: impersonating an invalid key in extra is not allowed: extra.key: Invalid value: "scopes": must be a domain-prefixed path (such as "acme.io/foo")`,
		},
		{
			name:      "an extra value refused: the key is the subresource",
			a:         listPods(bob),
			allow:     []string{"bob impersonate-on:", "bob impersonate:user-info authentication.k8s.io/users"},
			want:      &request.User{Name: "noxu", Extra: map[string][]string{"example.com/team": {"blue"}}},
			forbidden: `userextras.authentication.k8s.io "blue" is forbidden: User "bob" cannot impersonate:user-info resource "userextras/example.com/team" in API group "authentication.k8s.io" at the cluster scope`,
		},
		{
			name:      "a uid refused",
			a:         listPods(bob),
			allow:     []string{"bob impersonate-on:", "bob impersonate:user-info authentication.k8s.io/users"},
			want:      &request.User{Name: "noxu", UID: "u-1"},
			forbidden: `uids.authentication.k8s.io "u-1" is forbidden: User "bob" cannot impersonate:user-info resource "uids" in API group "authentication.k8s.io" at the cluster scope`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &policy{allow: c.allow}
			u, st := NewChecker().Impersonate(context.Background(), p, c.want, c.a)
			if c.forbidden != "" {
				if u != nil || st == nil || st.Code != http.StatusForbidden || st.Reason != "Forbidden" || st.Message != c.forbidden {
					t.Fatalf("got %+v, %+v; want the 403 %q", u, st, c.forbidden)
				}
			} else {
				if st != nil {
					t.Fatalf("refused: %s", st.Message)
				}
				want := *c.want
				want.Groups = c.groups
				if !reflect.DeepEqual(*u, want) {
					t.Fatalf("granted %+v, want %+v", *u, want)
				}
			}
			if c.asked != nil && !reflect.DeepEqual(p.asked, c.asked) {
				t.Errorf("asked\n  %s\nwant\n  %s", strings.Join(p.asked, "\n  "), strings.Join(c.asked, "\n  "))
			}
		})
	}
}

// TestImpersonateReasons: the authorizer's reason follows the 403's
// message, after its error when it failed.
func TestImpersonateReasons(t *testing.T) {
	want := &request.User{Name: "noxu"}
	for _, c := range []struct {
		reason string
		err    error
		msg    string
	}{
		{"abac: No policy matched.", nil, `forbidden: User "bob" cannot impersonate-on:user-info:get path "/version": abac: No policy matched.`},
		{"", errors.New("webhook down"), `forbidden: User "bob" cannot impersonate-on:user-info:get path "/version": webhook down`},
		{"default: nope", errors.New("webhook down"), `forbidden: User "bob" cannot impersonate-on:user-info:get path "/version": webhook down: default: nope`},
	} {
		_, st := NewChecker().Impersonate(context.Background(), &policy{reason: c.reason, err: c.err}, want, getVersion(bob))
		if st == nil || st.Message != c.msg {
			t.Errorf("reason %q, error %v: %+v; want %q", c.reason, c.err, st, c.msg)
		}
	}
}

// TestImpersonateRemembersTheMode: the mode that last served a requestor
// is tried first, so its refusal is the one a later request gets, as in
// kube-apiserver; a requestor never served gets the first mode's.
func TestImpersonateRemembersTheMode(t *testing.T) {
	p := &policy{allow: []string{"bob impersonate /users noxu"}}
	c := NewChecker()
	if _, st := c.Impersonate(context.Background(), p, &request.User{Name: "noxu"}, getVersion(bob)); st != nil {
		t.Fatalf("noxu refused: %s", st.Message)
	}
	legacy := `users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope`
	constrained := `forbidden: User "bob" cannot impersonate-on:user-info:get path "/version"`
	if _, st := c.Impersonate(context.Background(), p, &request.User{Name: "alice"}, getVersion(bob)); st == nil || st.Message != legacy {
		t.Errorf("after the legacy mode served bob: %+v; want %q", st, legacy)
	}
	if _, st := NewChecker().Impersonate(context.Background(), p, &request.User{Name: "alice"}, getVersion(bob)); st == nil || st.Message != constrained {
		t.Errorf("a fresh checker: %+v; want %q", st, constrained)
	}
	// carol was never served: her refusal is the first mode's.
	carol := request.User{Name: "carol"}
	if _, st := c.Impersonate(context.Background(), p, &request.User{Name: "alice"}, getVersion(carol)); st == nil || !strings.Contains(st.Message, "impersonate-on:user-info:get") {
		t.Errorf("carol: %+v", st)
	}
}

// TestImpersonateAssociatedNode: a service account bound to a pod may be
// the node the pod runs on through the associated-node mode, whose checks
// name the requestor with only the keys of its extras and the node "*".
func TestImpersonateAssociatedNode(t *testing.T) {
	sa := request.User{Name: "system:serviceaccount:kube-system:agent", Groups: []string{"system:serviceaccounts", "system:authenticated"},
		Extra: map[string][]string{"authentication.kubernetes.io/node-name": {"worker-1"}, "authentication.kubernetes.io/pod-name": {"agent-x"}}}
	var extras []map[string][]string
	p := authorizerFunc(func(a *request.Attributes) bool {
		extras = append(extras, a.User.Extra)
		return strings.HasPrefix(a.Info.Verb, "impersonate-on:associated-node:") ||
			(a.Info.Verb == "impersonate:associated-node" && a.Info.Resource == "nodes" && a.Info.Name == "*")
	})
	u, st := NewChecker().Impersonate(context.Background(), p, &request.User{Name: "system:node:worker-1"}, listPods(sa))
	if st != nil {
		t.Fatalf("refused: %s", st.Message)
	}
	if want := (request.User{Name: "system:node:worker-1", Groups: []string{"system:nodes", "system:authenticated"}}); !reflect.DeepEqual(*u, want) {
		t.Errorf("granted %+v", *u)
	}
	keys := map[string][]string{"authentication.kubernetes.io/associated-node-keys": {"authentication.kubernetes.io/node-name", "authentication.kubernetes.io/pod-name"}}
	if len(extras) != 2 || !reflect.DeepEqual(extras[0], keys) || !reflect.DeepEqual(extras[1], keys) {
		t.Errorf("the checks named the requestor with extras %v", extras)
	}
	// Another node is not the associated one: that mode does not apply.
	if _, st := NewChecker().Impersonate(context.Background(), p, &request.User{Name: "system:node:worker-2"}, listPods(sa)); st == nil ||
		!strings.Contains(st.Message, "impersonate-on:arbitrary-node:list") {
		t.Errorf("another node: %+v", st)
	}
}

type authorizerFunc func(a *request.Attributes) bool

func (f authorizerFunc) Authorize(_ context.Context, a *request.Attributes) (authz.Decision, string, error) {
	if f(a) {
		return authz.Allow, "", nil
	}
	return authz.NoOpinion, "", nil
}
