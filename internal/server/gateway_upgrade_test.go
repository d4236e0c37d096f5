package server

import (
	"bufio"
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// dispatchedTotal sums apiserver_flowcontrol_dispatched_requests_total
// over every level.
func dispatchedTotal(t testing.TB, s *e2eServer) int {
	t.Helper()
	families, err := s.server.promReg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range families {
		if mf.GetName() == "apiserver_flowcontrol_dispatched_requests_total" && mf.GetType() == dto.MetricType_COUNTER {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return int(sum)
}

// h2cTaker is an upstream that takes every h2c upgrade it is offered (as
// an HTTP/2-capable server may) and then serves what comes through the
// tunnel as HTTP/1.1, counting it; ordinary requests are answered "ok"
// and those to h2cProbePath counted apart; it notes every Upgrade and
// HTTP2-Settings header it gets.
type h2cTaker struct {
	ordinary, tunnelled atomic.Int32
	mu                  sync.Mutex
	upgradeHeaders      []string
}

func (u *h2cTaker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	for _, h := range []string{"Upgrade", "Http2-Settings"} {
		for _, v := range r.Header.Values(h) {
			u.upgradeHeaders = append(u.upgradeHeaders, h+": "+v)
		}
	}
	u.mu.Unlock()
	if !strings.EqualFold(r.Header.Get("Upgrade"), "h2c") {
		if r.URL.Path == h2cProbePath {
			u.ordinary.Add(1) // not the gateway's own discovery requests
		}
		fmt.Fprint(w, "ok")
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprint(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")
	_ = brw.Flush()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	for {
		req, err := http.ReadRequest(brw.Reader)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		u.tunnelled.Add(1)
		fmt.Fprint(brw, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		if brw.Flush() != nil {
			return
		}
	}
}

// h2cProbePath is where the h2c probe goes through the gateway.
const h2cProbePath = "/api/v1/namespaces/default/pods"

// h2cProbe sends, on one connection, a request that offers h2c (as curl
// --http2 does) followed by n pipelined requests, and reads the n+1
// answers: their status codes.
func h2cProbe(t *testing.T, conn net.Conn, path, token string, n int) []int {
	t.Helper()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: apf\r\n%sConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n", path, auth)
	for range n {
		fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: apf\r\n%s\r\n", path, auth)
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	var codes []int
	for i := range n + 1 {
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == http.StatusSwitchingProtocols {
			t.Fatalf("answer %d: 101 Switching Protocols to %q", i, resp.Header.Get("Upgrade"))
		}
	}
	return codes
}

// TestGatewayStripsH2C: through apf serve, a request on an ordinary path
// that offers h2c to an upstream that takes h2c upgrades, with 20 more
// pipelined on the same connection, gets no 101: each of the 21 is an
// ordinary request, dispatched by APF and answered by the upstream, which
// never sees Upgrade or HTTP2-Settings; nothing goes through a tunnel.
func TestGatewayStripsH2C(t *testing.T) {
	const pipelined = 20
	up := &h2cTaker{}
	upstream := httptest.NewServer(up)
	defer upstream.Close()
	gw := startGateway(t, upstream.URL, gatewayTokens(t, "carol"), nil)
	defer gw.stop()

	conn, err := tls.Dial("tcp", strings.TrimPrefix(gw.url, "https://"), gw.client.Transport.(*http.Transport).TLSClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	before := dispatchedTotal(t, gw)
	for i, code := range h2cProbe(t, conn, h2cProbePath, "token-carol", pipelined) {
		if code != http.StatusOK {
			t.Errorf("answer %d: %d, want 200", i, code)
		}
	}
	if n := dispatchedTotal(t, gw) - before; n != pipelined+1 {
		t.Errorf("APF dispatched %d requests, want %d", n, pipelined+1)
	}
	if n, m := up.ordinary.Load(), up.tunnelled.Load(); n != pipelined+1 || m != 0 {
		t.Errorf("the upstream got %d ordinary requests and %d through a tunnel, want %d and 0", n, m, pipelined+1)
	}
	up.mu.Lock()
	if len(up.upgradeHeaders) != 0 {
		t.Errorf("the upstream saw %q", up.upgradeHeaders)
	}
	up.mu.Unlock()
	checkDrained(t, gw)
}

// TestServeRefusesH2C: apf serve over plain HTTP (--insecure-http) speaks
// HTTP/1.1 only: an HTTP/2 client with prior knowledge gets no HTTP/2 (the
// server answers its preface in HTTP/1.1), and an h2c upgrade offered to
// apf's own endpoints is declined, the request and those pipelined after
// it answered in HTTP/1.1.
func TestServeRefusesH2C(t *testing.T) {
	opts := DefaultOptions()
	opts.DataDir = t.TempDir()
	opts.InsecureHTTP = true
	s := startServer(t, opts)
	defer s.stop()
	addr := strings.TrimPrefix(s.url, "http://")

	// An HTTP/2 client with prior knowledge.
	var h2c http.Protocols
	h2c.SetUnencryptedHTTP2(true)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Protocols: &h2c}}
	if resp, err := client.Get(s.url + "/version"); err == nil {
		resp.Body.Close()
		t.Errorf("an HTTP/2 client with prior knowledge got %s over %s, want no HTTP/2", resp.Status, resp.Proto)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	// The client preface and an empty SETTINGS frame.
	io.WriteString(conn, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
	first := make([]byte, 9)
	if _, err := io.ReadFull(conn, first); err != nil || !strings.HasPrefix(string(first), "HTTP/1.1 ") {
		t.Errorf("the server answered the HTTP/2 preface with %q, %v; want HTTP/1.1", first, err)
	}
	conn.Close()

	// An h2c upgrade offered to apf's own endpoints.
	conn, err = net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i, code := range h2cProbe(t, conn, "/version", "", 3) {
		if code != http.StatusOK {
			t.Errorf("answer %d: %d, want 200", i, code)
		}
	}
}

// kubeletStandIn answers what kubectl exec and port-forward ask of
// kube-apiserver for pod p in namespace default (the pod, and its exec and
// portforward subresources) and passes the rest to next (discovery). It
// records the upgrade headers of every exec and port-forward request. An
// exec over a websocket is served as a kubelet serves it (protocol
// v5.channel.k8s.io): "hi" on stdout, then a Success status on the error
// channel, then a close; any other upgrade is answered 400, as by a
// kubelet that speaks only websockets.
type kubeletStandIn struct {
	next http.Handler

	mu       sync.Mutex
	upgrades []string // "exec: Upgrade=...; Sec-Websocket-Protocol=...; X-Stream-Protocol-Version=..."
}

const standInPod = `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"default","uid":"u-p","resourceVersion":"1"},` +
	`"spec":{"containers":[{"name":"c","image":"busybox"}]},"status":{"phase":"Running"}}`

func (k *kubeletStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const pod = "/api/v1/namespaces/default/pods/p"
	switch r.URL.Path {
	case pod:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, standInPod)
		return
	case pod + "/exec", pod + "/portforward":
	default:
		k.next.ServeHTTP(w, r)
		return
	}
	k.mu.Lock()
	k.upgrades = append(k.upgrades, fmt.Sprintf("%s: Upgrade=%s; Sec-Websocket-Protocol=%s; X-Stream-Protocol-Version=%s",
		strings.TrimPrefix(r.URL.Path, pod+"/"), r.Header.Get("Upgrade"), strings.Join(r.Header.Values("Sec-Websocket-Protocol"), ","),
		strings.Join(r.Header.Values("X-Stream-Protocol-Version"), ",")))
	k.mu.Unlock()
	if !strings.HasSuffix(r.URL.Path, "/exec") || !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") ||
		!strings.Contains(r.Header.Get("Sec-Websocket-Protocol"), "v5.channel.k8s.io") {
		http.Error(w, "this kubelet speaks websockets only", http.StatusBadRequest)
		return
	}
	sum := sha1.Sum([]byte(r.Header.Get("Sec-Websocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n",
		base64.StdEncoding.EncodeToString(sum[:]))
	// Binary messages, unmasked as a server sends them: one byte of
	// channel, then the data.
	for _, m := range []string{"\x01hi\n", "\x03" + `{"metadata":{},"status":"Success"}`} {
		brw.Write([]byte{0x82, byte(len(m))})
		brw.WriteString(m)
	}
	brw.Write([]byte{0x88, 0x02, 0x03, 0xe8}) // close, 1000
	if brw.Flush() != nil {
		return
	}
	_, _ = io.Copy(io.Discard, brw) // until the client closes
}

// TestGatewayKubectlStreams: kubectl exec through apf serve reaches the
// pod over a websocket spliced by the gateway (and prints what the pod
// wrote), with the upgrade headers kubectl sends arriving as sent; so do
// those of exec over SPDY (kubectl with websockets turned off) and of
// port-forward, over a websocket and then over SPDY.
func TestGatewayKubectlStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and runs kubectl")
	}
	kube, _ := kubeStandIn(t)
	kubelet := &kubeletStandIn{next: kube}
	upstream := httptest.NewServer(kubelet)
	defer upstream.Close()
	gw := startGateway(t, upstream.URL, "", nil)
	defer gw.stop()
	k := newKubectl(t, gw, adminToken)

	if out := k.must("", "exec", "p", "-c", "c", "--", "echo", "hi"); out != "hi\n" {
		t.Errorf("kubectl exec printed %q, want the pod's %q", out, "hi\n")
	}
	env := func(extra ...string) []string {
		return append(os.Environ(), append([]string{"HOME=" + k.home, "KUBECONFIG=" + k.config}, extra...)...)
	}
	run := func(extra []string, args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, k.bin, append([]string{"--kubeconfig", k.config, "--request-timeout", "20s"}, args...)...)
		cmd.Env = env(extra...)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	spdyOut := run([]string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false"}, "exec", "p", "-c", "c", "--", "echo", "hi")
	pfOut := run(nil, "port-forward", "p", "0:80")

	kubelet.mu.Lock()
	got := slices.Clone(kubelet.upgrades)
	kubelet.mu.Unlock()
	// What kubectl v1.37 sends.
	want := []string{
		"exec: Upgrade=websocket; Sec-Websocket-Protocol=v5.channel.k8s.io; X-Stream-Protocol-Version=",
		"exec: Upgrade=SPDY/3.1; Sec-Websocket-Protocol=; X-Stream-Protocol-Version=v5.channel.k8s.io,v4.channel.k8s.io,v3.channel.k8s.io,v2.channel.k8s.io,channel.k8s.io",
		"portforward: Upgrade=websocket; Sec-Websocket-Protocol=SPDY/3.1+portforward.k8s.io; X-Stream-Protocol-Version=",
		"portforward: Upgrade=SPDY/3.1; Sec-Websocket-Protocol=; X-Stream-Protocol-Version=portforward.k8s.io",
	}
	if !slices.Equal(got, want) {
		t.Errorf("the upstream saw these upgrades:\n%s\nwant:\n%s\n(kubectl exec over SPDY: %s\nkubectl port-forward: %s)",
			strings.Join(got, "\n"), strings.Join(want, "\n"), spdyOut, pfOut)
	}
	checkDrained(t, gw)
}
