package flowapi

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// managedFields decodes the metadata.managedFields of an answer.
func managedFields(t *testing.T, r resp) []metav1.ManagedFieldsEntry {
	t.Helper()
	var obj struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(r.body, &obj); err != nil {
		t.Fatalf("answer %d is not an object: %v\n%s", r.code, err, r.body)
	}
	return obj.Metadata.ManagedFields
}

// entry returns the managed-fields entry of manager, and whether there is one.
func entry(mfs []metav1.ManagedFieldsEntry, manager string, op metav1.ManagedFieldsOperationType, sub string) (metav1.ManagedFieldsEntry, bool) {
	for _, mf := range mfs {
		if mf.Manager == manager && mf.Operation == op && mf.Subresource == sub {
			return mf, true
		}
	}
	return metav1.ManagedFieldsEntry{}, false
}

// owns says whether an entry's field set names the field path, written as
// the set writes it (for example "f:spec.f:matchingPrecedence").
func owns(t *testing.T, mf metav1.ManagedFieldsEntry, path string) bool {
	t.Helper()
	if mf.FieldsV1 == nil {
		return false
	}
	var set map[string]any
	if err := json.Unmarshal(mf.FieldsV1.GetRawBytes(), &set); err != nil {
		t.Fatalf("fieldsV1 %s: %v", mf.FieldsV1.GetRawBytes(), err)
	}
	var cur any = set
	for _, p := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[p]; !ok {
			return false
		}
	}
	return true
}

const applyFS = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: a
  labels:
    team: x
spec:
  matchingPrecedence: 500
  priorityLevelConfiguration:
    name: global-default
  rules:
  - subjects:
    - kind: User
      user: {name: alice}
    nonResourceRules:
    - verbs: ["get"]
      nonResourceURLs: ["/healthz"]
`

func TestApplyCreatesAndUpdates(t *testing.T) {
	e := newEnv(t)
	apply := func(name, manager, body string, code int, extra ...string) resp {
		t.Helper()
		q := "?fieldManager=" + manager
		for _, x := range extra {
			q += "&" + x
		}
		return e.must(e.do("PATCH", fsPath+"/"+name+q, body, "Content-Type", mediaApply), code)
	}

	// A missing object is created: 201, and the manager owns what it set.
	r := apply("a", "alice", applyFS, 201)
	m := r.json(t)
	if get(m, "metadata.generation") != float64(1) || get(m, "spec.matchingPrecedence") != float64(500) {
		t.Fatalf("created: %s", r.body)
	}
	if get(m, "spec.distinguisherMethod") != nil {
		t.Errorf("a default that v1 does not set appeared: %s", r.body)
	}
	mf, ok := entry(managedFields(t, r), "alice", metav1.ManagedFieldsOperationApply, "")
	if !ok {
		t.Fatalf("no Apply entry for alice: %s", r.body)
	}
	if mf.APIVersion != "flowcontrol.apiserver.k8s.io/v1" || mf.FieldsType != "FieldsV1" || mf.Time == nil {
		t.Errorf("entry %+v", mf)
	}
	for _, p := range []string{"f:spec.f:matchingPrecedence", "f:spec.f:priorityLevelConfiguration.f:name", "f:spec.f:rules", "f:metadata.f:labels.f:team"} {
		if !owns(t, mf, p) {
			t.Errorf("alice does not own %s: %s", p, mf.FieldsV1.GetRawBytes())
		}
	}
	if owns(t, mf, "f:metadata.f:name") || owns(t, mf, "f:status") {
		t.Errorf("alice owns a field the server keeps: %s", mf.FieldsV1.GetRawBytes())
	}

	// The same apply again changes nothing: no write, same resourceVersion.
	rv := get(m, "metadata.resourceVersion")
	if got := get(apply("a", "alice", applyFS, 200).json(t), "metadata.resourceVersion"); got != rv {
		t.Errorf("a repeated apply wrote: resourceVersion %v -> %v", rv, got)
	}

	// Applying without a field the manager alone owned removes it.
	noLabels := strings.Replace(applyFS, "  labels:\n    team: x\n", "", 1)
	m = apply("a", "alice", strings.Replace(noLabels, "500", "600", 1), 200).json(t)
	if get(m, "metadata.labels") != nil || get(m, "spec.matchingPrecedence") != float64(600) || get(m, "metadata.generation") != float64(2) {
		t.Errorf("after the second apply: labels %v precedence %v generation %v", get(m, "metadata.labels"), get(m, "spec.matchingPrecedence"), get(m, "metadata.generation"))
	}

	// Another manager setting the same field to another value conflicts,
	// with the API server's message and causes.
	bob := "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: a\nspec:\n  matchingPrecedence: 700\n"
	r = apply("a", "bob", bob, 409)
	st := r.json(t)
	if msg, _ := st["message"].(string); msg != `Apply failed with 1 conflict: conflict with "alice": .spec.matchingPrecedence` {
		t.Errorf("conflict message %q", msg)
	}
	if get(st, "reason") != "Conflict" || get(st, "details.causes.0.reason") != "FieldManagerConflict" ||
		get(st, "details.causes.0.field") != ".spec.matchingPrecedence" || get(st, "details.causes.0.message") != `conflict with "alice"` {
		t.Errorf("conflict status: %s", r.body)
	}
	// The same value is no conflict: both then own the field.
	shared := strings.Replace(bob, "700", "600", 1)
	r = apply("a", "bob", shared, 200)
	if mf, ok := entry(managedFields(t, r), "bob", metav1.ManagedFieldsOperationApply, ""); !ok || !owns(t, mf, "f:spec.f:matchingPrecedence") {
		t.Errorf("bob does not share the field: %s", r.body)
	}
	// force takes the field over.
	r = apply("a", "bob", bob, 200, "force=true")
	mfs := managedFields(t, r)
	if get(r.json(t), "spec.matchingPrecedence") != float64(700) {
		t.Errorf("forced apply did not set the field: %s", r.body)
	}
	if mf, _ := entry(mfs, "alice", metav1.ManagedFieldsOperationApply, ""); owns(t, mf, "f:spec.f:matchingPrecedence") {
		t.Errorf("alice still owns the field bob forced: %s", mf.FieldsV1.GetRawBytes())
	}
	// force is only for apply.
	e.must(e.do("PATCH", fsPath+"/a?force=true", `{}`, "Content-Type", mediaMerge), 422)
}

func TestWritesRecordTheirManager(t *testing.T) {
	e := newEnv(t)
	// Without fieldManager, the manager is the User-Agent's product.
	r := e.must(e.do("POST", fsPath, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"a"},"spec":{"priorityLevelConfiguration":{"name":"global-default"}}}`,
		"User-Agent", "curl/8.5.0"), 201)
	mf, ok := entry(managedFields(t, r), "curl", metav1.ManagedFieldsOperationUpdate, "")
	if !ok || mf.APIVersion != "flowcontrol.apiserver.k8s.io/v1" {
		t.Fatalf("create recorded %+v", managedFields(t, r))
	}
	// Defaulted fields are the writer's: the server applied the defaults
	// to what it was sent.
	if !owns(t, mf, "f:spec.f:matchingPrecedence") || !owns(t, mf, "f:spec.f:priorityLevelConfiguration.f:name") {
		t.Errorf("create's fields: %s", mf.FieldsV1.GetRawBytes())
	}
	// A merge patch in another version, named by the option.
	r = e.must(e.do("PATCH", base+"v1beta3/flowschemas/a?fieldManager=tuner", `{"spec":{"matchingPrecedence":42}}`, "Content-Type", mediaMerge), 200)
	if mf, ok := entry(managedFields(t, r), "tuner", metav1.ManagedFieldsOperationUpdate, ""); !ok ||
		mf.APIVersion != "flowcontrol.apiserver.k8s.io/v1beta3" || !owns(t, mf, "f:spec.f:matchingPrecedence") {
		t.Errorf("patch recorded %+v", managedFields(t, r))
	}
	if mf, _ := entry(managedFields(t, r), "curl", metav1.ManagedFieldsOperationUpdate, ""); owns(t, mf, "f:spec.f:matchingPrecedence") {
		t.Errorf("the field changed hands, but curl still owns it: %s", mf.FieldsV1.GetRawBytes())
	}
	// The status subresource records its own entry, and only status.
	st := `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"a"},"spec":{"matchingPrecedence":1},"status":{"conditions":[{"type":"Dangling","status":"False","reason":"Found","message":"ok"}]}}`
	r = e.must(e.do("PATCH", fsPath+"/a/status?fieldManager=watcher", st, "Content-Type", mediaApply), 200)
	if get(r.json(t), "spec.matchingPrecedence") != float64(42) {
		t.Errorf("a status apply changed the spec: %s", r.body)
	}
	mf, ok = entry(managedFields(t, r), "watcher", metav1.ManagedFieldsOperationApply, "status")
	if !ok || !owns(t, mf, `f:status.f:conditions.k:{"type":"Dangling"}.f:message`) || owns(t, mf, "f:spec") {
		t.Errorf("status apply recorded %+v", managedFields(t, r))
	}
	// An apply through the status of a missing object creates nothing.
	e.must(e.do("PATCH", fsPath+"/missing/status?fieldManager=watcher", strings.Replace(st, `"a"`, `"missing"`, 1), "Content-Type", mediaApply), 404)
	// A dry run creates nothing.
	e.must(e.do("PATCH", fsPath+"/dry?fieldManager=m&dryRun=All", strings.Replace(applyFS, "name: a", "name: dry", 1), "Content-Type", mediaApply), 201)
	e.must(e.do("GET", fsPath+"/dry", ""), 404)
}

func TestApplyRefusals(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name, path, body string
		code             int
		message          string
	}{
		{"no field manager", fsPath + "/a", applyFS, 422, `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`},
		{"managed fields sent", fsPath + "/a?fieldManager=m", strings.Replace(applyFS, "  name: a\n", "  name: a\n  managedFields: [{manager: x}]\n", 1), 400, "metadata.managedFields must be nil"},
		{"another version", fsPath + "/a?fieldManager=m", strings.Replace(applyFS, "/v1\n", "/v1beta3\n", 1), 400, ""},
		{"another kind", fsPath + "/a?fieldManager=m", strings.Replace(applyFS, "kind: FlowSchema", "kind: PriorityLevelConfiguration", 1), 400, ""},
		{"another name", fsPath + "/b?fieldManager=m", applyFS, 400, "the name of the object (a) does not match the name on the URL (b)"},
		{"not YAML", fsPath + "/a?fieldManager=m", "{[", 400, "error decoding YAML"},
		{"duplicate key, strict", fsPath + "/a?fieldManager=m&fieldValidation=Strict", applyFS + "  matchingPrecedence: 3\n", 400, "error strict decoding YAML"},
		{"invalid object", fsPath + "/a?fieldManager=m", strings.Replace(applyFS, "500", "20000", 1), 422, "spec.matchingPrecedence"},
		// The field manager's own words, which the API server passes on
		// as 500s.
		{"unknown field", fsPath + "/a?fieldManager=m", applyFS + "  bogus: 1\n", 400,
			"failed to create typed patch object (/a; flowcontrol.apiserver.k8s.io/v1, Kind=FlowSchema): .spec.bogus: field not declared in schema"},
		{"wrongly typed field", fsPath + "/a?fieldManager=m", strings.Replace(applyFS, "500", "high", 1), 400,
			"failed to create typed patch object (/a; flowcontrol.apiserver.k8s.io/v1, Kind=FlowSchema): .spec.matchingPrecedence: expected numeric (int or float), got string"},
		// The parser's words, which the API server passes on as a 500.
		{"resourceVersion that is no number", fsPath + "/a?fieldManager=m", strings.Replace(applyFS, "  name: a\n", "  name: a\n  resourceVersion: x\n", 1), 422,
			`FlowSchema.flowcontrol.apiserver.k8s.io "a" is invalid: metadata.resourceVersion: Invalid value: "x": strconv.ParseUint: parsing "x": invalid syntax`},
		{"status, resourceVersion that is no number", fsPath + "/a/status?fieldManager=m", strings.Replace(applyFS, "  name: a\n", "  name: a\n  resourceVersion: x\n", 1), 404, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.must(e.do("PATCH", c.path, c.body, "Content-Type", mediaApply), c.code)
			if msg, _ := r.json(t)["message"].(string); !strings.Contains(msg, c.message) {
				t.Errorf("message %q, want %q", msg, c.message)
			}
		})
	}
	e.must(e.do("GET", fsPath+"/a", ""), 404)
	// Under Warn, a duplicate key is a warning and the apply happens.
	r := e.must(e.do("PATCH", fsPath+"/a?fieldManager=m", applyFS+"  matchingPrecedence: 3\n", "Content-Type", mediaApply), 201)
	if w := r.header.Get("Warning"); !strings.Contains(w, "matchingPrecedence") {
		t.Errorf("warning %q", w)
	}
}
