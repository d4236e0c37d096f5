package impersonation

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/apfproject/apf/internal/auth/authz"
	"github.com/apfproject/apf/request"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serveAs sends r through the filter with o as caller, with the edge's
// attributes in the context, and returns the answer and the user the next
// handler saw (nil when it was not reached).
func serveAs(t *testing.T, o Options, caller request.User, r *http.Request) (*httptest.ResponseRecorder, *request.User, http.Header) {
	t.Helper()
	info, err := request.Parse(r.Method, r.URL.Path, r.URL.RawQuery)
	if err != nil {
		t.Fatal(err)
	}
	a := &request.Attributes{Info: info, User: caller}
	r = r.WithContext(request.WithAttributes(r.Context(), a))
	var seen *request.User
	var hdr http.Header
	h := Filter(o)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := request.UserFrom(r.Context())
		seen, hdr = &u, r.Header.Clone()
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec, seen, hdr
}

func TestFilter(t *testing.T) {
	chain := authz.NewChain(authz.Named{Name: "test", Authorizer: &policy{allow: []string{"admin "}}})
	get := func(hdr ...string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/version", nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Add(hdr[i], hdr[i+1])
		}
		return r
	}

	t.Run("no impersonation", func(t *testing.T) {
		rec, seen, _ := serveAs(t, Options{Authorizer: chain}, bob, get("Accept", "*/*"))
		if rec.Code != http.StatusOK || seen == nil || seen.Name != "bob" {
			t.Fatalf("%d, user %+v", rec.Code, seen)
		}
	})

	t.Run("granted", func(t *testing.T) {
		var told *request.User
		o := Options{Authorizer: chain, Impersonated: func(_ *http.Request, caller *request.User) { told = caller }}
		rec, seen, hdr := serveAs(t, o, admin, get("Impersonate-User", "noxu", "Impersonate-Group", "system:authenticated", "Accept", "*/*"))
		if rec.Code != http.StatusOK || seen == nil {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		if want := (request.User{Name: "noxu", Groups: []string{"system:authenticated"}}); !reflect.DeepEqual(*seen, want) {
			t.Errorf("the next handler saw %+v", *seen)
		}
		if told == nil || told.Name != "admin" {
			t.Errorf("Impersonated told %+v", told)
		}
		if Requested(hdr) || hdr.Get("Accept") != "*/*" {
			t.Errorf("headers after: %v", hdr)
		}
	})

	t.Run("granted, the headers kept", func(t *testing.T) {
		_, seen, hdr := serveAs(t, Options{Authorizer: chain, KeepHeaders: true}, admin, get("Impersonate-User", "noxu"))
		if seen == nil || seen.Name != "noxu" || hdr.Get("Impersonate-User") != "noxu" {
			t.Errorf("user %+v, headers %v", seen, hdr)
		}
	})

	t.Run("the authorizer of the request", func(t *testing.T) {
		var asked *http.Request
		o := Options{AuthorizerFor: func(r *http.Request) authz.Authorizer { asked = r; return &policy{} }}
		rec, seen, _ := serveAs(t, o, admin, get("Impersonate-User", "noxu"))
		if asked == nil || rec.Code != http.StatusForbidden || seen != nil {
			t.Errorf("%d, user %+v", rec.Code, seen)
		}
	})

	for _, c := range []struct {
		name string
		r    *http.Request
		who  request.User
		code int
		msg  string
	}{
		{"refused", get("Impersonate-User", "noxu"), bob, http.StatusForbidden,
			`forbidden: User "bob" cannot impersonate-on:user-info:get path "/version"`},
		{"no user name", get("Impersonate-Group", "system:masters"), admin, http.StatusBadRequest,
			`requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"system:masters"}, Extra:map[string][]string(nil)} without impersonating a user name`},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, seen, _ := serveAs(t, Options{Authorizer: chain}, c.who, c.r)
			var st metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
				t.Fatalf("%d %q: %v", rec.Code, rec.Body, err)
			}
			if seen != nil || rec.Code != c.code || st.Code != int32(c.code) || st.Message != c.msg || st.Kind != "Status" ||
				rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("%d %v %q (next reached: %v)", rec.Code, rec.Header(), rec.Body, seen != nil)
			}
		})
	}

	// A refusal comes in the form the request asks for, as
	// kube-apiserver's impersonation filter writes it.
	t.Run("refused, in YAML", func(t *testing.T) {
		rec, seen, _ := serveAs(t, Options{Authorizer: chain}, bob, get("Impersonate-User", "noxu", "Accept", "application/yaml"))
		if seen != nil || rec.Code != http.StatusForbidden || rec.Header().Get("Content-Type") != "application/yaml" ||
			rec.Header().Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(rec.Body.String(), "apiVersion: v1\ncode: 403\n") {
			t.Errorf("%d %v %q", rec.Code, rec.Header(), rec.Body)
		}
	})

	t.Run("no caller", func(t *testing.T) {
		rec, seen, _ := serveAs(t, Options{Authorizer: chain}, request.User{}, get("Impersonate-User", "noxu"))
		if seen != nil || rec.Code != http.StatusInternalServerError || rec.Body.String() != "Internal Server Error: \"/version\": no User found in the context\n" {
			t.Errorf("%d %q", rec.Code, rec.Body)
		}
	})

	t.Run("without the edge's attributes", func(t *testing.T) {
		r := get("Impersonate-User", "noxu")
		r = r.WithContext(request.WithUser(r.Context(), &admin))
		var seen request.User
		Filter(Options{Authorizer: chain})(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			seen, _ = request.UserFrom(r.Context())
		})).ServeHTTP(httptest.NewRecorder(), r)
		if seen.Name != "noxu" || !strings.Contains(strings.Join(seen.Groups, ","), "system:authenticated") {
			t.Errorf("the next handler saw %+v", seen)
		}
	})
}

// TestFilterCostsNothingWithoutImpersonation: a request without an
// impersonation header goes through without an allocation.
func TestFilterCostsNothingWithoutImpersonation(t *testing.T) {
	h := Filter(Options{Authorizer: &policy{}})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/pods", nil)
	for _, k := range []string{"Accept", "User-Agent", "Authorization", "Accept-Encoding", "X-Request-Id", "Content-Type", "Audit-Id"} {
		r.Header.Set(k, "v")
	}
	w := httptest.NewRecorder()
	if n := testing.AllocsPerRun(100, func() { h.ServeHTTP(w, r) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// BenchmarkFilterWithoutImpersonation is the filter's cost for a request
// with a dozen ordinary headers and no impersonation.
func BenchmarkFilterWithoutImpersonation(b *testing.B) {
	h := Filter(Options{Authorizer: &policy{}})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/pods", nil)
	for _, k := range []string{"Accept", "User-Agent", "Authorization", "Accept-Encoding", "X-Request-Id", "Content-Type", "Audit-Id",
		"X-Forwarded-For", "Traceparent", "Content-Length", "Connection", "Kubectl-Command"} {
		r.Header.Set(k, "v")
	}
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}
