package discovery

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/apfproject/apf/config"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

const (
	acceptAggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
	groupVersions    = "flowcontrol.apiserver.k8s.io/v1 flowcontrol.apiserver.k8s.io/v1beta3 flowcontrol.apiserver.k8s.io/v1beta2 flowcontrol.apiserver.k8s.io/v1beta1"
)

func TestLegacyDiscovery(t *testing.T) {
	h := New(Options{})
	var versions metav1.APIVersions
	getJSON(t, h, "/api", &versions, "Accept", "application/json")
	if versions.Kind != "APIVersions" || !slices.Equal(versions.Versions, []string{"v1"}) || len(versions.ServerAddressByClientCIDRs) != 1 {
		t.Errorf("/api: %+v", versions)
	}
	var list metav1.APIResourceList
	resp := get(t, h, "/api/v1")
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &list); err != nil || list.GroupVersion != "v1" || len(list.APIResources) != 0 || list.Kind != "APIResourceList" {
		t.Errorf("/api/v1: %v %s", err, body)
	}
	if !strings.Contains(string(body), `"resources":[]`) {
		t.Errorf("/api/v1 resources should be an empty list, not null: %s", body)
	}
	var agg apidiscoveryv2.APIGroupDiscoveryList
	resp = getJSON(t, h, "/api", &agg, "Accept", acceptAggregated)
	if ct := resp.Header.Get("Content-Type"); ct != aggregatedContentType {
		t.Errorf("/api aggregated content type %q", ct)
	}
	if len(agg.Items) != 1 || agg.Items[0].Name != "" || len(agg.Items[0].Versions) != 1 || agg.Items[0].Versions[0].Version != "v1" {
		t.Errorf("/api aggregated: %+v", agg)
	}
}

func TestGroupList(t *testing.T) {
	h := New(Options{})
	var groups metav1.APIGroupList
	resp := getJSON(t, h, "/apis", &groups, "Accept", "application/json, */*")
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
	// authorization.k8s.io comes first, as kube-apiserver orders the two.
	if groups.Kind != "APIGroupList" || groups.APIVersion != "v1" || len(groups.Groups) != 2 {
		t.Fatalf("/apis: %+v", groups)
	}
	if a := groups.Groups[0]; a.Name != "authorization.k8s.io" || len(a.Versions) != 1 || a.Versions[0] != (metav1.GroupVersionForDiscovery{GroupVersion: "authorization.k8s.io/v1", Version: "v1"}) ||
		a.PreferredVersion != a.Versions[0] {
		t.Errorf("authorization group %+v", a)
	}
	g := groups.Groups[1]
	var gvs []string
	for _, v := range g.Versions {
		gvs = append(gvs, v.GroupVersion)
		if v.GroupVersion != config.Group+"/"+v.Version {
			t.Errorf("version %+v", v)
		}
	}
	if g.Name != config.Group || strings.Join(gvs, " ") != groupVersions || g.PreferredVersion.Version != "v1" || g.PreferredVersion.GroupVersion != config.Group+"/v1" {
		t.Errorf("group %+v", g)
	}

	var group metav1.APIGroup
	getJSON(t, h, "/apis/flowcontrol.apiserver.k8s.io", &group)
	if group.Kind != "APIGroup" || group.APIVersion != "v1" || group.Name != config.Group || len(group.Versions) != 4 {
		t.Errorf("group: %+v", group)
	}
}

func TestAggregatedDiscovery(t *testing.T) {
	h := New(Options{})
	var agg apidiscoveryv2.APIGroupDiscoveryList
	for _, accept := range []string{acceptAggregated, "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer," + acceptAggregated} {
		resp := getJSON(t, h, "/apis", &agg, "Accept", accept)
		if ct := resp.Header.Get("Content-Type"); ct != aggregatedContentType {
			t.Fatalf("Accept %q: content type %q", accept, ct)
		}
		etag := resp.Header.Get("Etag")
		if etag == "" {
			t.Fatal("no ETag")
		}
		if resp := get(t, h, "/apis", "Accept", accept, "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
			t.Errorf("If-None-Match: %d", resp.StatusCode)
		}
	}
	if agg.Kind != "APIGroupDiscoveryList" || agg.APIVersion != "apidiscovery.k8s.io/v2" || len(agg.Items) != 2 || agg.Items[0].Name != "authorization.k8s.io" {
		t.Fatalf("%+v", agg)
	}
	g := agg.Items[1]
	var versions []string
	for _, v := range g.Versions {
		versions = append(versions, config.Group+"/"+v.Version)
		if v.Freshness != apidiscoveryv2.DiscoveryFreshnessCurrent || len(v.Resources) != 2 {
			t.Errorf("version %s: %+v", v.Version, v)
		}
		for i, r := range v.Resources {
			want := resources[i]
			if r.Resource != want.plural || r.SingularResource != want.singular || r.Scope != apidiscoveryv2.ScopeCluster ||
				r.ResponseKind == nil || *r.ResponseKind != (metav1.GroupVersionKind{Group: config.Group, Version: v.Version, Kind: want.kind}) ||
				!slices.Equal(r.Verbs, resourceVerbs) || len(r.ShortNames) != 0 || len(r.Categories) != 0 {
				t.Errorf("%s %s: %+v", v.Version, want.plural, r)
			}
			if len(r.Subresources) != 1 || r.Subresources[0].Subresource != "status" || !slices.Equal(r.Subresources[0].Verbs, []string{"get", "patch", "update"}) ||
				r.Subresources[0].ResponseKind.Kind != want.kind {
				t.Errorf("%s %s subresources: %+v", v.Version, want.plural, r.Subresources)
			}
		}
	}
	if g.Name != config.Group || strings.Join(versions, " ") != groupVersions {
		t.Errorf("group %s versions %v", g.Name, versions)
	}
	// The form each Accept header gets, as kube-apiserver v1.37 chooses
	// it: an aggregated v2 clause anywhere wins (q plays no part but the
	// order), v2beta1 is gone, and what admits no JSON gets a 406.
	for _, c := range []struct {
		accept string
		want   string // content type, or "406"
	}{
		{"application/json", "application/json"},
		{"", "application/json"},
		{"*/*", "application/json"},
		{"application/*;q=0.5", "application/json"},
		{"application/json, " + acceptAggregated, aggregatedContentType},
		{"*/*," + acceptAggregated, aggregatedContentType},
		{"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0,application/json", aggregatedContentType},
		{"*/*;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", aggregatedContentType},
		{"application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json", "application/json"},
		{"application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", "406"},
		{"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;sv=v1,application/json", "application/json"},
		{"application/json;stream=watch", "application/json"},
		{"application/json;stream=other", "406"},
		{"application/json;as=Table;v=v1;g=meta.k8s.io", "406"},
		{"application/vnd.kubernetes.protobuf", "406"},
		{"application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "406"},
		{"application/yaml", "406"},
		{"text/html", "406"},
		{"bad;;;", "406"},
	} {
		for _, path := range []string{"/apis", "/api"} {
			resp := get(t, h, path, "Accept", c.accept)
			body, _ := io.ReadAll(resp.Body)
			if c.want == "406" {
				var st metav1.Status
				if resp.StatusCode != http.StatusNotAcceptable || json.Unmarshal(body, &st) != nil || st.Reason != metav1.StatusReasonNotAcceptable ||
					st.Message != "only the following media types are accepted: application/json" {
					t.Errorf("%s Accept %q: %d %s, want a 406 Status", path, c.accept, resp.StatusCode, body)
				}
				continue
			}
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != c.want {
				t.Errorf("%s Accept %q: %d, content type %q, want %q", path, c.accept, resp.StatusCode, ct, c.want)
			}
		}
	}
}

func TestResourceList(t *testing.T) {
	h := New(Options{})
	for _, v := range config.DefaultServedVersions {
		var list metav1.APIResourceList
		getJSON(t, h, "/apis/flowcontrol.apiserver.k8s.io/"+string(v), &list)
		if list.Kind != "APIResourceList" || list.APIVersion != "v1" || list.GroupVersion != v.APIVersion() || len(list.APIResources) != 4 {
			t.Fatalf("%s: %+v", v, list)
		}
		want := []metav1.APIResource{
			{Name: "flowschemas", SingularName: "flowschema", Kind: "FlowSchema", Verbs: resourceVerbs, StorageVersionHash: storageVersionHash("FlowSchema")},
			{Name: "flowschemas/status", Kind: "FlowSchema", Verbs: []string{"get", "patch", "update"}},
			{Name: "prioritylevelconfigurations", SingularName: "prioritylevelconfiguration", Kind: "PriorityLevelConfiguration", Verbs: resourceVerbs, StorageVersionHash: storageVersionHash("PriorityLevelConfiguration")},
			{Name: "prioritylevelconfigurations/status", Kind: "PriorityLevelConfiguration", Verbs: []string{"get", "patch", "update"}},
		}
		for i, r := range list.APIResources {
			w := want[i]
			if r.Name != w.Name || r.SingularName != w.SingularName || r.Namespaced || r.Kind != w.Kind ||
				!slices.Equal(r.Verbs, w.Verbs) || r.StorageVersionHash != w.StorageVersionHash || r.Group != "" || r.Version != "" {
				t.Errorf("%s: resource %d = %+v, want %+v", v, i, r, w)
			}
		}
	}
	// Byte for byte what kube-apiserver answers for the v1 list (its
	// beginning; prioritylevelconfigurations follow in the same shape).
	resp := get(t, h, "/apis/flowcontrol.apiserver.k8s.io/v1")
	body, _ := io.ReadAll(resp.Body)
	const kubePrefix = `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"flowcontrol.apiserver.k8s.io/v1","resources":[` +
		`{"name":"flowschemas","singularName":"flowschema","namespaced":false,"kind":"FlowSchema","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"storageVersionHash":"GJVAJZSZBIw="},` +
		`{"name":"flowschemas/status","singularName":"","namespaced":false,"kind":"FlowSchema","verbs":["get","patch","update"]},` +
		`{"name":"prioritylevelconfigurations","singularName":"prioritylevelconfiguration","namespaced":false,"kind":"PriorityLevelConfiguration","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"storageVersionHash":"Kir5PVfvNeI="},`
	if !strings.HasPrefix(string(body), kubePrefix) {
		t.Errorf("v1 resource list:\n%s\nwant prefix\n%s", body, kubePrefix)
	}
	if resp := get(t, h, "/apis/flowcontrol.apiserver.k8s.io/v1alpha1"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("v1alpha1 served by default: %d", resp.StatusCode)
	}
}

func TestOptions(t *testing.T) {
	for _, c := range []struct {
		name      string
		opts      Options
		versions  string
		preferred config.Version
	}{
		{"default", Options{}, "v1 v1beta3 v1beta2 v1beta1", config.V1},
		{"all", Options{Versions: config.Versions}, "v1 v1beta3 v1beta2 v1beta1 v1alpha1", config.V1},
		{"preferred beta", Options{Preferred: config.V1Beta2}, "v1beta2 v1 v1beta3 v1beta1", config.V1Beta2},
		{"no v1", Options{Versions: []config.Version{config.V1Beta1, config.V1Beta3}}, "v1beta3 v1beta1", config.V1Beta3},
		{"unserved preferred", Options{Versions: []config.Version{config.V1Beta2}, Preferred: config.V1}, "v1beta2", config.V1Beta2},
		{"unknown and duplicates", Options{Versions: []config.Version{"v2", config.V1, config.V1}}, "v1", config.V1},
		{"only unknown", Options{Versions: []config.Version{"v9"}}, "v1 v1beta3 v1beta2 v1beta1", config.V1},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := New(c.opts)
			var got []string
			for _, v := range h.Versions() {
				got = append(got, string(v))
			}
			if strings.Join(got, " ") != c.versions {
				t.Errorf("versions %v, want %s", got, c.versions)
			}
			var group metav1.APIGroup
			getJSON(t, h, "/apis/flowcontrol.apiserver.k8s.io/", &group)
			if group.PreferredVersion.Version != string(c.preferred) || len(group.Versions) != len(got) || group.Versions[0].Version != got[0] {
				t.Errorf("group %+v", group)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	var info version.Info
	getJSON(t, New(Options{}), "/version", &info)
	if info.GitVersion != DefaultGitVersion || info.Major != "1" || info.Minor != "37" || info.GoVersion != runtime.Version() ||
		info.Platform != runtime.GOOS+"/"+runtime.GOARCH || info.Compiler != runtime.Compiler {
		t.Errorf("%+v", info)
	}
	getJSON(t, New(Options{Info: version.Info{GitVersion: "v2.5.0", GitCommit: "abc"}}), "/version/", &info)
	if info.GitVersion != "v2.5.0" || info.Major != "2" || info.Minor != "5" || info.GitCommit != "abc" {
		t.Errorf("%+v", info)
	}
}

func TestRouting(t *testing.T) {
	h := New(Options{})
	for path, want := range map[string]bool{
		"/api": true, "/api/": true, "/api/v1": true, "/api/v1/": true, "/apis": true, "/apis/": true,
		"/apis/flowcontrol.apiserver.k8s.io": true, "/apis/flowcontrol.apiserver.k8s.io/v1": true,
		"/apis/flowcontrol.apiserver.k8s.io/v1beta3/": true, "/apis/flowcontrol.apiserver.k8s.io/v7": true,
		"/openapi/v2": true, "/openapi/v3": true, "/openapi/v3/": true, "/openapi/v3/apis/flowcontrol.apiserver.k8s.io/v1": true,
		"/version": true, "/version/": true,
		"/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas":   false,
		"/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/x": false,
		"/api/v1/namespaces":       false,
		"/apis/apps":               false,
		"/apis/apps/v1":            false,
		"/openapi/v3/apis/apps/v1": false,
		"/openapi/v3/apis/flowcontrol.apiserver.k8s.io/v1/extra": false,
		"/":        false,
		"":         false,
		"/healthz": false,
		"/debug/api_priority_and_fairness/dump_priority_levels": false,
	} {
		if got := h.Handles(path); got != want {
			t.Errorf("Handles(%q) = %v, want %v", path, got, want)
		}
	}

	for _, c := range []struct {
		method, path string
		code         int
	}{
		{http.MethodPost, "/apis", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/openapi/v2", http.StatusMethodNotAllowed},
		{http.MethodGet, "/apis/flowcontrol.apiserver.k8s.io/v7", http.StatusNotFound},
		{http.MethodGet, "/apis/apps", http.StatusNotFound},
		{http.MethodHead, "/version", http.StatusOK},
	} {
		r := httptest.NewRequest(c.method, c.path, nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.code {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, w.Code, c.code)
		}
		if c.code != http.StatusOK {
			var st metav1.Status
			if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || st.Kind != "Status" || int(st.Code) != c.code || st.Status != metav1.StatusFailure {
				t.Errorf("%s %s: body %s", c.method, c.path, w.Body.String())
			}
		} else if c.method == http.MethodHead && (w.Body.Len() != 0 || w.Header().Get("Content-Length") == "0") {
			t.Errorf("HEAD: body %q, length %q", w.Body.String(), w.Header().Get("Content-Length"))
		}
	}
}

// TestAuthorizationGroup: authorization.k8s.io/v1 is listed with the two
// self reviews, create only, cluster-scoped, as kube-apiserver lists them.
func TestAuthorizationGroup(t *testing.T) {
	h := New(Options{})
	var group metav1.APIGroup
	getJSON(t, h, "/apis/authorization.k8s.io", &group)
	if group.Kind != "APIGroup" || group.Name != "authorization.k8s.io" || len(group.Versions) != 1 || group.PreferredVersion.GroupVersion != "authorization.k8s.io/v1" {
		t.Errorf("group: %+v", group)
	}
	resp := get(t, h, "/apis/authorization.k8s.io/v1")
	body, _ := io.ReadAll(resp.Body)
	const want = `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"authorization.k8s.io/v1","resources":[` +
		`{"name":"selfsubjectaccessreviews","singularName":"selfsubjectaccessreview","namespaced":false,"kind":"SelfSubjectAccessReview","verbs":["create"]},` +
		`{"name":"selfsubjectrulesreviews","singularName":"selfsubjectrulesreview","namespaced":false,"kind":"SelfSubjectRulesReview","verbs":["create"]}]}`
	if string(body) != want {
		t.Errorf("resource list:\n%s\nwant\n%s", body, want)
	}
	if resp := get(t, h, "/apis/authorization.k8s.io/v1beta1"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("v1beta1: %d", resp.StatusCode)
	}
	for path, want := range map[string]bool{
		"/apis/authorization.k8s.io": true, "/apis/authorization.k8s.io/": true, "/apis/authorization.k8s.io/v1": true,
		"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews": false, "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews": false,
	} {
		if h.Handles(path) != want {
			t.Errorf("Handles(%q) = %v", path, !want)
		}
	}
	var agg apidiscoveryv2.APIGroupDiscoveryList
	getJSON(t, h, "/apis", &agg, "Accept", acceptAggregated)
	a := agg.Items[0]
	if a.Name != "authorization.k8s.io" || len(a.Versions) != 1 || a.Versions[0].Version != "v1" || len(a.Versions[0].Resources) != 2 {
		t.Fatalf("aggregated: %+v", a)
	}
	for i, r := range a.Versions[0].Resources {
		kind := []string{"SelfSubjectAccessReview", "SelfSubjectRulesReview"}[i]
		if r.Resource != strings.ToLower(kind)+"s" || r.SingularResource != strings.ToLower(kind) || r.Scope != apidiscoveryv2.ScopeCluster ||
			!slices.Equal(r.Verbs, []string{"create"}) || *r.ResponseKind != (metav1.GroupVersionKind{Group: "authorization.k8s.io", Version: "v1", Kind: kind}) {
			t.Errorf("aggregated resource %d: %+v", i, r)
		}
	}
}

// TestOpenAPIIndexETag: the OpenAPI 3 index has an ETag, and
// If-None-Match with it gets 304, as kube-apiserver's has.
func TestOpenAPIIndexETag(t *testing.T) {
	h := New(Options{})
	resp := get(t, h, "/openapi/v3", "Accept", "application/com.github.proto-openapi.spec.v3.v1.0+protobuf")
	body, _ := io.ReadAll(resp.Body)
	etag := resp.Header.Get("Etag")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || etag != fmt.Sprintf(`"%X"`, sha512.Sum512(body)) {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	if resp := get(t, h, "/openapi/v3", "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", resp.StatusCode)
	}
	if resp := get(t, h, "/openapi/v3", "If-None-Match", `"other"`); resp.StatusCode != http.StatusOK {
		t.Errorf("If-None-Match of another document: %d", resp.StatusCode)
	}
}
