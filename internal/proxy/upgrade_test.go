package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// switchingUpstream is an upstream that takes the h2c upgrades it is
// offered, as an HTTP/2-capable server may: it answers 101 and then serves
// the connection itself, as HTTP/1.1 here, which is enough to count what
// came through the tunnel. With always set it switches every request it
// gets to h2c, asked or not. Ordinary requests are answered "ok".
type switchingUpstream struct {
	always bool

	ordinary, tunnelled atomic.Int32
	// closed is signalled when a switched connection is closed.
	closed chan struct{}

	mu sync.Mutex
	// upgradeHeaders are the Upgrade and HTTP2-Settings headers seen.
	upgradeHeaders []string
}

func newSwitchingUpstream(always bool) *switchingUpstream {
	return &switchingUpstream{always: always, closed: make(chan struct{}, 100)}
}

func (u *switchingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for _, h := range []string{"Upgrade", "Http2-Settings"} {
		for _, v := range r.Header.Values(h) {
			u.mu.Lock()
			u.upgradeHeaders = append(u.upgradeHeaders, h+": "+v)
			u.mu.Unlock()
		}
	}
	if !u.always && !strings.EqualFold(r.Header.Get("Upgrade"), "h2c") {
		u.ordinary.Add(1)
		io.WriteString(w, "ok")
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// An HTTP/2 request cannot switch: answered as an ordinary one.
		u.ordinary.Add(1)
		io.WriteString(w, "ok")
		return
	}
	defer func() {
		conn.Close()
		u.closed <- struct{}{}
	}()
	fmt.Fprint(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")
	if brw.Flush() != nil {
		return
	}
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	for {
		req, err := http.ReadRequest(brw.Reader)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		u.tunnelled.Add(1)
		fmt.Fprint(brw, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\ntunnel!\n")
		if brw.Flush() != nil {
			return
		}
	}
}

func (u *switchingUpstream) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.upgradeHeaders...)
}

// admitting stands for APF in front of the proxy: it counts the requests
// it passes on.
func admitting(px http.Handler, admitted *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		admitted.Add(1)
		px.ServeHTTP(w, r)
	})
}

// switchingProxy puts a proxy, behind a counting front, before up over
// plain HTTP/1.1 or HTTPS offering HTTP/2.
func switchingProxy(t *testing.T, up http.Handler, tlsUp bool, admitted *atomic.Int32) string {
	t.Helper()
	o := Options{}
	if tlsUp {
		s := tlsUpstream(t, up, nil)
		o.Upstream, o.CAFile = mustURL(t, s.URL), caFileFor(t, s)
	} else {
		o.Upstream = mustURL(t, front(t, up).URL)
	}
	return front(t, admitting(newProxy(t, o), admitted)).Listener.Addr().String()
}

// h2cOffer is an h2c upgrade as curl --http2 sends it, on an ordinary
// path.
const h2cOffer = "GET /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: apf\r\n" +
	"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"

// TestUpgradeH2CStripped: a request that offers h2c, with 20 more
// pipelined after it on the same connection, to an upstream that takes
// every h2c upgrade it is offered. The offer is stripped: each of the 21
// is answered as an ordinary request, none gets 101, the upstream never
// sees Upgrade or HTTP2-Settings and nothing goes through a tunnel, and
// the front (APF's place) passes each one. Also with HTTP2-Settings sent
// without being named in Connection, with h2c among other Upgrade lines
// of no other protocol, and in upper case.
func TestUpgradeH2CStripped(t *testing.T) {
	const pipelined = 20
	offers := map[string]string{
		"as curl sends it": h2cOffer,
		"HTTP2-Settings not in Connection": "GET /api/v1/pods HTTP/1.1\r\nHost: apf\r\n" +
			"Connection: Upgrade\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n",
		"upper case, two lines": "GET /api/v1/pods HTTP/1.1\r\nHost: apf\r\n" +
			"Connection: upgrade\r\nUpgrade: H2C\r\nUpgrade: h2c, \r\nHttp2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n",
	}
	for name, offer := range offers {
		for _, tlsUp := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tls=%v", name, tlsUp), func(t *testing.T) {
				up := newSwitchingUpstream(false)
				var admitted atomic.Int32
				addr := switchingProxy(t, up, tlsUp, &admitted)

				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
				var b strings.Builder
				b.WriteString(offer)
				for i := range pipelined {
					fmt.Fprintf(&b, "GET /api/v1/namespaces/default/pods/p%d HTTP/1.1\r\nHost: apf\r\n\r\n", i)
				}
				if _, err := io.WriteString(conn, b.String()); err != nil {
					t.Fatal(err)
				}
				br := bufio.NewReader(conn)
				for i := range pipelined + 1 {
					resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
					if err != nil {
						t.Fatalf("response %d: %v", i, err)
					}
					body, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || resp.StatusCode != http.StatusOK || string(body) != "ok" {
						t.Fatalf("response %d: %s %q, %v; want an ordinary 200 ok from the upstream", i, resp.Status, body, err)
					}
				}
				if n := admitted.Load(); n != pipelined+1 {
					t.Errorf("the front passed %d requests, want %d", n, pipelined+1)
				}
				if n, m := up.ordinary.Load(), up.tunnelled.Load(); n != pipelined+1 || m != 0 {
					t.Errorf("upstream: %d ordinary requests and %d through a tunnel, want %d and 0", n, m, pipelined+1)
				}
				if s := up.seen(); len(s) != 0 {
					t.Errorf("the upstream saw %q", s)
				}
			})
		}
	}
}

// TestUpgradeUnaskedSwitch: an upstream that switches to h2c when it was
// not asked to (a request that asked for nothing, one whose h2c offer was
// stripped, one that asked for a websocket) gets no tunnel: the caller
// gets 502 and the upstream's connection is closed.
func TestUpgradeUnaskedSwitch(t *testing.T) {
	for name, req := range map[string]string{
		"no upgrade":         "GET /api/v1/pods HTTP/1.1\r\nHost: apf\r\n\r\n",
		"stripped h2c offer": h2cOffer,
		"websocket":          "GET /api/v1/pods?watch=1 HTTP/1.1\r\nHost: apf\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			up := newSwitchingUpstream(true)
			var admitted atomic.Int32
			addr := switchingProxy(t, up, false, &admitted)
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
			io.WriteString(conn, req+"GET /api/v1/pods/after HTTP/1.1\r\nHost: apf\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodGet})
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "the upstream gave no valid answer") {
				t.Errorf("got %s %s, want 502 saying the upstream gave no valid answer", resp.Status, body)
			}
			select {
			case <-up.closed:
			case <-time.After(10 * time.Second):
				t.Errorf("the upstream's switched connection is still open")
			}
			if n := up.tunnelled.Load(); n != 0 {
				t.Errorf("%d requests went through a tunnel", n)
			}
		})
	}
}

// TestUpgradeRefused: an upgrade to any protocol but websocket and
// SPDY/3.1 (h2c set aside) is refused with a 400 Status naming what the
// gateway carries, and the upstream is not asked. An Upgrade header that
// Connection does not name asks for nothing: the request goes on without
// it.
func TestUpgradeRefused(t *testing.T) {
	for _, c := range []struct {
		upgrade, connection string
		refused             string // "" for not refused
	}{
		{"foo", "Upgrade", "foo"},
		{"TLS/1.0", "Upgrade", "TLS/1.0"},
		{"h2", "upgrade", "h2"},
		{"SPDY/3", "Upgrade", "SPDY/3"},
		{"h2c, foo/1", "Upgrade, HTTP2-Settings", "foo/1"},
		{"websocket, SPDY/3.1", "Upgrade", "websocket, SPDY/3.1"},
		{"websocket, websocket", "Upgrade", "websocket, websocket"},
		{"foo", "keep-alive", ""},
	} {
		t.Run(c.upgrade+"/"+c.connection, func(t *testing.T) {
			up := newSwitchingUpstream(false)
			var admitted atomic.Int32
			addr := switchingProxy(t, up, false, &admitted)
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1/namespaces/default/pods/p/exec?command=sh", nil)
			req.Header.Set("Upgrade", c.upgrade)
			req.Header.Set("Connection", c.connection)
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if c.refused == "" {
				if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || string(b) != "ok" || len(up.seen()) != 0 {
					t.Errorf("got %s %q, the upstream saw %q; want an ordinary request", resp.Status, b, up.seen())
				}
				return
			}
			st := decodeStatus(t, resp.Body)
			want := fmt.Sprintf("the gateway does not carry an upgrade to %q: it carries upgrades to websocket and SPDY/3.1 only", c.refused)
			if resp.StatusCode != http.StatusBadRequest || st.Code != http.StatusBadRequest || st.Reason != metav1.StatusReasonBadRequest || st.Message != want {
				t.Errorf("got %s %+v, want 400 BadRequest %q", resp.Status, st, want)
			}
			if n := up.ordinary.Load() + up.tunnelled.Load(); n != 0 {
				t.Errorf("the upstream got %d requests", n)
			}
		})
	}
}

// TestUpgradeKubectlStreams: the upgrades kubectl v1.37 makes are carried
// with the headers it sends (as internal/server's TestGatewayKubectlStreams
// records them from kubectl itself): exec and attach over websockets
// (subprotocol v5.channel.k8s.io), port-forward as SPDY tunnelled in a
// websocket, and the SPDY/3.1 upgrades it falls back to. A websocket
// offered beside h2c is carried as a websocket.
func TestUpgradeKubectlStreams(t *testing.T) {
	for _, c := range []struct {
		name, method, path string
		headers            []string // as sent
		want               string   // Upgrade the upstream sees
		keep               []string // other headers the upstream must see as sent
	}{
		{"exec over websocket", http.MethodGet, "/api/v1/namespaces/default/pods/p/exec?command=sh&stdout=true",
			[]string{"Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
				"Sec-WebSocket-Protocol: v5.channel.k8s.io"},
			"websocket", []string{"Sec-Websocket-Protocol", "Sec-Websocket-Key", "Sec-Websocket-Version"}},
		{"port-forward over websocket", http.MethodGet, "/api/v1/namespaces/default/pods/p/portforward",
			[]string{"Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
				"Sec-WebSocket-Protocol: SPDY/3.1+portforward.k8s.io"},
			"websocket", []string{"Sec-Websocket-Protocol"}},
		{"exec over SPDY", http.MethodPost, "/api/v1/namespaces/default/pods/p/exec?command=sh",
			[]string{"Connection: Upgrade", "Upgrade: SPDY/3.1", "X-Stream-Protocol-Version: v5.channel.k8s.io", "X-Stream-Protocol-Version: v4.channel.k8s.io",
				"X-Stream-Protocol-Version: v3.channel.k8s.io", "X-Stream-Protocol-Version: v2.channel.k8s.io", "X-Stream-Protocol-Version: channel.k8s.io"},
			"SPDY/3.1", []string{"X-Stream-Protocol-Version"}},
		{"port-forward over SPDY", http.MethodPost, "/api/v1/namespaces/default/pods/p/portforward",
			[]string{"Connection: Upgrade", "Upgrade: SPDY/3.1", "X-Stream-Protocol-Version: portforward.k8s.io"},
			"SPDY/3.1", []string{"X-Stream-Protocol-Version"}},
		{"websocket beside h2c", http.MethodGet, "/api/v1/namespaces/default/pods/p/attach",
			[]string{"Connection: Upgrade, HTTP2-Settings", "Upgrade: h2c, WebSocket", "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA"},
			"WebSocket", nil},
	} {
		for _, tlsUp := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tls=%v", c.name, tlsUp), func(t *testing.T) {
				seen := make(chan *http.Request, 1)
				var admitted atomic.Int32
				addr := switchingProxy(t, echoUpgrade(t, seen), tlsUp, &admitted)
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: apf\r\n%s\r\n\r\n", c.method, c.path, strings.Join(c.headers, "\r\n"))
				br := bufio.NewReader(conn)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Upgrade") != c.want {
					t.Fatalf("got %s, Upgrade %q; want 101 to %s", resp.Status, resp.Header.Get("Upgrade"), c.want)
				}
				r := <-seen
				if got := r.Header.Values("Upgrade"); len(got) != 1 || got[0] != c.want || r.Header.Get("Http2-Settings") != "" {
					t.Errorf("upstream saw Upgrade %q, HTTP2-Settings %q; want %q alone", got, r.Header.Get("Http2-Settings"), c.want)
				}
				sent := http.Header{}
				for _, h := range c.headers {
					k, v, _ := strings.Cut(h, ": ")
					sent.Add(k, v)
				}
				for _, k := range c.keep {
					if got, want := r.Header.Values(k), sent.Values(k); strings.Join(got, "|") != strings.Join(want, "|") {
						t.Errorf("upstream saw %s %q, want %q", k, got, want)
					}
				}
				if greeting, err := br.ReadString('\n'); err != nil || greeting != "hello from upstream\n" {
					t.Fatalf("upstream to client: %q, %v", greeting, err)
				}
				io.WriteString(conn, "ping\n")
				if got, err := br.ReadString('\n'); err != nil || got != "ping\n" {
					t.Fatalf("echo: %q, %v", got, err)
				}
				if n := admitted.Load(); n != 1 {
					t.Errorf("the front passed %d requests, want 1", n)
				}
			})
		}
	}
}

// TestConnectRefused: a CONNECT, over HTTP/1.1 or HTTP/2 (where it may
// carry a protocol, RFC 8441), is answered 405 by the gateway and never
// reaches the upstream, which would open a tunnel past APF.
func TestConnectRefused(t *testing.T) {
	var reached atomic.Int32
	up := front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	h := withTestDeadline(newProxy(t, Options{Upstream: mustURL(t, up.URL)}))
	for _, raw := range []string{
		"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
		"CONNECT /api/v1/namespaces/a/pods/p/proxy HTTP/1.1\r\nHost: apf\r\n\r\n",
	} {
		t.Run(raw[:strings.IndexByte(raw, '\r')], func(t *testing.T) {
			srv := front(t, h)
			got := exchange(t, srv.Listener.Addr().String(), raw)
			if !strings.HasPrefix(got, "405 Method Not Allowed") || !strings.Contains(got, "does not carry CONNECT") {
				t.Errorf("answer:\n%s", got)
			}
		})
	}
	t.Run("HTTP/2", func(t *testing.T) {
		srv := httptest.NewUnstartedServer(h)
		srv.EnableHTTP2 = true
		srv.StartTLS()
		defer srv.Close()
		req, err := http.NewRequest(http.MethodConnect, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "example.com:443"
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.ProtoMajor != 2 || res.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s %d, want HTTP/2 405", res.Proto, res.StatusCode)
		}
	})
	if n := reached.Load(); n != 0 {
		t.Errorf("the upstream received %d CONNECT requests", n)
	}
}
