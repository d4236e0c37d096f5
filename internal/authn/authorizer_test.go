package authn

import (
	"net/http"
	"testing"

	"github.com/apfproject/apf/request"
)

func TestAuthorize(t *testing.T) {
	_, z := mustNew(t, Options{AdminGroups: []string{"apf-admins", " "}})
	anon := *anonymousUser
	alice := request.User{Name: "alice", Groups: []string{"dev", request.AllAuthenticatedGroup}}
	master := request.User{Name: "root", Groups: []string{request.SystemMastersGroup, request.AllAuthenticatedGroup}}
	admin := request.User{Name: "ops", Groups: []string{"apf-admins", request.AllAuthenticatedGroup}}
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
			{anon, tc.want.anon}, {bare, tc.want.anon}, {alice, tc.want.user},
			{admin, tc.want.admin}, {master, tc.want.admin},
		} {
			if got := z.Authorize(c.u, info) == Allow; got != c.want {
				t.Errorf("%s %s as %s: allowed %v, want %v", tc.method, tc.path, c.u.Name, got, c.want)
			}
		}
	}
	if !z.IsAdmin(admin) || !z.IsAdmin(master) || z.IsAdmin(alice) {
		t.Error("IsAdmin")
	}
	if Allow.String() != "Allow" || Deny.String() != "Deny" {
		t.Error("Decision.String")
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
