package authz

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apfproject/apf/request"
)

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })

// serve sends one request through Authorize(z) with the attributes the
// server's edge would have stored (user u, info parsed from the method and
// target).
func serve(t *testing.T, z Authorizer, u request.User, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	info, err := request.Parse(r.Method, r.URL.Path, r.URL.RawQuery)
	if err != nil {
		t.Fatal(err)
	}
	r = r.WithContext(request.WithAttributes(r.Context(), &request.Attributes{Info: info, User: u}))
	w := httptest.NewRecorder()
	Authorize(z)(okHandler).ServeHTTP(w, r)
	return w
}

func TestAuthorizeAnswers(t *testing.T) {
	builtin, err := New(DefaultOptions(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	abac := mustABAC(t, `{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"alice","namespace":"*","resource":"pods","apiGroup":""}}`)
	withABAC := NewChain(Named{"system:masters", privileged{"system:masters"}}, Named{"builtin", NewBuiltin(nil)}, Named{"abac", abac})
	for _, tc := range []struct {
		name         string
		z            Authorizer
		u            request.User
		method, path string
		code         int
		body         string
	}{
		{name: "create forbidden", z: builtin, u: aliceUser, method: "POST", path: "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", code: 403,
			body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"flowschemas.flowcontrol.apiserver.k8s.io is forbidden: User \"alice\" cannot create resource \"flowschemas\" in API group \"flowcontrol.apiserver.k8s.io\" at the cluster scope","reason":"Forbidden","details":{"group":"flowcontrol.apiserver.k8s.io","kind":"flowschemas"},"code":403}` + "\n"},
		{name: "status update forbidden", z: builtin, u: aliceUser, method: "PUT", path: "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/workload-low/status", code: 403,
			body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"prioritylevelconfigurations.flowcontrol.apiserver.k8s.io \"workload-low\" is forbidden: User \"alice\" cannot update resource \"prioritylevelconfigurations/status\" in API group \"flowcontrol.apiserver.k8s.io\" at the cluster scope","reason":"Forbidden","details":{"name":"workload-low","group":"flowcontrol.apiserver.k8s.io","kind":"prioritylevelconfigurations"},"code":403}` + "\n"},
		{name: "namespaced core forbidden", z: builtin, u: aliceUser, method: "GET", path: "/api/v1/namespaces/kube-system/pods", code: 403,
			body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"kube-system\"","reason":"Forbidden","details":{"kind":"pods"},"code":403}` + "\n"},
		{name: "metrics forbidden", z: builtin, u: aliceUser, method: "GET", path: "/metrics", code: 403,
			body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"alice\" cannot get path \"/metrics\"","reason":"Forbidden","details":{},"code":403}` + "\n"},
		{name: "anonymous discovery forbidden", z: builtin, u: anonUser, method: "GET", path: "/apis", code: 403,
			body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"system:anonymous\" cannot get path \"/apis\"","reason":"Forbidden","details":{},"code":403}` + "\n"},
		// What the request names is escaped in the message, as
		// kube-apiserver escapes it; the reason is not.
		{name: "markup escaped", z: withABAC, u: aliceUser, method: "GET", path: "/x%3Cb%3E&y", code: 403,
			body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"alice\" cannot get path \"/x\u0026lt;b\u0026gt;\u0026amp;y\": abac: No policy matched.","reason":"Forbidden","details":{},"code":403}` + "\n"},
		{name: "the chain's reasons end the message", z: withABAC, u: aliceUser, method: "DELETE", path: "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/x", code: 403,
			body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"flowschemas.flowcontrol.apiserver.k8s.io \"x\" is forbidden: User \"alice\" cannot delete resource \"flowschemas\" in API group \"flowcontrol.apiserver.k8s.io\" at the cluster scope: abac: No policy matched.","reason":"Forbidden","details":{"name":"x","group":"flowcontrol.apiserver.k8s.io","kind":"flowschemas"},"code":403}` + "\n"},
		{name: "a later mode allows", z: withABAC, u: aliceUser, method: "DELETE", path: "/api/v1/namespaces/x/pods/p", code: http.StatusTeapot},
		{name: "anonymous healthz", z: builtin, u: anonUser, method: "GET", path: "/healthz", code: http.StatusTeapot},
		{name: "read", z: builtin, u: aliceUser, method: "GET", path: "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", code: http.StatusTeapot},
		{name: "master writes", z: builtin, u: masterUser, method: "DELETE", path: "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/x", code: http.StatusTeapot},
		// An authorizer that failed, and nobody allowed: the server could
		// not decide, and says so as kube-apiserver does.
		{name: "failure is a 500", z: NewChain(Named{"w", &fixed{err: errors.New(`Post "https://authz/<x>": refused`)}}, Named{"b", NewBuiltin(nil)}),
			u: aliceUser, method: "POST", path: "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas?dryRun=All", code: 500,
			body: "Internal Server Error: \"/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas?dryRun=All\": Post \"https://authz/&lt;x&gt;\": refused\n"},
		{name: "failure, then an allow", z: NewChain(Named{"w", &fixed{err: errors.New("refused")}}, Named{"b", NewBuiltin(nil)}),
			u: aliceUser, method: "GET", path: "/apis", code: http.StatusTeapot},
		{name: "a deny with an error is a 500", z: &fixed{d: Deny, err: errors.New("both")}, u: aliceUser, method: "GET", path: "/apis", code: 500,
			body: "Internal Server Error: \"/apis\": both\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := serve(t, tc.z, tc.u, tc.method, tc.path)
			if w.Code != tc.code {
				t.Fatalf("code %d, want %d; body %s", w.Code, tc.code, w.Body)
			}
			if tc.body != "" && w.Body.String() != tc.body {
				t.Errorf("body\n%s\nwant\n%s", w.Body, tc.body)
			}
			switch tc.code {
			case 403:
				if ct := w.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q", ct)
				}
			case 500:
				if ct := w.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" || w.Header().Get("X-Content-Type-Options") != "nosniff" {
					t.Errorf("headers %v", w.Header())
				}
			}
		})
	}
}

func TestForbiddenStatusNamespacedNamed(t *testing.T) {
	info := request.Info{IsResourceRequest: true, Verb: "delete", APIGroup: "apps", APIVersion: "v1",
		Namespace: "ns", Resource: "deployments", Name: "web"}
	st := ForbiddenStatus("bob", info, "")
	const want = `deployments.apps "web" is forbidden: User "bob" cannot delete resource "deployments" in API group "apps" in the namespace "ns"`
	if st.Message != want || st.Code != 403 || st.Details.Name != "web" || st.Details.Group != "apps" || st.Details.Kind != "deployments" {
		t.Fatalf("got %+v", st)
	}
}

// TestAuthorizeReadsContextAttributes sends a path that does not parse
// with attributes already in its context, as the server's edge leaves
// them: the filter decides by those (had it parsed the path, the answer
// would be a 500). Without attributes it parses the request once itself
// and finds the user with request.UserFrom.
func TestAuthorizeReadsContextAttributes(t *testing.T) {
	z, _ := New(DefaultOptions(), nil, nil)
	h := Authorize(z)(okHandler)
	for _, tc := range []struct {
		path string // what the attributes say; the URL is /api/v1/watch
		code int
	}{{"/healthz", http.StatusTeapot}, {"/metrics", 403}} {
		r := httptest.NewRequest("GET", "/api/v1/watch", nil)
		r = r.WithContext(request.WithAttributes(r.Context(), &request.Attributes{Info: request.Info{Path: tc.path, Verb: "get"}, User: aliceUser}))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.path, w.Code, w.Body, tc.code)
		}
	}

	u := aliceUser
	r := httptest.NewRequest("GET", "/apis", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r.WithContext(request.WithUser(context.Background(), &u)))
	if w.Code != http.StatusTeapot {
		t.Errorf("no attributes: %d %s", w.Code, w.Body)
	}
	// No user at all: the chain is wired wrongly.
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/apis", nil))
	if w.Code != 500 {
		t.Errorf("no user: %d", w.Code)
	}
	defer func() {
		if recover() == nil {
			t.Error("Authorize(nil) did not panic")
		}
	}()
	Authorize(nil)
}

// TestForbiddenForms: the 403 is written in the form the request asks
// for, as kube-apiserver writes the errors of its filters: JSON by
// default and for a Table request (an error is no Table), YAML,
// protobuf; indented JSON for curl, for ?pretty=true and Accept
// pretty=1, and when no clause fits (rather than a 406). bench/peer's
// TestForbiddenAnswer holds each form against kube-apiserver's bytes.
func TestForbiddenForms(t *testing.T) {
	z, err := New(DefaultOptions(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	const msg = `pods is forbidden: User "alice" cannot list resource "pods" in API group "" at the cluster scope`
	for _, tc := range []struct {
		name, query, accept, userAgent string
		contentType                    string
		body                           func(string) bool
	}{
		{name: "no Accept", contentType: "application/json", body: func(b string) bool { return strings.HasPrefix(b, `{"kind":"Status"`) && strings.HasSuffix(b, "}\n") }},
		{name: "Table", accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json", contentType: "application/json", body: func(b string) bool { return strings.HasPrefix(b, `{"kind":"Status"`) }},
		{name: "YAML", accept: "application/yaml", contentType: "application/yaml", body: func(b string) bool { return strings.HasPrefix(b, "apiVersion: v1\ncode: 403\n") }},
		{name: "protobuf", accept: "application/vnd.kubernetes.protobuf, */*", contentType: "application/vnd.kubernetes.protobuf", body: func(b string) bool { return strings.HasPrefix(b, "k8s\x00") && strings.Contains(b, msg) }},
		{name: "curl", userAgent: "curl/8.5.0", contentType: "application/json", body: func(b string) bool { return strings.HasPrefix(b, "{\n  \"kind\": \"Status\",") }},
		{name: "pretty query", query: "?pretty=true", contentType: "application/json", body: func(b string) bool { return strings.HasPrefix(b, "{\n  \"kind\"") }},
		{name: "pretty=1", accept: "application/json;pretty=1", contentType: "application/json", body: func(b string) bool { return strings.HasPrefix(b, "{\n  \"kind\"") }},
		{name: "nothing fits", accept: "text/html", contentType: "application/json", body: func(b string) bool { return strings.HasPrefix(b, "{\n  \"kind\"") && strings.HasSuffix(b, "}") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api/v1/pods"+tc.query, nil)
			r.Header.Set("Accept", tc.accept)
			r.Header.Set("User-Agent", tc.userAgent)
			info, err := request.Parse(r.Method, r.URL.Path, r.URL.RawQuery)
			if err != nil {
				t.Fatal(err)
			}
			r = r.WithContext(request.WithAttributes(r.Context(), &request.Attributes{Info: info, User: aliceUser}))
			w := httptest.NewRecorder()
			Authorize(z)(okHandler).ServeHTTP(w, r)
			if w.Code != http.StatusForbidden || w.Header().Get("Content-Type") != tc.contentType || w.Header().Get("X-Content-Type-Options") != "nosniff" || !tc.body(w.Body.String()) {
				t.Errorf("%d %v %q", w.Code, w.Header(), w.Body.String())
			}
		})
	}
}
