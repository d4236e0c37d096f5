package authz

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/request"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// reviewServer is the self reviews as apf serve wires them: Authorize(z)
// in front of Reviews, the edge's attributes in the context.
func reviewServer(z *Chain) http.Handler { return Authorize(z)(NewReviews(z)) }

// postReview sends a review body as user u.
func postReview(t *testing.T, h http.Handler, u request.User, path, body string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("POST", path, strings.NewReader(body))
	r.Header.Set("User-Agent", "kubectl/v1.37.2 (linux/amd64) kubernetes/0000000")
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	info, err := request.Parse(r.Method, r.URL.Path, r.URL.RawQuery)
	if err != nil {
		t.Fatal(err)
	}
	r = r.WithContext(request.WithAttributes(r.Context(), &request.Attributes{Info: info, User: u}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	// The time of the managed fields is now: T in what tests compare.
	b := timeRE.ReplaceAllFunc(w.Body.Bytes(), func(m []byte) []byte {
		if m[0] == '\\' {
			return []byte(`\"time\":\"T\"`)
		}
		return []byte(`"time":"T"`)
	})
	w.Body.Reset()
	w.Body.Write(b)
	return w
}

var timeRE = regexp.MustCompile(`"time":"[0-9TZ:-]+"|\\"time\\":\\"[0-9TZ:-]+\\"`)

const (
	canCreateFlowSchemas = `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"resourceAttributes":{"namespace":"default","verb":"create","group":"flowcontrol.apiserver.k8s.io","resource":"flowschemas"}}}`
	canGetMetrics        = `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"nonResourceAttributes":{"path":"/metrics","verb":"get"}}}`
	canGetHealthz        = `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"nonResourceAttributes":{"path":"/healthz","verb":"get"}}}`
)

// TestSelfSubjectAccessReview: an admin, a reader and an anonymous caller
// ask the default chain, as kubectl auth can-i asks.
func TestSelfSubjectAccessReview(t *testing.T) {
	z, err := New(DefaultOptions(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := reviewServer(z)
	for _, tc := range []struct {
		name string
		u    request.User
		body string
		code int
		want string
	}{
		{"admin may create flowschemas", masterUser, canCreateFlowSchemas, 201,
			`{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"authorization.k8s.io/v1","time":"T","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:resourceAttributes":{".":{},"f:group":{},"f:namespace":{},"f:resource":{},"f:verb":{}}}}}]},"spec":{"resourceAttributes":{"namespace":"default","verb":"create","group":"flowcontrol.apiserver.k8s.io","resource":"flowschemas"}},"status":{"allowed":true}}` + "\n"},
		{"reader may not", aliceUser, canCreateFlowSchemas, 201,
			`{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"authorization.k8s.io/v1","time":"T","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:resourceAttributes":{".":{},"f:group":{},"f:namespace":{},"f:resource":{},"f:verb":{}}}}}]},"spec":{"resourceAttributes":{"namespace":"default","verb":"create","group":"flowcontrol.apiserver.k8s.io","resource":"flowschemas"}},"status":{"allowed":false}}` + "\n"},
		{"admin may get /metrics", masterUser, canGetMetrics, 201,
			`{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"authorization.k8s.io/v1","time":"T","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:nonResourceAttributes":{".":{},"f:path":{},"f:verb":{}}}}}]},"spec":{"nonResourceAttributes":{"path":"/metrics","verb":"get"}},"status":{"allowed":true}}` + "\n"},
		{"reader may not get /metrics", aliceUser, canGetMetrics, 201,
			`{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"authorization.k8s.io/v1","time":"T","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:nonResourceAttributes":{".":{},"f:path":{},"f:verb":{}}}}}]},"spec":{"nonResourceAttributes":{"path":"/metrics","verb":"get"}},"status":{"allowed":false}}` + "\n"},
		{"reader may list flowschemas, no version given", aliceUser,
			`{"spec":{"resourceAttributes":{"verb":"list","group":"flowcontrol.apiserver.k8s.io","resource":"flowschemas"}}}`, 201,
			`{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"authorization.k8s.io/v1","time":"T","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:resourceAttributes":{".":{},"f:group":{},"f:resource":{},"f:verb":{}}}}}]},"spec":{"resourceAttributes":{"verb":"list","group":"flowcontrol.apiserver.k8s.io","resource":"flowschemas"}},"status":{"allowed":true}}` + "\n"},
		// Anonymous callers may not create reviews in the Builtin mode,
		// as system:basic-user is not theirs in kube-apiserver.
		{"anonymous may not ask", anonUser, canGetHealthz, 403,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"selfsubjectaccessreviews.authorization.k8s.io is forbidden: User \"system:anonymous\" cannot create resource \"selfsubjectaccessreviews\" in API group \"authorization.k8s.io\" at the cluster scope","reason":"Forbidden","details":{"group":"authorization.k8s.io","kind":"selfsubjectaccessreviews"},"code":403}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := postReview(t, h, tc.u, SelfSubjectAccessReviewPath, tc.body)
			if w.Code != tc.code || w.Body.String() != tc.want {
				t.Errorf("%d %s\nwant %d %s", w.Code, w.Body, tc.code, tc.want)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}

	// A policy that lets anonymous callers ask: they may get /healthz,
	// not /metrics, and the reason says who had no opinion.
	withABAC := NewChain(Named{"system:masters", privileged{"system:masters"}}, Named{"builtin", NewBuiltin(nil)},
		Named{"abac", mustABAC(t, v1b1(`{"group":"system:unauthenticated","namespace":"*","resource":"selfsubjectaccessreviews","apiGroup":"authorization.k8s.io"}`))})
	h = reviewServer(withABAC)
	for body, want := range map[string]string{
		canGetHealthz: `"status":{"allowed":true}}`,
		canGetMetrics: `"status":{"allowed":false,"reason":"abac: No policy matched."}}`,
	} {
		w := postReview(t, h, anonUser, SelfSubjectAccessReviewPath, body)
		if w.Code != 201 || !strings.HasSuffix(w.Body.String(), want+"\n") {
			t.Errorf("anonymous with ABAC: %d %s, want ...%s", w.Code, w.Body, want)
		}
	}
}

// recorder answers fixed and keeps the attributes it was asked about.
type recorder struct {
	fixed
	got *request.Attributes
}

func (r *recorder) Authorize(ctx context.Context, a *request.Attributes) (Decision, string, error) {
	r.got = a
	return r.fixed.Authorize(ctx, a)
}

func TestSelfSubjectAccessReviewStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		z    *recorder
		body string
		want string
	}{
		{"denied", &recorder{fixed: fixed{d: Deny, reason: "not on Sundays"}}, canGetMetrics,
			`"status":{"allowed":false,"denied":true,"reason":"not on Sundays"}}`},
		{"no opinion with a reason", &recorder{fixed: fixed{reason: "ask ops"}}, canGetMetrics,
			`"status":{"allowed":false,"reason":"r: ask ops"}}`},
		{"an authorizer failed", &recorder{fixed: fixed{err: errors.New("webhook down")}}, canGetMetrics,
			`"status":{"allowed":false,"evaluationError":"webhook down"}}`},
		{"a selector that does not parse", &recorder{}, `{"spec":{"resourceAttributes":{"verb":"list","resource":"pods","labelSelector":{"rawSelector":"a in (b"}}}}`,
			`"status":{"allowed":false,"evaluationError":"spec.resourceAttributes.labelSelector ignored due to parse error"}}`},
		{"requirements partly unusable", &recorder{fixed: fixed{err: errors.New("boom")}},
			`{"spec":{"resourceAttributes":{"verb":"list","resource":"pods",` +
				`"fieldSelector":{"requirements":[{"key":"a","operator":"In","values":["x"]},{"key":"b","operator":"Exists"}]},` +
				`"labelSelector":{"requirements":[{"key":"c","operator":"Sometimes","values":["y"]}]}}}}`,
			`"status":{"allowed":false,"evaluationError":"boom; spec.resourceAttributes.fieldSelector partially ignored due to parse error; spec.resourceAttributes.labelSelector ignored due to parse error"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The review's own creation is allowed by a chain in front.
			z := NewChain(Named{"r", tc.z})
			w := postReview(t, NewReviews(z), aliceUser, SelfSubjectAccessReviewPath, tc.body)
			if w.Code != 201 || !strings.HasSuffix(w.Body.String(), tc.want+"\n") {
				t.Errorf("%d %s\nwant ...%s", w.Code, w.Body, tc.want)
			}
		})
	}

	// The attributes asked about: the caller, the review's fields, every
	// version when none is given, selectors as raw selectors.
	r := &recorder{fixed: fixed{d: Allow}}
	body := `{"spec":{"resourceAttributes":{"namespace":"ns","verb":"list","group":"g","resource":"r","subresource":"s","name":"n",` +
		`"fieldSelector":{"requirements":[{"key":"a","operator":"In","values":["x,y"]},{"key":"b","operator":"NotIn","values":["z"]}]},` +
		`"labelSelector":{"requirements":[{"key":"c","operator":"In","values":["2","1"]},{"key":"d","operator":"DoesNotExist"}]}}}}`
	if w := postReview(t, NewReviews(NewChain(Named{"r", r})), aliceUser, SelfSubjectAccessReviewPath, body); w.Code != 201 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	want := request.Info{IsResourceRequest: true, Verb: "list", Namespace: "ns", APIGroup: "g", APIVersion: "*", Resource: "r", Subresource: "s", Name: "n",
		FieldSelector: `a=x\,y,b!=z`, LabelSelector: "c in (1,2),!d"}
	if r.got == nil || r.got.Info != want || r.got.User.Name != "alice" {
		t.Errorf("attributes %+v\nwant %+v", r.got, want)
	}
	// And the webhook sends them on as requirements again.
	sar := subjectAccessReview(r.got)
	if got := canonical(t, sar.Spec.ResourceAttributes); got != `{"namespace":"ns","verb":"list","group":"g","version":"*","resource":"r","subresource":"s","name":"n",`+
		`"fieldSelector":{"requirements":[{"key":"a","operator":"In","values":["x,y"]},{"key":"b","operator":"NotIn","values":["z"]}]},`+
		`"labelSelector":{"requirements":[{"key":"c","operator":"In","values":["1","2"]},{"key":"d","operator":"DoesNotExist"}]}}` {
		t.Errorf("sent on as %s", got)
	}
}

func TestSelfSubjectAccessReviewRefused(t *testing.T) {
	z, _ := New(DefaultOptions(), nil, nil)
	h := reviewServer(z)
	// The kind is empty in kube-apiserver's message and details.
	const invalid = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":".authorization.k8s.io \"\" is invalid: `
	for _, tc := range []struct {
		name  string
		u     request.User
		body  string
		hdr   []string
		code  int
		start string
	}{
		{"neither kind of attributes", aliceUser, `{"spec":{}}`, nil, 422,
			invalid + `spec: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified","reason":"Invalid","details":{"group":"authorization.k8s.io","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified","field":"spec"}]},"code":422}`},
		{"both", aliceUser, `{"spec":{"resourceAttributes":{"verb":"get"},"nonResourceAttributes":{"path":"/x","verb":"get"}}}`, nil, 422,
			invalid + `spec: Invalid value: {\"Path\":\"/x\",\"Verb\":\"get\"}: exactly one of`},
		{"metadata", aliceUser, `{"metadata":{"name":"x"},"spec":{"nonResourceAttributes":{"path":"/x","verb":"get"}}}`, nil, 422,
			invalid + `metadata: Invalid value: {\"name\":\"x\",\"managedFields\":[{\"manager\":\"kubectl\",\"operation\":\"Update\",\"apiVersion\":\"authorization.k8s.io/v1\",\"time\":\"T\",` +
				`\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{\"f:nonResourceAttributes\":{\".\":{},\"f:path\":{},\"f:verb\":{}}}}}]}: must be empty"`},
		{"raw selector and requirements", aliceUser, `{"spec":{"resourceAttributes":{"verb":"list","labelSelector":{"rawSelector":"a=b","requirements":[{"key":"a","operator":"In","values":["b"]}]}}}}`, nil, 422,
			invalid + `spec.resourceAttributes.labelSelector.rawSelector: Invalid value: \"a=b\": may not specified at the same time as requirements"`},
		{"empty selector", aliceUser, `{"spec":{"resourceAttributes":{"verb":"list","fieldSelector":{}}}}`, nil, 422,
			invalid + `spec.resourceAttributes.fieldSelector.requirements: Required value: when spec.resourceAttributes.fieldSelector is specified, requirements or rawSelector is required"`},
		{"null is an empty review", aliceUser, `null`, nil, 422, invalid + `spec: Invalid value: null: exactly one of`},
		{"not JSON", aliceUser, `spec: [`, nil, 400,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the object provided is unrecognized (must be of type SelfSubjectAccessReview): couldn't get version/kind; json parse error: invalid character 's' looking for beginning of value (737065633a205b)","reason":"BadRequest","code":400}`},
		{"empty", aliceUser, ``, nil, 400,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the object provided is unrecognized (must be of type SelfSubjectAccessReview): couldn't get version/kind; json parse error: unexpected end of JSON input (\u003cempty\u003e)","reason":"BadRequest","code":400}`},
		{"an array", aliceUser, `[1]`, nil, 400,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the object provided is unrecognized (must be of type SelfSubjectAccessReview): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" } (5b315d)","reason":"BadRequest","code":400}`},
		{"another kind", aliceUser, `{"kind":"SelfSubjectRulesReview","spec":{}}`, nil, 400,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"SelfSubjectRulesReview in version \"v1\" cannot be handled as a SelfSubjectAccessReview: converting (v1.SelfSubjectRulesReview) to (authorization.SelfSubjectAccessReview): unknown conversion","reason":"BadRequest","code":400}`},
		{"an unknown kind", aliceUser, `{"kind":"Foo","spec":{}}`, nil, 400,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Foo in version \"v1\" cannot be handled as a SelfSubjectAccessReview: no kind \"Foo\" is registered for version \"authorization.k8s.io/v1\" in scheme \"pkg/runtime/scheme.go:111\"","reason":"BadRequest","code":400}`},
		{"another version", aliceUser, `{"apiVersion":"authorization.k8s.io/v1beta1","spec":{}}`, nil, 400,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the API version in the data (authorization.k8s.io/v1beta1) does not match the expected API version (authorization.k8s.io/v1)","reason":"BadRequest","code":400}`},
		{"a field of the wrong type", aliceUser, `{"spec":{"nonResourceAttributes":{"path":5}}}`, nil, 400, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"SelfSubjectAccessReview in version \"v1\" cannot be handled as a SelfSubjectAccessReview: `},
		{"CBOR", aliceUser, canGetMetrics, []string{"Content-Type", "application/cbor"}, 415,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf","reason":"UnsupportedMediaType","code":415}`},
		// Nothing the route produces: its router's answer.
		{"only CBOR accepted", aliceUser, canGetMetrics, []string{"Accept", "application/cbor, application/*"}, 406,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf","reason":"NotAcceptable","details":{},"code":406}`},
		// A type it produces, but not in that form: the handler's.
		{"a table asked for", aliceUser, canGetMetrics, []string{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"}, 406,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf","reason":"NotAcceptable","code":406}`},
		{"protobuf of another kind", aliceUser, string(protobufOf(t, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "x"}})),
			[]string{"Content-Type", "application/vnd.kubernetes.protobuf"}, 400, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"SelfSubjectRulesReview in version \"v1\" cannot be handled as a SelfSubjectAccessReview`},
		{"not protobuf", aliceUser, canGetMetrics, []string{"Content-Type", "application/vnd.kubernetes.protobuf"}, 400,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the object provided is unrecognized (must be of type SelfSubjectAccessReview): `},
		{"too large", aliceUser, `{"spec":{"nonResourceAttributes":{"path":"` + strings.Repeat("x", maxReviewBody) + `"}}}`, nil, 413, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Request entity too large: limit is 3145728"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := postReview(t, h, tc.u, SelfSubjectAccessReviewPath, tc.body, tc.hdr...)
			if w.Code != tc.code || !strings.HasPrefix(w.Body.String(), tc.start) {
				t.Errorf("%d %.600s\nwant %d %s", w.Code, w.Body, tc.code, tc.start)
			}
		})
	}

	// YAML in and out, and unknown fields as warnings.
	w := postReview(t, h, aliceUser, SelfSubjectAccessReviewPath, "spec:\n  nonResourceAttributes: {path: /healthz, verb: get, color: red}\n",
		"Content-Type", "application/yaml", "Accept", "application/yaml")
	if w.Code != 201 || w.Header().Get("Content-Type") != "application/yaml" || !strings.Contains(w.Body.String(), "status:\n  allowed: true\n") ||
		w.Header().Get("Warning") != `299 - "unknown field \"spec.nonResourceAttributes.color\""` {
		t.Errorf("YAML: %d %v %s", w.Code, w.Header(), w.Body)
	}

	// Protobuf in and out, as kubectl sends it.
	pb := protobufOf(t, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Group: FlowcontrolGroup, Resource: "flowschemas"}}})
	w = postReview(t, h, aliceUser, SelfSubjectAccessReviewPath, string(pb),
		"Content-Type", "application/vnd.kubernetes.protobuf", "Accept", "application/vnd.kubernetes.protobuf, */*")
	if w.Code != 201 || w.Header().Get("Content-Type") != "application/vnd.kubernetes.protobuf" {
		t.Fatalf("protobuf: %d %v %q", w.Code, w.Header(), w.Body)
	}
	pbInfo, _ := runtime.SerializerInfoForMediaType(reviewCodecs.SupportedMediaTypes(), mediaProtobuf)
	obj, gvk, err := pbInfo.Serializer.Decode(w.Body.Bytes(), nil, nil)
	if sar, ok := obj.(*authorizationv1.SelfSubjectAccessReview); err != nil || !ok || !sar.Status.Allowed ||
		sar.Spec.ResourceAttributes.Resource != "flowschemas" || gvk.Kind != "SelfSubjectAccessReview" {
		t.Errorf("protobuf answer %v %v %+v", err, gvk, obj)
	}
	// Accept by quality: YAML preferred to JSON.
	w = postReview(t, h, aliceUser, SelfSubjectAccessReviewPath, canGetHealthz, "Accept", "application/json;q=0.5, application/yaml")
	if w.Code != 201 || w.Header().Get("Content-Type") != "application/yaml" {
		t.Errorf("by quality: %d %v", w.Code, w.Header())
	}

	// Another method: 405 for an admin (a reader may not even ask).
	r := httptest.NewRequest("GET", SelfSubjectAccessReviewPath, nil)
	info, _ := request.Parse(r.Method, r.URL.Path, "")
	r = r.WithContext(request.WithAttributes(r.Context(), &request.Attributes{Info: info, User: masterUser}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != 405 || !strings.Contains(rec.Body.String(), `"message":"the server does not allow this method on the requested resource","reason":"MethodNotAllowed"`) {
		t.Errorf("GET: %d %s", rec.Code, rec.Body)
	}
}

func TestSelfSubjectRulesReview(t *testing.T) {
	z, _ := New(DefaultOptions(), nil, nil)
	h := reviewServer(z)
	w := postReview(t, h, aliceUser, SelfSubjectRulesReviewPath, `{"kind":"SelfSubjectRulesReview","apiVersion":"authorization.k8s.io/v1","spec":{"namespace":"default"}}`)
	const want = `{"kind":"SelfSubjectRulesReview","apiVersion":"authorization.k8s.io/v1","metadata":{},"spec":{},"status":{"resourceRules":[` +
		`{"verbs":["get","list","watch"],"apiGroups":["flowcontrol.apiserver.k8s.io"],"resources":["flowschemas","flowschemas/status","prioritylevelconfigurations","prioritylevelconfigurations/status"]},` +
		`{"verbs":["create"],"apiGroups":["authorization.k8s.io"],"resources":["selfsubjectaccessreviews","selfsubjectrulesreviews"]}],` +
		`"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/healthz","/healthz/*","/livez","/livez/*","/readyz","/readyz/*","/version","/version/"]},` +
		`{"verbs":["get"],"nonResourceURLs":["/api","/api/*","/apis","/apis/*","/openapi","/openapi/*"]}],"incomplete":false}}` + "\n"
	if w.Code != 201 || w.Body.String() != want {
		t.Errorf("reader: %d %s\nwant %s", w.Code, w.Body, want)
	}
	if w := postReview(t, h, aliceUser, SelfSubjectRulesReviewPath, `{"spec":{}}`); w.Code != 400 || !strings.Contains(w.Body.String(), `"message":"no namespace on request"`) {
		t.Errorf("no namespace: %d %s", w.Code, w.Body)
	}

	// A mode that cannot list: incomplete, with why; empty lists are
	// lists.
	wh := NewChain(Named{"system:masters", privileged{"system:masters"}}, Named{"default", &webhook{mode: ModeWebhook}})
	w = postReview(t, NewReviews(wh), aliceUser, SelfSubjectRulesReviewPath, `{"spec":{"namespace":"default"}}`)
	if w.Code != 201 || !strings.HasSuffix(w.Body.String(), `"status":{"resourceRules":[],"nonResourceRules":[],"incomplete":true,"evaluationError":"webhook authorizer does not support user rule resolution"}}`+"\n") {
		t.Errorf("webhook: %d %s", w.Code, w.Body)
	}
	// ABAC, by namespace.
	ab := NewChain(Named{"abac", mustABAC(t, examplePolicies...)})
	bob := request.User{Name: "bob", Groups: []string{request.AllAuthenticatedGroup}}
	w = postReview(t, NewReviews(ab), bob, SelfSubjectRulesReviewPath, `{"spec":{"namespace":"projectCaribou"}}`)
	if w.Code != 201 || !strings.HasSuffix(w.Body.String(), `"status":{"resourceRules":[{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["pods"]}],"nonResourceRules":[],"incomplete":false}}`+"\n") {
		t.Errorf("ABAC: %d %s", w.Code, w.Body)
	}
}

func TestManagedFields(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	for _, tc := range []struct {
		spec    string
		query   string
		ua      string
		manager string
		fields  string
	}{
		{`{"resourceAttributes":{"verb":"list","resource":"pods","fieldSelector":{"requirements":[{"key":"a","operator":"In","values":["b"]}]},"labelSelector":{"rawSelector":"x=y"}}}`,
			"", "kubectl/v1.37.2 (linux/amd64)", "kubectl",
			`{"f:spec":{"f:resourceAttributes":{".":{},"f:fieldSelector":{".":{},"f:requirements":{}},"f:labelSelector":{".":{},"f:rawSelector":{}},"f:resource":{},"f:verb":{}}}}`},
		{`{"resourceAttributes":{}}`, "fieldManager=mine", "curl/8", "mine", `{"f:spec":{"f:resourceAttributes":{}}}`},
		{`{"nonResourceAttributes":{"path":"/x"}}`, "", "", "unknown", `{"f:spec":{"f:nonResourceAttributes":{".":{},"f:path":{}}}}`},
		{`{"nonResourceAttributes":{"path":"/x"}}`, "", "/v1", "unknown", `{"f:spec":{"f:nonResourceAttributes":{".":{},"f:path":{}}}}`},
		{`{}`, "", "kubectl/1", "", ""},
	} {
		var spec authorizationv1.SelfSubjectAccessReviewSpec
		if err := json.Unmarshal([]byte(tc.spec), &spec); err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest("POST", SelfSubjectAccessReviewPath+"?"+tc.query, nil)
		r.Header.Set("User-Agent", tc.ua)
		mf := managedFields(r, &spec, now)
		if tc.fields == "" {
			if mf != nil {
				t.Errorf("%s: %+v, want none", tc.spec, mf)
			}
			continue
		}
		if len(mf) != 1 || mf[0].Manager != tc.manager || mf[0].Operation != "Update" || mf[0].APIVersion != "authorization.k8s.io/v1" ||
			mf[0].FieldsType != "FieldsV1" || mf[0].FieldsV1.GetRawString() != tc.fields || !mf[0].Time.Time.Equal(now.Truncate(time.Second)) {
			t.Errorf("%s: %+v, want %s by %s", tc.spec, mf, tc.fields, tc.manager)
		}
	}
}

// TestRoute: on an address shared with the upstream, a review about apf's
// own things is apf's, anything else goes upstream with its body intact.
func TestRoute(t *testing.T) {
	ownPath := func(p string) bool { return p == "/metrics" || strings.HasPrefix(p, "/healthz") }
	var gotBy string
	var gotBody string
	tag := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			gotBy, gotBody = name, string(b)
		})
	}
	h := NewReviews(nil).Route(ownPath, tag("apf"), tag("upstream"))
	pbOwn := string(protobufOf(t, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}}))
	pbPods := string(protobufOf(t, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"}}}))
	for _, tc := range []struct {
		method, path, body, ct string
		by                     string
	}{
		{"POST", SelfSubjectAccessReviewPath, canCreateFlowSchemas, "", "apf"},
		{"POST", SelfSubjectAccessReviewPath, canGetMetrics, "application/json", "apf"},
		{"POST", SelfSubjectAccessReviewPath, canGetHealthz, "", "apf"},
		{"POST", SelfSubjectAccessReviewPath, "spec:\n  resourceAttributes: {verb: create, group: flowcontrol.apiserver.k8s.io, resource: flowschemas}\n", "application/yaml", "apf"},
		{"POST", SelfSubjectAccessReviewPath, `{"spec":{"resourceAttributes":{"verb":"list","resource":"pods"}}}`, "", "upstream"},
		{"POST", SelfSubjectAccessReviewPath, `{"spec":{"resourceAttributes":{"verb":"list","group":"*","resource":"*"}}}`, "", "upstream"},
		{"POST", SelfSubjectAccessReviewPath, `{"spec":{"nonResourceAttributes":{"path":"/version","verb":"get"}}}`, "", "upstream"},
		// Invalid or unreadable reviews are the upstream's to refuse.
		{"POST", SelfSubjectAccessReviewPath, `{"spec":{}}`, "", "upstream"},
		{"POST", SelfSubjectAccessReviewPath, `{"spec":{"resourceAttributes":{"group":"flowcontrol.apiserver.k8s.io"},"nonResourceAttributes":{"path":"/metrics"}}}`, "", "upstream"},
		{"POST", SelfSubjectAccessReviewPath, `{not json`, "", "upstream"},
		{"POST", SelfSubjectAccessReviewPath, pbOwn, "application/vnd.kubernetes.protobuf", "apf"},
		{"POST", SelfSubjectAccessReviewPath, pbPods, "application/vnd.kubernetes.protobuf", "upstream"},
		{"POST", SelfSubjectAccessReviewPath, canCreateFlowSchemas, "application/vnd.kubernetes.protobuf", "upstream"},
		{"POST", SelfSubjectAccessReviewPath, canCreateFlowSchemas, "application/cbor", "upstream"},
		{"POST", SelfSubjectAccessReviewPath, `{"spec":{"resourceAttributes":{"group":"flowcontrol.apiserver.k8s.io","resource":"` + strings.Repeat("x", maxReviewBody) + `"}}}`, "", "upstream"},
		{"POST", SelfSubjectRulesReviewPath, `{"spec":{"namespace":"default"}}`, "", "upstream"},
		{"GET", SelfSubjectAccessReviewPath, "", "", "upstream"},
		{"POST", "/api/v1/namespaces/default/pods", canCreateFlowSchemas, "", "upstream"},
	} {
		gotBy, gotBody = "", ""
		r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
		if tc.ct != "" {
			r.Header.Set("Content-Type", tc.ct)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if gotBy != tc.by || gotBody != tc.body {
			t.Errorf("%s %s %.80s: went to %s with a body of %d bytes, want %s with %d", tc.method, tc.path, tc.body, gotBy, len(gotBody), tc.by, len(tc.body))
		}
	}
	// A body that cannot be read is answered at once.
	r := httptest.NewRequest("POST", SelfSubjectAccessReviewPath, io.MultiReader(strings.NewReader("{"), errReader{}))
	w := httptest.NewRecorder()
	gotBy = ""
	h.ServeHTTP(w, r)
	if w.Code != 400 || gotBy != "" || !strings.Contains(w.Body.String(), "reading the request body: unexpected EOF") {
		t.Errorf("unreadable: %d %s, went to %q", w.Code, w.Body, gotBy)
	}
}

// protobufOf is obj in Kubernetes' protobuf envelope, as kubectl sends it.
func protobufOf(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(reviewCodecs.SupportedMediaTypes(), mediaProtobuf)
	b, err := runtime.Encode(reviewCodecs.EncoderForVersion(info.Serializer, authorizationv1.SchemeGroupVersion), obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }
