package discovery

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzOpenAPIAccept sends any Accept header to the OpenAPI documents: the
// answer is the JSON form, one of the protobuf forms, a 304, or a bare
// 406, never a panic, and the content type always names the form sent.
func FuzzOpenAPIAccept(f *testing.F) {
	for _, s := range []string{
		"", "*/*", "application/json", "application/json;q=0",
		"application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
		"application/com.github.proto-openapi.spec.v3.v1.0+protobuf, application/json;q=0.9",
		"garbage;;;", "a/b;q=", ",,,", "*/json;q=1.5", "application/*;q=abc",
	} {
		f.Add(s)
	}
	h := New(Options{})
	f.Fuzz(func(t *testing.T, accept string) {
		for _, path := range []string{"/openapi/v2", "/openapi/v3/apis/flowcontrol.apiserver.k8s.io/v1"} {
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.Header.Set("Accept", accept)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			ct := w.Header().Get("Content-Type")
			switch w.Code {
			case http.StatusOK:
				switch ct {
				case "application/json", "application/com.github.proto-openapi.spec.v2.v1.0+protobuf", "application/com.github.proto-openapi.spec.v3.v1.0+protobuf":
				default:
					t.Fatalf("%s Accept %q: 200 with content type %q", path, accept, ct)
				}
				if w.Body.Len() == 0 {
					t.Fatalf("%s Accept %q: empty document", path, accept)
				}
			case http.StatusNotAcceptable:
				if w.Body.Len() != 0 {
					t.Fatalf("%s Accept %q: 406 with a body", path, accept)
				}
			default:
				t.Fatalf("%s Accept %q: %d", path, accept, w.Code)
			}
		}
	})
}

// FuzzDiscoveryAccept sends any Accept header to /api and /apis: the
// answer is the legacy or the aggregated form, or a 406 Status, never a
// panic.
func FuzzDiscoveryAccept(f *testing.F) {
	for _, s := range []string{
		"", "*/*", acceptAggregated, "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
		"application/json;stream=x", "a/b;g=;v=;as=", ",;,", "application/vnd.kubernetes.protobuf",
	} {
		f.Add(s)
	}
	h := New(Options{})
	f.Fuzz(func(t *testing.T, accept string) {
		for _, path := range []string{"/api", "/apis"} {
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.Header.Set("Accept", accept)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			ct := w.Header().Get("Content-Type")
			switch {
			case w.Code == http.StatusOK && (ct == "application/json" || ct == aggregatedContentType):
			case w.Code == http.StatusNotAcceptable && ct == "application/json":
			default:
				t.Fatalf("%s Accept %q: %d %q", path, accept, w.Code, ct)
			}
		}
	})
}
