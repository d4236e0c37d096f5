package kube

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// apfVersions are the flowcontrol versions apf serves when not told
// otherwise (config.DefaultServedVersions), as the gateway runs.
var apfVersions = []string{"v1", "v1beta3", "v1beta2", "v1beta1"}

// TestGatewayProxies sends requests through the gateway (apf serve
// --upstream, passthrough identity, in front of the kube-apiserver) and
// compares each with the same request sent straight to the
// kube-apiserver: the answer must be the upstream's, with apf's flow
// control headers, one of each, instead of the upstream's.
func TestGatewayProxies(t *testing.T) {
	e := testEnv(t)
	for _, r := range []request{
		get("/api/v1/namespaces"),
		get("/api/v1/namespaces/default"),
		get("/api/v1/namespaces/kube-test-missing"),
		{method: http.MethodGet, path: "/api/v1/namespaces", token: readerToken},
		{method: http.MethodGet, path: "/api/v1/namespaces", token: "no-such-token"},
	} {
		t.Run(r.String(), func(t *testing.T) {
			direct := e.kube.mustSend(t, r)
			proxied := e.gateway.mustSend(t, r)
			compareAnswers(t, r, direct, proxied)
			t.Run("PF headers are apf's", func(t *testing.T) {
				if r.token == "no-such-token" {
					// apf refuses the caller before classification, as
					// a kube-apiserver does: no PF headers at all.
					for _, h := range pfHeaders {
						if v := proxied.header.Values(h); len(v) != 0 {
							t.Errorf("%s: %s on a 401: %q", r, h, v)
						}
					}
					return
				}
				checkPFHeaders(t, e, r, direct, proxied)
			})
		})
	}
}

// checkPFHeaders checks that proxied carries exactly one of each PF
// header, that each names an object of the gateway's own flowcontrol API,
// and that neither is the kube-apiserver's.
func checkPFHeaders(t *testing.T, e *env, r request, direct, proxied answer) {
	t.Helper()
	for _, h := range []struct{ header, path string }{
		{"X-Kubernetes-PF-FlowSchema-UID", flowschemas},
		{"X-Kubernetes-PF-PriorityLevel-UID", levels},
	} {
		v := proxied.header.Values(h.header)
		if len(v) != 1 {
			t.Errorf("%s: the gateway sent %s %d times: %q (kube alone sends %q)", r, h.header, len(v), v, direct.header.Values(h.header))
			continue
		}
		gwUIDs := uids(t, e.gateway, h.path)
		if _, ok := gwUIDs[v[0]]; !ok {
			t.Errorf("%s: %s %s is no object of the gateway's flowcontrol API", r, h.header, v[0])
		}
		if name, ok := uids(t, e.kube, h.path)[v[0]]; ok {
			t.Errorf("%s: %s %s is the kube-apiserver's %s", r, h.header, v[0], name)
		}
	}
}

// uids maps the uid of every object of path on s to its name.
func uids(t *testing.T, s *server, path string) map[string]string {
	t.Helper()
	a := s.mustSend(t, get(path))
	if a.code != http.StatusOK {
		t.Fatalf("%s: GET %s: %d %s", s.name, path, a.code, a.raw)
	}
	out := map[string]string{}
	for _, it := range items(a.body) {
		md, _ := it["metadata"].(map[string]any)
		if uid, ok := md["uid"].(string); ok {
			out[uid] = nameOf(it)
		}
	}
	return out
}

// TestGatewayDiscovery: kubectl through the gateway must see the
// kube-apiserver's groups with the flowcontrol versions apf serves in
// place of the kube-apiserver's (the gateway answers that group itself),
// and each of those versions must be usable through it.
func TestGatewayDiscovery(t *testing.T) {
	e := testEnv(t)
	kubeOut, ok := e.kube.kubectl(t, "", "api-versions")
	if !ok {
		t.Fatalf("kubectl api-versions against kube: %s", kubeOut)
	}
	gwOut, ok := e.gateway.kubectl(t, "", "api-versions")
	if !ok {
		t.Fatalf("kubectl api-versions through the gateway: %s", gwOut)
	}
	var want []string
	for _, gv := range strings.Fields(kubeOut) {
		if !strings.HasPrefix(gv, "flowcontrol.apiserver.k8s.io/") {
			want = append(want, gv)
		}
	}
	for _, v := range apfVersions {
		want = append(want, "flowcontrol.apiserver.k8s.io/"+v)
	}
	slices.Sort(want)
	got := strings.Fields(gwOut)
	slices.Sort(got)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("kubectl api-versions through the gateway (-want: kube's groups with apf's flowcontrol versions, +got):\n%s", d)
	}
	for _, v := range apfVersions {
		p := "/apis/flowcontrol.apiserver.k8s.io/" + v + "/flowschemas/exempt"
		if a := e.gateway.mustSend(t, get(p)); a.code != http.StatusOK {
			t.Errorf("GET %s through the gateway: %d %s", p, a.code, clip(a.raw))
		}
	}
	// The name follows the deprecation warning every v1beta3 answer carries.
	out, ok := e.gateway.kubectl(t, "", "get", "flowschemas.v1beta3.flowcontrol.apiserver.k8s.io", "exempt", "-o", "name")
	if !ok || !strings.HasSuffix(strings.TrimSpace(out), "\nflowschema.flowcontrol.apiserver.k8s.io/exempt") {
		t.Errorf("kubectl get flowschemas.v1beta3... through the gateway: ok=%v\n%s", ok, out)
	}
}
