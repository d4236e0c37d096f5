package authn

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apfproject/apf/request"
)

// echo answers 200 with the user the middleware stored.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	u, ok := request.UserFrom(r.Context())
	if !ok {
		http.Error(w, "no user", http.StatusInternalServerError)
		return
	}
	w.Header().Set("X-Test-User", u.Name)
	for _, k := range []string{"Authorization", "X-Remote-User", "X-Remote-Group", "X-Remote-Extra-Scopes"} {
		if r.Header.Get(k) != "" {
			w.Header().Set("X-Test-Leak", k)
		}
	}
	w.Header().Set("X-Test-Groups", strings.Join(u.Groups, ","))
})

func TestMiddlewareAnswers(t *testing.T) {
	p := newPKI(t)
	o := fullOptions(t, p)
	h := Middleware(mustNew(t, o))(echo)

	for _, tc := range []struct {
		name, method, path, token string
		code                      int
		user                      string
		body                      string
	}{
		{name: "bad token", method: "GET", path: "/apis", token: "wrong", code: 401,
			body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}` + "\n"},
		{name: "create forbidden", method: "POST", path: "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", token: "good-token", code: 403,
			body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"flowschemas.flowcontrol.apiserver.k8s.io is forbidden: User \"alice\" cannot create resource \"flowschemas\" in API group \"flowcontrol.apiserver.k8s.io\" at the cluster scope","reason":"Forbidden","details":{"group":"flowcontrol.apiserver.k8s.io","kind":"flowschemas"},"code":403}` + "\n"},
		{name: "status update forbidden", method: "PUT", path: "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/workload-low/status", token: "good-token", code: 403,
			body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"prioritylevelconfigurations.flowcontrol.apiserver.k8s.io \"workload-low\" is forbidden: User \"alice\" cannot update resource \"prioritylevelconfigurations/status\" in API group \"flowcontrol.apiserver.k8s.io\" at the cluster scope","reason":"Forbidden","details":{"name":"workload-low","group":"flowcontrol.apiserver.k8s.io","kind":"prioritylevelconfigurations"},"code":403}` + "\n"},
		{name: "namespaced core forbidden", method: "GET", path: "/api/v1/namespaces/kube-system/pods", token: "good-token", code: 403,
			body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"kube-system\"","reason":"Forbidden","details":{"kind":"pods"},"code":403}` + "\n"},
		{name: "metrics forbidden", method: "GET", path: "/metrics", token: "good-token", code: 403,
			body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"alice\" cannot get path \"/metrics\"","reason":"Forbidden","details":{},"code":403}` + "\n"},
		{name: "anonymous discovery forbidden", method: "GET", path: "/apis", code: 403,
			body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"system:anonymous\" cannot get path \"/apis\"","reason":"Forbidden","details":{},"code":403}` + "\n"},
		{name: "anonymous healthz", method: "GET", path: "/healthz", code: 200, user: "system:anonymous"},
		{name: "read", method: "GET", path: "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", token: "good-token", code: 200, user: "alice"},
		{name: "master writes", method: "DELETE", path: "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/x", token: "master-token", code: 200, user: "root"},
		{name: "unparsable path", method: "GET", path: "/api/v1/watch", token: "master-token", code: 500,
			body: "Internal Server Error: \"/api/v1/watch\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.path, nil)
			if tc.token != "" {
				r.Header.Set("Authorization", "Bearer "+tc.token)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.code {
				t.Fatalf("code %d, want %d; body %s", w.Code, tc.code, w.Body)
			}
			if tc.body != "" && w.Body.String() != tc.body {
				t.Errorf("body\n%s\nwant\n%s", w.Body, tc.body)
			}
			if tc.code == 401 || tc.code == 403 {
				if ct := w.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q", ct)
				}
			}
			if got := w.Header().Get("X-Test-User"); got != tc.user {
				t.Errorf("user %q, want %q", got, tc.user)
			}
			if w.Header().Get("X-Test-Leak") != "" {
				t.Error("Authorization header reached the handler")
			}
		})
	}
}

func TestForbiddenStatusNamespacedNamed(t *testing.T) {
	info := request.Info{IsResourceRequest: true, Verb: "delete", APIGroup: "apps", APIVersion: "v1",
		Namespace: "ns", Resource: "deployments", Name: "web"}
	st := ForbiddenStatus("bob", info)
	const want = `deployments.apps "web" is forbidden: User "bob" cannot delete resource "deployments" in API group "apps" in the namespace "ns"`
	if st.Message != want || st.Code != 403 || st.Details.Name != "web" || st.Details.Group != "apps" || st.Details.Kind != "deployments" {
		t.Fatalf("got %+v", st)
	}
}

func TestMiddlewareNilPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	Middleware(nil, nil)
}

// TestMiddlewareReadsContextAttributes sends a path that does not parse
// with attributes already in its context, as the server's edge filter
// leaves them: both filters read those (had either parsed the path, the
// answer would be a 500), authentication puts the user on them, and
// authorization decides by them.
func TestMiddlewareReadsContextAttributes(t *testing.T) {
	p := newPKI(t)
	h := Middleware(mustNew(t, fullOptions(t, p)))(echo)
	for _, tc := range []struct {
		path string // what the attributes say; the URL is /api/v1/watch
		code int
		body string
	}{
		{"/healthz", 200, ""},
		{"/metrics", 403, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"alice\" cannot get path \"/metrics\"","reason":"Forbidden","details":{},"code":403}` + "\n"},
	} {
		a := &request.Attributes{Info: request.Info{Path: tc.path, Verb: "get"}}
		r := httptest.NewRequest("GET", "/api/v1/watch", nil)
		r.Header.Set("Authorization", "Bearer good-token")
		r = r.WithContext(request.WithAttributes(r.Context(), a))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.code || (tc.body != "" && w.Body.String() != tc.body) {
			t.Errorf("%s: %d %s, want %d %s", tc.path, w.Code, w.Body, tc.code, tc.body)
		}
		if a.User.Name != "alice" {
			t.Errorf("%s: the attributes' user is %q, want alice", tc.path, a.User.Name)
		}
	}
}
