package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/apfproject/apf/apfhttp"
	"github.com/apfproject/apf/controller"
)

// kubeTimeoutBody is what kube-apiserver answers, with 504, to a request
// whose deadline passes before its handler answered (k8s.io/apiserver's
// WithTimeoutForNonLongRunningRequests; bench/peer TestTimeoutFilterAnswer
// checks it against that filter).
const kubeTimeoutBody = `{"metadata":{},"status":"Failure","message":"Timeout: request did not complete within the allotted timeout","reason":"Timeout","details":{},"code":504}` + "\n"

// deadlineTestServer serves h behind the edge's cache-control filter and
// the request deadline (d), over TLS with HTTP/2 and HTTP/1.1, and
// returns it with a client of each protocol.
func deadlineTestServer(t *testing.T, d time.Duration, log *slog.Logger, h http.Handler) (srv *httptest.Server, h1, h2 *http.Client) {
	t.Helper()
	srv = httptest.NewUnstartedServer(withCacheControl(withRequestDeadline(d, log, h)))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)
	srv.Config.ConnContext = connContext
	srv.StartTLS()
	t.Cleanup(srv.Close)
	h2 = srv.Client()
	h2.Timeout = 30 * time.Second
	tr1 := srv.Client().Transport.(*http.Transport).Clone()
	tr1.ForceAttemptHTTP2 = false
	tr1.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	tr1.TLSClientConfig.NextProtos = []string{"http/1.1"}
	h1 = &http.Client{Transport: tr1, Timeout: 30 * time.Second}
	return srv, h1, h2
}

// TestRequestDeadlineAnswers: at the deadline the answer is settled as
// kube-apiserver's timeout filter settles it, over HTTP/1.1 and HTTP/2.
// Before the handler has answered: a 504 with the Timeout Status, the
// header the filters in front set (Cache-Control) and none of the
// handler's, whatever the handler writes afterwards (a late answer of
// its own, a panic), the HTTP/1.1 connection kept for the next request.
// After the header: the answer is cut (the client gets an error, not a
// short body), even when the handler returns as if it were whole. A body
// the client holds back is abandoned at the deadline, and the HTTP/1.1
// connection closed after the 504. An upgraded connection is closed at
// the deadline.
func TestRequestDeadlineAnswers(t *testing.T) {
	logs := &logBuffer{}
	handlerDone := make(chan string, 16)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Handler", "set before the deadline")
		switch r.URL.Path {
		case "/late":
			<-r.Context().Done()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusGatewayTimeout)
			fmt.Fprint(w, `{"kind":"Status","message":"the handler's own"}`)
		case "/panic":
			<-r.Context().Done()
			panic("late panic")
		case "/half":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"kind":"Pod",`)
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
		case "/upgrade":
			c, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				handlerDone <- fmt.Sprint("hijack: ", err)
				return
			}
			defer c.Close()
			fmt.Fprint(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
			_ = brw.Flush()
			_, err = c.Read(make([]byte, 1))
			handlerDone <- fmt.Sprint("upgraded, read: ", err)
		case "/body":
			_, err := io.ReadAll(r.Body)
			handlerDone <- fmt.Sprint("body read: ", err)
			fmt.Fprint(w, "read")
		default:
			fmt.Fprint(w, "in time")
		}
	})
	srv, h1, h2 := deadlineTestServer(t, 300*time.Millisecond, slog.New(slog.NewTextHandler(logs, nil)), h)

	for _, c := range []struct {
		proto  string
		client *http.Client
	}{{"HTTP/1.1", h1}, {"HTTP/2.0", h2}} {
		t.Run(c.proto, func(t *testing.T) {
			get := func(path string) (*http.Response, []byte, error, bool) {
				t.Helper()
				reused := false
				trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
				req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, srv.URL+path, nil)
				resp, err := c.client.Do(req)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				defer resp.Body.Close()
				if resp.Proto != c.proto {
					t.Fatalf("%s: spoken %s", path, resp.Proto)
				}
				body, err := io.ReadAll(resp.Body)
				return resp, body, err, reused
			}
			for _, path := range []string{"/late", "/panic"} {
				resp, body, err, _ := get(path)
				if err != nil || resp.StatusCode != http.StatusGatewayTimeout || string(body) != kubeTimeoutBody {
					t.Errorf("%s: %d %q %v, want 504 %q", path, resp.StatusCode, body, err, kubeTimeoutBody)
				}
				want := http.Header{"Cache-Control": {"no-cache, private"}, "Content-Type": {"text/plain; charset=utf-8"}, "Content-Length": {fmt.Sprint(len(kubeTimeoutBody))}}
				if c.proto == "HTTP/2.0" {
					want.Del("Content-Length") // net/http's HTTP/2 server sends none for this body
					if v := resp.Header.Get("Content-Length"); v != "" && v != fmt.Sprint(len(kubeTimeoutBody)) {
						t.Errorf("%s: Content-Length %s", path, v)
					}
				}
				resp.Header.Del("Date")
				resp.Header.Del("Content-Length")
				want.Del("Content-Length")
				if fmt.Sprint(resp.Header) != fmt.Sprint(want) {
					t.Errorf("%s: header %v, want %v", path, resp.Header, want)
				}
			}
			// The connection that answered a timeout serves the next
			// request (HTTP/1.1: it was kept alive, as kube-apiserver keeps it).
			if resp, body, err, reused := get("/"); err != nil || string(body) != "in time" || !reused {
				t.Errorf("after a timeout: %d %q %v, connection reused %v", resp.StatusCode, body, err, reused)
			}
			resp, body, err, _ := get("/half")
			if resp.StatusCode != http.StatusOK || err == nil {
				t.Errorf("answer started, then the deadline: %d %q, error %v; want it cut", resp.StatusCode, body, err)
			}
		})
	}
	if !strings.Contains(logs.String(), "handler panic after the request deadline") || !strings.Contains(logs.String(), "late panic") {
		t.Errorf("the late panic is not logged: %s", logs.String())
	}

	// A body held back: the client sends its header and a part of its
	// body, then nothing.
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"kind\":")
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusGatewayTimeout || string(body) != kubeTimeoutBody || !resp.Close {
		t.Errorf("body held back: %d %q, closed %v", resp.StatusCode, body, resp.Close)
	}
	select {
	case s := <-handlerDone:
		if !strings.Contains(s, "timeout") {
			t.Errorf("the handler's read: %s", s)
		}
	case <-time.After(10 * time.Second):
		t.Error("the handler reading a body held back did not return")
	}
	if _, err := br.ReadByte(); err == nil {
		t.Error("the connection is still open after the 504")
	}

	// An upgrade that is not long-running, whose client then sends
	// nothing: its connection is closed at the deadline, which frees
	// the handler relaying it.
	up, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	fmt.Fprintf(up, "GET /upgrade HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
	_ = up.SetReadDeadline(time.Now().Add(20 * time.Second))
	ubr := bufio.NewReader(up)
	if resp, err := http.ReadResponse(ubr, nil); err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	select {
	case s := <-handlerDone:
		if !strings.Contains(s, "closed") {
			t.Errorf("the relay's read: %s", s)
		}
	case <-time.After(10 * time.Second):
		t.Error("the handler relaying an upgrade did not return")
	}
	if _, err := ubr.ReadByte(); err == nil {
		t.Error("the upgraded connection is still open after the deadline")
	}
}

// smallSendBuffers gives the server's connections a small send buffer,
// so that an answer of a few hundred KiB fills it and the client's (see
// dialSmallReceive) as one of tens of MiB would with the usual buffers.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(8 << 10)
	}
	return c, err
}

// dialSmallReceive connects to addr with a small receive buffer.
func dialSmallReceive(addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 10 * time.Second, Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
		}); err != nil {
			return err
		}
		return serr
	}}
	return d.Dial("tcp", addr)
}

// stalledHTTP1 sends a GET over HTTP/1.1, reads the answer's status line
// and header, and then reads nothing more.
func stalledHTTP1(gw *e2eServer, roots *x509.CertPool, path, token string) (*tls.Conn, int, error) {
	raw, err := dialSmallReceive(strings.TrimPrefix(gw.url, "https://"))
	if err != nil {
		return nil, 0, err
	}
	c := tls.Client(raw, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n", path, token)
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 1<<10), nil)
	if err != nil {
		c.Close()
		return nil, 0, err
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, resp.StatusCode, nil
}

// stalledHTTP2 is one HTTP/2 connection that stalls its answers. With a
// window of 0, its client announces a flow-control window of 0 for every
// stream (the server may send a stream's header, never a byte of its
// body) and reads every frame. Otherwise it opens wide windows and reads
// nothing more once each of its streams has had its header: the whole
// connection stalls.
type stalledHTTP2 struct {
	conn    *tls.Conn
	streams int
	wmu     sync.Mutex
	fr      *http2.Framer
	mu      sync.Mutex
	code    map[uint32]string        // :status per stream
	reset   map[uint32]http2.ErrCode // RST_STREAM per stream
	done    chan struct{}
}

func dialStalledHTTP2(gw *e2eServer, roots *x509.CertPool, window uint32, streams int) (*stalledHTTP2, error) {
	raw, err := dialSmallReceive(strings.TrimPrefix(gw.url, "https://"))
	if err != nil {
		return nil, err
	}
	c := tls.Client(raw, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: []string{"h2"}})
	if err := c.Handshake(); err != nil || c.ConnectionState().NegotiatedProtocol != "h2" {
		c.Close()
		return nil, fmt.Errorf("h2 not negotiated: %v", err)
	}
	s := &stalledHTTP2{conn: c, streams: streams, fr: http2.NewFramer(c, c), code: map[uint32]string{}, reset: map[uint32]http2.ErrCode{}, done: make(chan struct{})}
	s.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		c.Close()
		return nil, err
	}
	err = s.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: window})
	if err == nil && window > 0 {
		err = s.fr.WriteWindowUpdate(0, 1<<30)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	go s.read(window > 0)
	return s, nil
}

func (s *stalledHTTP2) read(stop bool) {
	defer close(s.done)
	for {
		if stop {
			s.mu.Lock()
			all := len(s.code) == s.streams
			s.mu.Unlock()
			if all {
				return
			}
		}
		f, err := s.fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				s.wmu.Lock()
				_ = s.fr.WriteSettingsAck()
				s.wmu.Unlock()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				s.wmu.Lock()
				_ = s.fr.WritePing(true, f.Data)
				s.wmu.Unlock()
			}
		case *http2.MetaHeadersFrame:
			s.mu.Lock()
			if s.code[f.StreamID] == "" {
				s.code[f.StreamID] = f.PseudoValue("status")
			}
			s.mu.Unlock()
		case *http2.RSTStreamFrame:
			s.mu.Lock()
			s.reset[f.StreamID] = f.ErrCode
			s.mu.Unlock()
		}
	}
}

// get opens stream id with a GET of path.
func (s *stalledHTTP2) get(id uint32, path, token string) error {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "127.0.0.1"}, {":path", path}, {"authorization", "Bearer " + token}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b.Bytes(), EndStream: true, EndHeaders: true})
}

func (s *stalledHTTP2) status(id uint32) (code string, reset http2.ErrCode, wasReset bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	reset, wasReset = s.reset[id]
	return s.code[id], reset, wasReset
}

// stallLevelJSON and stallSchemaJSON put the group "clients" in a level
// of a few seats that rejects what does not fit.
const (
	stallLevelJSON = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration",
"metadata":{"name":"stall"},"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":1,
"lendablePercent":0,"borrowingLimitPercent":0,"limitResponse":{"type":"Reject"}}}}`
	stallSchemaJSON = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema",
"metadata":{"name":"stall"},"spec":{"priorityLevelConfiguration":{"name":"stall"},"matchingPrecedence":500,
"distinguisherMethod":{"type":"ByUser"},"rules":[{"subjects":[{"kind":"Group","group":{"name":"clients"}}],
"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"namespaces":["*"],"clusterScope":true}],
"nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}]}]}}`
)

// TestStalledClientsGiveSeatsBack: clients that read the header of an
// answer and then nothing more — over HTTP/1.1 with the socket buffers
// full, over HTTP/2 with a flow-control window of 0 — fill every seat of
// their level, and another user of the level is refused; at the request
// deadline the answers are cut (the HTTP/1.1 connections closed, the
// HTTP/2 streams reset), every seat comes back within a second, and the
// other user is served. The same for answers the gateway proxies (a
// 40 MiB object from the upstream) and answers apf serves itself
// (/metrics, a list of FlowSchemas), and for a client that holds back
// the body of a request apf reads itself (a self access review). Seats
// are read from the controller's books (the level's queue set).
func TestStalledClientsGiveSeatsBack(t *testing.T) {
	const timeout = 3 * time.Second
	big := bytes.Repeat([]byte("x"), 32<<10)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/api/v1/namespaces/shop/configmaps/big" {
			fmt.Fprint(w, `{"kind":"ConfigMap"}`)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(40<<20))
		for range (40 << 20) / len(big) {
			if _, err := w.Write(big); err != nil {
				return
			}
		}
	}))
	defer upstream.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts := DefaultOptions()
	opts.DataDir = t.TempDir()
	opts.Upstream = upstream.URL
	opts.Auth.TokenAuthFile = gatewayTokens(t, "stall", "other")
	opts.RequestTimeout = timeout
	opts.Authz.AdminGroups = []string{"clients"} // /metrics, without being exempt
	gw := startServerOn(t, opts, smallSendBuffers{ln})
	defer gw.stop()
	for _, obj := range []struct{ res, body string }{
		{"prioritylevelconfigurations", stallLevelJSON},
		{"flowschemas", stallSchemaJSON},
	} {
		if code, _, body := gw.do(http.MethodPost, "/apis/flowcontrol.apiserver.k8s.io/v1/"+obj.res, adminToken, []byte(obj.body)); code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", obj.res, code, body)
		}
	}
	level := func() *controller.LevelView {
		for _, l := range gw.server.Controller().Levels() {
			if l.Name == "stall" && !l.Quiescing {
				return &l
			}
		}
		return nil
	}
	// seats are those held in the level, in every queue set it has had.
	seats := func() (n int) {
		for _, l := range gw.server.Controller().Levels() {
			if l.Name == "stall" {
				n += l.Queue.Stats().SeatsInUse
			}
		}
		return n
	}
	const probe = "/api/v1/namespaces/shop/configmaps/small"
	if err := waitFor(10*time.Second, func() bool {
		code, h, _ := gw.do(http.MethodGet, probe, "token-other", nil)
		return level() != nil && code == http.StatusOK && h.Get(apfhttp.PriorityLevelUIDHeader) == level().UID
	}); err != nil {
		t.Fatal("level stall never served")
	}
	limit := level().Queue.Stats().ConcurrencyLimit
	t.Logf("level stall: %d seats", limit)
	pem, err := os.ReadFile(gw.caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)

	// run fills the level with stalled requests (fill returns a check of
	// what the clients saw once the seats are back, and closes them),
	// then checks that the seats come back at the deadline.
	run := func(t *testing.T, fill func(n int) (check func())) {
		check := fill(limit)
		if err := waitFor(10*time.Second, func() bool { return seats() >= limit }); err != nil {
			t.Fatalf("the stalled requests hold %d of %d seats", seats(), limit)
		}
		// Every deadline is at most the request timeout from now: each
		// request had started before its seats were counted here.
		full := time.Now()
		if code, _, _ := gw.do(http.MethodGet, probe, "token-other", nil); code != http.StatusTooManyRequests && time.Since(full) < timeout {
			t.Errorf("another user of the level, while it is full: %d, want 429", code)
		}
		var back time.Duration
		_ = waitFor(timeout+15*time.Second, func() bool {
			back = time.Since(full)
			return seats() == 0
		})
		if back > timeout+time.Second {
			t.Errorf("seats given back %v after the deadline (%d still held), want within 1s", back-timeout, seats())
		} else {
			t.Logf("seats given back at most %v after the deadline", back-timeout)
		}
		if code, _, _ := gw.do(http.MethodGet, probe, "token-other", nil); code != http.StatusOK {
			t.Errorf("another user of the level, after the deadline: %d, want 200", code)
		}
		check()
	}
	h1Run := func(path string, whole int64) func(t *testing.T) {
		return func(t *testing.T) {
			run(t, func(n int) func() {
				var conns []*tls.Conn
				for range n {
					c, code, err := stalledHTTP1(gw, roots, path, "token-stall")
					if err != nil || code != http.StatusOK {
						t.Fatalf("stalled request: %d %v", code, err)
					}
					conns = append(conns, c)
				}
				return func() {
					for _, c := range conns {
						// Closed by the server: what is left in the
						// buffers, then the end, before the whole.
						_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
						n, err := io.Copy(io.Discard, c)
						var ne net.Error
						if errors.As(err, &ne) && ne.Timeout() || whole > 0 && n >= whole {
							t.Errorf("after the deadline the connection is still open (%d bytes read, %v)", n, err)
						}
						c.Close()
					}
				}
			})
		}
	}
	h2Run := func(path string, window uint32) func(t *testing.T) {
		return func(t *testing.T) {
			run(t, func(n int) func() {
				s, err := dialStalledHTTP2(gw, roots, window, n)
				if err != nil {
					t.Fatal(err)
				}
				ids := make([]uint32, n)
				for i := range n {
					ids[i] = uint32(2*i + 1)
					if err := s.get(ids[i], path, "token-stall"); err != nil {
						t.Fatal(err)
					}
				}
				return func() {
					defer s.conn.Close()
					if window > 0 {
						// The connection is closed: what is left in
						// the buffers, then the end.
						_ = s.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
						n, err := io.Copy(io.Discard, s.conn)
						var ne net.Error
						if errors.As(err, &ne) && ne.Timeout() {
							t.Errorf("after the deadline the connection is still open (%d bytes read, %v)", n, err)
						}
						return
					}
					for _, id := range ids {
						code, reset, wasReset := s.status(id)
						if code != "200" || !wasReset {
							t.Errorf("stream %d: status %q, reset %v (%v); want 200, then reset", id, code, wasReset, reset)
						}
					}
				}
			})
		}
	}
	t.Run("HTTP/1.1 proxied", h1Run("/api/v1/namespaces/shop/configmaps/big", 40<<20))
	t.Run("HTTP/2 proxied", h2Run("/api/v1/namespaces/shop/configmaps/big", 0))
	t.Run("HTTP/2 proxied, connection not read", h2Run("/api/v1/namespaces/shop/configmaps/big", 1<<30))
	t.Run("HTTP/1.1 served", h1Run("/metrics", 0))
	t.Run("HTTP/2 served", h2Run("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", 0))
	t.Run("HTTP/1.1 body held back", func(t *testing.T) {
		run(t, func(n int) func() {
			var conns []*tls.Conn
			for range n {
				raw, err := net.Dial("tcp", strings.TrimPrefix(gw.url, "https://"))
				if err != nil {
					t.Fatal(err)
				}
				c := tls.Client(raw, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
				fmt.Fprintf(c, "POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews HTTP/1.1\r\nHost: 127.0.0.1\r\n"+
					"Authorization: Bearer token-stall\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"kind\":")
				conns = append(conns, c)
			}
			return func() {
				for _, c := range conns {
					_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
					resp, err := http.ReadResponse(bufio.NewReader(c), nil)
					if err != nil {
						t.Errorf("body held back: %v", err)
					} else if body, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusGatewayTimeout || string(body) != kubeTimeoutBody {
						t.Errorf("body held back: %d %s", resp.StatusCode, body)
					}
					c.Close()
				}
			}
		})
	})
}

// pastDeadline is a context whose deadline has passed by the clock while
// its own timer has not yet run: Err is still nil, as for a moment on a
// busy machine.
type pastDeadline struct {
	context.Context
	at time.Time
}

func (c pastDeadline) Deadline() (time.Time, bool) { return c.at, true }

// TestAnswerStartedAfterTheDeadlineBeforeItsTimer: a handler that answers
// once the deadline has passed by the clock, before the deadline's timer
// and the context's have run (a transport whose read deadline is the
// request's returns at that instant), gets the deadline's 504 all the
// same, not an empty 200.
func TestAnswerStartedAfterTheDeadlineBeforeItsTimer(t *testing.T) {
	req := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
	rec := httptest.NewRecorder()
	ctx := pastDeadline{Context: context.Background(), at: time.Now().Add(-time.Millisecond)}
	tw := newTimedWriter(rec, req, ctx, slog.Default())
	tw.timer.Reset(time.Hour) // the timer has not run
	func() {
		defer tw.finish()
		tw.WriteHeader(http.StatusGatewayTimeout)
		tw.Write([]byte("the proxy's own answer"))
	}()
	if rec.Code != http.StatusGatewayTimeout || rec.Body.String() != kubeTimeoutBody {
		t.Errorf("answer started after the deadline: %d %q, want the deadline's 504", rec.Code, rec.Body.String())
	}
}
