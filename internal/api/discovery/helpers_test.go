package discovery

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/apfproject/apf/config"
)

// get serves one request and returns the recorded response.
func get(t *testing.T, h http.Handler, path string, header ...string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

// getJSON serves a GET, requires 200 and decodes the body into out.
func getJSON(t *testing.T, h http.Handler, path string, out any, header ...string) *http.Response {
	t.Helper()
	resp := get(t, h, path, header...)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(out); err != nil {
		t.Fatalf("GET %s: decoding %T: %v\n%s", path, out, err, body)
	}
	return resp
}

// v2Definitions returns the definitions of the Swagger document of every
// version with Go types of its own, as generic JSON.
func v2Definitions(t *testing.T) map[string]schema {
	t.Helper()
	h := New(Options{})
	var doc struct {
		Definitions map[string]schema `json:"definitions"`
	}
	getJSON(t, h, "/openapi/v2", &doc)
	return doc.Definitions
}

// v3Definitions merges the component schemas of the OpenAPI 3 documents of
// the same versions.
func v3Definitions(t *testing.T) map[string]schema {
	t.Helper()
	h := New(Options{})
	out := map[string]schema{}
	for _, v := range []config.Version{config.V1, config.V1Beta3, config.V1Beta2, config.V1Beta1} {
		var doc struct {
			Components struct {
				Schemas map[string]schema `json:"schemas"`
			} `json:"components"`
		}
		getJSON(t, h, "/openapi/v3/apis/flowcontrol.apiserver.k8s.io/"+string(v), &doc)
		for k, s := range doc.Components.Schemas {
			out[k] = s
		}
	}
	return out
}
