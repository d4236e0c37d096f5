package discovery

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/apfproject/apf/config"
)

// describedDocs returns the Swagger document and the OpenAPI 3 document of
// every version, keyed by a label, from a handler serving all versions.
func describedDocs(t *testing.T) map[string]*openAPIDoc {
	t.Helper()
	h := New(Options{Versions: config.Versions})
	var v2 openAPIDoc
	getJSON(t, h, "/openapi/v2", &v2)
	docs := map[string]*openAPIDoc{"v2": &v2}
	for _, v := range config.Versions {
		docs["v3 "+string(v)] = v3Doc(t, h, v)
	}
	return docs
}

// TestEverySchemaDescribed requires a description on every definition and
// every property of every document, and checks that a described reference
// keeps the form each OpenAPI version allows.
func TestEverySchemaDescribed(t *testing.T) {
	for label, doc := range describedDocs(t) {
		defs := doc.schemas()
		if len(defs) < 30 {
			t.Errorf("%s: only %d definitions", label, len(defs))
		}
		resolve := func(where string, ref any) {
			s, _ := ref.(string)
			name := s[strings.LastIndex(s, "/")+1:]
			if _, ok := defs[name]; !ok || s == "" {
				t.Errorf("%s: %s: dangling reference %v", label, where, ref)
			}
		}
		for name, def := range defs {
			if d, _ := def["description"].(string); strings.TrimSpace(d) == "" {
				t.Errorf("%s: definition %s has no description", label, name)
			}
			props, _ := def["properties"].(map[string]any)
			for pname, raw := range props {
				where := name + "." + pname
				p, _ := raw.(map[string]any)
				if d, _ := p["description"].(string); strings.TrimSpace(d) == "" {
					t.Errorf("%s: property %s has no description", label, where)
				}
				if ref, ok := p["$ref"]; ok {
					if doc.OpenAPI != "" {
						t.Errorf("%s: property %s has $ref with siblings; OpenAPI 3 needs allOf", label, where)
					}
					resolve(where, ref)
				}
				if all, ok := p["allOf"]; ok {
					list, _ := all.([]any)
					if doc.OpenAPI == "" || len(list) != 1 {
						t.Errorf("%s: property %s: unexpected allOf %v", label, where, all)
						continue
					}
					inner, _ := list[0].(map[string]any)
					if len(inner) != 1 {
						t.Errorf("%s: property %s: allOf member %v is not a bare reference", label, where, inner)
					}
					resolve(where, inner["$ref"])
				}
			}
		}
	}
}

// versionRE matches the version part of a flowcontrol model name.
var versionRE = regexp.MustCompile(`^io\.k8s\.api\.flowcontrol\.v[0-9a-z]+\.`)

// TestDescriptionsAreDistinct keeps copied texts from creeping in. The
// same field in different versions may share a text, and so may a few
// generic properties that mean the same in every type (apiVersion, kind,
// the parts of a condition); otherwise a text belongs to one property. The
// fields of the flowcontrol specs must all read differently.
func TestDescriptionsAreDistinct(t *testing.T) {
	specTypes := []string{
		"FlowSchemaSpec", "FlowDistinguisherMethod", "PolicyRulesWithSubjects", "Subject", "UserSubject", "GroupSubject",
		"ServiceAccountSubject", "ResourcePolicyRule", "NonResourcePolicyRule", "PriorityLevelConfigurationReference",
		"PriorityLevelConfigurationSpec", "LimitedPriorityLevelConfiguration", "ExemptPriorityLevelConfiguration",
		"LimitResponse", "QueuingConfiguration",
	}
	for label, doc := range describedDocs(t) {
		users := map[string]map[string]bool{} // text -> version-free "Type.property"
		for name, def := range doc.schemas() {
			props, _ := def["properties"].(map[string]any)
			for pname, raw := range props {
				p, _ := raw.(map[string]any)
				d, _ := p["description"].(string)
				key := versionRE.ReplaceAllString(name, "flowcontrol.") + "." + pname
				if users[d] == nil {
					users[d] = map[string]bool{}
				}
				users[d][key] = true
			}
		}
		shared := 0
		for text, keys := range users {
			if len(keys) < 2 {
				continue
			}
			shared++
			props := map[string]bool{}
			for k := range keys {
				props[k[strings.LastIndex(k, ".")+1:]] = true
			}
			if len(props) > 1 {
				t.Errorf("%s: properties with different names share %q: %v", label, text, sortedKeys(keys))
			}
		}
		if shared > 8 {
			t.Errorf("%s: %d descriptions are shared between types; only a few generic ones should be", label, shared)
		}

		for name := range doc.schemas() {
			if !strings.HasSuffix(name, ".FlowSchemaSpec") {
				continue
			}
			prefix := strings.TrimSuffix(name, "FlowSchemaSpec")
			seen := map[string]string{}
			for _, typ := range specTypes {
				def, ok := doc.schemas()[prefix+typ]
				if !ok {
					continue // ExemptPriorityLevelConfiguration in v1alpha1
				}
				props, _ := def["properties"].(map[string]any)
				for pname, raw := range props {
					p, _ := raw.(map[string]any)
					d, _ := p["description"].(string)
					if other, dup := seen[d]; dup {
						t.Errorf("%s: %s.%s and %s have the same description %q", label, typ, pname, other, d)
					}
					seen[d] = typ + "." + pname
				}
			}
		}
	}
}

// TestDescriptionsFollowVersions checks that the descriptions carry the
// documented defaults and limits, and that the shares field reads right in
// each version.
func TestDescriptionsFollowVersions(t *testing.T) {
	docs := describedDocs(t)
	prop := func(doc, def, p string) string {
		d := docs[doc]
		s, ok := d.schemas()[def]
		if !ok {
			t.Fatalf("%s: no definition %s", doc, def)
		}
		props, _ := s["properties"].(map[string]any)
		ps, _ := props[p].(map[string]any)
		text, _ := ps["description"].(string)
		return text
	}
	for _, v := range config.Versions {
		doc := "v3 " + string(v)
		fc := "io.k8s.api.flowcontrol." + string(v) + "."
		for _, want := range []struct {
			def, prop string
			has       []string
		}{
			{"FlowSchemaSpec", "matchingPrecedence", []string{"1..10000", "1000"}},
			{"QueuingConfiguration", "queues", []string{"64"}},
			{"QueuingConfiguration", "handSize", []string{"8"}},
			{"QueuingConfiguration", "queueLengthLimit", []string{"50"}},
			{"LimitedPriorityLevelConfiguration", "lendablePercent", []string{"0 and 100"}},
		} {
			text := prop(doc, fc+want.def, want.prop)
			for _, h := range want.has {
				if !strings.Contains(text, h) {
					t.Errorf("%s: %s.%s = %q lacks %q", doc, want.def, want.prop, text, h)
				}
			}
		}
	}
	ncs := map[string]string{}
	for _, v := range []config.Version{config.V1, config.V1Beta3} {
		ncs[string(v)] = prop("v3 "+string(v), "io.k8s.api.flowcontrol."+string(v)+".LimitedPriorityLevelConfiguration", "nominalConcurrencyShares")
		if !strings.Contains(ncs[string(v)], "30") {
			t.Errorf("%s nominalConcurrencyShares lacks its default: %q", v, ncs[string(v)])
		}
	}
	if ncs["v1"] == ncs["v1beta3"] {
		t.Errorf("nominalConcurrencyShares reads the same in v1 and v1beta3, whose zero handling differs: %q", ncs["v1"])
	}
	if !strings.Contains(ncs["v1beta3"], "v1beta3-preserve-zero-concurrency-shares") {
		t.Errorf("v1beta3 nominalConcurrencyShares does not mention the annotation: %q", ncs["v1beta3"])
	}
	for _, v := range []config.Version{config.V1Beta2, config.V1Beta1, config.V1Alpha1} {
		text := prop("v3 "+string(v), "io.k8s.api.flowcontrol."+string(v)+".LimitedPriorityLevelConfiguration", "assuredConcurrencyShares")
		if !strings.Contains(text, "30") || text == ncs["v1"] {
			t.Errorf("%s assuredConcurrencyShares: %q", v, text)
		}
	}
	// The Swagger document holds every version side by side.
	if got := prop("v2", "io.k8s.api.flowcontrol.v1.LimitedPriorityLevelConfiguration", "nominalConcurrencyShares"); got != ncs["v1"] {
		t.Errorf("v2 and v3 disagree on v1 nominalConcurrencyShares: %q vs %q", got, ncs["v1"])
	}
}

// TestDescriptionTablesUsed checks that every document carries exactly
// the texts of the tables, and reports table entries that no document
// uses, which would be typos in a type or property name.
func TestDescriptionTablesUsed(t *testing.T) {
	used := map[string]bool{}
	for label, doc := range describedDocs(t) {
		for name, def := range doc.schemas() {
			// v1alpha1 is served with the v1beta1 types and texts.
			model := strings.Replace(name, ".flowcontrol.v1alpha1.", ".flowcontrol.v1beta1.", 1)
			_, typ := splitModel(model)
			key := model
			if strings.HasPrefix(model, flowcontrolPrefix) {
				key = typ
			}
			used[key] = true
			if got, want := def["description"], definitionDescription(model); got != want {
				t.Errorf("%s: definition %s: description %q, want %q", label, name, got, want)
			}
			props, _ := def["properties"].(map[string]any)
			for p, raw := range props {
				used[key+"."+p] = true
				used[model+"."+p] = true
				ps, _ := raw.(map[string]any)
				if got, want := ps["description"], propertyDescription(model, p); got != want {
					t.Errorf("%s: property %s.%s: description %q, want %q", label, name, p, got, want)
				}
			}
		}
	}
	check := func(table string, docs map[string]typeDoc) {
		for name, td := range docs {
			if !used[name] {
				t.Errorf("%s: %s is in no document", table, name)
			}
			for p := range td.props {
				if !used[name+"."+p] {
					t.Errorf("%s: %s.%s is in no document", table, name, p)
				}
			}
		}
	}
	check("flowcontrolDocs", flowcontrolDocs)
	check("apimachineryDocs", apimachineryDocs)
	for key := range flowcontrolVersionDocs {
		if !used[key] {
			t.Errorf("flowcontrolVersionDocs: %s is in no document", key)
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// normalizeSpace collapses runs of white space, so that text wrapped by
// kubectl compares equal to the text in the tables.
func normalizeSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// explainHas reports which of the wanted texts kubectl's output lacks.
func explainHas(out string, want ...string) error {
	flat := normalizeSpace(out)
	var missing []string
	for _, w := range want {
		if !strings.Contains(flat, normalizeSpace(w)) {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %q", missing)
	}
	return nil
}
