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

func TestAuthenticateAnswers(t *testing.T) {
	p := newPKI(t)
	o := fullOptions(t, p)
	h := Authenticate(mustNew(t, o))(echo)

	for _, tc := range []struct {
		name, method, path, token string
		code                      int
		user                      string
		body                      string
	}{
		{name: "bad token", method: "GET", path: "/apis", token: "wrong", code: 401,
			body: `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}` + "\n"},
		{name: "token", method: "POST", path: "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", token: "good-token", code: 200, user: "alice"},
		{name: "anonymous", method: "GET", path: "/apis", code: 200, user: "system:anonymous"},
		{name: "master", method: "DELETE", path: "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/x", token: "master-token", code: 200, user: "root"},
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
			if tc.code == 401 {
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

func TestAuthenticateNilPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	Authenticate(nil)
}

// TestAuthenticateReadsContextAttributes sends a path that does not parse
// with attributes already in its context, as the server's edge filter
// leaves them: the filter reads those (had it parsed the path, the answer
// would be a 500) and puts the user on them.
func TestAuthenticateReadsContextAttributes(t *testing.T) {
	p := newPKI(t)
	h := Authenticate(mustNew(t, fullOptions(t, p)))(echo)
	a := &request.Attributes{Info: request.Info{Path: "/metrics", Verb: "get"}}
	r := httptest.NewRequest("GET", "/api/v1/watch", nil)
	r.Header.Set("Authorization", "Bearer good-token")
	r = r.WithContext(request.WithAttributes(r.Context(), a))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 || w.Header().Get("X-Test-User") != "alice" {
		t.Errorf("%d %s %v", w.Code, w.Body, w.Header())
	}
	if a.User.Name != "alice" {
		t.Errorf("the attributes' user is %q, want alice", a.User.Name)
	}
}

// TestAuthenticateThen: only a request that carries an impersonation
// header, after authenticating, goes through the impersonation filter,
// found by the pass that strips the identity headers (which still strips
// them); one that does not authenticate never gets there.
func TestAuthenticateThen(t *testing.T) {
	p := newPKI(t)
	var through []string
	impersonate := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			through = append(through, r.URL.Path)
			next.ServeHTTP(w, r)
		})
	}
	h := AuthenticateThen(mustNew(t, fullOptions(t, p)), impersonate)(echo)
	for _, c := range []struct {
		path, token string
		hdr         []string
		code        int
	}{
		{"/plain", "good-token", []string{"Accept", "*/*", "X-Remote-Extra-Scopes", "all"}, 200},
		{"/user", "good-token", []string{"Impersonate-User", "noxu"}, 200},
		{"/extra-only", "", []string{"impersonate-extra-scopes", "x", "X-Remote-Extra-Scopes", "all"}, 200},
		{"/group", "good-token", []string{"Impersonate-Group", "g"}, 200},
		{"/refused", "wrong", []string{"Impersonate-User", "noxu"}, 401},
		{"/lookalike", "good-token", []string{"Impersonatex", "noxu", "X-Impersonate-User", "noxu"}, 200},
	} {
		r := httptest.NewRequest(http.MethodGet, "/api"+c.path, nil)
		r.Header.Set("Authorization", "Bearer "+c.token)
		if c.token == "" {
			r.Header.Del("Authorization")
		}
		for i := 0; i+1 < len(c.hdr); i += 2 {
			r.Header.Add(c.hdr[i], c.hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.code || w.Header().Get("X-Test-Leak") != "" {
			t.Errorf("%s: %d, leaked %q", c.path, w.Code, w.Header().Get("X-Test-Leak"))
		}
	}
	if want := []string{"/api/user", "/api/extra-only", "/api/group"}; strings.Join(through, " ") != strings.Join(want, " ") {
		t.Errorf("through the impersonation filter: %q, want %q", through, want)
	}
}
