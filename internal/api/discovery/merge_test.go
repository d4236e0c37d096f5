package discovery

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMergeGroupList: the flowcontrol entry is replaced in place, with
// the upstream's server addresses; with none it is added at the end;
// everything else is kept as written, unknown members included.
func TestMergeGroupList(t *testing.T) {
	h := New(Options{})
	g := h.apiGroup()
	for _, c := range []struct{ name, in, want string }{
		{"replaced in place",
			`{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apps","versions":[],"future":1},{"name":"flowcontrol.apiserver.k8s.io","versions":[{"groupVersion":"flowcontrol.apiserver.k8s.io/v1","version":"v1"}],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"k:6443"}]},{"name":"z"}],"extra":{"a": [1, 2]}}`,
			`{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apps","versions":[],"future":1},{"name":"flowcontrol.apiserver.k8s.io","versions":[{"groupVersion":"flowcontrol.apiserver.k8s.io/v1","version":"v1"},{"groupVersion":"flowcontrol.apiserver.k8s.io/v1beta3","version":"v1beta3"},{"groupVersion":"flowcontrol.apiserver.k8s.io/v1beta2","version":"v1beta2"},{"groupVersion":"flowcontrol.apiserver.k8s.io/v1beta1","version":"v1beta1"}],"preferredVersion":{"groupVersion":"flowcontrol.apiserver.k8s.io/v1","version":"v1"},"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"k:6443"}]},{"name":"z"}],"extra":{"a":[1,2]}}`},
		{"added",
			`{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apps","serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"k:6443"}]}]}`,
			`{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apps","serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"k:6443"}]},{"name":"flowcontrol.apiserver.k8s.io","versions":[{"groupVersion":"flowcontrol.apiserver.k8s.io/v1","version":"v1"},{"groupVersion":"flowcontrol.apiserver.k8s.io/v1beta3","version":"v1beta3"},{"groupVersion":"flowcontrol.apiserver.k8s.io/v1beta2","version":"v1beta2"},{"groupVersion":"flowcontrol.apiserver.k8s.io/v1beta1","version":"v1beta1"}],"preferredVersion":{"groupVersion":"flowcontrol.apiserver.k8s.io/v1","version":"v1"},"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"k:6443"}]}]}`},
	} {
		got, err := mergeGroupList([]byte(c.in), g)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: %v\n%s\nwant\n%s", c.name, err, got, c.want)
		}
	}
	for _, bad := range []string{
		``, `[]`, `{"kind":"APIGroupList","apiVersion":"v1"}`, `{"kind":"APIGroupList","apiVersion":"v1","groups":{}}`,
		`{"kind":"APIResourceList","apiVersion":"v1","groups":[]}`, `{"kind":"APIGroupList","apiVersion":"v1","groups":[1]}`,
		`{"kind":"APIGroupList","apiVersion":"v1","groups":[],"groups":[]}`, `{"kind":"APIGroupList","apiVersion":"v1","groups":[]} {}`,
		`{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"flowcontrol.apiserver.k8s.io"},{"name":"flowcontrol.apiserver.k8s.io"}]}`,
		`{"kind":"APIGroupList","apiVersion":"v1","groups":[`,
	} {
		if got, err := mergeGroupList([]byte(bad), g); err == nil {
			t.Errorf("%q merged: %s", bad, got)
		}
	}
}

// TestMergeAggregated: the flowcontrol item is replaced where it is.
func TestMergeAggregated(t *testing.T) {
	in := `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[{"metadata":{"name":"apps"},"versions":[]},{"metadata":{"name":"flowcontrol.apiserver.k8s.io"},"versions":[{"version":"v1"}]},{"metadata":{"name":"x"},"new":true}]}`
	got, err := mergeAggregated([]byte(in), []byte(`{"metadata":{"name":"flowcontrol.apiserver.k8s.io"},"versions":["apf"]}`))
	want := `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[{"metadata":{"name":"apps"},"versions":[]},{"metadata":{"name":"flowcontrol.apiserver.k8s.io"},"versions":["apf"]},{"metadata":{"name":"x"},"new":true}]}`
	if err != nil || string(got) != want {
		t.Errorf("%v\n%s\nwant\n%s", err, got, want)
	}
	if _, err := mergeAggregated([]byte(strings.Replace(in, "apidiscovery.k8s.io/v2", "apidiscovery.k8s.io/v2beta1", 1)), nil); err == nil {
		t.Error("a v2beta1 list merged")
	}
}

// TestMergeOpenAPIV3Index: every upstream entry of the group goes, apf's
// come in, the rest stays, in key order.
func TestMergeOpenAPIV3Index(t *testing.T) {
	in := `{"paths":{"apis/zz/v1":{"serverRelativeURL":"/z"},"api/v1":{"serverRelativeURL":"/a"},"apis/flowcontrol.apiserver.k8s.io/v1":{"serverRelativeURL":"/up1"},"apis/flowcontrol.apiserver.k8s.io/v1beta3":{"serverRelativeURL":"/up3"}}}`
	got, err := mergeOpenAPIV3Index([]byte(in), map[string]v3Path{"apis/flowcontrol.apiserver.k8s.io/v1": {"/apf1"}})
	want := `{"paths":{"api/v1":{"serverRelativeURL":"/a"},"apis/flowcontrol.apiserver.k8s.io/v1":{"serverRelativeURL":"/apf1"},"apis/zz/v1":{"serverRelativeURL":"/z"}}}`
	if err != nil || string(got) != want {
		t.Errorf("%v\n%s\nwant\n%s", err, got, want)
	}
	for _, bad := range []string{`{}`, `{"paths":[]}`, `{"paths":null}`, `"x"`} {
		if got, err := mergeOpenAPIV3Index([]byte(bad), nil); err == nil {
			t.Errorf("%q merged: %s", bad, got)
		}
	}
}

// FuzzMerge: whatever an upstream sends, a merge either fails or gives a
// valid JSON object, and never panics.
func FuzzMerge(f *testing.F) {
	for _, s := range []string{
		`{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"flowcontrol.apiserver.k8s.io"}]}`,
		`{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","items":[{"metadata":{"name":"a"}}]}`,
		`{"paths":{"apis/flowcontrol.apiserver.k8s.io/v1":{}}}`,
		`{"a":`, `[]`, `{"groups":[{"name":1}]}`, "{\"k\":\"\\ud800\"}",
	} {
		f.Add([]byte(s))
	}
	h := New(Options{})
	h.once.Do(h.build)
	f.Fuzz(func(t *testing.T, doc []byte) {
		check := func(name string, out []byte, err error) {
			if err == nil && !json.Valid(out) {
				t.Fatalf("%s of %q: invalid JSON %q", name, doc, out)
			}
		}
		out, err := mergeGroupList(doc, h.apiGroup())
		check("mergeGroupList", out, err)
		out, err = mergeAggregated(doc, h.docs.aggregatedFlowcontrol)
		check("mergeAggregated", out, err)
		out, err = mergeOpenAPIV3Index(doc, h.docs.v3Paths)
		check("mergeOpenAPIV3Index", out, err)
	})
}
