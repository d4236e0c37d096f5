package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"github.com/apfproject/apf/internal/proxy/wire"
	"github.com/apfproject/apf/internal/server/h1"
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

// serveFloor is the program run with -serve-floor ADDR UPSTREAM: apf's
// own HTTP/1.1 server (internal/server/h1) and upstream transport
// (internal/proxy/wire), which apf serve runs its plain-HTTP requests on,
// with nothing between them but a relay: no authentication, APF,
// deadline, routing, pool, metrics or access log. It is the floor of
// apf's design (a goroutine a connection, net/http's request type): the
// apf row's distance to it is what those features cost a request, its
// distance to nginx what the design does.
func serveFloor(addr, upstream string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &h1.Server{Handler: floorRelay(&wire.Transport{}, upstream), ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(l)
}

// floorRelay sends each request on to upstream (HOST:PORT) with its own
// header, and relays the answer: status, header and body, the body
// through a pooled buffer.
func floorRelay(tr *wire.Transport, upstream string) http.Handler {
	buffers := sync.Pool{New: func() any { return new([32 << 10]byte) }}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := *r
		u := *r.URL
		u.Scheme, u.Host = "http", upstream
		out.URL, out.Host, out.RequestURI = &u, upstream, ""
		if r.ContentLength == 0 {
			out.Body = nil
		}
		resp, err := tr.RoundTrip(&out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		h := w.Header()
		for k, v := range resp.Header {
			h[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		buf := buffers.Get().(*[32 << 10]byte)
		defer buffers.Put(buf)
		for {
			n, err := resp.Body.Read(buf[:])
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
}
