package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHealthHandler(t *testing.T) {
	broken := errors.New("down")
	var etcdErr error
	h := &healthHandler{path: "/readyz", checks: []check{
		{name: "ping", run: func(context.Context) error { return nil }},
		{name: "etcd", run: func(context.Context) error { return etcdErr }},
	}}
	get := func(target string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		b, _ := io.ReadAll(rec.Body)
		return rec.Code, string(b)
	}
	for _, tc := range []struct {
		target string
		fail   bool
		code   int
		body   string
	}{
		{target: "/readyz", code: 200, body: "ok"},
		{target: "/readyz?verbose", code: 200, body: "[+]ping ok\n[+]etcd ok\nreadyz check passed\n"},
		{target: "/readyz/etcd", code: 200, body: "ok"},
		{target: "/readyz/nope", code: 404, body: "404 page not found\n"},
		{target: "/readyz", fail: true, code: 500, body: "[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed\n"},
		{target: "/readyz/ping", fail: true, code: 200, body: "ok"},
		{target: "/readyz?exclude=etcd", fail: true, code: 200, body: "ok"},
	} {
		etcdErr = nil
		if tc.fail {
			etcdErr = broken
		}
		code, body := get(tc.target)
		if code != tc.code || body != tc.body {
			t.Errorf("%s (etcd failing %v): %d %q, want %d %q", tc.target, tc.fail, code, body, tc.code, tc.body)
		}
	}
}
