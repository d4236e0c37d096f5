package flowapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// A patch that changes what the object says it is (kind, apiVersion) is
// read as the API server's codec reads the patched document: another kind,
// or a version the server does not know, is an Invalid "patch" naming the
// codec's complaint; another known version is read in that version. The
// strategic merge library's own errors, which the API server passes on as
// 500s without a reason, are 400s in the library's words; a directive
// that makes the library panic is a 400 too (the API server drops the
// connection). A resourceVersion that is no uint64 is an Invalid
// metadata.resourceVersion in the parser's words (a 500 from the API
// server).
func TestPatchKindAndVersion(t *testing.T) {
	e := newEnv(t, "v1", "v1beta3", "v1beta2")
	e.must(e.do("POST", fsPath, fsJSON("a", "x", 10)), 201)
	e.must(e.do("POST", plPath, fuzzPL), 201)
	cases := []struct {
		name, path, ct, body string
		code                 int
		// detail is how the message of the answer ends (422, 500), or
		// what the answer holds (200).
		detail string
	}{
		{"merge patch to another kind", fsPath + "/a", mediaMerge, `{"kind":"PriorityLevelConfiguration"}`, 422,
			`": converting (v1.PriorityLevelConfiguration) to (flowcontrol.FlowSchema): unknown conversion`},
		{"merge patch to a list kind", fsPath + "/a", mediaMerge, `{"kind":"FlowSchemaList"}`, 422,
			`": converting (v1.FlowSchemaList) to (flowcontrol.FlowSchema): unknown conversion`},
		{"merge patch to an unknown kind", fsPath + "/a", mediaMerge, `{"kind":"Foo"}`, 422,
			`": no kind "Foo" is registered for version "flowcontrol.apiserver.k8s.io/v1" in scheme "pkg/runtime/scheme.go:111"`},
		{"merge patch of the level to another kind", plPath + "/p", mediaMerge, `{"kind":"FlowSchema"}`, 422,
			`": converting (v1.FlowSchema) to (flowcontrol.PriorityLevelConfiguration): unknown conversion`},
		{"status merge patch to another kind", fsPath + "/a/status", mediaMerge, `{"kind":"PriorityLevelConfiguration"}`, 422,
			`": converting (v1.PriorityLevelConfiguration) to (flowcontrol.FlowSchema): unknown conversion`},
		{"json patch to another kind", fsPath + "/a", mediaJSONPatch, `[{"op":"replace","path":"/kind","value":"PriorityLevelConfiguration"}]`, 422,
			`": converting (v1.PriorityLevelConfiguration) to (flowcontrol.FlowSchema): unknown conversion`},
		{"merge patch to another group", fsPath + "/a", mediaMerge, `{"apiVersion":"foo/v1"}`, 422,
			`": no kind "FlowSchema" is registered for version "foo/v1" in scheme "pkg/runtime/scheme.go:111"`},
		{"merge patch to the core group", fsPath + "/a", mediaMerge, `{"apiVersion":"v1"}`, 422,
			`": no kind "FlowSchema" is registered for version "v1" in scheme "pkg/runtime/scheme.go:111"`},
		{"merge patch to an unknown version", fsPath + "/a", mediaMerge, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v9"}`, 422,
			`": no kind "FlowSchema" is registered for version "flowcontrol.apiserver.k8s.io/v9" in scheme "pkg/runtime/scheme.go:111"`},
		{"merge patch to an unregistered version", fsPath + "/a", mediaMerge, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1alpha1"}`, 422,
			`": no kind "FlowSchema" is registered for version "flowcontrol.apiserver.k8s.io/v1alpha1" in scheme "pkg/runtime/scheme.go:111"`},
		{"merge patch to a malformed apiVersion", fsPath + "/a", mediaMerge, `{"apiVersion":"a/b/c"}`, 422,
			`": unexpected GroupVersion string: a/b/c`},
		{"merge patch of a kind that is no string", fsPath + "/a", mediaMerge, `{"kind":5}`, 422,
			`": couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .kind of type string`},
		{"merge patch removing the kind", fsPath + "/a", mediaMerge, `{"kind":null}`, 200, `"kind":"FlowSchema"`},
		{"merge patch to a served version", fsPath + "/a", mediaMerge, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1beta3"}`, 200, `"apiVersion":"flowcontrol.apiserver.k8s.io/v1"`},
		{"merge patch to an older version's field", plPath + "/p", mediaMerge, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1beta2","spec":{"limited":{"assuredConcurrencyShares":7}}}`, 200,
			`"nominalConcurrencyShares":7`},
		{"strategic merge patch of the kind", fsPath + "/a", mediaSMP, `{"kind":"PriorityLevelConfiguration","apiVersion":"foo/v1"}`, 200, `"kind":"FlowSchema"`},
		{"setElementOrder of a list of objects", fsPath + "/a", mediaSMP, `{"spec":{"$setElementOrder/rules":[1,2]}}`, 400,
			`invalid strategic merge patch: one of its directives cannot be applied`},
		{"setElementOrder that is no list", fsPath + "/a", mediaSMP, `{"spec":{"$setElementOrder/rules":1}}`, 400,
			`expected a []interface {}, but received a int64`},
		{"deleteFromPrimitiveList of objects", fsPath + "/a", mediaSMP, `{"spec":{"$deleteFromPrimitiveList/rules":["x"]}}`, 400,
			`[x]]`},
		{"resourceVersion that is no number", fsPath + "/a", mediaMerge, `{"metadata":{"resourceVersion":"not-a-number"}}`, 422,
			`metadata.resourceVersion: Invalid value: "not-a-number": strconv.ParseUint: parsing "not-a-number": invalid syntax`},
		{"resourceVersion beyond every revision", fsPath + "/a", mediaMerge, `{"metadata":{"resourceVersion":"9223372036854775808"}}`, 409,
			`the object has been modified; please apply your changes to the latest version and try again`},
		{"resourceVersion beyond uint64", fsPath + "/a", mediaMerge, `{"metadata":{"resourceVersion":"18446744073709551616"}}`, 422,
			`metadata.resourceVersion: Invalid value: "18446744073709551616": strconv.ParseUint: parsing "18446744073709551616": value out of range`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("PATCH", c.path, c.body, "Content-Type", c.ct)
			if r.code != c.code {
				t.Fatalf("status %d, want %d: %s", r.code, c.code, r.body)
			}
			if c.code == 200 {
				if !strings.Contains(string(r.body), c.detail) {
					t.Errorf("the answer lacks %s: %s", c.detail, r.body)
				}
				return
			}
			m := r.json(t)
			msg, _ := m["message"].(string)
			if !strings.HasSuffix(msg, c.detail) {
				t.Errorf("message does not end with %q: %s", c.detail, msg)
			}
			reason := map[int]string{400: "BadRequest", 409: "Conflict", 422: "Invalid"}[c.code]
			if m["reason"] != reason {
				t.Errorf("reason %v, want %s", m["reason"], reason)
			}
			switch {
			case c.code != 422:
			case strings.HasPrefix(c.detail, "metadata.resourceVersion: "):
				if get(m, "details.causes.0.field") != "metadata.resourceVersion" || get(m, "details.kind") != "FlowSchema" || get(m, "details.name") != "a" ||
					msg != `FlowSchema.flowcontrol.apiserver.k8s.io "a" is invalid: `+c.detail {
					t.Errorf("not an Invalid resourceVersion: %s", r.body)
				}
			case get(m, "details.causes.0.field") != "patch" || !strings.HasPrefix(msg, ` "" is invalid: patch: Invalid value: "{`):
				t.Errorf("not an Invalid patch: %s", r.body)
			}
		})
	}
	// The patch read in v1beta2 is recorded in the path's version.
	if r := e.must(e.do("GET", plPath+"/p", ""), 200); strings.Contains(string(r.body), `"apiVersion":"flowcontrol.apiserver.k8s.io/v1beta2"`) {
		t.Errorf("a managed fields entry in the body's version: %s", r.body)
	}
	// The same resourceVersion in a PUT.
	m := e.must(e.do("GET", fsPath+"/a", ""), 200).json(t)
	m["metadata"].(map[string]any)["resourceVersion"] = "9223372036854775808"
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if r := e.do("PUT", fsPath+"/a", string(body)); r.code != 409 {
		t.Errorf("PUT with resourceVersion 2^63: %d %s", r.code, r.body)
	}
}

// A patch's result is checked as the API server checks it: its uid is no
// precondition, as an update's is, but a field a patch may not change;
// its generateName is written, once valid.
func TestPatchMetadata(t *testing.T) {
	e := newEnv(t)
	e.must(e.do("POST", fsPath, fsJSON("a", "x", 10)), 201)
	for _, ct := range []string{mediaMerge, mediaSMP} {
		m := e.must(e.do("PATCH", fsPath+"/a", `{"metadata":{"uid":"x"}}`, "Content-Type", ct), 422).json(t)
		if msg, _ := m["message"].(string); msg != `FlowSchema.flowcontrol.apiserver.k8s.io "a" is invalid: metadata.uid: Invalid value: "x": field is immutable` {
			t.Errorf("%s of the uid: %s", ct, msg)
		}
	}
	e.must(e.do("PATCH", fsPath+"/a", `[{"op":"replace","path":"/metadata/uid","value":"x"}]`, "Content-Type", mediaJSONPatch), 422)
	m := e.must(e.do("GET", fsPath+"/a", ""), 200).json(t)
	m["metadata"].(map[string]any)["uid"] = "x"
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if r := e.do("PUT", fsPath+"/a", string(body)); r.code != 409 || !strings.Contains(string(r.body), "Precondition failed: UID in precondition: x") {
		t.Errorf("PUT with another uid: %d %s", r.code, r.body)
	}
	m = e.must(e.do("PATCH", fsPath+"/a", `{"metadata":{"generateName":"Bad_"}}`, "Content-Type", mediaMerge), 422).json(t)
	if get(m, "details.causes.0.field") != "metadata.generateName" {
		t.Errorf("an invalid generateName: %v", m)
	}
	e.must(e.do("PATCH", fsPath+"/a", `{"metadata":{"generateName":"good-"}}`, "Content-Type", mediaMerge), 200)
	if m := e.must(e.do("GET", fsPath+"/a", ""), 200).json(t); get(m, "metadata.generateName") != "good-" {
		t.Errorf("generateName not written: %v", get(m, "metadata"))
	}
}
