package flowapi

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPatch(t *testing.T) {
	e := newEnv(t)
	e.must(e.do("POST", fsPath, fsJSON("a", "x", 10)), 201)
	cases := []struct {
		name, ct, body string
		code           int
		check          func(m map[string]any) bool
	}{
		{"merge", mediaMerge, `{"spec":{"matchingPrecedence":20}}`, 200,
			func(m map[string]any) bool { return get(m, "spec.matchingPrecedence") == float64(20) }},
		{"merge null removes", mediaMerge, `{"metadata":{"labels":null}}`, 200,
			func(m map[string]any) bool { return get(m, "metadata.labels") == nil }},
		{"json patch", mediaJSONPatch, `[{"op":"replace","path":"/spec/matchingPrecedence","value":30},{"op":"add","path":"/metadata/labels","value":{"k":"v"}}]`, 200,
			func(m map[string]any) bool {
				return get(m, "spec.matchingPrecedence") == float64(30) && get(m, "metadata.labels.k") == "v"
			}},
		{"json patch test fails", mediaJSONPatch, `[{"op":"test","path":"/spec/matchingPrecedence","value":1}]`, 422, nil},
		{"json patch bad", mediaJSONPatch, `{"op":"x"}`, 400, nil},
		{"strategic list merge", mediaSMP, `{"spec":{"distinguisherMethod":{"type":"ByUser"}}}`, 200,
			func(m map[string]any) bool { return get(m, "spec.distinguisherMethod.type") == "ByUser" }},
		{"strategic bad", mediaSMP, `[1,2]`, 400, nil},
		{"apply without a field manager", mediaApply, `apiVersion: x`, 422, nil},
		{"unknown", "text/plain", `{}`, 415, nil},
		{"invalid result", mediaMerge, `{"spec":{"priorityLevelConfiguration":{"name":""}}}`, 422, nil},
		{"rename", mediaMerge, `{"metadata":{"name":"b"}}`, 400, nil},
		{"stale rv", mediaMerge, `{"metadata":{"resourceVersion":"1"},"spec":{"matchingPrecedence":40}}`, 409, nil},
		{"strict unknown", mediaMerge, `{"spec":{"bogus":1}}`, 200, nil}, // Warn by default
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("PATCH", fsPath+"/a", c.body, "Content-Type", c.ct)
			if r.code != c.code {
				t.Fatalf("status %d, want %d: %s", r.code, c.code, r.body)
			}
			if c.check != nil && !c.check(r.json(t)) {
				t.Errorf("unexpected result: %s", r.body)
			}
		})
	}
	// Under Strict, a patch whose result has an unknown field is an
	// Invalid "patch", shown as the patched document (JSON and merge
	// patches) or as the patch (strategic merge patches).
	r := e.must(e.do("PATCH", fsPath+"/a?fieldValidation=Strict", `{"spec":{"bogus":1}}`, "Content-Type", mediaMerge), 422)
	if m := r.json(t); get(m, "details.causes.0.field") != "patch" || !strings.HasPrefix(m["message"].(string), ` "" is invalid: patch: Invalid value: "{\"apiVersion\":`) ||
		!strings.HasSuffix(m["message"].(string), `: strict decoding error: unknown field "spec.bogus"`) {
		t.Errorf("strict merge patch: %s", r.body)
	}
	r = e.must(e.do("PATCH", fsPath+"/a?fieldValidation=Strict", `{"spec":{"bogus":1}}`, "Content-Type", mediaSMP), 422)
	if m := r.json(t); m["message"] != ` "" is invalid: patch: Invalid value: "map[spec:map[bogus:1]]": strict decoding error: unknown field "spec.bogus"` {
		t.Errorf("strict strategic merge patch: %s", r.body)
	}
	r = e.must(e.do("PATCH", fsPath+"/a", `{"spec":{"matchingPrecedence":"x"}}`, "Content-Type", mediaSMP), 422)
	if m := r.json(t); m["message"] != ` "" is invalid: patch: Invalid value: "map[spec:map[matchingPrecedence:x]]": unrecognized type: int32` {
		t.Errorf("strategic merge patch of a wrong type: %s", r.body)
	}
	// Malformed patches, in the API server's words.
	for _, c := range []struct{ ct, body, want string }{
		{mediaMerge, `{"spec":`, "invalid JSON patch"},
		{mediaJSONPatch, `{"op":"replace"}`, "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"},
		{mediaSMP, `[1]`, "json: cannot unmarshal array into Go value of type map[string]interface {}"},
	} {
		r = e.must(e.do("PATCH", fsPath+"/a", c.body, "Content-Type", c.ct), 400)
		if m := r.json(t); m["message"] != c.want {
			t.Errorf("%s %s: %s", c.ct, c.body, r.body)
		}
	}
	r = e.must(e.do("PATCH", fsPath+"/a", `{"spec":{"bogus":1}}`, "Content-Type", mediaMerge), 200)
	if w := r.header.Get("Warning"); !strings.Contains(w, "spec.bogus") {
		t.Errorf("warning: %q", w)
	}
	e.must(e.do("PATCH", fsPath+"/missing", `{}`, "Content-Type", mediaMerge), 404)
	r = e.must(e.do("PATCH", fsPath+"/a", `{}`, "Content-Type", "text/plain"), 415)
	if m := r.json(t); m["message"] != "415: Unsupported Media Type" || m["reason"] != "UnsupportedMediaType" {
		t.Errorf("unsupported patch type: %s", r.body)
	}
}

// TestKubectlApply sends what client-side kubectl apply sends for an
// object that exists: a strategic merge patch setting the last-applied
// annotation and the changed spec field.
func TestKubectlApply(t *testing.T) {
	e := newEnv(t)
	first := fsJSON("app", "x", 100)
	var compact map[string]any
	if err := json.Unmarshal([]byte(first), &compact); err != nil {
		t.Fatal(err)
	}
	applied, _ := json.Marshal(compact)
	created := strings.Replace(first, `"labels"`, `"annotations":{"kubectl.kubernetes.io/last-applied-configuration":`+string(mustQuote(string(applied)+"\n"))+`},"labels"`, 1)
	e.must(e.do("POST", fsPath+"?fieldManager=kubectl-client-side-apply&fieldValidation=Strict", created), 201)

	second := strings.Replace(string(applied), `"matchingPrecedence":100`, `"matchingPrecedence":200`, 1)
	patch := `{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":` + string(mustQuote(second+"\n")) + `}},"spec":{"matchingPrecedence":200}}`
	r := e.must(e.do("PATCH", fsPath+"/app?fieldManager=kubectl-client-side-apply&fieldValidation=Strict", patch, "Content-Type", mediaSMP), 200)
	m := r.json(t)
	if get(m, "spec.matchingPrecedence") != float64(200) || get(m, "metadata.generation") != float64(2) {
		t.Errorf("after apply: %s", pretty(m))
	}
	ann := m["metadata"].(map[string]any)["annotations"].(map[string]any)["kubectl.kubernetes.io/last-applied-configuration"]
	if ann != second+"\n" {
		t.Errorf("annotation: %v", ann)
	}
	if get(m, "spec.rules.0.subjects.0.group.name") != "system:authenticated" {
		t.Errorf("rules lost: %s", pretty(m))
	}
}

func mustQuote(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

func TestStatusSubresource(t *testing.T) {
	e := newEnv(t)
	e.must(e.do("POST", fsPath, fsJSON("a", "x", 10)), 201)
	status := `{"status":{"conditions":[{"type":"Dangling","status":"False","reason":"Found","message":"ok","lastTransitionTime":"2026-03-04T05:06:07Z"}]}}`
	r := e.must(e.do("PATCH", fsPath+"/a/status", status, "Content-Type", mediaMerge), 200)
	if get(r.json(t), "status.conditions.0.status") != "False" {
		t.Errorf("status patch: %s", r.body)
	}
	// A spec change through status is ignored.
	r = e.must(e.do("PATCH", fsPath+"/a/status", `{"spec":{"matchingPrecedence":99}}`, "Content-Type", mediaMerge), 200)
	if m := r.json(t); get(m, "spec.matchingPrecedence") != float64(10) || get(m, "metadata.generation") != float64(1) {
		t.Errorf("spec through status: %s", r.body)
	}
	// The main resource ignores status.
	cur := e.must(e.do("GET", fsPath+"/a", ""), 200).json(t)
	cur["status"] = map[string]any{}
	body, _ := json.Marshal(cur)
	r = e.must(e.do("PUT", fsPath+"/a", string(body)), 200)
	if get(r.json(t), "status.conditions.0.type") != "Dangling" {
		t.Errorf("status lost by update: %s", r.body)
	}
	// PUT on status, with a stale resourceVersion and then a fresh one.
	cur = e.must(e.do("GET", fsPath+"/a/status", ""), 200).json(t)
	cur["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Dangling", "status": "True"}}}
	body, _ = json.Marshal(cur)
	e.must(e.do("PUT", fsPath+"/a/status", string(body)), 200)
	e.must(e.do("PUT", fsPath+"/a/status", string(body)), 409)
	r = e.must(e.do("GET", fsPath+"/a", "", "Accept", tableJSON), 200)
	if c := get(r.json(t), "rows.0.cells.5"); c != "True" {
		t.Errorf("MissingPL cell %v", c)
	}
}
