package authz

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apfproject/apf/request"
)

// FuzzABACPolicy checks that any policy file is either refused with an
// error naming a line or read into policies that
//   - never reach an anonymous caller by a wildcard: a policy matches
//     system:anonymous only if it names that user or the group
//     system:unauthenticated (or the caller's other groups);
//   - read back the same when written as versioned lines (the defaults
//     of either format are applied once, at reading);
//   - decide any request without failing, Allow or "No policy matched.".
func FuzzABACPolicy(f *testing.F) {
	for _, p := range examplePolicies {
		f.Add(p)
	}
	f.Add("# comment\n\n{\"user\":\"carol\"}\r\n{\"readonly\":true}\n")
	f.Add(`{"apiVersion":"abac.authorization.kubernetes.io/v0","kind":"Policy","user":"*","namespace":"ns"}`)
	f.Add(`{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"*","nonResourcePath":"/a**"}}`)
	f.Add("{\"user\": }\n")
	f.Fuzz(func(t *testing.T, in string) {
		z, err := ParseABAC([]byte(in), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "policy file fuzz, line ") {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		var again []string
		for _, p := range z.policies {
			spec, err := json.Marshal(abacSpec(p))
			if err != nil {
				t.Fatal(err)
			}
			again = append(again, v1b1(string(spec)))
		}
		z2, err := ParseABAC([]byte(strings.Join(again, "\n")), "again")
		if err != nil {
			t.Fatalf("written back: %v", err)
		}
		if len(z2.policies) != len(z.policies) {
			t.Fatalf("written back: %d policies, want %d", len(z2.policies), len(z.policies))
		}
		for i := range z.policies {
			if z.policies[i] != z2.policies[i] {
				t.Fatalf("policy %d written back: %+v, read %+v", i, z.policies[i], z2.policies[i])
			}
		}

		anon := request.User{Name: request.AnonymousUser, Groups: []string{request.AllUnauthenticatedGroup}}
		for _, p := range z.policies {
			if p.subjectMatches(anon) && p.User != request.AnonymousUser && p.Group != request.AllUnauthenticatedGroup {
				t.Fatalf("%+v matches anonymous", p)
			}
		}
		for _, info := range []request.Info{
			{Verb: "get", Path: "/healthz"},
			{Verb: "post", Path: "/a/b"},
			{IsResourceRequest: true, Verb: "create", APIGroup: "apps", Resource: "deployments", Namespace: "ns"},
			{IsResourceRequest: true, Verb: "list", Resource: "pods"},
		} {
			for _, u := range []request.User{anon, {Name: "carol", Groups: []string{"g", request.AllAuthenticatedGroup}}} {
				d, reason, err := z.Authorize(context.Background(), &request.Attributes{User: u, Info: info})
				if err != nil || (d != Allow && (d != NoOpinion || reason != "No policy matched.")) {
					t.Fatalf("%+v %+v: %v %q %v", u, info, d, reason, err)
				}
			}
		}
		if _, err := z.RulesFor(context.Background(), anon, "default"); err != nil {
			t.Fatal(err)
		}
	})
}
