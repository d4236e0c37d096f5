package proxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/apfproject/apf/request"
)

// TestWatchCopyBuffer: watches, and only watches, are copied through the
// smaller buffers, whether the edge filter has parsed the request (its
// attributes in the context) or not.
func TestWatchCopyBuffer(t *testing.T) {
	p := newProxy(t, Options{Upstream: mustURL(t, "http://127.0.0.1:1")}).(*proxy)
	for _, c := range []struct {
		method, target string
		parsed, watch  bool
	}{
		{"GET", "/api/v1/pods?watch=true", false, true},
		{"GET", "/api/v1/namespaces/a/pods?watch=1&resourceVersion=5", false, true},
		{"GET", "/api/v1/watch/namespaces/a/pods", false, true},
		{"GET", "/api/v1/pods", false, false},
		{"GET", "/api/v1/namespaces/a/pods/p/log?follow=true", false, false},
		{"POST", "/api/v1/namespaces/a/pods", false, false},
		{"GET", "/healthz", false, false},
		{"GET", "/api/v1/pods?watch=true", true, true},
		{"GET", "/api/v1/pods", true, false},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		if c.parsed {
			info, err := request.Parse(r.Method, r.URL.Path, r.URL.RawQuery)
			if err != nil {
				t.Fatal(err)
			}
			r = r.WithContext(request.WithAttributes(r.Context(), &request.Attributes{Info: info}))
		}
		rp := p.reverseProxyFor(r)
		_, small := rp.BufferPool.(watchBuffers)
		if small != c.watch {
			t.Errorf("%s %s (parsed %v): watch buffers %v, want %v", c.method, c.target, c.parsed, small, c.watch)
		}
		if b := rp.BufferPool.Get(); (len(b) == watchCopyBufferSize) != c.watch {
			t.Errorf("%s %s: copy buffer of %d bytes", c.method, c.target, len(b))
		}
	}
	// The two differ in nothing else.
	a, b := *p.rp, *p.watch
	a.BufferPool, b.BufferPool = nil, nil
	if a.Transport != b.Transport || a.ErrorLog != b.ErrorLog || a.FlushInterval != b.FlushInterval {
		t.Errorf("the watches' reverse proxy differs from the other beyond its buffers")
	}
}

// TestWatchLargeEvent: an event several times the watches' buffer reaches
// the client whole and in order with the small events around it.
func TestWatchLargeEvent(t *testing.T) {
	big := append(bytes.Repeat([]byte("x"), 5*watchCopyBufferSize+123), '\n')
	want := append(append([]byte("first\n"), big...), "last\n"...)
	up := front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for _, part := range [][]byte{[]byte("first\n"), big, []byte("last\n")} {
			_, _ = w.Write(part)
			w.(http.Flusher).Flush()
		}
	}))
	px := front(t, newProxy(t, Options{Upstream: mustURL(t, up.URL)}))
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(px.URL + "/api/v1/pods?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes, want %d (the same bytes)", len(got), len(want))
	}
}
