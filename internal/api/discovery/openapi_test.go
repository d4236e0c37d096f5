package discovery

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/apfproject/apf/config"
	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta1 "k8s.io/api/flowcontrol/v1beta1"
	flowcontrolv1beta2 "k8s.io/api/flowcontrol/v1beta2"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"
)

// openAPIDoc is the part of an OpenAPI 3 or Swagger 2 document the tests
// read.
type openAPIDoc struct {
	Swagger     string            `json:"swagger"`
	OpenAPI     string            `json:"openapi"`
	Paths       map[string]schema `json:"paths"`
	Definitions map[string]schema `json:"definitions"`
	Components  struct {
		Schemas map[string]schema `json:"schemas"`
	} `json:"components"`
}

func (d *openAPIDoc) schemas() map[string]schema {
	if d.Definitions != nil {
		return d.Definitions
	}
	return d.Components.Schemas
}

func v3Doc(t *testing.T, h *Handler, v config.Version) *openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	getJSON(t, h, "/openapi/v3/apis/flowcontrol.apiserver.k8s.io/"+string(v), &doc)
	if doc.OpenAPI != "3.0.0" {
		t.Fatalf("openapi = %q", doc.OpenAPI)
	}
	return &doc
}

// conformance walks a JSON value against a schema of doc, recording every
// property it meets and reporting every value the schema does not admit.
type conformance struct {
	t       *testing.T
	doc     *openAPIDoc
	visited map[string]bool // "<definition>.<property>"
}

func (c *conformance) check(where string, value any, s schema) {
	// An OpenAPI 3 property that describes a reference wraps it in a
	// one-element allOf.
	if all, ok := s["allOf"].([]any); ok {
		if len(all) != 1 {
			c.t.Errorf("%s: allOf with %d members", where, len(all))
			return
		}
		inner, _ := all[0].(map[string]any)
		c.check(where, value, inner)
		return
	}
	if ref, ok := s["$ref"].(string); ok {
		name := ref[strings.LastIndex(ref, "/")+1:]
		def, ok := c.doc.schemas()[name]
		if !ok {
			c.t.Errorf("%s: dangling reference %s", where, ref)
			return
		}
		c.checkDef(where, name, value, def)
		return
	}
	c.checkDef(where, "", value, s)
}

func (c *conformance) checkDef(where, name string, value any, s schema) {
	typ, _ := s["type"].(string)
	switch v := value.(type) {
	case nil:
		// null is what an unset pointer or slice without omitempty encodes to.
	case map[string]any:
		if typ != "object" {
			c.t.Errorf("%s: object where the schema says %q", where, typ)
			return
		}
		props, _ := s["properties"].(map[string]any)
		if props == nil {
			if ap, ok := s["additionalProperties"].(map[string]any); ok {
				for k, e := range v {
					c.check(where+"."+k, e, ap)
				}
			}
			return
		}
		for k, e := range v {
			p, ok := props[k].(map[string]any)
			if !ok {
				c.t.Errorf("%s: property %q missing from the schema %s", where, k, name)
				continue
			}
			if name != "" {
				c.visited[name+"."+k] = true
			}
			c.check(where+"."+k, e, p)
		}
		// Required properties can be missing from these encodings: the
		// random zero values of omitempty fields are left out.
	case []any:
		if typ != "array" {
			c.t.Errorf("%s: array where the schema says %q", where, typ)
			return
		}
		items, _ := s["items"].(map[string]any)
		for i, e := range v {
			c.check(fmt.Sprintf("%s[%d]", where, i), e, items)
		}
	case string:
		if typ != "string" {
			c.t.Errorf("%s: string where the schema says %q", where, typ)
		}
	case bool:
		if typ != "boolean" {
			c.t.Errorf("%s: boolean where the schema says %q", where, typ)
		}
	case float64:
		if typ != "integer" && typ != "number" {
			c.t.Errorf("%s: number where the schema says %q", where, typ)
		}
		if typ == "integer" && v != float64(int64(v)) {
			c.t.Errorf("%s: %v is not an integer", where, v)
		}
	}
}

// TestSchemasDescribeEveryField fills objects of every version with random
// values, encodes them as the API would, and checks each encoding against
// the version's OpenAPI 3 and Swagger documents: every property must be
// in the schema with its type, and every property of every flowcontrol
// definition must have been met.
func TestSchemasDescribeEveryField(t *testing.T) {
	h := New(Options{Versions: config.Versions})
	var v2 openAPIDoc
	getJSON(t, h, "/openapi/v2", &v2)
	if v2.Swagger != "2.0" {
		t.Fatalf("swagger = %q", v2.Swagger)
	}
	objects := map[config.Version]func() []any{
		config.V1: func() []any {
			return []any{&flowcontrolv1.FlowSchemaList{}, &flowcontrolv1.PriorityLevelConfigurationList{}}
		},
		config.V1Beta3: func() []any {
			return []any{&flowcontrolv1beta3.FlowSchemaList{}, &flowcontrolv1beta3.PriorityLevelConfigurationList{}}
		},
		config.V1Beta2: func() []any {
			return []any{&flowcontrolv1beta2.FlowSchemaList{}, &flowcontrolv1beta2.PriorityLevelConfigurationList{}}
		},
		config.V1Beta1: func() []any {
			return []any{&flowcontrolv1beta1.FlowSchemaList{}, &flowcontrolv1beta1.PriorityLevelConfigurationList{}}
		},
		config.V1Alpha1: func() []any {
			return []any{&flowcontrolv1beta1.FlowSchemaList{}, &flowcontrolv1beta1.PriorityLevelConfigurationList{}}
		},
	}
	f := randfill.NewWithSeed(7).NilChance(0.1).NumElements(1, 2)
	for _, v := range config.Versions {
		docs := map[string]*openAPIDoc{"v3": v3Doc(t, h, v), "v2": &v2}
		for format, doc := range docs {
			c := &conformance{t: t, doc: doc, visited: map[string]bool{}}
			prefix := "io.k8s.api.flowcontrol." + string(v) + "."
			for i := 0; i < 40; i++ {
				for j, obj := range objects[v]() {
					f.Fill(obj)
					clearManagedFields(obj.(runtime.Object))
					if l, ok := obj.(*flowcontrolv1beta1.PriorityLevelConfigurationList); ok && !v.HasExemptSection() {
						for i := range l.Items {
							l.Items[i].Spec.Exempt = nil // not expressible in v1alpha1
						}
					}
					body, err := json.Marshal(obj)
					if err != nil {
						t.Fatal(err)
					}
					var value any
					if err := json.Unmarshal(body, &value); err != nil {
						t.Fatal(err)
					}
					kind := []string{config.KindFlowSchemaList, config.KindPriorityLevelList}[j]
					c.check(format+" "+string(v)+" "+kind, value, schema{"$ref": "#/x/" + prefix + kind})
				}
			}
			n := 0
			for name, def := range doc.schemas() {
				if !strings.HasPrefix(name, prefix) {
					continue
				}
				props, _ := def["properties"].(map[string]any)
				for p := range props {
					n++
					if !c.visited[name+"."+p] {
						t.Errorf("%s %s: property %s.%s never met in random objects", format, v, name, p)
					}
				}
			}
			if n < 40 {
				t.Errorf("%s %s: only %d flowcontrol properties", format, v, n)
			}
		}
	}
}

// clearManagedFields drops managedFields, whose random bytes are not JSON.
func clearManagedFields(list runtime.Object) {
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		if m, err := meta.Accessor(o); err == nil {
			m.SetManagedFields(nil)
		}
		return nil
	})
}

// TestOpenAPIExtensions checks what kubectl reads from the documents: the
// group-version-kind of each kind, the merge semantics of the condition
// lists, and the fieldValidation parameter of every write.
func TestOpenAPIExtensions(t *testing.T) {
	h := New(Options{Versions: config.Versions})
	var v2 openAPIDoc
	getJSON(t, h, "/openapi/v2", &v2)
	for _, v := range config.Versions {
		for format, doc := range map[string]*openAPIDoc{"v3": v3Doc(t, h, v), "v2": &v2} {
			prefix := "io.k8s.api.flowcontrol." + string(v) + "."
			for _, kind := range []string{config.KindFlowSchema, config.KindFlowSchemaList, config.KindPriorityLevel, config.KindPriorityLevelList} {
				def := doc.schemas()[prefix+kind]
				gvks, _ := def["x-kubernetes-group-version-kind"].([]any)
				want := map[string]any{"group": config.Group, "version": string(v), "kind": kind}
				if len(gvks) != 1 || fmt.Sprint(gvks[0]) != fmt.Sprint(want) {
					t.Errorf("%s %s%s: group-version-kind %v, want [%v]", format, prefix, kind, gvks, want)
				}
			}
			for _, status := range []string{"FlowSchemaStatus", "PriorityLevelConfigurationStatus"} {
				props, _ := doc.schemas()[prefix+status]["properties"].(map[string]any)
				cond, _ := props["conditions"].(map[string]any)
				// v1 and v1beta3 declare a patch strategy for conditions;
				// the older versions rely on the list-map semantics alone.
				wantStrategy, wantKey := any(nil), any(nil)
				if v == config.V1 || v == config.V1Beta3 {
					wantStrategy, wantKey = "merge", "type"
				}
				if cond["x-kubernetes-patch-strategy"] != wantStrategy || cond["x-kubernetes-patch-merge-key"] != wantKey ||
					cond["x-kubernetes-list-type"] != "map" || fmt.Sprint(cond["x-kubernetes-list-map-keys"]) != "[type]" {
					t.Errorf("%s %s%s.conditions: %v", format, prefix, status, cond)
				}
			}
			spec := doc.schemas()[prefix+"FlowSchemaSpec"]
			if fmt.Sprint(spec["required"]) != "[priorityLevelConfiguration]" {
				t.Errorf("%s %sFlowSchemaSpec required %v", format, prefix, spec["required"])
			}
			pl := doc.schemas()[prefix+"PriorityLevelConfigurationSpec"]
			plProps, _ := pl["properties"].(map[string]any)
			if _, ok := plProps["exempt"]; ok != v.HasExemptSection() {
				t.Errorf("%s %s: exempt in spec = %v", format, v, ok)
			}
			limited, _ := doc.schemas()[prefix+"LimitedPriorityLevelConfiguration"]["properties"].(map[string]any)
			if _, ok := limited[v.SharesField()]; !ok {
				t.Errorf("%s %s: no %s", format, v, v.SharesField())
			}
			for _, res := range resources {
				base := "/apis/" + config.Group + "/" + string(v) + "/" + res.plural
				for path, methods := range map[string][]string{base: {"post"}, base + "/{name}": {"put", "patch"}, base + "/{name}/status": {"put", "patch"}} {
					item := doc.Paths[path]
					if item == nil {
						t.Errorf("%s: no path %s", format, path)
						continue
					}
					for _, m := range methods {
						op, _ := item[m].(map[string]any)
						if !hasParam(op, "fieldValidation") || !hasParam(op, "dryRun") || !hasParam(op, "fieldManager") {
							t.Errorf("%s %s %s: parameters %v", format, m, path, op["parameters"])
						}
						gvk, _ := op["x-kubernetes-group-version-kind"].(map[string]any)
						if gvk["kind"] != res.kind || gvk["version"] != string(v) || gvk["group"] != config.Group {
							t.Errorf("%s %s %s: group-version-kind %v", format, m, path, gvk)
						}
					}
				}
				list, _ := doc.Paths[base]["get"].(map[string]any)
				if list["x-kubernetes-action"] != "list" || !hasParam(list, "watch") || !hasParam(list, "labelSelector") {
					t.Errorf("%s list %s: %v", format, base, list)
				}
			}
		}
	}
}

func hasParam(op map[string]any, name string) bool {
	ps, _ := op["parameters"].([]any)
	for _, p := range ps {
		if pm, _ := p.(map[string]any); pm["name"] == name && pm["in"] == "query" {
			return true
		}
	}
	return false
}

// TestV1Alpha1UsesV1Beta1Schema checks that v1alpha1, which has no Go
// types of its own, is described by v1beta1's types under its own names.
func TestV1Alpha1UsesV1Beta1Schema(t *testing.T) {
	h := New(Options{Versions: []config.Version{config.V1, config.V1Alpha1}})
	doc := v3Doc(t, h, config.V1Alpha1)
	for name := range doc.schemas() {
		if strings.Contains(name, ".v1beta1.") {
			t.Errorf("v1alpha1 document names %s", name)
		}
	}
	limited := doc.schemas()["io.k8s.api.flowcontrol.v1alpha1.LimitedPriorityLevelConfiguration"]
	if props, _ := limited["properties"].(map[string]any); props["assuredConcurrencyShares"] == nil {
		t.Errorf("v1alpha1 limited: %v", limited)
	}
	resp := get(t, h, "/openapi/v3/apis/flowcontrol.apiserver.k8s.io/v1beta1")
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unserved v1beta1 document: %d", resp.StatusCode)
	}
}

// TestOpenAPICaching checks the root's hashes, the ETag contract, the
// redirect of stale hashes and the refusal of protobuf-only requests.
func TestOpenAPICaching(t *testing.T) {
	h := New(Options{})
	var root struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	getJSON(t, h, "/openapi/v3", &root)
	if len(root.Paths) != len(config.DefaultServedVersions) {
		t.Fatalf("root paths %v", root.Paths)
	}
	for _, v := range config.DefaultServedVersions {
		entry, ok := root.Paths["apis/flowcontrol.apiserver.k8s.io/"+string(v)]
		if !ok {
			t.Fatalf("root lacks %s: %v", v, root.Paths)
		}
		u, err := url.Parse(entry.ServerRelativeURL)
		if err != nil || u.Path != "/openapi/v3/apis/flowcontrol.apiserver.k8s.io/"+string(v) {
			t.Fatalf("serverRelativeURL %q", entry.ServerRelativeURL)
		}
		hash := u.Query().Get("hash")
		if len(hash) != 128 || strings.ToUpper(hash) != hash {
			t.Errorf("hash %q is not upper-case hex SHA-512", hash)
		}
		resp := get(t, h, entry.ServerRelativeURL)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Etag") != `"`+hash+`"` ||
			resp.Header.Get("Cache-Control") != "public, immutable" || resp.Header.Get("Expires") == "" {
			t.Errorf("%s: %d %v", entry.ServerRelativeURL, resp.StatusCode, resp.Header)
		}
		resp = get(t, h, u.Path, "If-None-Match", `"`+hash+`"`)
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("If-None-Match: %d", resp.StatusCode)
		}
		resp = get(t, h, u.Path+"?hash=0123")
		if resp.StatusCode != http.StatusMovedPermanently || !strings.Contains(resp.Header.Get("Location"), "hash="+hash) {
			t.Errorf("stale hash: %d %v", resp.StatusCode, resp.Header)
		}
	}
	// Both spellings of the protobuf media types are answered with the
	// protobuf form under the current spelling, as kube-apiserver does
	// (kubectl asks for it); the first of equally weighted clauses wins,
	// and JSON where one clause admits both; nothing acceptable is a bare
	// 406.
	const (
		pb3Old = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
		pb3    = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
		pb2Old = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
		pb2    = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
		v3GV   = "/openapi/v3/apis/flowcontrol.apiserver.k8s.io/v1"
	)
	for _, c := range []struct {
		path, accept string
		code         int
		contentType  string
	}{
		{v3GV, pb3Old, http.StatusOK, pb3},
		{v3GV, pb3, http.StatusOK, pb3},
		{v3GV, pb3 + ", application/json", http.StatusOK, pb3},
		{v3GV, "application/json, " + pb3, http.StatusOK, "application/json"},
		{v3GV, "application/json;q=0.5, " + pb3, http.StatusOK, pb3},
		{v3GV, "application/json;q=0, " + pb2, http.StatusNotAcceptable, ""},
		{v3GV, "*/*", http.StatusOK, "application/json"},
		{v3GV, "", http.StatusOK, "application/json"},
		{"/openapi/v2", pb2Old, http.StatusOK, pb2},
		{"/openapi/v2", pb2, http.StatusOK, pb2},
		{"/openapi/v2", pb2Old + ",application/json", http.StatusOK, pb2},
		{"/openapi/v2", "application/*", http.StatusOK, "application/json"},
		{"/openapi/v2", pb3, http.StatusNotAcceptable, ""},
		{"/openapi/v2", "text/html", http.StatusNotAcceptable, ""},
	} {
		resp := get(t, h, c.path, "Accept", c.accept)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != c.code || resp.Header.Get("Content-Type") != c.contentType {
			t.Errorf("%s Accept %q: %d %q, want %d %q", c.path, c.accept, resp.StatusCode, resp.Header.Get("Content-Type"), c.code, c.contentType)
			continue
		}
		switch c.contentType {
		case "":
			if len(body) != 0 {
				t.Errorf("%s Accept %q: 406 with a body: %q", c.path, c.accept, body)
			}
		case pb2:
			var d openapi_v2.Document
			if err := proto.Unmarshal(body, &d); err != nil || d.GetSwagger() != "2.0" || len(d.GetPaths().GetPath()) == 0 {
				t.Errorf("%s: protobuf form does not decode to the document: %v", c.path, err)
			}
		case pb3:
			var d openapi_v3.Document
			if err := proto.Unmarshal(body, &d); err != nil || !strings.HasPrefix(d.GetOpenapi(), "3.") || len(d.GetPaths().GetPath()) == 0 {
				t.Errorf("%s: protobuf form does not decode to the document: %v", c.path, err)
			}
		}
	}
}
