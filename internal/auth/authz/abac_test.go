package authz

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apfproject/apf/request"
	authorizationv1 "k8s.io/api/authorization/v1"
)

func mustABAC(t testing.TB, lines ...string) *ABAC {
	t.Helper()
	z, err := ParseABAC([]byte(strings.Join(lines, "\n")), "policy.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// v1b1 is a versioned policy line with the given spec.
func v1b1(spec string) string {
	return `{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": ` + spec + `}`
}

func TestParseABAC(t *testing.T) {
	for _, tc := range []struct {
		name        string
		in          string
		want        []abacPolicy
		unversioned int
		err         string
	}{
		{name: "versioned", in: v1b1(`{"user":"alice","namespace":"*","resource":"*","apiGroup":"*"}`),
			want: []abacPolicy{{User: "alice", Namespace: "*", Resource: "*", APIGroup: "*"}}},
		{name: "every field", in: v1b1(`{"user":"u","group":"g","readonly":true,"apiGroup":"apps","resource":"deployments","namespace":"ns","nonResourcePath":"/x/*"}`),
			want: []abacPolicy{{User: "u", Group: "g", Readonly: true, APIGroup: "apps", Resource: "deployments", Namespace: "ns", NonResourcePath: "/x/*"}}},
		{name: "comments, blank lines, CRLF, unknown fields", in: "# a comment\n\n   # indented\r\n" +
			v1b1(`{"user":"a","nonResourcePath":"/x","color":"red"}`) + "\r\n  \t\n" + v1b1(`{"group":"b","resource":"pods","namespace":"*"}`) + "\n",
			want: []abacPolicy{{User: "a", NonResourcePath: "/x"}, {Group: "b", Resource: "pods", Namespace: "*"}}},
		{name: "user * is every authenticated user", in: v1b1(`{"user":"*","group":"ops","nonResourcePath":"*"}`),
			want: []abacPolicy{{Group: "system:authenticated", NonResourcePath: "*"}}},
		{name: "group * too", in: v1b1(`{"group":"*","readonly":true,"nonResourcePath":"*"}`),
			want: []abacPolicy{{Group: "system:authenticated", Readonly: true, NonResourcePath: "*"}}},
		{name: "no spec matches nobody", in: `{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy"}`,
			want: []abacPolicy{{}}},

		// The unversioned format and its defaults.
		{name: "unversioned user", in: `{"user":"carol"}`, unversioned: 1,
			want: []abacPolicy{{User: "carol", Namespace: "*", Resource: "*", APIGroup: "*", NonResourcePath: "*"}}},
		{name: "unversioned, nobody named", in: `{"readonly":true}`, unversioned: 1,
			want: []abacPolicy{{Group: "system:authenticated", Readonly: true, Namespace: "*", Resource: "*", APIGroup: "*", NonResourcePath: "*"}}},
		{name: "unversioned resource", in: `{"user":"dave","resource":"pods","apiGroup":"ignored","nonResourcePath":"ignored"}`, unversioned: 1,
			want: []abacPolicy{{User: "dave", Namespace: "*", Resource: "pods", APIGroup: "*"}}},
		{name: "unversioned namespace, user *", in: `{"user":"*","namespace":"ns"}`, unversioned: 1,
			want: []abacPolicy{{Group: "system:authenticated", Namespace: "ns", Resource: "*", APIGroup: "*"}}},
		{name: "unversioned with kind only", in: `{"kind":"Policy","group":"g"}`, unversioned: 1,
			want: []abacPolicy{{Group: "g", Namespace: "*", Resource: "*", APIGroup: "*", NonResourcePath: "*"}}},
		{name: "v0 named is not unversioned", in: `{"apiVersion":"abac.authorization.kubernetes.io/v0","kind":"Policy","user":"e","spec":{"user":"ignored"}}`,
			want: []abacPolicy{{User: "e", Namespace: "*", Resource: "*", APIGroup: "*", NonResourcePath: "*"}}},
		{name: "empty file", in: "", want: nil},

		// Errors name the line.
		{name: "bad JSON", in: "# one\n" + v1b1(`{"user":"a"}`) + "\n{\"user\": }\n", err: "policy file policy.jsonl, line 3: {\"user\": }: "},
		{name: "not an object", in: `["user"]`, err: "line 1: [\"user\"]: not a JSON object"},
		{name: "null", in: `null`, err: "line 1: null: not a JSON object"},
		{name: "v1beta1 without kind", in: `{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","spec":{"user":"a"}}`, err: `line 1: `},
		{name: "another kind", in: `{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Role","spec":{}}`, err: `apiVersion "abac.authorization.kubernetes.io/v1beta1" and kind "Role"`},
		{name: "another version", in: `{"apiVersion":"v1","kind":"Policy"}`, err: `apiVersion "v1" and kind "Policy"`},
		{name: "wrong type", in: v1b1(`{"user":5}`), err: "line 1: "},
		{name: "readonly as a string", in: v1b1(`{"user":"a","readonly":"true"}`), err: "line 1: "},
		{name: "wrong type, unversioned", in: `{"user":["a"]}`, err: "line 1: "},
		{name: "trailing garbage", in: v1b1(`{"user":"a"}`) + " x", err: "line 1: "},
		{name: "apiVersion not a string", in: `{"apiVersion":1}`, err: "line 1: "},
		{name: "line too long", in: v1b1(`{"user":"a"}`) + "\n" + v1b1(`{"user":"`+strings.Repeat("a", maxABACLine)+`"}`),
			err: "policy file policy.jsonl, line 2: the line is longer than 65536 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z, err := ParseABAC([]byte(tc.in), "policy.jsonl")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(z.policies, tc.want) || z.Unversioned != tc.unversioned {
				t.Errorf("got %+v (%d unversioned)\nwant %+v (%d)", z.policies, z.Unversioned, tc.want, tc.unversioned)
			}
		})
	}
}

// examplePolicies are the policy file format's documented examples.
var examplePolicies = []string{
	// Alice can do anything to all resources.
	v1b1(`{"user": "alice", "namespace": "*", "resource": "*", "apiGroup": "*"}`),
	// The kubelet can read any pods, and read and write events.
	v1b1(`{"user": "kubelet", "namespace": "*", "resource": "pods", "readonly": true}`),
	v1b1(`{"user": "kubelet", "namespace": "*", "resource": "events"}`),
	// Bob can just read pods in namespace projectCaribou.
	v1b1(`{"user": "bob", "namespace": "projectCaribou", "resource": "pods", "readonly": true}`),
	// Anyone can make read-only requests to all non-resource paths.
	v1b1(`{"group": "system:authenticated", "readonly": true, "nonResourcePath": "*"}`),
	v1b1(`{"group": "system:unauthenticated", "readonly": true, "nonResourcePath": "*"}`),
	// Every authenticated user may write /metrics-like paths under /x/.
	v1b1(`{"user": "*", "nonResourcePath": "/x/*"}`),
	// The ops group may do anything to flowcontrol resources, cluster-wide.
	v1b1(`{"group": "ops", "resource": "*", "apiGroup": "flowcontrol.apiserver.k8s.io"}`),
	// A service account may do anything in its namespace.
	v1b1(`{"user": "system:serviceaccount:kube-system:default", "namespace": "kube-system", "resource": "*", "apiGroup": "*"}`),
}

func TestABACMatches(t *testing.T) {
	z := mustABAC(t, examplePolicies...)
	authed := func(name string, groups ...string) request.User {
		return request.User{Name: name, Groups: append(groups, request.AllAuthenticatedGroup)}
	}
	res := func(verb, group, resource, sub, ns string) request.Info {
		return request.Info{IsResourceRequest: true, Verb: verb, APIGroup: group, APIVersion: "v1", Resource: resource, Subresource: sub, Namespace: ns}
	}
	path := func(verb, p string) request.Info { return request.Info{Verb: verb, Path: p} }
	for _, tc := range []struct {
		u    request.User
		info request.Info
		want bool
	}{
		{authed("alice"), res("create", "apps", "deployments", "", "prod"), true},
		{authed("alice"), res("delete", "", "nodes", "", ""), true},
		{authed("alice"), path("post", "/metrics"), false},
		{authed("alice"), path("get", "/metrics"), true}, // as an authenticated user

		{authed("kubelet"), res("list", "", "pods", "", "any"), true},
		{authed("kubelet"), res("get", "", "pods", "log", "any"), true}, // subresources are the resource's
		{authed("kubelet"), res("create", "", "pods", "", "any"), false},
		{authed("kubelet"), res("get", "apps", "pods", "", "any"), false}, // no apiGroup is the core group
		{authed("kubelet"), res("create", "", "events", "", "any"), true},
		{authed("kubelet"), res("watch", "", "events", "", ""), true},

		{authed("bob"), res("get", "", "pods", "", "projectCaribou"), true},
		{authed("bob"), res("watch", "", "pods", "", "projectCaribou"), true},
		{authed("bob"), res("create", "", "pods", "", "projectCaribou"), false},
		{authed("bob"), res("list", "", "pods", "", "other"), false},
		{authed("bob"), res("list", "", "pods", "", ""), false}, // all namespaces is not projectCaribou

		{anonUser, path("get", "/healthz"), true},
		{anonUser, path("post", "/healthz"), false},
		{anonUser, path("put", "/x/y"), false}, // "*" users are authenticated ones
		{anonUser, res("get", "", "pods", "", "default"), false},

		{authed("eve"), path("get", "/version"), true},
		{authed("eve"), path("put", "/x/y"), true},
		{authed("eve"), path("put", "/x/"), true},
		{authed("eve"), path("put", "/x"), false},
		{authed("eve"), path("put", "/xy"), false},
		{authed("eve"), res("get", "", "pods", "", "default"), false},
		// A non-resource policy never matches a resource request.
		{authed("eve"), res("get", "", "x", "", ""), false},

		{authed("olga", "ops"), res("create", "flowcontrol.apiserver.k8s.io", "flowschemas", "", ""), true},
		{authed("olga", "ops"), res("patch", "flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations", "status", ""), true},
		{authed("olga", "ops"), res("create", "apps", "deployments", "", ""), false},
		// No namespace in the policy matches only requests without one.
		{authed("olga", "ops"), res("create", "flowcontrol.apiserver.k8s.io", "flowschemas", "", "default"), false},

		{authed("system:serviceaccount:kube-system:default", "system:serviceaccounts"), res("delete", "", "secrets", "", "kube-system"), true},
		{authed("system:serviceaccount:kube-system:default", "system:serviceaccounts"), res("delete", "", "secrets", "", "default"), false},
		// A user with no groups at all matches only by name.
		{request.User{Name: "mallory"}, path("get", "/healthz"), false},
	} {
		d, reason, err := z.Authorize(context.Background(), &request.Attributes{User: tc.u, Info: tc.info})
		if got := d == Allow; got != tc.want || err != nil {
			t.Errorf("%s %+v: allowed %v, want %v", tc.u.Name, tc.info, got, tc.want)
		}
		if d != Allow && (d != NoOpinion || reason != "No policy matched.") {
			t.Errorf("%s %+v: %v %q", tc.u.Name, tc.info, d, reason)
		}
	}
}

func TestABACRules(t *testing.T) {
	z := mustABAC(t, append(examplePolicies, `{"user":"bob","resource":"configmaps","readonly":true}`)...)
	bob := request.User{Name: "bob", Groups: []string{request.AllAuthenticatedGroup}}
	r, err := z.RulesFor(context.Background(), bob, "projectCaribou")
	read := []string{"get", "list", "watch"}
	// The versioned non-resource policies name no namespace, so they are
	// listed in none (a review always names one), as kube-apiserver lists
	// them; the unversioned line's namespace is every namespace.
	want := Rules{Resource: []authorizationv1.ResourceRule{
		{Verbs: read, APIGroups: []string{""}, Resources: []string{"pods"}},
		{Verbs: read, APIGroups: []string{"*"}, Resources: []string{"configmaps"}},
	}}
	if err != nil || !reflect.DeepEqual(r, want) {
		t.Errorf("bob in projectCaribou:\n%+v\nwant\n%+v", r, want)
	}
	r, _ = z.RulesFor(context.Background(), bob, "other")
	if len(r.Resource) != 1 || r.Resource[0].Resources[0] != "configmaps" {
		t.Errorf("bob elsewhere: %+v", r)
	}
	r, _ = z.RulesFor(context.Background(), anonUser, "default")
	if len(r.Resource)+len(r.NonResource) != 0 || r.Incomplete {
		t.Errorf("anonymous: %+v", r)
	}
}

func TestLoadABAC(t *testing.T) {
	p := filepath.Join(t.TempDir(), "policy.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(examplePolicies, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	z, err := LoadABAC(p)
	if err != nil || len(z.policies) != len(examplePolicies) {
		t.Fatalf("%v, %d policies", err, len(z.policies))
	}
	if _, err := LoadABAC(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "--authorization-policy-file") {
		t.Errorf("missing file: %v", err)
	}
}
