package authz

import (
	"context"
	"net/http"
	"reflect"
	"slices"
	"testing"

	"github.com/apfproject/apf/request"
	authorizationv1 "k8s.io/api/authorization/v1"
)

var (
	anonUser   = request.User{Name: request.AnonymousUser, Groups: []string{request.AllUnauthenticatedGroup}}
	aliceUser  = request.User{Name: "alice", Groups: []string{"dev", request.AllAuthenticatedGroup}}
	masterUser = request.User{Name: "root", Groups: []string{request.SystemMastersGroup, request.AllAuthenticatedGroup}}
	opsUser    = request.User{Name: "ops", Groups: []string{"apf-admins", request.AllAuthenticatedGroup}}
)

// TestBuiltin is the Builtin mode's whole table, through the default
// chain (system:masters, then Builtin) as apf serve builds it: what it
// allows is what apf serve allowed before there were modes, plus the self
// reviews every authenticated user may create; everything else is refused.
func TestBuiltin(t *testing.T) {
	o := DefaultOptions()
	o.AdminGroups = []string{"apf-admins", " "}
	z, err := New(o, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A user in no group at all (not even system:authenticated) is
	// treated like anonymous.
	bare := request.User{Name: "bare"}

	const fs = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
	const pl = "/apis/flowcontrol.apiserver.k8s.io/v1beta3/prioritylevelconfigurations"
	type want struct{ anon, user, admin bool }
	for _, tc := range []struct {
		method, path string
		want         want
	}{
		{"GET", "/healthz", want{true, true, true}},
		{"GET", "/healthz/etcd", want{true, true, true}},
		{"GET", "/livez", want{true, true, true}},
		{"GET", "/livez/ping", want{true, true, true}},
		{"GET", "/readyz", want{true, true, true}},
		{"GET", "/readyz/", want{true, true, true}},
		{"GET", "/version", want{true, true, true}},
		{"GET", "/version/", want{true, true, true}},
		{"GET", "/versionx", want{false, false, true}},
		{"GET", "/healthzz", want{false, false, true}},
		{"POST", "/healthz", want{false, false, true}},
		{"HEAD", "/healthz", want{false, false, true}},
		{"GET", "/healthz/../metrics", want{false, false, true}},
		{"GET", "/apis/../metrics", want{false, false, true}},
		{"GET", "/apis/./x", want{false, false, true}},

		{"GET", "/api", want{false, true, true}},
		{"GET", "/api/v1", want{false, true, true}},
		{"GET", "/apis", want{false, true, true}},
		{"GET", "/apis/flowcontrol.apiserver.k8s.io", want{false, true, true}},
		{"GET", "/apis/flowcontrol.apiserver.k8s.io/v1", want{false, true, true}},
		{"GET", "/openapi/v2", want{false, true, true}},
		{"GET", "/openapi/v3/apis/flowcontrol.apiserver.k8s.io/v1", want{false, true, true}},
		{"GET", "/apisx", want{false, false, true}},

		{"GET", fs, want{false, true, true}},
		{"GET", fs + "?watch=true", want{false, true, true}},
		{"GET", "/apis/flowcontrol.apiserver.k8s.io/v1/watch/flowschemas", want{false, true, true}},
		{"GET", fs + "/exempt", want{false, true, true}},
		{"GET", fs + "/exempt/status", want{false, true, true}},
		{"GET", pl + "/global-default/status", want{false, true, true}},
		{"GET", pl, want{false, true, true}},
		{"POST", fs, want{false, false, true}},
		{"PUT", fs + "/x", want{false, false, true}},
		{"PATCH", fs + "/x/status", want{false, false, true}},
		{"DELETE", fs + "/x", want{false, false, true}},
		{"DELETE", pl, want{false, false, true}},
		{"OPTIONS", fs, want{false, false, true}},
		{"GET", fs + "/x/other", want{false, false, true}},
		{"GET", "/apis/flowcontrol.apiserver.k8s.io/v1/other", want{false, false, true}},
		{"GET", "/apis/apps/v1/flowschemas", want{false, false, true}},
		{"GET", "/api/v1/namespaces", want{false, false, true}},
		{"GET", "/api/v1/namespaces/default/secrets/x", want{false, false, true}},

		// The self reviews: every authenticated user may ask.
		{"POST", SelfSubjectAccessReviewPath, want{false, true, true}},
		{"POST", SelfSubjectRulesReviewPath, want{false, true, true}},
		{"GET", SelfSubjectAccessReviewPath, want{false, false, true}},
		{"POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", want{false, false, true}},
		{"POST", "/apis/authorization.k8s.io/v1/namespaces/x/localsubjectaccessreviews", want{false, false, true}},

		{"GET", "/metrics", want{false, false, true}},
		{"GET", "/debug/api_priority_and_fairness/dump_priority_levels", want{false, false, true}},
		{"GET", "/", want{false, false, true}},
		{"GET", "/anything/else", want{false, false, true}},
	} {
		info, err := request.Parse(tc.method, pathOnly(tc.path), queryOnly(tc.path))
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		for _, c := range []struct {
			u    request.User
			want bool
		}{
			{anonUser, tc.want.anon}, {bare, tc.want.anon}, {aliceUser, tc.want.user},
			{opsUser, tc.want.admin}, {masterUser, tc.want.admin},
		} {
			d, reason, err := z.Authorize(context.Background(), &request.Attributes{Info: info, User: c.u})
			if got := d == Allow; got != c.want || err != nil {
				t.Errorf("%s %s as %s: allowed %v (%v), want %v", tc.method, tc.path, c.u.Name, got, err, c.want)
			}
			// Builtin never gives a reason: a refusal reads as it
			// always has.
			if d != Allow && (d != NoOpinion || reason != "") {
				t.Errorf("%s %s as %s: %v %q, want no opinion without a reason", tc.method, tc.path, c.u.Name, d, reason)
			}
		}
	}
	b := NewBuiltin([]string{"apf-admins"})
	if !b.IsAdmin(opsUser) || !b.IsAdmin(masterUser) || b.IsAdmin(aliceUser) {
		t.Error("IsAdmin")
	}
}

func TestBuiltinRules(t *testing.T) {
	b := NewBuiltin([]string{"apf-admins"})
	ctx := context.Background()
	r, err := b.RulesFor(ctx, opsUser, "default")
	if err != nil || !reflect.DeepEqual(r, Rules{
		Resource:    []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
		NonResource: []authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
	}) {
		t.Errorf("admin: %+v %v", r, err)
	}
	r, _ = b.RulesFor(ctx, aliceUser, "default")
	want := Rules{
		Resource: []authorizationv1.ResourceRule{
			{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{FlowcontrolGroup}, Resources: []string{
				"flowschemas", "flowschemas/status", "prioritylevelconfigurations", "prioritylevelconfigurations/status"}},
			{Verbs: []string{"create"}, APIGroups: []string{ReviewGroup}, Resources: []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}},
		},
		NonResource: []authorizationv1.NonResourceRule{
			{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/healthz/*", "/livez", "/livez/*", "/readyz", "/readyz/*", "/version", "/version/"}},
			{Verbs: []string{"get"}, NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*"}},
		},
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("reader:\n%+v\nwant\n%+v", r, want)
	}
	r, _ = b.RulesFor(ctx, anonUser, "default")
	if len(r.Resource) != 0 || len(r.NonResource) != 1 || r.NonResource[0].NonResourceURLs[0] != "/healthz" || r.Incomplete {
		t.Errorf("anonymous: %+v", r)
	}
	// The lists are copies: a caller changing one changes no policy.
	r.NonResource[0].NonResourceURLs[0] = "/metrics"
	if policy[0].paths[0] != "/healthz" {
		t.Error("RulesFor shares the policy's slices")
	}
}

// TestBuiltinMonitoring: members of system:monitoring read /metrics (and
// the health checks, as everyone does) and nothing more than any
// authenticated user; a scraper needs no admin's group.
func TestBuiltinMonitoring(t *testing.T) {
	z, err := New(DefaultOptions(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	scraper := request.User{Name: "system:serviceaccount:monitoring:prometheus",
		Groups: []string{MonitoringGroup, request.AllAuthenticatedGroup}}
	for _, tc := range []struct {
		method, path string
		scraper      bool
	}{
		{"GET", "/metrics", true},
		{"GET", "/metrics/slis", true},
		{"GET", "/livez", true},
		{"GET", "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", true},
		{"POST", "/metrics", false},
		{"GET", "/metrics/other", false},
		{"GET", "/metricsx", false},
		{"GET", "/healthz/../metrics/x", false},
		{"GET", "/debug/api_priority_and_fairness/dump_priority_levels", false},
		{"DELETE", "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/x", false},
	} {
		info, err := request.Parse(tc.method, pathOnly(tc.path), queryOnly(tc.path))
		if err != nil {
			t.Fatal(err)
		}
		d, _, _ := z.Authorize(context.Background(), &request.Attributes{Info: info, User: scraper})
		if got := d == Allow; got != tc.scraper {
			t.Errorf("%s %s as a scraper: allowed %v, want %v", tc.method, tc.path, got, tc.scraper)
		}
	}
	r, _ := NewBuiltin(nil).RulesFor(context.Background(), scraper, "")
	if !slices.ContainsFunc(r.NonResource, func(n authorizationv1.NonResourceRule) bool {
		return slices.Equal(n.NonResourceURLs, []string{"/metrics", "/metrics/slis"})
	}) {
		t.Errorf("a scraper's rules lack /metrics: %+v", r.NonResource)
	}
}

func pathOnly(p string) string {
	r, _ := http.NewRequest("GET", p, nil)
	return r.URL.Path
}

func queryOnly(p string) string {
	r, _ := http.NewRequest("GET", p, nil)
	return r.URL.RawQuery
}
