package authz

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apfproject/apf/request"
)

// TestUpstreamDelegates: the Upstream mode creates a v1
// SubjectAccessReview on the upstream API server, at its resource path,
// with apf's own bearer token, and takes its answer.
func TestUpstreamDelegates(t *testing.T) {
	f := newFakeWebhook(t, false)
	f.setRespond(func(w http.ResponseWriter, body map[string]any) {
		spec, _ := body["spec"].(map[string]any)
		if spec["user"] == "bob" {
			answer(w, `{"allowed":true,"reason":"RBAC: allowed by ClusterRoleBinding \"flow-admins\""}`)
			return
		}
		answer(w, `{"allowed":false}`)
	})
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("apf-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Modes = []string{ModeBuiltin, ModeUpstream}
	c, err := New(o, &Upstream{URL: f.srv.URL, TokenFile: token, Identity: "impersonate"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	create := request.Info{IsResourceRequest: true, Verb: "create", APIGroup: FlowcontrolGroup, APIVersion: "v1", Resource: "flowschemas"}
	bob := request.User{Name: "bob", Groups: []string{request.AllAuthenticatedGroup}}
	d, reason, err := c.Authorize(context.Background(), &request.Attributes{User: bob, Info: create})
	if d != Allow || reason != `RBAC: allowed by ClusterRoleBinding "flow-admins"` || err != nil {
		t.Fatalf("bob: %v %q %v", d, reason, err)
	}
	calls := f.calls()
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	got := calls[0]
	if got.method != "POST" || got.path != "/apis/authorization.k8s.io/v1/subjectaccessreviews" || got.auth != "Bearer apf-token" ||
		got.body["apiVersion"] != "authorization.k8s.io/v1" || got.body["kind"] != "SubjectAccessReview" {
		t.Errorf("request %+v", got)
	}
	if spec := canonical(t, got.body["spec"]); spec != `{"groups":["system:authenticated"],"resourceAttributes":{"group":"flowcontrol.apiserver.k8s.io","resource":"flowschemas","verb":"create","version":"v1"},"user":"bob"}` {
		t.Errorf("spec %s", spec)
	}
	// Builtin answers first: a read is never asked upstream.
	read := create
	read.Verb = "list"
	if d, _, _ := c.Authorize(context.Background(), &request.Attributes{User: aliceUser, Info: read}); d != Allow || len(f.calls()) != 1 {
		t.Errorf("read: %v after %d calls", d, len(f.calls()))
	}
	if d, _, _ := c.Authorize(context.Background(), &request.Attributes{User: aliceUser, Info: create}); d != NoOpinion || len(f.calls()) != 2 {
		t.Errorf("alice: %v after %d calls", d, len(f.calls()))
	}
	// The mode cannot list rules.
	if r, err := c.RulesFor(context.Background(), bob, "default"); !r.Incomplete || err == nil || err.Error() != "upstream authorizer does not support user rule resolution" {
		t.Errorf("rules: %+v %v", r, err)
	}
}

func TestUpstreamRefused(t *testing.T) {
	o := DefaultOptions()
	o.Modes = []string{ModeBuiltin, ModeUpstream}
	for _, tc := range []struct {
		up   *Upstream
		want string
	}{
		{nil, "it needs --upstream"},
		{&Upstream{URL: "http://127.0.0.1:1"}, "--upstream-identity passthrough never uses any"},
		{&Upstream{URL: "http://127.0.0.1:1", Identity: "passthrough"}, "--upstream-identity passthrough never uses any"},
		{&Upstream{URL: "https://127.0.0.1:1", Identity: "front-proxy", CertFile: "c", KeyFile: "k"}, "with --upstream-identity front-proxy apf has none"},
	} {
		if _, err := New(o, tc.up, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.up, err, tc.want)
		}
	}
}
