package server

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apfproject/apf/apfhttp"
	"github.com/apfproject/apf/internal/testing/testpki"
)

// TestGatewayImpersonation runs the gateway in each identity mode in front
// of an HTTPS upstream that records what it saw and answers self access
// reviews (it allows the admin everything, and nobody else anything), and
// checks, as Kubernetes' own e2e test of APF classification does, that an
// admin impersonating noxu is classified by the gateway's FlowSchema for
// noxu; what the upstream learns of the impersonation in each mode; and
// that a caller who may not impersonate is refused with kube-apiserver's
// 403 before APF, nothing forwarded.
func TestGatewayImpersonation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	// What the upstream must see of the admin's impersonation of noxu
	// (groups system:authenticated and devs, UID u-1, an extra
	// example.com/team=blue) in each mode.
	type mode struct {
		name string
		tune func(t *testing.T, o *Options, apfCA *testpki.CA)
		want upstreamView
		// reviews says whether apf asks the upstream (passthrough)
		// rather than its own chain.
		reviews bool
	}
	modes := []mode{
		{
			// The caller's own credentials and its impersonation
			// headers, unchanged: the upstream authorizes and does the
			// impersonation again (and audits it).
			name: "passthrough", reviews: true,
			tune: func(t *testing.T, o *Options, _ *testpki.CA) { o.UpstreamIdentity = "passthrough" },
			want: upstreamView{auth: "Bearer " + adminToken, identity: map[string][]string{
				"impersonate-user": {"noxu"}, "impersonate-group": {"system:authenticated", "devs"}, "impersonate-uid": {"u-1"},
				"impersonate-extra-example.com%2fteam": {"blue"},
			}},
		},
		{
			// apf names the impersonated user with its own credentials.
			name: "impersonate",
			tune: func(t *testing.T, o *Options, apfCA *testpki.CA) {
				o.UpstreamIdentity = "impersonate"
				o.UpstreamCertFile, o.UpstreamKeyFile = testpki.WriteFiles(t, apfCA.Issue(t, "apf-impersonator", nil))
			},
			want: upstreamView{cert: "apf-impersonator", identity: map[string][]string{
				"impersonate-user": {"noxu"}, "impersonate-group": {"devs"}, "impersonate-uid": {"u-1"},
				"impersonate-extra-example.com%2fteam": {"blue"},
			}},
		},
		{
			name: "front-proxy",
			tune: func(t *testing.T, o *Options, apfCA *testpki.CA) {
				o.UpstreamIdentity = "front-proxy"
				o.UpstreamCertFile, o.UpstreamKeyFile = testpki.WriteFiles(t, apfCA.Issue(t, "apf-front-proxy", nil))
			},
			want: upstreamView{cert: "apf-front-proxy", identity: map[string][]string{
				"x-remote-user": {"noxu"}, "x-remote-group": {"system:authenticated", "devs"}, "x-remote-uid": {"u-1"},
				"x-remote-extra-example.com%2fteam": {"blue"},
			}},
		},
	}
	asNoxu := []string{"Impersonate-User", "noxu", "Impersonate-Group", "system:authenticated", "Impersonate-Group", "devs",
		"Impersonate-Uid", "u-1", "Impersonate-Extra-Example.com%2fteam", "blue"}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			apfCA := testpki.NewCA(t, "apf-client-ca")
			callerCA := testpki.NewCA(t, "caller-ca")
			up := newIdentityUpstream(t, apfCA.Pool())
			up.allowed["Bearer "+adminToken] = true
			gw := startGateway(t, up.srv.URL, gatewayTokens(t, "carol"), func(o *Options) {
				o.UpstreamCAFile = up.caFile
				o.Auth.ClientCAFile = callerCA.File
				m.tune(t, o, apfCA)
			})
			defer gw.stop()
			uids := createSchemas(t, gw, map[string]string{"imp-noxu": `{"kind":"User","user":{"name":"noxu"}}`})

			// The e2e test's request, then one with everything.
			waitClassified(t, gw, uids["imp-noxu"], "Impersonate-User", "noxu", "Impersonate-Group", "system:authenticated")
			waitClassified(t, gw, uids["imp-noxu"], asNoxu...)
			code, h, _ := impersonating(t, gw, http.MethodGet, "/api/v1/namespaces/imp/pods", adminToken, asNoxu...)
			if code != http.StatusOK || h.Get(apfhttp.FlowSchemaUIDHeader) != uids["imp-noxu"] {
				t.Errorf("a list of pods impersonating noxu: %d, FlowSchema %q", code, h.Get(apfhttp.FlowSchemaUIDHeader))
			}
			if got, ok := up.view("/api/v1/namespaces/imp/pods"); !ok || !reflect.DeepEqual(got, m.want) {
				t.Errorf("the upstream saw\n  certificate %q, Authorization %q, identity headers %v\nwant\n  certificate %q, Authorization %q, identity headers %v",
					got.cert, got.auth, got.identity, m.want.cert, m.want.auth, m.want.identity)
			}
			reviews := up.selfReviews()
			if m.reviews {
				// Asked as the admin, with nothing of the impersonation.
				var asked []string
				for _, r := range reviews {
					if r.auth != "Bearer "+adminToken {
						t.Errorf("a review came with Authorization %q", r.auth)
					}
					asked = append(asked, r.asked)
				}
				for _, want := range []string{"impersonate-on:user-info:get /version", "impersonate:user-info authentication.k8s.io/users noxu",
					"impersonate:user-info authentication.k8s.io/uids u-1", "impersonate:user-info authentication.k8s.io/groups devs",
					"impersonate:user-info authentication.k8s.io/userextras blue"} {
					if !slices.Contains(asked, want) {
						t.Errorf("the upstream was not asked %q; it was asked %q", want, asked)
					}
				}
			} else if len(reviews) != 0 {
				t.Errorf("apf asked the upstream %v; its own chain decides in this mode", reviews)
			}

			// Nobody else may impersonate: a client certificate's holder,
			// a token's and an anonymous caller, asking for a mightier
			// identity in mixed case, in every mode.
			for _, c := range []struct {
				name, token, who string
				client           *http.Client
			}{
				{name: "cert", who: "dave", client: secClient(t, gw, callerCA.Issue(t, "dave", []string{"dev-team"}))},
				{name: "token", token: "token-carol", who: "carol", client: gw.client},
				{name: "anonymous", who: "system:anonymous", client: gw.client},
			} {
				path := "/api/v1/namespaces/" + c.name + "/pods"
				req, err := http.NewRequest(http.MethodGet, gw.url+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header["Impersonate-User"] = []string{"admin"}
				req.Header["impersonate-group"] = []string{"system:masters"}
				if c.token != "" {
					req.Header.Set("Authorization", "Bearer "+c.token)
				}
				resp, err := c.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var st statusBody
				_ = json.NewDecoder(resp.Body).Decode(&st)
				resp.Body.Close()
				want := `pods is forbidden: User "` + c.who + `" cannot impersonate-on:user-info:list resource "pods" in API group "" in the namespace "` + c.name + `"`
				if m.reviews && c.token == "" {
					want += ": the upstream decides, and the caller has no credentials of its own to forward to it"
				}
				if resp.StatusCode != http.StatusForbidden || st.Message != want || resp.Header.Get(apfhttp.FlowSchemaUIDHeader) != "" {
					t.Errorf("%s caller impersonating the admin: %d %q (FlowSchema %q); want 403 %q before APF",
						c.name, resp.StatusCode, st.Message, resp.Header.Get(apfhttp.FlowSchemaUIDHeader), want)
				}
				if got, arrived := up.view(path); arrived {
					t.Errorf("%s caller's refused impersonation reached the upstream: %+v", c.name, got)
				}
			}
			// The 400 of groups without a user is apf's too.
			code, _, st := impersonating(t, gw, http.MethodGet, "/api/v1/namespaces/bad/pods", adminToken, "Impersonate-Group", "system:masters")
			if code != http.StatusBadRequest || !strings.HasPrefix(st.Message, "requested &user.DefaultInfo{") {
				t.Errorf("groups without a user: %d %q", code, st.Message)
			}
			if _, arrived := up.view("/api/v1/namespaces/bad/pods"); arrived {
				t.Error("the 400 reached the upstream")
			}
		})
	}
}
