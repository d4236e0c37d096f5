package flowapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/apfproject/apf/config"
)

func TestPathsAndMethods(t *testing.T) {
	e := newEnv(t, config.DefaultServedVersions...)
	cases := []struct {
		method, path string
		code         int
		reason       string
	}{
		{"GET", "/apis/flowcontrol.apiserver.k8s.io/v1alpha1/flowschemas", 404, "NotFound"},
		{"GET", "/apis/flowcontrol.apiserver.k8s.io/v2/flowschemas", 404, "NotFound"},
		{"GET", "/apis/flowcontrol.apiserver.k8s.io/v1/pods", 404, "NotFound"},
		{"GET", "/apis/flowcontrol.apiserver.k8s.io/v1", 404, "NotFound"},
		{"GET", "/apis/apps/v1/deployments", 404, "NotFound"},
		{"GET", "/api/v1/pods", 404, "NotFound"},
		{"GET", fsPath + "/a/b", 404, "NotFound"},
		{"GET", fsPath + "/a/status/x", 404, "NotFound"},
		{"GET", fsPath + "/missing", 404, "NotFound"},
		{"GET", fsPath + "/missing/status", 404, "NotFound"},
		{"PUT", fsPath, 405, "MethodNotAllowed"},
		{"POST", fsPath + "/x", 405, "MethodNotAllowed"},
		{"DELETE", fsPath + "/x/status", 405, "MethodNotAllowed"},
		{"GET", fsPath, 200, ""},
		{"GET", base + "v1beta3/prioritylevelconfigurations", 200, ""},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			r := e.do(c.method, c.path, "")
			if r.code != c.code {
				t.Fatalf("status %d, want %d: %s", r.code, c.code, r.body)
			}
			if c.reason != "" {
				m := r.json(t)
				if m["kind"] != "Status" || m["reason"] != c.reason || m["apiVersion"] != "v1" {
					t.Errorf("body: %s", r.body)
				}
			}
		})
	}
}

func TestCRUD(t *testing.T) {
	e := newEnv(t)
	// create
	r := e.must(e.do("POST", fsPath, fsJSON("b", "x", 500)), 201)
	obj := r.json(t)
	for path, want := range map[string]any{
		"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
		"metadata.name": "b", "metadata.generation": float64(1),
		"metadata.creationTimestamp": "2026-03-04T05:06:07Z",
		"spec.matchingPrecedence":    float64(500),
	} {
		if got := get(obj, path); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	if get(obj, "metadata.uid") == "" || get(obj, "metadata.resourceVersion") == "" {
		t.Errorf("uid/resourceVersion not set: %s", r.body)
	}
	e.must(e.do("POST", fsPath, fsJSON("a", "y", 0)), 201)
	// duplicate
	r = e.must(e.do("POST", fsPath, fsJSON("b", "x", 500)), 409)
	if m := r.json(t); m["reason"] != "AlreadyExists" {
		t.Errorf("duplicate: %s", r.body)
	}
	// get: the defaulted precedence
	r = e.must(e.do("GET", fsPath+"/a", ""), 200)
	if get(r.json(t), "spec.matchingPrecedence") != float64(1000) {
		t.Errorf("default precedence: %s", r.body)
	}
	// list: sorted, resourceVersion, items without TypeMeta
	r = e.must(e.do("GET", fsPath, ""), 200)
	l := r.json(t)
	if l["kind"] != "FlowSchemaList" || get(l, "metadata.resourceVersion") == nil {
		t.Errorf("list: %s", r.body)
	}
	items := l["items"].([]any)
	if len(items) != 2 || get(items[0], "metadata.name") != "a" || get(items[1], "metadata.name") != "b" || get(items[0], "kind") != nil {
		t.Errorf("items: %s", pretty(items))
	}
	// selectors
	for q, want := range map[string]int{
		"labelSelector=team%3Dx":              1,
		"labelSelector=team":                  2,
		"fieldSelector=metadata.name%3Da":     1,
		"fieldSelector=metadata.name%21%3Da":  1,
		"fieldSelector=metadata.namespace%3D": 2,
	} {
		l := e.must(e.do("GET", fsPath+"?"+q, ""), 200).json(t)
		if n := len(l["items"].([]any)); n != want {
			t.Errorf("%s: %d items, want %d", q, n, want)
		}
	}
	e.must(e.do("GET", fsPath+"?fieldSelector=spec.x%3Dy", ""), 400)
	e.must(e.do("GET", fsPath+"?labelSelector=%3D%3D%3D", ""), 400)
	// update: name must match, stale rv conflicts, spec change bumps generation
	cur := e.must(e.do("GET", fsPath+"/b", ""), 200).json(t)
	rv := get(cur, "metadata.resourceVersion").(string)
	upd := strings.Replace(fsJSON("b", "x", 600), `"name":"b",`, fmt.Sprintf(`"name":"b","resourceVersion":%q,`, rv), 1)
	r = e.must(e.do("PUT", fsPath+"/b", upd), 200)
	if get(r.json(t), "metadata.generation") != float64(2) {
		t.Errorf("generation after spec change: %s", r.body)
	}
	r = e.must(e.do("PUT", fsPath+"/b", upd), 409)
	if m := r.json(t); m["reason"] != "Conflict" || !strings.Contains(m["message"].(string), "the object has been modified; please apply your changes to the latest version and try again") {
		t.Errorf("stale update: %s", r.body)
	}
	e.must(e.do("PUT", fsPath+"/b", fsJSON("b", "z", 600)), 200) // unconditional
	e.must(e.do("PUT", fsPath+"/c", fsJSON("b", "z", 600)), 400)
	e.must(e.do("PUT", fsPath+"/c", fsJSON("c", "z", 600)), 404)
	// delete: answers with a success Status naming what went, as the API
	// server does for these kinds; preconditions; 404 after
	r = e.must(e.do("DELETE", fsPath+"/a", `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"nope"}}`), 409)
	if m := r.json(t); !strings.HasPrefix(m["message"].(string), `Operation cannot be fulfilled on FlowSchema.flowcontrol.apiserver.k8s.io "a": the UID in the precondition (nope) does not match the UID in record (`) || get(m, "details.kind") != "FlowSchema" {
		t.Errorf("failed precondition: %s", r.body)
	}
	uid := get(e.must(e.do("GET", fsPath+"/a", ""), 200).json(t), "metadata.uid")
	r = e.must(e.do("DELETE", fsPath+"/a", `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}`), 200)
	if m := r.json(t); m["kind"] != "Status" || m["status"] != "Success" || get(m, "details.name") != "a" ||
		get(m, "details.group") != config.Group || get(m, "details.kind") != "flowschemas" || get(m, "details.uid") != uid {
		t.Errorf("delete answer: %s", r.body)
	}
	r = e.must(e.do("DELETE", fsPath+"/a", ""), 404)
	if m := r.json(t); m["message"] != `flowschemas.flowcontrol.apiserver.k8s.io "a" not found` || get(m, "details.group") != config.Group {
		t.Errorf("not found: %s", r.body)
	}
}

func TestVersionsRoundTrip(t *testing.T) {
	e := newEnv(t)
	// v1beta1 in, v1 out: assuredConcurrencyShares → nominalConcurrencyShares.
	e.must(e.do("POST", base+"v1beta1/prioritylevelconfigurations", fmt.Sprintf(plV1Beta1, "old", 7)), 201)
	m := e.must(e.do("GET", plPath+"/old", ""), 200).json(t)
	if get(m, "spec.limited.nominalConcurrencyShares") != float64(7) || get(m, "spec.limited.limitResponse.queuing.handSize") != float64(8) {
		t.Errorf("v1 view: %s", pretty(m))
	}
	// v1alpha1 in (the v1beta1 schema), every version out.
	alpha := strings.Replace(fmt.Sprintf(plV1Beta1, "alpha", 9), "v1beta1", "v1alpha1", 1)
	r := e.must(e.do("POST", base+"v1alpha1/prioritylevelconfigurations", alpha), 201)
	if m := r.json(t); m["apiVersion"] != "flowcontrol.apiserver.k8s.io/v1alpha1" || get(m, "spec.limited.assuredConcurrencyShares") != float64(9) {
		t.Errorf("v1alpha1 answer: %s", r.body)
	}
	for _, v := range config.Versions {
		m := e.must(e.do("GET", base+string(v)+"/prioritylevelconfigurations/alpha", ""), 200).json(t)
		field := "spec.limited." + v.SharesField()
		if m["apiVersion"] != v.APIVersion() || get(m, field) != float64(9) {
			t.Errorf("%s: %s = %v", v, field, get(m, field))
		}
	}
	// v1 with zero shares reads back in v1beta3 with the marker annotation.
	zero := `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"zero"},
	 "spec":{"type":"Limited","limited":{"nominalConcurrencyShares":0,"limitResponse":{"type":"Reject"}}}}`
	e.must(e.do("POST", plPath, zero), 201)
	m = e.must(e.do("GET", base+"v1beta3/prioritylevelconfigurations/zero", ""), 200).json(t)
	if _, ok := get(m, "metadata.annotations").(map[string]any)[config.PreserveZeroSharesAnnotation]; !ok {
		t.Errorf("v1beta3 zero shares: %s", pretty(m))
	}
	// A v1alpha1 body with spec.exempt is an unknown field there.
	exempt := `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1alpha1","kind":"PriorityLevelConfiguration","metadata":{"name":"ex"},
	 "spec":{"type":"Exempt","exempt":{}}}`
	r = e.must(e.do("POST", base+"v1alpha1/prioritylevelconfigurations?fieldValidation=Strict", exempt), 400)
	if !strings.Contains(string(r.body), `unknown field \"spec.exempt\"`) {
		t.Errorf("v1alpha1 exempt: %s", r.body)
	}
	// A body of another version, even a served one, is refused, as by the
	// API server; so is a foreign kind.
	r = e.must(e.do("POST", plPath, fmt.Sprintf(plV1Beta1, "mixed", 3)), 400)
	if want := `the API version in the data (flowcontrol.apiserver.k8s.io/v1beta1) does not match the expected API version (flowcontrol.apiserver.k8s.io/v1)`; !strings.Contains(string(r.body), want) {
		t.Errorf("body of another version: %s", r.body)
	}
	e.must(e.do("POST", base+"v1beta1/prioritylevelconfigurations", fmt.Sprintf(plV1Beta1, "mixed", 3)), 201)
	r = e.must(e.do("PUT", plPath+"/mixed", fmt.Sprintf(plV1Beta1, "mixed", 4)), 400)
	if !strings.Contains(string(r.body), "does not match the expected API version") {
		t.Errorf("update with a body of another version: %s", r.body)
	}
	e.must(e.do("POST", fsPath, fmt.Sprintf(plV1Beta1, "wrongkind", 3)), 400)
	e.must(e.do("POST", plPath, `{"apiVersion":"v1","kind":"PriorityLevelConfiguration","metadata":{"name":"x"}}`), 400)
}

func TestFieldValidation(t *testing.T) {
	e := newEnv(t)
	unknown := strings.Replace(fsJSON("u", "x", 10), `"matchingPrecedence":10`, `"matchingPrecedence":10,"foo":1`, 1)
	dup := strings.Replace(fsJSON("d", "x", 10), `"matchingPrecedence":10`, `"matchingPrecedence":10,"matchingPrecedence":11`, 1)
	yamlDup := "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: yd\n  name: yd\nspec:\n  priorityLevelConfiguration:\n    name: global-default\n"
	cases := []struct {
		name, query, body, ct string
		code                  int
		want                  string // in the body (400) or the Warning header
	}{
		{"strict unknown", "?fieldValidation=Strict", unknown, "", 400, `strict decoding error: unknown field \"spec.foo\"`},
		{"strict duplicate", "?fieldValidation=Strict", dup, "", 400, `FlowSchema in version \"v1\" cannot be handled as a FlowSchema: strict decoding error: duplicate field \"spec.matchingPrecedence\"`},
		{"strict yaml duplicate", "?fieldValidation=Strict", yamlDup, "application/yaml", 400, `already set in map`},
		{"warn unknown", "", unknown, "", 201, `299 - "unknown field \"spec.foo\""`},
		{"warn explicit", "?fieldValidation=Warn", dup, "", 201, `299 - "duplicate field \"spec.matchingPrecedence\""`},
		{"ignore", "?fieldValidation=Ignore", strings.Replace(unknown, `"u"`, `"i"`, 1), "", 201, ""},
		{"bad mode", "?fieldValidation=Loud", unknown, "", 422, `fieldValidation: Unsupported value: \"Loud\"`},
		{"yaml", "", "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: yy\nspec:\n  priorityLevelConfiguration:\n    name: global-default\n", "application/yaml", 201, ""},
		{"not json", "", "{nope", "", 400, `the object provided is unrecognized (must be of type FlowSchema): couldn't get version/kind; json parse error: invalid character 'n' looking for beginning of object key string ({nope)`},
		{"array", "", "[1]", "", 400, `couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" } (5b315d)`},
		{"empty", "", " ", "", 400, "json parse error: unexpected end of JSON input (20)"},
		{"long", "", "[" + strings.Repeat("1,", 20) + "1]", "", 400, "(5b312c312c312c312c312c312c312c312c312c312c312c312c312c312c31 ...)"},
		{"bad type", "", `{"metadata":{"name":7}}`, "", 400, `FlowSchema in version \"v1\" cannot be handled as a FlowSchema: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string`},
		{"the other kind", "", strings.Replace(unknown, `"kind":"FlowSchema"`, `"kind":"PriorityLevelConfiguration"`, 1), "", 400, `PriorityLevelConfiguration in version \"v1\" cannot be handled as a FlowSchema: converting (v1.PriorityLevelConfiguration) to (flowcontrol.FlowSchema): unknown conversion`},
		{"an unknown kind", "", strings.Replace(unknown, `"kind":"FlowSchema"`, `"kind":"Widget"`, 1), "", 400, `Widget in version \"v1\" cannot be handled as a FlowSchema: no kind \"Widget\" is registered for version \"flowcontrol.apiserver.k8s.io/v1\" in scheme \"pkg/runtime/scheme.go:111\"`},
		{"bad yaml", "", "a: [", "application/yaml", 400, `the object provided is unrecognized (must be of type FlowSchema): yaml: line 1: did not find expected node content (613a205b)`},
		{"bad media", "", unknown, "text/plain", 415, "unknown format"},
		{"JSON sent as protobuf", "", unknown, "application/vnd.kubernetes.protobuf", 400, `the object provided is unrecognized (must be of type FlowSchema): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hdr := []string{}
			if c.ct != "" {
				hdr = append(hdr, "Content-Type", c.ct)
			}
			r := e.do("POST", fsPath+c.query, c.body, hdr...)
			if r.code != c.code {
				t.Fatalf("status %d, want %d: %s", r.code, c.code, r.body)
			}
			got := string(r.body)
			if c.code < 300 {
				got = strings.Join(r.header.Values("Warning"), "\n")
			}
			if c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("%q not in %s", c.want, got)
			}
			if c.want == "" && c.code < 300 && got != "" {
				t.Errorf("unexpected warnings: %s", got)
			}
		})
	}
}

func TestInvalid(t *testing.T) {
	e := newEnv(t)
	noPL := strings.Replace(fsJSON("bad", "x", 10), `"name":"global-default"`, `"name":""`, 1)
	r := e.must(e.do("POST", fsPath, noPL), 422)
	m := r.json(t)
	if m["reason"] != "Invalid" || get(m, "details.kind") != "FlowSchema" || get(m, "details.name") != "bad" {
		t.Errorf("invalid: %s", r.body)
	}
	if f := get(m, "details.causes.0.field"); f != "spec.priorityLevelConfiguration.name" {
		t.Errorf("cause field %v: %s", f, r.body)
	}
	// v1beta1 names the shares field its own way.
	r = e.must(e.do("POST", base+"v1beta1/prioritylevelconfigurations", strings.Replace(fmt.Sprintf(plV1Beta1, "neg", -1), `"queues":16`, `"queues":16,"handSize":20`, 1)), 422)
	if !strings.Contains(string(r.body), "spec.limited.assuredConcurrencyShares") {
		t.Errorf("v1beta1 field name: %s", r.body)
	}
	// The mandatory objects keep their spec.
	catchAll := `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"catch-all"},
	 "spec":{"type":"Limited","limited":{"nominalConcurrencyShares":100,"limitResponse":{"type":"Reject"}}}}`
	e.must(e.do("POST", plPath, catchAll), 422)
	// Resource version on create: refused in the API server's storage's
	// words (a 500 there), as the client's fault.
	rv := strings.Replace(fsJSON("rv", "x", 10), `"name":"rv",`, `"name":"rv","resourceVersion":"5",`, 1)
	r = e.must(e.do("POST", fsPath, rv), 400)
	if m := r.json(t); m["reason"] != "BadRequest" || m["message"] != "resourceVersion should not be set on objects to be created" {
		t.Errorf("rv on create: %s", r.body)
	}
}

func TestBodyLimits(t *testing.T) {
	e := newEnv(t)
	huge := `{"metadata":{"name":"x","annotations":{"a":"` + strings.Repeat("x", DefaultMaxBodyBytes) + `"}}}`
	r := e.must(e.do("POST", fsPath, huge), 413)
	if m := r.json(t); m["reason"] != "RequestEntityTooLarge" {
		t.Errorf("413 body: %s", r.body)
	}
	// Also when the length is not announced.
	req, _ := http.NewRequest("POST", e.srv.URL+fsPath, strings.NewReader(huge))
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 413 {
		t.Errorf("chunked: %d", res.StatusCode)
	}
}

func TestNegotiation(t *testing.T) {
	e := newEnv(t)
	e.must(e.do("POST", fsPath, fsJSON("a", "x", 10)), 201)
	cases := []struct {
		accept string
		code   int
		ct     string
	}{
		{"", 200, "application/json"},
		{"application/json", 200, "application/json"},
		{"*/*", 200, "application/json"},
		{"application/yaml", 200, "application/yaml"},
		{"application/vnd.kubernetes.protobuf, application/json", 200, "application/vnd.kubernetes.protobuf"},
		{"application/vnd.kubernetes.protobuf", 200, "application/vnd.kubernetes.protobuf"},
		{"application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json", 200, "application/json"},
		{"application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", 406, "application/json"},
		{"text/html", 406, "application/json"},
		{"application/json;as=Table;v=v1;g=meta.k8s.io", 200, "application/json"},
		{"application/json;as=Other;v=v1;g=meta.k8s.io", 406, "application/json"},
	}
	for _, c := range cases {
		r := e.do("GET", fsPath+"/a", "", "Accept", c.accept)
		if r.code != c.code || r.header.Get("Content-Type") != c.ct {
			t.Errorf("Accept %q: %d %s, want %d %s", c.accept, r.code, r.header.Get("Content-Type"), c.code, c.ct)
		}
	}
	r := e.must(e.do("GET", fsPath+"/a", "", "Accept", "application/yaml"), 200)
	if !strings.Contains(string(r.body), "kind: FlowSchema\n") {
		t.Errorf("yaml: %s", r.body)
	}
}

func TestDryRun(t *testing.T) {
	e := newEnv(t)
	r := e.must(e.do("POST", fsPath+"?dryRun=All", fsJSON("a", "x", 10)), 201)
	if get(r.json(t), "metadata.name") != "a" {
		t.Errorf("dry create: %s", r.body)
	}
	e.must(e.do("GET", fsPath+"/a", ""), 404)
	e.must(e.do("POST", fsPath+"?dryRun=Some", fsJSON("a", "x", 10)), 422)
	e.must(e.do("POST", fsPath, fsJSON("a", "x", 10)), 201)
	e.must(e.do("POST", fsPath+"?dryRun=All", fsJSON("a", "x", 10)), 409)
	r = e.must(e.do("PUT", fsPath+"/a?dryRun=All", fsJSON("a", "x", 20)), 200)
	if get(r.json(t), "spec.matchingPrecedence") != float64(20) {
		t.Errorf("dry update: %s", r.body)
	}
	e.must(e.do("PATCH", fsPath+"/a?dryRun=All", `{"spec":{"matchingPrecedence":30}}`, "Content-Type", mediaMerge), 200)
	e.must(e.do("DELETE", fsPath+"/a?dryRun=All", ""), 200)
	e.must(e.do("DELETE", fsPath+"/a", `{"dryRun":["All"]}`), 200)
	r = e.must(e.do("GET", fsPath+"/a", ""), 200)
	if get(r.json(t), "spec.matchingPrecedence") != float64(10) {
		t.Errorf("dry runs wrote: %s", r.body)
	}
}

// TestDeprecationWarnings: every answer about a resource of a deprecated
// version (a list, a get, a status read, a 404 for a missing object)
// carries the API server's deprecation warning for the resource's kind;
// v1 answers carry none.
func TestDeprecationWarnings(t *testing.T) {
	e := newEnv(t)
	fsWarning := map[config.Version]string{
		config.V1Alpha1: `299 - "flowcontrol.apiserver.k8s.io/v1alpha1 FlowSchema is deprecated in v1.20+, unavailable in v1.21+; use flowcontrol.apiserver.k8s.io/v1beta1 FlowSchema"`,
		config.V1Beta1:  `299 - "flowcontrol.apiserver.k8s.io/v1beta1 FlowSchema is deprecated in v1.23+, unavailable in v1.26+; use flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema"`,
		config.V1Beta2:  `299 - "flowcontrol.apiserver.k8s.io/v1beta2 FlowSchema is deprecated in v1.26+, unavailable in v1.29+; use flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema"`,
		config.V1Beta3:  `299 - "flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema is deprecated in v1.29+, unavailable in v1.32+; use flowcontrol.apiserver.k8s.io/v1 FlowSchema"`,
	}
	for _, v := range config.Versions {
		base := PathPrefix + string(v)
		for _, path := range []string{base + "/flowschemas", base + "/flowschemas/missing", base + "/flowschemas/missing/status"} {
			got := e.do("GET", path, "").header.Values("Warning")
			want := fsWarning[v]
			if want == "" && len(got) != 0 || want != "" && (len(got) != 1 || got[0] != want) {
				t.Errorf("GET %s: Warning %q, want %q", path, got, want)
			}
		}
	}
	got := e.do("GET", PathPrefix+"v1beta3/prioritylevelconfigurations", "").header.Get("Warning")
	if want := `299 - "flowcontrol.apiserver.k8s.io/v1beta3 PriorityLevelConfiguration is deprecated in v1.29+, unavailable in v1.32+; use flowcontrol.apiserver.k8s.io/v1 PriorityLevelConfiguration"`; got != want {
		t.Errorf("priority levels: Warning %q, want %q", got, want)
	}
}
