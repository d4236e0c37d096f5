package server

import "net/http"

// withCacheControl marks every answer as not to be cached by anyone but
// the client, as kube-apiserver marks its own: "no-cache, private" is set
// before the handler runs, so a handler with a policy of its own (the
// OpenAPI documents, whose URLs carry their hash) overrides it. Answers
// the gateway relays from its upstream are the upstream's to mark:
// upstreamOwnsCacheControl takes the header off again before they are
// copied.
func withCacheControl(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, set := w.Header()["Cache-Control"]; !set {
			w.Header().Set("Cache-Control", "no-cache, private")
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
