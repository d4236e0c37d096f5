package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/server/evloop"
	"github.com/apfproject/apf/internal/testing/testpki"
)

// loopUpstream answers by path, each answer saying what the upstream
// received (method, target, header, body), so that comparing the answers
// compares the requests sent on too.
func loopUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	echo := func(r *http.Request) string {
		body, _ := io.ReadAll(r.Body)
		var lines []string
		for k, vs := range r.Header {
			lines = append(lines, k+": "+strings.Join(vs, " | "))
		}
		sort.Strings(lines)
		return fmt.Sprintf("%s %s %s\n%s\n\n%s", r.Method, r.RequestURI, r.Host, strings.Join(lines, "\n"), body)
	}
	u := httptest.NewServer(kubeShaped(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case strings.HasSuffix(p, "/chunked"):
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, echo(r))
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, strings.Repeat("more ", 2000))
		case strings.HasSuffix(p, "/early"):
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			_, _ = io.WriteString(w, echo(r))
		case strings.HasSuffix(p, "/trailers"):
			w.Header().Set("Trailer", "X-Checksum")
			_, _ = io.WriteString(w, echo(r))
			w.(http.Flusher).Flush()
			w.Header().Set("X-Checksum", "abc")
			w.Header().Set(http.TrailerPrefix+"X-Late", "late")
		case strings.HasSuffix(p, "/events"):
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 3 {
				fmt.Fprintf(w, "data: %d\n\n", i)
				w.(http.Flusher).Flush()
			}
		case strings.HasSuffix(p, "/nocontent"):
			w.Header().Set("X-Seen", r.Method)
			w.WriteHeader(http.StatusNoContent)
		case strings.HasSuffix(p, "/notmodified"):
			w.Header().Set("Etag", `"1"`)
			w.WriteHeader(http.StatusNotModified)
		case strings.HasSuffix(p, "/hops"):
			w.Header().Set("Connection", "X-Hop")
			w.Header().Set("X-Hop", "1")
			w.Header().Set("Keep-Alive", "timeout=5")
			w.Header().Set("X-Kubernetes-PF-FlowSchema-UID", "upstream's own")
			w.Header().Set("X-Kubernetes-PF-PriorityLevel-UID", "upstream's own")
			w.Header().Set("Cache-Control", "public, max-age=60")
			_, _ = io.WriteString(w, echo(r))
		case strings.HasSuffix(p, "/slow"):
			time.Sleep(1500 * time.Millisecond)
			_, _ = io.WriteString(w, echo(r))
		case strings.HasSuffix(p, "/vanish"):
			c, _, _ := w.(http.Hijacker).Hijack()
			_ = c.Close()
		case strings.HasSuffix(p, "/toclose"):
			c, bw, _ := w.(http.Hijacker).Hijack()
			_, _ = bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + echo(r))
			_ = bw.Flush()
			_ = c.Close()
		case strings.HasSuffix(p, "/garbage"):
			c, bw, _ := w.(http.Hijacker).Hijack()
			_, _ = bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd")
			_ = bw.Flush()
			_ = c.Close()
		case strings.HasSuffix(p, "/fail"):
			http.Error(w, echo(r), http.StatusInternalServerError)
		case r.Method == http.MethodPost:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, echo(r))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Add("X-Multi", "a")
			w.Header().Add("X-Multi", "b")
			_, _ = io.WriteString(w, echo(r))
		}
	}))
	t.Cleanup(u.Close)
	return u
}

// exchange sends raw on c and reads one answer (and the informational
// ones before it): the heads as written but the Date, and the body
// decoded, followed by the trailer.
func exchange(t *testing.T, c net.Conn, br *bufio.Reader, raw, method string) (head, body string) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for {
		var hb strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the answer to %q: %v (so far %q)", raw, err, all.String()+hb.String())
			}
			hb.WriteString(line)
			if line == "\r\n" {
				break
			}
		}
		all.WriteString(hb.String())
		if strings.HasPrefix(hb.String(), "HTTP/1.1 1") && !strings.HasPrefix(hb.String(), "HTTP/1.1 101") {
			continue
		}
		// The body from the connection, framed as the head says.
		res, err := http.ReadResponse(bufio.NewReaderSize(io.MultiReader(strings.NewReader(hb.String()), br), 4096), &http.Request{Method: method})
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatalf("reading the body of the answer to %q: %v", raw, err)
		}
		return dateLine.ReplaceAllString(all.String(), "Date: <date>\r\n"), fmt.Sprintf("%s\ntrailer: %v", b, res.Trailer)
	}
}

var dateLine = regexp.MustCompile(`Date: [^\r]*\r\n`)

// TestLoopMatchesChain sends each kind of request on a connection the
// event loops serve and on one they have handed over to the handler chain
// (its first request is one of apf's own paths), and compares the answers
// byte for byte but the Date and the chunking; the upstream's answers say
// what it received. It checks that the loops served the first kind
// themselves, and that every seat is back at the end. It does so over
// plain HTTP and over TLS 1.3, where the loops seal and open the records
// themselves and hand a connection over to h1 mid-stream; over TLS the
// client shows a certificate of system:masters, which the chain
// classifies as exempt and a request without its identity would not be.
func TestLoopMatchesChain(t *testing.T) {
	if !evloop.Supported {
		t.Skip("no event loops on this system")
	}
	t.Run("http", func(t *testing.T) { testLoopMatchesChain(t, false) })
	t.Run("tls", func(t *testing.T) { testLoopMatchesChain(t, true) })
}

func testLoopMatchesChain(t *testing.T, overTLS bool) {
	up := loopUpstream(t)
	ca := testpki.NewCA(t, "callers")
	cert := ca.Issue(t, "alice", []string{"system:masters"})
	s := startGateway(t, up.URL, "", func(o *Options) {
		o.InsecureHTTP = !overTLS
		o.RequestTimeout = 5 * time.Second
		if overTLS {
			o.Auth.ClientCAFile = ca.File
		}
	})
	loops := s.server.loops.Load()
	if loops == nil {
		t.Fatal("the event loops do not serve this configuration")
	}
	addr := strings.TrimPrefix(strings.TrimPrefix(s.url, "http://"), "https://")
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if overTLS {
			tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13, NextProtos: []string{"http/1.1"},
				Certificates: []tls.Certificate{cert}})
			if err := tc.Handshake(); err != nil {
				t.Fatal(err)
			}
			c = tc
		}
		t.Cleanup(func() { _ = c.Close() })
		return c, bufio.NewReader(c)
	}
	auth := "Authorization: Bearer " + readerToken + "\r\n"
	get := func(target, more string) string {
		return "GET " + target + " HTTP/1.1\r\nHost: apf.test\r\nUser-Agent: loop-test\r\n" + more + "\r\n"
	}
	post := "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: apf.test\r\n" + auth +
		"Content-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"kind\":\"CM\"}"
	cases := []struct {
		name, raw, method string
		loop              bool // served by the loops, not handed over
	}{
		{"get", get("/api/v1/namespaces/default/pods/p1", auth), "GET", true},
		{"get with a query", get("/api/v1/namespaces/default/pods/p1?pretty=true&resourceVersion=0", auth), "GET", true},
		{"chunked answer", get("/api/v1/namespaces/default/pods/p1/chunked", auth), "GET", true},
		{"head", strings.Replace(get("/api/v1/namespaces/default/pods/p1", auth), "GET", "HEAD", 1), "HEAD", true},
		{"post", post, "POST", true},
		{"103 before the answer", get("/api/v1/namespaces/default/pods/p1/early", auth), "GET", true},
		{"trailers", get("/api/v1/namespaces/default/pods/p1/trailers", auth+"Te: trailers\r\n"), "GET", true},
		{"event stream", get("/api/v1/namespaces/default/pods/p1/events", auth), "GET", true},
		{"204", get("/api/v1/namespaces/default/pods/p1/nocontent", auth), "GET", true},
		{"304", get("/api/v1/namespaces/default/pods/p1/notmodified", auth), "GET", true},
		{"hop-by-hop and PF headers from the upstream", get("/api/v1/namespaces/default/pods/p1/hops", auth), "GET", true},
		{"forwarding headers from the client", get("/api/v1/namespaces/default/pods/p1", auth+"X-Forwarded-For: 10.9.9.9\r\nX-Forwarded-Host: evil\r\nForwarded: for=1.2.3.4\r\n"), "GET", true},
		{"upstream 500", get("/api/v1/namespaces/default/pods/p1/fail", auth), "GET", true},
		{"answer until close", get("/api/v1/namespaces/default/pods/p1/toclose", auth), "GET", true},
		{"no credentials", get("/api/v1/namespaces/default/pods/p1", ""), "GET", true},
		{"a bad token", get("/api/v1/namespaces/default/pods/p1", "Authorization: Bearer nobody\r\n"), "GET", true},
		{"deadline", get("/api/v1/namespaces/default/pods/p1/slow?timeout=1s", auth), "GET", true},
		{"upstream gone", get("/api/v1/namespaces/default/pods/p1/vanish", auth), "GET", true},
		{"malformed answer", get("/api/v1/namespaces/default/pods/p1/garbage", auth), "GET", true},
		{"non-resource path", get("/some/service/path", auth), "GET", true},
		{"list (handed over)", get("/api/v1/namespaces/default/pods", auth), "GET", false},
		{"own path (handed over)", get("/readyz", auth), "GET", false},
		{"impersonation (handed over)", get("/api/v1/namespaces/default/pods/p1", auth+"Impersonate-User: someone\r\n"), "GET", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lc, lbr := dial()
			gated, handed := loops.Counts()
			lhead, lbody := exchange(t, lc, lbr, tc.raw, tc.method)
			g2, h2 := loops.Counts()
			if tc.loop && (g2 != gated+1 || h2 != handed) {
				t.Errorf("the loops gated %d and handed over %d: not served by them", g2-gated, h2-handed)
			}
			if !tc.loop && h2 != handed+1 {
				t.Errorf("handed over %d connections, want 1", h2-handed)
			}

			cc, cbr := dial()
			exchange(t, cc, cbr, get("/livez", ""), "GET") // hands the connection over
			chead, cbody := exchange(t, cc, cbr, tc.raw, tc.method)

			// The chunking of a body is the writer's: compare the
			// heads, the bodies decoded.
			if lhead != chead {
				t.Errorf("heads differ:\nloop:  %q\nchain: %q", lhead, chead)
			}
			if lbody != cbody {
				t.Errorf("bodies differ:\nloop:  %q\nchain: %q", lbody, cbody)
			}
		})
	}
	if err := waitFor(10*time.Second, func() bool { return executingSeats(t, s) == 0 }); err != nil {
		t.Fatalf("seats not given back: %v", err)
	}
}

// TestLoopQueued drives the loops' queued requests down each of their
// ends on a level of one seat: dispatched when the seat comes free, timed
// out in the queue (a 429), and abandoned by a client that leaves while
// queued. Each round holds the seat with a request the
// upstream keeps until released. At the end no seat is held, nothing
// waits, and the loops served every request themselves; the exchanges are
// used again from round to round, so a request that outlived its exchange
// would show as a wrong answer here.
func TestLoopQueued(t *testing.T) {
	if !evloop.Supported {
		t.Skip("no event loops on this system")
	}
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/hold") {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		fmt.Fprintf(w, "answer to %s", r.URL.Path)
	}))
	defer up.Close()
	s := startGateway(t, up.URL, gatewayTokens(t, "carol"), func(o *Options) {
		o.InsecureHTTP = true
		o.RequestTimeout = 10 * time.Second
		o.ConcurrencyLimit = 50 // the level below gets one seat
	})
	loops := s.server.loops.Load()
	if loops == nil {
		t.Fatal("the event loops do not serve this configuration")
	}
	var schemaUID string // the flow schema's, created last
	for _, obj := range []struct{ res, body string }{
		{"prioritylevelconfigurations", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"one"},
		  "spec":{"type":"Limited","limited":{"nominalConcurrencyShares":1,"lendablePercent":0,"borrowingLimitPercent":0,
		   "limitResponse":{"type":"Queue","queuing":{"queues":1,"handSize":1,"queueLengthLimit":50}}}}}`},
		{"flowschemas", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"one"},
		  "spec":{"priorityLevelConfiguration":{"name":"one"},"matchingPrecedence":500,
		   "rules":[{"subjects":[{"kind":"Group","group":{"name":"clients"}}],
		    "resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"clusterScope":true,"namespaces":["*"]}],
		    "nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}]}]}}`},
	} {
		code, _, body := s.do(http.MethodPost, "/apis/flowcontrol.apiserver.k8s.io/v1/"+obj.res, adminToken, []byte(obj.body))
		if code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", obj.res, code, body)
		}
		var created struct{ Metadata struct{ UID string } }
		if err := json.Unmarshal(body, &created); err != nil {
			t.Fatal(err)
		}
		schemaUID = created.Metadata.UID
	}
	addr := strings.TrimPrefix(s.url, "http://")
	send := func(path string) (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: apf.test\r\nAuthorization: Bearer token-carol\r\n\r\n", path)
		return c, bufio.NewReader(c)
	}
	answer := func(br *bufio.Reader) (int, string) {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode, string(b)
	}
	// of sums a gauge over level one's series.
	of := func(name string) float64 {
		sum := 0.0
		for k, v := range gauges(t, s, name) {
			if strings.Contains(k, `value:"one"`) {
				sum += v
			}
		}
		return sum
	}
	waiting := func(n float64) {
		t.Helper()
		if err := waitFor(10*time.Second, func() bool { return of("apiserver_flowcontrol_current_inqueue_requests") == n }); err != nil {
			t.Fatalf("never %v requests waiting: %v", n, err)
		}
	}
	// The schema must be in force before the rounds begin.
	if err := waitFor(10*time.Second, func() bool {
		_, br := send("/api/v1/namespaces/a/pods/ready")
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.Header.Get("X-Kubernetes-PF-FlowSchema-UID") == schemaUID
	}); err != nil {
		t.Fatalf("flow schema one never took the requests: %v", err)
	}
	gated, handed := loops.Counts()
	const rounds = 5
	for i := range rounds {
		_, holdBR := send(fmt.Sprintf("/api/v1/namespaces/a/pods/p%d/hold", i))
		if err := waitFor(10*time.Second, func() bool { return of("apiserver_flowcontrol_current_executing_seats") == 1 }); err != nil {
			t.Fatalf("round %d: the holding request never ran: %v", i, err)
		}
		// Its wait limit, a quarter of its timeout, passes in the queue.
		_, timedBR := send(fmt.Sprintf("/api/v1/namespaces/a/pods/p%d?timeout=1s", i))
		if code, _ := answer(timedBR); code != http.StatusTooManyRequests {
			t.Errorf("round %d: a request timed out in the queue got %d, want 429", i, code)
		}
		// A client that leaves ends its request's wait.
		gone, _ := send(fmt.Sprintf("/api/v1/namespaces/a/pods/p%d/gone", i))
		waiting(1)
		_ = gone.Close()
		waiting(0)
		_, nextBR := send(fmt.Sprintf("/api/v1/namespaces/a/pods/p%d/next", i))
		waiting(1)
		release <- struct{}{}
		if code, b := answer(holdBR); code != http.StatusOK || b != fmt.Sprintf("answer to /api/v1/namespaces/a/pods/p%d/hold", i) {
			t.Errorf("round %d: the holding request got %d %q", i, code, b)
		}
		if code, b := answer(nextBR); code != http.StatusOK || b != fmt.Sprintf("answer to /api/v1/namespaces/a/pods/p%d/next", i) {
			t.Errorf("round %d: the queued request got %d %q", i, code, b)
		}
	}
	waiting(0)
	if err := waitFor(10*time.Second, func() bool { return executingSeats(t, s) == 0 }); err != nil {
		t.Fatalf("seats not given back: %v", err)
	}
	if g, h := loops.Counts(); g-gated != 4*rounds || h != handed {
		t.Errorf("the loops gated %d and handed over %d, want %d and 0", g-gated, h-handed, 4*rounds)
	}
}

// TestLoopTLSKeyUpdate has OpenSSL's s_client, on a TLS 1.3 connection the
// loops hold, ask for KeyUpdates between its requests, both kinds: the
// loops take the new keys and, asked to, answer with their own before the
// next answer, which s_client could not read otherwise. Every request is
// the loops' own, none handed over.
func TestLoopTLSKeyUpdate(t *testing.T) {
	bin, err := exec.LookPath("openssl")
	if !evloop.Supported || err != nil || testing.Short() {
		t.Skip("no event loops on this system, no openssl, or -short")
	}
	up := loopUpstream(t)
	s := startGateway(t, up.URL, "", nil)
	loops := s.server.loops.Load()
	if loops == nil {
		t.Fatal("the event loops do not serve this configuration")
	}
	gated, handed := loops.Counts()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "s_client", "-connect", strings.TrimPrefix(s.url, "https://"),
		"-tls1_3", "-alpn", "http/1.1", "-crlf", "-no_ign_eof")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, errs lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	defer cancel()
	waitOut := func(what string, n int) {
		t.Helper()
		if err := waitFor(20*time.Second, func() bool { return strings.Count(out.String(), what) >= n }); err != nil {
			t.Fatalf("s_client did not print %q %d times: %v\nstdout: %s\nstderr: %s", what, n, err, out.String(), errs.String())
		}
	}
	waitErr := func(what string, n int) {
		t.Helper()
		if err := waitFor(20*time.Second, func() bool { return strings.Count(errs.String(), what) >= n }); err != nil {
			t.Fatalf("s_client did not print %q %d times: %v\nstderr: %s", what, n, err, errs.String())
		}
	}
	get := "GET /api/v1/namespaces/default/pods/p1 HTTP/1.1\nHost: apf.test\nAuthorization: Bearer " + readerToken + "\n\n"
	_, _ = io.WriteString(stdin, get)
	waitOut("HTTP/1.1 200 OK", 1)
	for i, k := range []string{"K", "k", "K"} {
		_, _ = io.WriteString(stdin, k+"\n")
		waitErr("KEYUPDATE", i+1)
		_, _ = io.WriteString(stdin, get)
		waitOut("HTTP/1.1 200 OK", i+2)
	}
	if g, h := loops.Counts(); g-gated != 4 || h != handed {
		t.Errorf("the loops gated %d requests and handed over %d connections, want 4 and 0", g-gated, h-handed)
	}
}
