package server

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestGatewayUnreadableBody: a proxied request whose body cannot be read
// (a malformed chunked encoding, a body shorter than its Content-Length)
// is the caller's fault: 400 with a BadRequest Status saying the body could
// not be read, not logged as an upstream failure, its seats given back.
// An upstream that really fails while a well-formed body is sent still
// gets 502, and a well-formed chunked body still goes through.
func TestGatewayUnreadableBody(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	var mu sync.Mutex
	bodies := map[string]string{}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// As the API server does for a write: the whole body first.
		b, err := io.ReadAll(r.Body)
		mu.Lock()
		bodies[r.URL.Path] = string(b)
		mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/broken") {
			// An upstream that fails: the connection drops with no
			// answer.
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"kind":"ConfigMap"}`)
	}))
	defer upstream.Close()
	logs := &lockedBuffer{}
	gw := startGateway(t, upstream.URL, gatewayTokens(t, "carol"), func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	defer gw.stop()

	// raw writes one request as it is on a new TLS connection, optionally
	// half-closes it, and reads the answer.
	raw := func(t *testing.T, req string, halfClose bool) (*http.Response, statusBody) {
		t.Helper()
		conn, err := tls.Dial("tcp", strings.TrimPrefix(gw.url, "https://"), gw.client.Transport.(*http.Transport).TLSClientConfig)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatal(err)
		}
		if halfClose {
			if err := conn.CloseWrite(); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var st statusBody
		_ = json.Unmarshal(body, &st)
		return resp, st
	}
	head := func(path, framing string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: apf\r\nAuthorization: Bearer token-carol\r\nContent-Type: application/json\r\n" + framing + "\r\n"
	}
	const cms = "/api/v1/namespaces/default/configmaps"

	for _, tc := range []struct {
		name      string
		req       string
		halfClose bool
	}{
		{"malformed chunk size", head(cms+"/bad-size", "Transfer-Encoding: chunked\r\n") + "zz\r\n{}\r\n0\r\n\r\n", false},
		{"chunk longer than announced", head(cms+"/bad-chunk", "Transfer-Encoding: chunked\r\n") + "2\r\n{\"kind\":1}\r\n0\r\n\r\n", false},
		{"body shorter than Content-Length", head(cms+"/short", "Content-Length: 100\r\n") + `{"kind":`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, st := raw(t, tc.req, tc.halfClose)
			if resp.StatusCode != http.StatusBadRequest || st.Kind != "Status" || st.Status != "Failure" || st.Code != 400 ||
				st.Reason != "BadRequest" || !strings.HasPrefix(st.Message, "reading the request body: ") {
				t.Errorf("answer %d %+v, want 400 BadRequest saying the request body could not be read", resp.StatusCode, st)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
	if l := logs.String(); strings.Contains(l, "upstream request failed") {
		t.Errorf("an unreadable body was logged as an upstream failure:\n%s", l)
	}

	// A well-formed chunked body goes through whole.
	resp, _ := raw(t, head(cms+"/good", "Transfer-Encoding: chunked\r\n")+"2\r\n{}\r\n0\r\n\r\n", false)
	mu.Lock()
	got := bodies[cms+"/good"]
	mu.Unlock()
	if resp.StatusCode != http.StatusCreated || got != "{}" {
		t.Errorf("well-formed chunked body: %d, upstream read %q", resp.StatusCode, got)
	}
	// An upstream that fails after reading a well-formed body is still
	// the upstream's failure.
	resp, st := raw(t, head(cms+"/broken", "Transfer-Encoding: chunked\r\n")+"2\r\n{}\r\n0\r\n\r\n", false)
	if resp.StatusCode != http.StatusBadGateway || st.Reason != "BadGateway" {
		t.Errorf("failing upstream: %d %+v, want 502", resp.StatusCode, st)
	}
	if l := logs.String(); !strings.Contains(l, "upstream request failed") {
		t.Errorf("the upstream's failure was not logged:\n%s", l)
	}
	if err := waitFor(5*time.Second, func() bool { return executingSeats(t, gw) == 0 }); err != nil {
		t.Errorf("%v seats still executing", executingSeats(t, gw))
	}
}
