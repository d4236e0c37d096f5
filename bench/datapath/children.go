package main

import (
	"bytes"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"
)

// answerSize is the size of the upstream's answers.
const answerSize = 1024

// upstreamHandler answers every request at once: 200, text/plain, 1 KiB.
func upstreamHandler() http.Handler {
	body := append(bytes.Repeat([]byte("x"), answerSize-1), '\n')
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h["Content-Type"] = []string{"text/plain"}
		h["Content-Length"] = []string{"1024"}
		w.WriteHeader(http.StatusOK)
		w.Write(body)
	})
}

// serveUpstream is the program run with -serve-upstream ADDR: the
// upstream, serving on ADDR until it is stopped.
func serveUpstream(addr string) error {
	srv := &http.Server{Addr: addr, Handler: upstreamHandler(), ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}

// serveReverseProxy is the program run with -serve-reverseproxy ADDR
// UPSTREAM: net/http/httputil's ReverseProxy serving on ADDR in front of
// UPSTREAM (HOST:PORT), with nothing added but a transport that keeps as
// many idle connections to it as the clients need (the default keeps 2,
// and would open and close one for most requests).
func serveReverseProxy(addr, upstream string) error {
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: upstream})
	rp.Transport = &http.Transport{
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
	}
	srv := &http.Server{Addr: addr, Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}
