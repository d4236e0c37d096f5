package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/apfproject/apf/request"
)

// TestStreaming: each event of a watch-like stream reaches the client
// before the upstream writes the next one.
func TestStreaming(t *testing.T) {
	const events = 3
	wrote := make(chan int, events)
	next := make(chan struct{})
	up := front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 1; i <= events; i++ {
			if i > 1 {
				// The next event is written only once the client has
				// seen this one, and no sooner than 100 ms later.
				select {
				case <-next:
				case <-r.Context().Done():
					return
				}
				<-tick.C
			}
			fmt.Fprintf(w, `{"type":"ADDED","object":{"n":%d}}`+"\n", i)
			w.(http.Flusher).Flush()
			wrote <- i
		}
	}))
	px := front(t, newProxy(t, Options{Upstream: mustURL(t, up.URL)}))

	// The client's timeout only guards against a proxy that buffers the
	// stream (the test would otherwise hang).
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(px.URL + "/api/v1/pods?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ContentLength != -1 {
		t.Fatalf("status %d, content length %d; want a 200 stream", resp.StatusCode, resp.ContentLength)
	}
	dec := json.NewDecoder(resp.Body)
	for i := 1; i <= events; i++ {
		var ev struct {
			Type   string
			Object struct{ N int }
		}
		var err error
		within(t, fmt.Sprintf("reading event %d", i), func() { err = dec.Decode(&ev) })
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ev.Type != "ADDED" || ev.Object.N != i {
			t.Fatalf("event %d: got %+v", i, ev)
		}
		// The upstream has written event i and nothing after it: it
		// waits for us.
		if got := <-wrote; got != i {
			t.Fatalf("upstream wrote %d, want %d", got, i)
		}
		select {
		case got := <-wrote:
			t.Fatalf("upstream wrote event %d before the client read event %d", got, i)
		default:
		}
		if i < events {
			next <- struct{}{}
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("after the last event: %v, want EOF", err)
	}
}

// echoUpgrade is an upstream that accepts a protocol upgrade, greets the
// client on the raw connection, and then echoes what it receives.
func echoUpgrade(t *testing.T, seen chan<- *http.Request) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r
		if !headerHasToken(r.Header, "Connection", "upgrade") || r.Header.Get("Upgrade") == "" {
			http.Error(w, "not an upgrade", http.StatusBadRequest)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("upstream hijack: %v", err)
			return
		}
		defer conn.Close()
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\nhello from upstream\n", r.Header.Get("Upgrade"))
		if err := brw.Flush(); err != nil {
			return
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 1024)
		for {
			n, err := brw.Read(buf)
			if n > 0 {
				if _, werr := conn.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
}

// TestUpgrade: an upgraded connection carries bytes both ways, to a
// plain upstream and to an HTTPS upstream that offers HTTP/2 (upgrades
// must go over HTTP/1.1 there).
func TestUpgrade(t *testing.T) {
	for _, proto := range []string{"SPDY/3.1", "websocket"} {
		for _, tlsUp := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tls=%v", proto, tlsUp), func(t *testing.T) {
				seen := make(chan *http.Request, 1)
				o := Options{}
				if tlsUp {
					up := tlsUpstream(t, echoUpgrade(t, seen), nil)
					o.Upstream, o.CAFile = mustURL(t, up.URL), caFileFor(t, up)
				} else {
					up := front(t, echoUpgrade(t, seen))
					o.Upstream = mustURL(t, up.URL)
				}
				px := front(t, newProxy(t, o))

				conn, err := net.Dial("tcp", px.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				fmt.Fprintf(conn, "POST /api/v1/namespaces/default/pods/p/exec?command=sh HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\nContent-Length: 0\r\n\r\n", px.Listener.Addr(), proto)
				br := bufio.NewReader(conn)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != http.StatusSwitchingProtocols || !strings.EqualFold(resp.Header.Get("Upgrade"), proto) {
					t.Fatalf("got %s, Upgrade %q; want 101 to %s", resp.Status, resp.Header.Get("Upgrade"), proto)
				}
				r := <-seen
				if r.ProtoMajor != 1 || r.URL.Path != "/api/v1/namespaces/default/pods/p/exec" || r.URL.RawQuery != "command=sh" {
					t.Fatalf("upstream saw %s %s", r.Proto, r.URL)
				}
				greeting, err := br.ReadString('\n')
				if err != nil || greeting != "hello from upstream\n" {
					t.Fatalf("upstream to client: %q, %v", greeting, err)
				}
				for _, msg := range []string{"ping\n", "a longer second message\n"} {
					if _, err := io.WriteString(conn, msg); err != nil {
						t.Fatal(err)
					}
					got, err := br.ReadString('\n')
					if err != nil || got != msg {
						t.Fatalf("echo: %q, %v; want %q", got, err, msg)
					}
				}
			})
		}
	}
}

// protoRecorder is an upstream that notes the protocol and client
// certificate of each request.
type protoRecorder struct {
	proto chan int
	cn    chan string
}

func newProtoRecorder() *protoRecorder {
	return &protoRecorder{proto: make(chan int, 10), cn: make(chan string, 10)}
}

func (p *protoRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.proto <- r.ProtoMajor
	cn := ""
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		cn = r.TLS.PeerCertificates[0].Subject.CommonName
	}
	p.cn <- cn
	io.WriteString(w, "ok")
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestProtocols(t *testing.T) {
	t.Run("HTTP/2 to an HTTPS upstream", func(t *testing.T) {
		rec := newProtoRecorder()
		up := tlsUpstream(t, rec, nil)
		px := front(t, newProxy(t, Options{Upstream: mustURL(t, up.URL), CAFile: caFileFor(t, up)}))
		if code, body := get(t, px.URL+"/api"); code != 200 || body != "ok" {
			t.Fatalf("got %d %q", code, body)
		}
		if p := <-rec.proto; p != 2 {
			t.Fatalf("upstream saw HTTP/%d, want HTTP/2", p)
		}
	})
	t.Run("HTTP/1.1 to a plain upstream", func(t *testing.T) {
		rec := newProtoRecorder()
		up := front(t, rec)
		px := front(t, newProxy(t, Options{Upstream: mustURL(t, up.URL)}))
		if code, _ := get(t, px.URL+"/api"); code != 200 {
			t.Fatalf("got %d", code)
		}
		if p := <-rec.proto; p != 1 {
			t.Fatalf("upstream saw HTTP/%d, want HTTP/1.1", p)
		}
	})
	t.Run("an untrusted upstream certificate", func(t *testing.T) {
		up := tlsUpstream(t, newProtoRecorder(), nil)
		px := front(t, newProxy(t, Options{Upstream: mustURL(t, up.URL)}))
		if code, _ := get(t, px.URL+"/api"); code != http.StatusBadGateway {
			t.Fatalf("got %d, want 502 for an upstream the system roots do not trust", code)
		}
	})
	t.Run("client certificate", func(t *testing.T) {
		pki := newClientPKI(t, "apf-gateway")
		rec := newProtoRecorder()
		up := tlsUpstream(t, rec, pki.pool)
		ca := caFileFor(t, up)
		user := func(*http.Request) (request.User, bool) { return request.User{Name: "u"}, true }
		px := front(t, newProxy(t, Options{Upstream: mustURL(t, up.URL), CAFile: ca, CertFile: pki.certFile, KeyFile: pki.keyFile, Identity: Impersonate, User: user}))
		if code, body := get(t, px.URL+"/api"); code != 200 || body != "ok" {
			t.Fatalf("got %d %q", code, body)
		}
		<-rec.proto
		if cn := <-rec.cn; cn != "apf-gateway" {
			t.Fatalf("upstream saw client certificate %q", cn)
		}
		// Without the certificate the upstream refuses the handshake.
		bare := front(t, newProxy(t, Options{Upstream: mustURL(t, up.URL), CAFile: ca, Identity: Impersonate, User: user}))
		if code, _ := get(t, bare.URL+"/api"); code != http.StatusBadGateway {
			t.Fatalf("without a client certificate: got %d, want 502", code)
		}
	})
}

// headerEcho is an upstream that sends back what it saw.
type seenRequest struct {
	Header     http.Header
	Path, Raw  string
	Query      string
	Host       string
	Body       string
	TransferEn []string
}

func headerEcho(seen chan<- seenRequest) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen <- seenRequest{Header: r.Header.Clone(), Path: r.URL.Path, Raw: r.URL.EscapedPath(), Query: r.URL.RawQuery, Host: r.Host, Body: string(b), TransferEn: r.TransferEncoding}
		w.Header().Set("Connection", "X-Secret")
		w.Header().Set("X-Secret", "hop")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-Kept", "end-to-end")
		io.WriteString(w, "ok")
	})
}

func TestHeaders(t *testing.T) {
	seen := make(chan seenRequest, 1)
	up := front(t, headerEcho(seen))
	px := front(t, newProxy(t, Options{Upstream: mustURL(t, up.URL)}))

	// A raw request, so that every hop-by-hop header really is sent.
	conn, err := net.Dial("tcp", px.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "POST /api/v1/pods HTTP/1.1\r\n"+
		"Host: gateway.example:6443\r\n"+
		"Connection: keep-alive, X-Custom-Hop\r\n"+
		"X-Custom-Hop: 1\r\n"+
		"Keep-Alive: timeout=5\r\n"+
		"Proxy-Authorization: Basic c2VjcmV0\r\n"+
		"Proxy-Connection: keep-alive\r\n"+
		"TE: deflate\r\n"+
		"Trailer: X-Trailer\r\n"+
		"Upgrade: h2c\r\n"+
		"X-Forwarded-For: 203.0.113.7\r\n"+
		"X-End-To-End: yes\r\n"+
		"Transfer-Encoding: chunked\r\n"+
		"\r\n"+
		"5\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	r := <-seen
	for _, h := range []string{"Connection", "X-Custom-Hop", "Keep-Alive", "Proxy-Authorization", "Proxy-Connection", "Te", "Trailer", "Upgrade", "Transfer-Encoding"} {
		if v, ok := r.Header[h]; ok {
			t.Errorf("hop-by-hop header %s forwarded: %q", h, v)
		}
	}
	if r.Body != "hello" {
		t.Errorf("body %q, want hello", r.Body)
	}
	if got := r.Header.Get("X-End-To-End"); got != "yes" {
		t.Errorf("X-End-To-End %q, want yes", got)
	}
	// The caller's own X-Forwarded-For is not trusted: only the address
	// the gateway saw is sent.
	want := map[string]string{"X-Forwarded-For": "127.0.0.1", "X-Forwarded-Host": "gateway.example:6443", "X-Forwarded-Proto": "http"}
	for k, v := range want {
		if got := r.Header.Values(k); len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if r.Host != up.Listener.Addr().String() {
		t.Errorf("upstream Host %q, want %q", r.Host, up.Listener.Addr())
	}
	for _, h := range []string{"X-Secret", "Keep-Alive"} {
		if v, ok := resp.Header[h]; ok {
			t.Errorf("hop-by-hop response header %s reached the client: %q", h, v)
		}
	}
	if resp.Header.Get("X-Kept") != "end-to-end" {
		t.Errorf("end-to-end response header lost: %v", resp.Header)
	}
}

// TestDropResponseHeaders: the headers named in DropResponseHeaders come
// from the layers in front of the proxy only. The upstream's copies are
// dropped, in any case of spelling, and the front's stay; a header that
// is not named reaches the caller from both.
func TestDropResponseHeaders(t *testing.T) {
	up := front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["x-kubernetes-pf-flowschema-uid"] = []string{"upstream-fs"}
		w.Header().Set("X-Kubernetes-PF-PriorityLevel-UID", "upstream-pl")
		w.Header().Set("X-Other", "upstream")
		fmt.Fprint(w, "ok")
	}))
	px := newProxy(t, Options{
		Upstream:            mustURL(t, up.URL),
		DropResponseHeaders: []string{"X-Kubernetes-PF-FlowSchema-UID", "X-Kubernetes-PF-PriorityLevel-UID"},
	})
	gw := front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Kubernetes-PF-FlowSchema-UID", "apf-fs")
		w.Header().Set("X-Kubernetes-PF-PriorityLevel-UID", "apf-pl")
		w.Header().Set("X-Other", "apf")
		px.ServeHTTP(w, r)
	}))
	resp, err := http.Get(gw.URL + "/api/v1/pods")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for h, want := range map[string][]string{
		"X-Kubernetes-PF-FlowSchema-UID":    {"apf-fs"},
		"X-Kubernetes-PF-PriorityLevel-UID": {"apf-pl"},
		"X-Other":                           {"apf", "upstream"},
	} {
		if got := resp.Header.Values(h); !slices.Equal(got, want) {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
}

func TestUpstreamPath(t *testing.T) {
	for _, tc := range []struct{ prefix, path, wantPath, wantQuery string }{
		{"", "/api/v1/pods?watch=true&labelSelector=a%3Db", "/api/v1/pods", "watch=true&labelSelector=a%3Db"},
		{"/k8s", "/api/v1/pods?watch=true&labelSelector=a%3Db", "/k8s/api/v1/pods", "watch=true&labelSelector=a%3Db"},
		{"/k8s/", "/api/v1/pods?fieldSelector=metadata.name%3Dx", "/k8s/api/v1/pods", "fieldSelector=metadata.name%3Dx"},
		{"/k8s", "/api/v1/namespaces/a%2Fb/configmaps", "/k8s/api/v1/namespaces/a%2Fb/configmaps", ""},
		{"/k8s", "/", "/k8s/", ""},
	} {
		t.Run(tc.prefix+tc.path, func(t *testing.T) {
			seen := make(chan seenRequest, 1)
			up := front(t, headerEcho(seen))
			px := front(t, newProxy(t, Options{Upstream: mustURL(t, up.URL+tc.prefix)}))
			if code, _ := get(t, px.URL+tc.path); code != 200 {
				t.Fatalf("status %d", code)
			}
			r := <-seen
			if r.Raw != tc.wantPath || r.Query != tc.wantQuery {
				t.Fatalf("upstream saw %q ? %q, want %q ? %q", r.Raw, r.Query, tc.wantPath, tc.wantQuery)
			}
		})
	}
}

// identityRequest sends one request carrying the caller's own
// credentials and impersonation headers, and returns what the upstream saw.
func identityRequest(t *testing.T, o Options) (int, seenRequest) {
	t.Helper()
	seen := make(chan seenRequest, 1)
	up := front(t, headerEcho(seen))
	o.Upstream = mustURL(t, up.URL)
	px := front(t, newProxy(t, o))
	req, _ := http.NewRequest("GET", px.URL+"/api/v1/secrets", nil)
	req.Header.Set("Authorization", "Bearer left-on-the-request")
	req.Header.Set("Impersonate-User", "system:admin")
	req.Header.Add("Impersonate-Group", "system:masters")
	req.Header.Set("Impersonate-Uid", "0")
	req.Header.Set("Impersonate-Extra-Scopes", "all")
	req.Header.Set("X-Remote-User", "system:admin")
	req.Header["x-remote-group"] = []string{"system:masters"}
	req.Header["X-REMOTE-UID"] = []string{"0"}
	req.Header.Set("X-Remote-Extra-Scopes", "all")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case r := <-seen:
		return resp.StatusCode, r
	default:
		return resp.StatusCode, seenRequest{}
	}
}

func impersonation(h http.Header) (user, uid string, groups []string, extra map[string][]string) {
	extra = map[string][]string{}
	for k, vs := range h {
		if rest, ok := strings.CutPrefix(k, "Impersonate-Extra-"); ok {
			// The upstream's decoding: lowercase, then path-unescape.
			key, err := url.PathUnescape(strings.ToLower(rest))
			if err != nil {
				key = "undecodable:" + rest
			}
			extra[key] = vs
		}
	}
	return h.Get("Impersonate-User"), h.Get("Impersonate-Uid"), h.Values("Impersonate-Group"), extra
}

// remoteHeaders returns the X-Remote-* headers of h.
func remoteHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, vs := range h {
		if strings.HasPrefix(strings.ToLower(k), "x-remote-") {
			out[k] = vs
		}
	}
	return out
}

func TestIdentity(t *testing.T) {
	t.Run("passthrough with the kept credentials", func(t *testing.T) {
		code, r := identityRequest(t, Options{Credentials: func(*http.Request) string { return "Bearer caller-token" }})
		if code != 200 || r.Header.Get("Authorization") != "Bearer caller-token" {
			t.Fatalf("status %d, Authorization %q", code, r.Header.Get("Authorization"))
		}
		// The caller's impersonation goes on with its own credentials,
		// for the upstream to authorize and do again.
		if u, uid, g, e := impersonation(r.Header); u != "system:admin" || uid != "0" || !reflect.DeepEqual(g, []string{"system:masters"}) ||
			!reflect.DeepEqual(e, map[string][]string{"scopes": {"all"}}) {
			t.Fatalf("caller's impersonation headers not forwarded as sent: %v", r.Header)
		}
		if h := remoteHeaders(r.Header); len(h) != 0 {
			t.Fatalf("caller's X-Remote-* headers forwarded: %v", h)
		}
	})
	t.Run("passthrough of what the request carries", func(t *testing.T) {
		code, r := identityRequest(t, Options{Identity: PassThrough})
		if code != 200 || r.Header.Get("Authorization") != "Bearer left-on-the-request" {
			t.Fatalf("status %d, Authorization %q", code, r.Header.Get("Authorization"))
		}
		if u, _, g, _ := impersonation(r.Header); u != "system:admin" || !reflect.DeepEqual(g, []string{"system:masters"}) {
			t.Fatalf("caller's impersonation headers not forwarded as sent: %v", r.Header)
		}
		if h := remoteHeaders(r.Header); len(h) != 0 {
			t.Fatalf("caller's X-Remote-* headers forwarded: %v", h)
		}
	})
	t.Run("impersonate", func(t *testing.T) {
		user := request.User{
			Name:   "alice@example.com",
			UID:    "1234-abcd",
			Groups: []string{"dev", "system:authenticated", "ops"},
			Extra: map[string][]string{
				"scopes":              {"openid", "profile"},
				"example.com/project": {"apf"},
				"odd key:with=100%":   {"v"},
				"Example.com/Team":    {"Blue"},
			},
		}
		code, r := identityRequest(t, Options{
			Identity:    Impersonate,
			TokenFile:   writeFile(t, "token", []byte("  apf-own-token\n")),
			Credentials: func(*http.Request) string { return "Bearer caller-token" },
			User:        func(*http.Request) (request.User, bool) { return user, true },
		})
		if code != 200 {
			t.Fatalf("status %d", code)
		}
		if got := r.Header.Values("Authorization"); len(got) != 1 || got[0] != "Bearer apf-own-token" {
			t.Fatalf("Authorization %q, want apf's own token", got)
		}
		u, uid, groups, extra := impersonation(r.Header)
		if u != user.Name || uid != user.UID {
			t.Errorf("user %q uid %q", u, uid)
		}
		if want := []string{"dev", "ops"}; !reflect.DeepEqual(groups, want) {
			t.Errorf("groups %q, want %q (one value each, no system:authenticated)", groups, want)
		}
		if !reflect.DeepEqual(extra, user.Extra) {
			t.Errorf("extra %q, want %q", extra, user.Extra)
		}
		if h := remoteHeaders(r.Header); len(h) != 0 {
			t.Errorf("caller's X-Remote-* headers forwarded: %v", h)
		}
	})
	t.Run("impersonate without a token file", func(t *testing.T) {
		code, r := identityRequest(t, Options{
			Identity: Impersonate,
			User:     func(*http.Request) (request.User, bool) { return request.User{Name: "bob"}, true },
		})
		if code != 200 || r.Header.Get("Authorization") != "" || r.Header.Get("Impersonate-User") != "bob" {
			t.Fatalf("status %d, headers %v", code, r.Header)
		}
		if _, _, g, e := impersonation(r.Header); g != nil || len(e) != 0 {
			t.Fatalf("caller's impersonation headers forwarded: %v", r.Header)
		}
	})
	t.Run("front-proxy", func(t *testing.T) {
		user := request.User{
			Name:   "alice@example.com",
			UID:    "1234-abcd",
			Groups: []string{"dev", "system:authenticated", "ops"},
			Extra: map[string][]string{
				"scopes":              {"openid", "profile"},
				"example.com/project": {"apf"},
				"odd key:with=100%":   {"v"},
				"Example.com/Team":    {"Blue"},
			},
		}
		code, r, cert := frontProxyRequest(t, func(*http.Request) (request.User, bool) { return user, true })
		if code != 200 || cert != "apf-front-proxy" {
			t.Fatalf("status %d, client certificate %q", code, cert)
		}
		if got := r.Header.Values("Authorization"); len(got) != 0 {
			t.Errorf("Authorization %q forwarded", got)
		}
		if u, uid, g, e := impersonation(r.Header); u != "" || uid != "" || g != nil || len(e) != 0 {
			t.Errorf("caller's impersonation headers forwarded: %v", r.Header)
		}
		u, uid, groups, extra := remoteIdentity(r.Header)
		if u != user.Name || uid != user.UID {
			t.Errorf("user %q uid %q", u, uid)
		}
		if !reflect.DeepEqual(groups, user.Groups) {
			t.Errorf("groups %q, want %q (one value each, all of them)", groups, user.Groups)
		}
		if !reflect.DeepEqual(extra, user.Extra) {
			t.Errorf("extra %q, want %q", extra, user.Extra)
		}
		if vs := r.Header.Values("X-Remote-User"); len(vs) != 1 {
			t.Errorf("X-Remote-User %q, want the caller alone", vs)
		}
	})
	t.Run("front-proxy for an anonymous caller", func(t *testing.T) {
		anon := request.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}
		code, r, cert := frontProxyRequest(t, func(*http.Request) (request.User, bool) { return anon, true })
		if code != 200 || cert != "apf-front-proxy" {
			t.Fatalf("status %d, client certificate %q", code, cert)
		}
		u, uid, groups, extra := remoteIdentity(r.Header)
		if u != "system:anonymous" || uid != "" || !reflect.DeepEqual(groups, []string{"system:unauthenticated"}) || len(extra) != 0 {
			t.Errorf("anonymous caller named %q uid %q groups %q extra %q", u, uid, groups, extra)
		}
	})
	t.Run("front-proxy without a caller", func(t *testing.T) {
		for _, f := range []func(*http.Request) (request.User, bool){
			func(*http.Request) (request.User, bool) { return request.User{}, false },
			func(*http.Request) (request.User, bool) { return request.User{Groups: []string{"g"}}, true },
		} {
			code, r, _ := frontProxyRequest(t, f)
			if code != http.StatusUnauthorized || r.Header != nil {
				t.Fatalf("status %d, upstream saw %v; want 401 and nothing forwarded", code, r.Header)
			}
		}
	})
	t.Run("impersonate without a caller", func(t *testing.T) {
		for _, f := range []func(*http.Request) (request.User, bool){
			func(*http.Request) (request.User, bool) { return request.User{}, false },
			func(*http.Request) (request.User, bool) { return request.User{Groups: []string{"g"}}, true },
		} {
			code, r := identityRequest(t, Options{Identity: Impersonate, TokenFile: writeFile(t, "token", []byte("apf")), User: f})
			if code != http.StatusUnauthorized || r.Header != nil {
				t.Fatalf("status %d, upstream saw %v; want 401 and nothing forwarded", code, r.Header)
			}
		}
	})
}

// frontProxyRequest sends one request carrying the caller's own
// credentials and identity headers through a FrontProxy proxy to an HTTPS
// upstream that requires apf's client certificate, and returns what the
// upstream saw and the common name of the certificate it was shown.
func frontProxyRequest(t *testing.T, user func(*http.Request) (request.User, bool)) (int, seenRequest, string) {
	t.Helper()
	seen := make(chan seenRequest, 1)
	cns := make(chan string, 1)
	pki := newClientPKI(t, "apf-front-proxy")
	up := tlsUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cns <- r.TLS.PeerCertificates[0].Subject.CommonName
		headerEcho(seen).ServeHTTP(w, r)
	}), pki.pool)
	px := front(t, newProxy(t, Options{
		Upstream: mustURL(t, up.URL), CAFile: caFileFor(t, up), CertFile: pki.certFile, KeyFile: pki.keyFile,
		Identity: FrontProxy, User: user,
	}))
	req, _ := http.NewRequest("GET", px.URL+"/api/v1/secrets", nil)
	req.Header.Set("Authorization", "Bearer caller-token")
	req.Header.Set("Impersonate-User", "system:admin")
	req.Header.Set("X-Remote-User", "system:admin")
	req.Header["x-remote-group"] = []string{"system:masters"}
	req.Header["X-REMOTE-UID"] = []string{"0"}
	req.Header.Set("X-Remote-Extra-Scopes", "all")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case r := <-seen:
		return resp.StatusCode, r, <-cns
	default:
		return resp.StatusCode, seenRequest{}, ""
	}
}

// remoteIdentity reads the X-Remote-* headers as kube-apiserver's
// request-header authentication does: the first user and UID values,
// every group value, and each extra key lowercased then path-unescaped.
func remoteIdentity(h http.Header) (user, uid string, groups []string, extra map[string][]string) {
	extra = map[string][]string{}
	for k, vs := range h {
		if rest, ok := strings.CutPrefix(k, "X-Remote-Extra-"); ok {
			key, err := url.PathUnescape(strings.ToLower(rest))
			if err != nil {
				key = "undecodable:" + rest
			}
			extra[key] = append(extra[key], vs...)
		}
	}
	return h.Get("X-Remote-User"), h.Get("X-Remote-Uid"), h.Values("X-Remote-Group"), extra
}

func TestEscapeExtraKey(t *testing.T) {
	for in, want := range map[string]string{
		"scopes":              "scopes",
		"example.com/project": "example.com%2Fproject",
		"a:b=c@d e%":          "a%3Ab%3Dc%40d%20e%25",
		"ключ":                "%D0%BA%D0%BB%D1%8E%D1%87",
		"Scopes":              "%53copes",
		"%2F":                 "%252%46",
		"":                    "",
	} {
		got := escapeExtraKey(in)
		if got != want {
			t.Errorf("escapeExtraKey(%q) = %q, want %q", in, got, want)
		}
		// The upstream's decoding: lowercase, then path-unescape.
		if back, err := url.PathUnescape(strings.ToLower(got)); err != nil || back != in {
			t.Errorf("unescaping %q: %q, %v", got, back, err)
		}
	}
}

// goroutinesSettle waits, generously, for the goroutine count to come
// back to about base.
func goroutinesSettle(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtimeNumGoroutine()
		if n <= base+2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines: %d, started with %d", n, base)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recordingWriter notes whether anything was written.
type recordingWriter struct {
	h       http.Header
	code    int
	written int
}

func (w *recordingWriter) Header() http.Header { return w.h }
func (w *recordingWriter) WriteHeader(c int)   { w.code = c }
func (w *recordingWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = 200
	}
	w.written += len(b)
	return len(b), nil
}

func TestFailure(t *testing.T) {
	t.Run("unreachable upstream", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		base := runtimeNumGoroutine()
		h := newProxy(t, Options{Upstream: mustURL(t, "http://"+addr)})
		rec := httptest.NewRecorder()
		within(t, "the handler", func() { h.ServeHTTP(rec, httptest.NewRequest("GET", "/api", nil)) })
		if rec.Code != http.StatusBadGateway || rec.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("status %d, Content-Type %q", rec.Code, rec.Header().Get("Content-Type"))
		}
		st := decodeStatus(t, rec.Body)
		if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != "Failure" || st.Code != 502 || st.Reason != "BadGateway" || st.Message != "the upstream could not be reached" {
			t.Fatalf("Status %+v", st)
		}
		goroutinesSettle(t, base)
	})
	t.Run("upstream closes before answering", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				// Reads the request, then hangs up without a word.
				_, _ = http.ReadRequest(bufio.NewReader(c))
				c.Close()
			}
		}()
		h := newProxy(t, Options{Upstream: mustURL(t, "http://"+l.Addr().String())})
		rec := httptest.NewRecorder()
		within(t, "the handler", func() { h.ServeHTTP(rec, httptest.NewRequest("GET", "/api", nil)) })
		st := decodeStatus(t, rec.Body)
		if rec.Code != http.StatusBadGateway || st.Reason != "BadGateway" || st.Message != "the upstream gave no valid answer" {
			t.Fatalf("%d %+v, want 502 saying the upstream gave no valid answer (it was reached)", rec.Code, st)
		}
	})
	t.Run("upstream never answers", func(t *testing.T) {
		release := make(chan struct{})
		up := front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		t.Cleanup(func() { close(release) })
		base := runtimeNumGoroutine()
		h := newProxy(t, Options{Upstream: mustURL(t, up.URL), ResponseHeaderTimeout: 200 * time.Millisecond})
		rec := httptest.NewRecorder()
		within(t, "the handler", func() { h.ServeHTTP(rec, httptest.NewRequest("GET", "/api", nil)) })
		if rec.Code != http.StatusGatewayTimeout {
			t.Fatalf("status %d, want 504", rec.Code)
		}
		st := decodeStatus(t, rec.Body)
		if st.Kind != "Status" || st.Code != 504 || st.Reason != "Timeout" || st.Status != "Failure" {
			t.Fatalf("Status %+v", st)
		}
		goroutinesSettle(t, base)
	})
	t.Run("unreadable request body", func(t *testing.T) {
		up := front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			io.WriteString(w, "ok")
		}))
		h := newProxy(t, Options{Upstream: mustURL(t, up.URL)})
		req := httptest.NewRequest("POST", "/api/v1/namespaces/a/configmaps", io.MultiReader(strings.NewReader("{"), iotest.ErrReader(errors.New("malformed chunked encoding"))))
		req.ContentLength = -1
		rec := httptest.NewRecorder()
		within(t, "the handler", func() { h.ServeHTTP(rec, req) })
		st := decodeStatus(t, rec.Body)
		if rec.Code != http.StatusBadRequest || st.Code != 400 || st.Reason != "BadRequest" || st.Message != "reading the request body: malformed chunked encoding" {
			t.Fatalf("status %d, %+v", rec.Code, st)
		}
	})
	t.Run("caller goes away", func(t *testing.T) {
		arrived := make(chan struct{})
		upstreamSawCancel := make(chan struct{})
		up := front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(arrived)
			<-r.Context().Done()
			close(upstreamSawCancel)
		}))
		base := runtimeNumGoroutine()
		h := newProxy(t, Options{Upstream: mustURL(t, up.URL)})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w := &recordingWriter{h: http.Header{}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/pods", nil).WithContext(ctx))
		}()
		within(t, "the request reaching the upstream", func() { <-arrived })
		cancel()
		within(t, "the handler", func() { <-done })
		within(t, "the upstream noticing", func() { <-upstreamSawCancel })
		if w.code != 0 || w.written != 0 {
			t.Fatalf("a response was written to a caller that left: %d, %d bytes", w.code, w.written)
		}
		goroutinesSettle(t, base)
	})
}

func TestBadOptions(t *testing.T) {
	token := writeFile(t, "token", []byte("t"))
	empty := writeFile(t, "empty", []byte(" \n"))
	pki := newClientPKI(t, "x")
	garbage := writeFile(t, "garbage.pem", []byte("not a certificate"))
	user := func(*http.Request) (request.User, bool) { return request.User{Name: "u"}, true }
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no upstream", Options{}, "http or https URL"},
		{"ftp upstream", Options{Upstream: mustURL(t, "ftp://example.com")}, "http or https URL"},
		{"unix upstream", Options{Upstream: mustURL(t, "unix:///var/run/x.sock")}, "http or https URL"},
		{"no host", Options{Upstream: mustURL(t, "http:///path")}, "http or https URL"},
		{"unknown identity", Options{Upstream: mustURL(t, "http://h"), Identity: "sudo"}, "unknown identity"},
		{"impersonate without User", Options{Upstream: mustURL(t, "http://h"), Identity: Impersonate, TokenFile: token}, "Options.User"},
		{"front-proxy without User", Options{Upstream: mustURL(t, "https://h"), Identity: FrontProxy, CertFile: pki.certFile, KeyFile: pki.keyFile}, "Options.User"},
		{"front-proxy without a certificate", Options{Upstream: mustURL(t, "https://h"), Identity: FrontProxy, User: user}, "CertFile, KeyFile"},
		{"front-proxy without a key", Options{Upstream: mustURL(t, "https://h"), Identity: FrontProxy, User: user, CertFile: pki.certFile}, "CertFile, KeyFile"},
		{"front-proxy with a token", Options{Upstream: mustURL(t, "https://h"), Identity: FrontProxy, User: user, CertFile: pki.certFile, KeyFile: pki.keyFile, TokenFile: token}, "TokenFile"},
		{"front-proxy with http", Options{Upstream: mustURL(t, "http://h"), Identity: FrontProxy, User: user, CertFile: pki.certFile, KeyFile: pki.keyFile}, "https upstream"},
		{"CA with http", Options{Upstream: mustURL(t, "http://h"), CAFile: token}, "https upstream"},
		{"cert with http", Options{Upstream: mustURL(t, "http://h"), Identity: Impersonate, User: user, CertFile: pki.certFile, KeyFile: pki.keyFile}, "https upstream"},
		{"missing token file", Options{Upstream: mustURL(t, "http://h"), Identity: Impersonate, User: user, TokenFile: token + ".missing"}, "no such file"},
		{"empty token file", Options{Upstream: mustURL(t, "https://h"), Identity: Impersonate, User: user, TokenFile: empty}, "empty"},
		{"cert without key", Options{Upstream: mustURL(t, "https://h"), Identity: Impersonate, User: user, CertFile: pki.certFile}, "go together"},
		{"key without cert", Options{Upstream: mustURL(t, "https://h"), Identity: Impersonate, User: user, KeyFile: pki.keyFile}, "go together"},
		{"cert and key swapped", Options{Upstream: mustURL(t, "https://h"), Identity: Impersonate, User: user, CertFile: pki.keyFile, KeyFile: pki.certFile}, "client certificate"},
		// PassThrough never lends apf's own credentials, named or by
		// default.
		{"passthrough with apf's certificate", Options{Upstream: mustURL(t, "https://h"), Identity: PassThrough, CertFile: pki.certFile, KeyFile: pki.keyFile}, "never apf's"},
		{"default mode with apf's certificate", Options{Upstream: mustURL(t, "https://h"), CertFile: pki.certFile, KeyFile: pki.keyFile}, "never apf's"},
		{"passthrough with apf's key alone", Options{Upstream: mustURL(t, "https://h"), KeyFile: pki.keyFile}, "never apf's"},
		{"passthrough with apf's token", Options{Upstream: mustURL(t, "https://h"), Identity: PassThrough, TokenFile: token}, "never apf's"},
		{"missing CA file", Options{Upstream: mustURL(t, "https://h"), CAFile: token + ".missing"}, "no such file"},
		{"CA file without a certificate", Options{Upstream: mustURL(t, "https://h"), CAFile: garbage}, "holds no certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := New(tc.o)
			if err == nil || h != nil {
				t.Fatalf("New accepted it")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
	// And the good ones are accepted.
	for _, o := range []Options{
		{Upstream: mustURL(t, "http://127.0.0.1:1")},
		{Upstream: mustURL(t, "https://h/prefix"), Identity: Impersonate, User: user, TokenFile: token, CertFile: pki.certFile, KeyFile: pki.keyFile},
		{Upstream: mustURL(t, "https://h/prefix"), Identity: FrontProxy, User: user, CertFile: pki.certFile, KeyFile: pki.keyFile},
	} {
		if _, err := New(o); err != nil {
			t.Errorf("New(%+v): %v", o, err)
		}
	}
}
