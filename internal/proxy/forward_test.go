package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/request"
)

// withTestDeadline gives every request a deadline, as apf serve's
// deadline filter does for all but the long-running ones: the direct path
// takes only requests with one.
func withTestDeadline(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// recordingUpstream answers by path and sends what it received, as text,
// on the channel it returns.
func recordingUpstream(t *testing.T) (*url.URL, <-chan string) {
	t.Helper()
	seen := make(chan string, 1)
	up := front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s %s host=%q cl=%d te=%q body=%q err=%v\n", r.Method, r.RequestURI, r.Proto, r.Host, r.ContentLength, r.TransferEncoding, body, err)
		keys := make([]string, 0, len(r.Header))
		for k := range r.Header {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s: %q\n", k, r.Header[k])
		}
		seen <- b.String()
		h := w.Header()
		switch r.URL.Path {
		case "/hop":
			h.Set("Connection", "X-Hop, close")
			h.Set("X-Hop", "1")
			h.Set("Keep-Alive", "timeout=5")
			h.Set("Proxy-Authenticate", "Basic")
			h["Set-Cookie"] = []string{"a=1", "b=2"}
			h.Set("X-Kubernetes-Pf-Flowschema-Uid", "from-upstream")
			h.Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"kind":"Pod"}`)
		case "/chunked":
			h.Set("Content-Type", "text/plain")
			for i := range 3 {
				fmt.Fprintf(w, "part %d\n", i)
				w.(http.Flusher).Flush()
			}
		case "/trailer":
			h.Set("Trailer", "X-Sum, X-Kubernetes-Pf-Prioritylevel-Uid")
			_, _ = io.WriteString(w, "body")
			h.Set("X-Sum", "7")
			h.Set("X-Kubernetes-Pf-Prioritylevel-Uid", "from-upstream")
			h.Set(http.TrailerPrefix+"X-Late", "8")
		case "/early":
			h.Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			h.Del("Link")
			h.Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "after hints")
		case "/nocontent":
			h.Set("X-A", "b")
			w.WriteHeader(http.StatusNoContent)
		case "/notmodified":
			h.Set("Etag", `"x"`)
			w.WriteHeader(http.StatusNotModified)
		case "/events":
			h.Set("Content-Type", "text/event-stream; charset=utf-8")
			h.Set("Content-Length", "12")
			_, _ = io.WriteString(w, "data: one\n\n")
			_, _ = io.WriteString(w, "\n")
		case "/big":
			h.Set("Content-Type", "application/octet-stream")
			_, _ = w.Write([]byte(strings.Repeat("0123456789abcdef", 16<<10)))
		default:
			h.Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "ok "+r.URL.Path)
		}
	}))
	return mustURL(t, up.URL), seen
}

// exchange sends raw to addr on a connection of its own and returns the
// answer as text: status, header (without Date), trailer and body.
func exchange(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	method := raw[:strings.IndexByte(raw, ' ')]
	var b strings.Builder
	for {
		res, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		body, err := io.ReadAll(res.Body)
		res.Header.Del("Date")
		keys := make([]string, 0, len(res.Header))
		for k := range res.Header {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		fmt.Fprintf(&b, "%s cl=%d te=%q close=%v body=%q err=%v\n", res.Status, res.ContentLength, res.TransferEncoding, res.Close, body, err)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s: %q\n", k, res.Header[k])
		}
		keys = keys[:0]
		for k := range res.Trailer {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "trailer %s: %q\n", k, res.Trailer[k])
		}
		if res.StatusCode >= 200 {
			return b.String()
		}
	}
}

// TestDirectMatchesReverseProxy sends each request twice, once by the
// direct path and once through httputil.ReverseProxy, and compares what
// the upstream received and what the caller got.
func TestDirectMatchesReverseProxy(t *testing.T) {
	upURL, seen := recordingUpstream(t)
	upstreams := map[string]*url.URL{
		"bare":   upURL,
		"prefix": mustURL(t, upURL.String()+"/base/?fixed=1"),
	}
	user := func(r *http.Request) (request.User, bool) {
		return request.User{Name: "jane", UID: "42", Groups: []string{"dev", systemAuthenticatedName}, Extra: map[string][]string{"Scopes": {"a", "b"}}}, true
	}
	modes := map[string]Options{
		"passthrough": {Credentials: func(*http.Request) string { return "Bearer caller" }, DropResponseHeaders: []string{"X-Kubernetes-PF-FlowSchema-UID", "X-Kubernetes-PF-PriorityLevel-UID"}},
		"impersonate": {Identity: Impersonate, User: user, TokenFile: writeFile(t, "token", []byte("apf-token\n"))},
	}
	const host = "Host: api.example\r\n"
	cases := []struct {
		name, raw string
		direct    bool
	}{
		{"get", "GET /api/v1/pods?limit=5&labelSelector=a%3Db HTTP/1.1\r\n" + host + "User-Agent: kubectl\r\nAccept: application/json\r\n\r\n", true},
		{"no user agent", "GET /x HTTP/1.1\r\n" + host + "\r\n", true},
		{"hop by hop", "GET /hop HTTP/1.1\r\n" + host + "Connection: X-Private, keep-alive\r\nX-Private: secret\r\nKeep-Alive: timeout=5\r\nProxy-Authorization: Basic x\r\nProxy-Connection: keep-alive\r\nTe: trailers, deflate\r\nX-Kept: 1\r\nX-Kept: 2\r\n\r\n", true},
		{"te without trailers", "GET /x HTTP/1.1\r\n" + host + "Te: deflate\r\n\r\n", true},
		{"forwarding and identity headers", "GET /x HTTP/1.1\r\n" + host + "Forwarded: for=1.2.3.4\r\nX-Forwarded-For: 1.2.3.4\r\nX-Forwarded-Host: evil\r\nX-Forwarded-Proto: https\r\nX-Remote-User: admin\r\nx-remote-group: system:masters\r\nImpersonate-User: admin\r\nAuthorization: Bearer caller\r\n\r\n", true},
		{"post", "POST /api/v1/namespaces/a/pods HTTP/1.1\r\n" + host + "Content-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"kind\":\"P\"}\n", true},
		{"post chunked", "POST /api/v1/namespaces/a/pods HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", true},
		{"empty body with length", "PUT /x HTTP/1.1\r\n" + host + "Content-Length: 0\r\n\r\n", true},
		{"head", "HEAD /x HTTP/1.1\r\n" + host + "\r\n", true},
		{"chunked answer", "GET /chunked HTTP/1.1\r\n" + host + "\r\n", true},
		{"trailer", "GET /trailer HTTP/1.1\r\n" + host + "\r\n", true},
		{"early hints", "GET /early HTTP/1.1\r\n" + host + "\r\n", true},
		{"no content", "DELETE /nocontent HTTP/1.1\r\n" + host + "\r\n", true},
		{"not modified", "GET /notmodified HTTP/1.1\r\n" + host + "If-None-Match: \"x\"\r\n\r\n", true},
		{"event stream", "GET /events HTTP/1.1\r\n" + host + "\r\n", true},
		{"big", "GET /big HTTP/1.1\r\n" + host + "\r\n", true},
		{"http/1.0", "GET /x HTTP/1.0\r\n\r\n", true},
		{"absolute form", "GET http://other.example/x?y=1 HTTP/1.1\r\n" + host + "\r\n", true},
		{"escaped path", "GET /a%2Fb/c HTTP/1.1\r\n" + host + "\r\n", false},
		{"semicolon query", "GET /x?a=1;b=2 HTTP/1.1\r\n" + host + "\r\n", false},
		{"bad escape query", "GET /x?a=%zz HTTP/1.1\r\n" + host + "\r\n", false},
		{"stripped h2c upgrade", "GET /x HTTP/1.1\r\n" + host + "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n", true},
	}
	for upName, up := range upstreams {
		for modeName, o := range modes {
			o.Upstream, o.Logger = up, quietLogger()
			h, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			p := h.(*proxy)
			srv := front(t, withTestDeadline(h))
			addr := srv.Listener.Addr().String()
			for _, c := range cases {
				t.Run(upName+"/"+modeName+"/"+c.name, func(t *testing.T) {
					r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(c.raw)))
					if err != nil {
						t.Fatal(err)
					}
					r, _ = upgradeHeaders(r)
					if got := p.direct(r, false); got != c.direct {
						t.Fatalf("direct = %v, want %v", got, c.direct)
					}
					var sent, got [2]string
					for i, viaRP := range []bool{false, true} {
						p.viaReverseProxy = viaRP
						got[i] = exchange(t, addr, c.raw)
						sent[i] = received(t, seen)
					}
					p.viaReverseProxy = false
					compareWays(t, sent, got)
				})
			}
		}
	}
}

// TestDirectMatchesReverseProxyOverHTTP2 is TestDirectMatchesReverseProxy
// for HTTP/2 clients (kubectl's and client-go's protocol to an HTTPS
// server), with the requests HTTP/2 can carry.
func TestDirectMatchesReverseProxyOverHTTP2(t *testing.T) {
	upURL, seen := recordingUpstream(t)
	h, err := New(Options{Upstream: upURL, Logger: quietLogger(), Credentials: func(*http.Request) string { return "Bearer caller" },
		DropResponseHeaders: []string{"X-Kubernetes-PF-FlowSchema-UID", "X-Kubernetes-PF-PriorityLevel-UID"}})
	if err != nil {
		t.Fatal(err)
	}
	p := h.(*proxy)
	srv := httptest.NewUnstartedServer(withTestDeadline(h))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	client := srv.Client()
	cases := []struct {
		name, method, path, body string
		header                   http.Header
	}{
		{"get", http.MethodGet, "/api/v1/pods?limit=5&labelSelector=a%3Db", "", http.Header{"Accept": {"application/json"}, "User-Agent": {"kubectl"}}},
		{"forwarding and identity headers", http.MethodGet, "/x", "", http.Header{"Forwarded": {"for=1.2.3.4"}, "X-Forwarded-For": {"1.2.3.4"},
			"X-Forwarded-Host": {"evil"}, "X-Remote-User": {"admin"}, "Impersonate-User": {"admin"}, "Te": {"trailers"}, "X-Kept": {"1", "2"}}},
		{"post", http.MethodPost, "/api/v1/namespaces/a/pods", `{"kind":"Pod"}`, http.Header{"Content-Type": {"application/json"}}},
		{"head", http.MethodHead, "/x", "", nil},
		{"chunked answer", http.MethodGet, "/chunked", "", nil},
		{"trailer", http.MethodGet, "/trailer", "", nil},
		{"early hints", http.MethodGet, "/early", "", nil},
		{"no content", http.MethodDelete, "/nocontent", "", nil},
		{"not modified", http.MethodGet, "/notmodified", "", http.Header{"If-None-Match": {`"x"`}}},
		{"event stream", http.MethodGet, "/events", "", nil},
		{"big", http.MethodGet, "/big", "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var sent, got [2]string
			for i, viaRP := range []bool{false, true} {
				p.viaReverseProxy = viaRP
				var body io.Reader
				if c.body != "" {
					body = strings.NewReader(c.body)
				}
				req, err := http.NewRequest(c.method, srv.URL+c.path, body)
				if err != nil {
					t.Fatal(err)
				}
				for k, vs := range c.header {
					req.Header[k] = vs
				}
				if i == 0 && !p.direct(req, false) {
					t.Fatal("the request does not take the direct path")
				}
				res, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(res.Body)
				res.Body.Close()
				if res.ProtoMajor != 2 {
					t.Fatalf("answered over %s", res.Proto)
				}
				res.Header.Del("Date")
				got[i] = fmt.Sprintf("%s cl=%d body=%q err=%v\nheader %v\ntrailer %v", res.Status, res.ContentLength, b, err, sortedHeader(res.Header), sortedHeader(res.Trailer))
				sent[i] = received(t, seen)
			}
			p.viaReverseProxy = false
			compareWays(t, sent, got)
		})
	}
}

// sortedHeader is h as text, its names in order.
func sortedHeader(h http.Header) string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %q; ", k, h[k])
	}
	return b.String()
}

// received is what the recording upstream received.
func received(t *testing.T, seen <-chan string) string {
	t.Helper()
	select {
	case s := <-seen:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream received nothing")
		return ""
	}
}

// compareWays compares what the upstream received (sent) and what the
// caller got, by the direct path ([0]) and through the reverse proxy
// ([1]).
func compareWays(t *testing.T, sent, got [2]string) {
	t.Helper()
	if sent[0] != sent[1] {
		t.Errorf("the upstream received, by the direct path:\n%s\nthrough the reverse proxy:\n%s", sent[0], sent[1])
	}
	if got[0] != got[1] {
		t.Errorf("the caller got, by the direct path:\n%s\nthrough the reverse proxy:\n%s", got[0], got[1])
	}
}
