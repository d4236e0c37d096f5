package server

import "net/http"

// noCache is the Cache-Control every answer of apf's gets, shared by
// them all: its capacity is its length, so that a value added to it is
// added to a copy.
var noCache = []string{"no-cache, private"}[:1:1]

// withCacheControl marks every answer as not to be cached by anyone but
// the client, as kube-apiserver marks its own: "no-cache, private" is set
// before the handler runs, so a handler with a policy of its own (the
// OpenAPI documents, whose URLs carry their hash) overrides it. Answers
// the gateway relays from its upstream are the upstream's to mark:
// upstreamOwnsCacheControl takes the header off again before they are
// copied.
func withCacheControl(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := w.Header(); !hasKey(h, "Cache-Control") {
			h["Cache-Control"] = noCache
		}
		next.ServeHTTP(w, r)
	})
}

// upstreamOwnsCacheControl leaves the Cache-Control of a relayed answer
// to the upstream: without it, the upstream's own header would be added
// to apf's, and an API that lets its answers be cached would find them
// marked private.
func upstreamOwnsCacheControl(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Del("Cache-Control")
		next.ServeHTTP(w, r)
	})
}

func hasKey(h http.Header, k string) bool {
	_, ok := h[k]
	return ok
}
