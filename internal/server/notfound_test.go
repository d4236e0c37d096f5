package server

import (
	"net/http"
	"path/filepath"
	"testing"
)

// TestUnknownPathsUnderServedGroupVersions: a path under a group version
// apf serves that names nothing (an unknown resource under /api/v1, a
// resource of the authorization group other than the self reviews) is
// answered as kube-apiserver's REST router answers it, with a NotFound
// Status; a path under a group version apf does not serve gets Go's
// plain-text 404, as kube-apiserver's last handler gives it.
func TestUnknownPathsUnderServedGroupVersions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	opts := DefaultOptions()
	opts.DataDir = filepath.Join(t.TempDir(), "data")
	srv := startServer(t, opts)
	defer srv.stop()
	const status = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}` + "\n"
	for _, c := range []struct{ method, path, contentType, body string }{
		{http.MethodGet, "/api/v1/foos", "application/json", status},
		{http.MethodGet, "/api/v1/namespaces/default/pods/p1", "application/json", status},
		{http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/json", status},
		{http.MethodGet, "/apis/authorization.k8s.io/v1/subjectaccessreviews", "application/json", status},
		{http.MethodGet, "/api/v2/foos", "text/plain; charset=utf-8", "404 page not found\n"},
		{http.MethodGet, "/apis/example.com/v1/bars", "text/plain; charset=utf-8", "404 page not found\n"},
	} {
		code, h, body := srv.do(c.method, c.path, adminToken, nil)
		if code != http.StatusNotFound || h.Get("Content-Type") != c.contentType || string(body) != c.body {
			t.Errorf("%s %s: %d %s %q; want 404 %s %q", c.method, c.path, code, h.Get("Content-Type"), body, c.contentType, c.body)
		}
	}
}
