package proxy

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/apfproject/apf/internal/proxy/pool"
)

// TestTransportSaysWhetherReached: the proxy's transport tells the pool,
// for what package wire carries and for what goes to net/http (an HTTPS
// upstream, a body over wire's bound), whether a request was handed a
// connection: never when nothing listens, always once the upstream has
// read it, even when the upstream then closes without an answer.
func TestTransportSaysWhetherReached(t *testing.T) {
	cut := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		panic(http.ErrAbortHandler) // HTTP/1.1: the connection closed; HTTP/2: the stream reset

	})
	plain := front(t, cut)
	secure := tlsUpstream(t, cut, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()

	for _, c := range []struct {
		name, upstream, body string
		ca                   bool
	}{
		{"plain, no body (wire)", plain.URL, "", false},
		{"plain, a large body (net/http)", plain.URL, strings.Repeat("x", 100<<10), false},
		{"https (net/http)", secure.URL, "", true},
	} {
		o := Options{Upstream: mustURL(t, c.upstream)}
		if c.ca {
			o.CAFile = caFileFor(t, secure)
		}
		tr, err := NewTransport(o)
		if err != nil {
			t.Fatal(err)
		}
		rr, ok := tr.(pool.ReachRoundTripper)
		if !ok {
			t.Fatalf("the proxy's transport is not a pool.ReachRoundTripper")
		}
		send := func(target string) (bool, error) {
			method := http.MethodGet
			var body io.Reader
			if c.body != "" {
				method, body = http.MethodPost, strings.NewReader(c.body)
			}
			req, _ := http.NewRequest(method, target+"/x", body)
			resp, reached, err := rr.RoundTripReach(req)
			if resp != nil {
				resp.Body.Close()
			}
			return reached, err
		}
		scheme := "http://"
		if c.ca {
			scheme = "https://"
		}
		if reached, err := send(scheme + refused); err == nil || reached {
			t.Errorf("%s, nothing listening: reached %v, error %v; want not reached, an error", c.name, reached, err)
		}
		if reached, err := send(c.upstream); err == nil || !reached {
			t.Errorf("%s, the upstream read it and closed: reached %v, error %v; want reached, an error", c.name, reached, err)
		}
		if cl, ok := tr.(interface{ CloseIdleConnections() }); ok {
			cl.CloseIdleConnections()
		}
	}
}
