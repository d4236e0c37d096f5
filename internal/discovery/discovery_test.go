package discovery

import (
	"encoding/json"
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
	if groups.Kind != "APIGroupList" || groups.APIVersion != "v1" || len(groups.Groups) != 1 {
		t.Fatalf("/apis: %+v", groups)
	}
	g := groups.Groups[0]
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
	if agg.Kind != "APIGroupDiscoveryList" || agg.APIVersion != "apidiscovery.k8s.io/v2" || len(agg.Items) != 1 {
		t.Fatalf("%+v", agg)
	}
	g := agg.Items[0]
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
	// Plain JSON, and refusal of the aggregated form, get the legacy list.
	for _, accept := range []string{"application/json", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0,application/json", "",
		"application/json, " + acceptAggregated, "*/*," + acceptAggregated, "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", "bad;;;"} {
		resp := get(t, h, "/apis", "Accept", accept)
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Accept %q: content type %q", accept, ct)
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
