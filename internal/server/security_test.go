package server

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apfproject/apf/apfhttp"
	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/internal/testing/testpki"
	"github.com/apfproject/apf/request"
)

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// secClient is an HTTPS client of srv trusting its CA, presenting certs.
func secClient(t *testing.T, srv *e2eServer, certs ...tls.Certificate) *http.Client {
	t.Helper()
	pemData, err := os.ReadFile(srv.caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemData)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, Certificates: certs}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Timeout: 30 * time.Second, Transport: tr}
}

// answer is one response as the security tests see it.
type answer struct {
	code   int
	schema string // the X-Kubernetes-PF-FlowSchema-UID header
	status statusBody
	body   []byte
}

// call sends a request; hdr alternates header names and values.
func call(t *testing.T, c *http.Client, srv *e2eServer, method, path string, body []byte, hdr ...string) answer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	a := answer{code: resp.StatusCode, schema: resp.Header.Get(apfhttp.FlowSchemaUIDHeader), body: data}
	_ = json.Unmarshal(data, &a.status)
	return a
}

// refused checks a 401 or 403 answered with a Status of the same code.
func (a answer) refused(t *testing.T, what string, codes ...int) {
	t.Helper()
	if len(codes) == 0 {
		codes = []int{http.StatusUnauthorized, http.StatusForbidden}
	}
	for _, c := range codes {
		if a.code == c {
			if a.status.Kind != "Status" || a.status.Code != a.code {
				t.Errorf("%s: %d without a matching Status: %s", what, a.code, a.body)
			}
			return
		}
	}
	t.Errorf("%s: status %d, want one of %v: %.300s", what, a.code, codes, a.body)
}

// schemaFor classifies a request against the bootstrap configuration
// (the one a fresh server maintains) and returns the FlowSchema's name.
func schemaFor(t *testing.T, user request.User, method, path string) string {
	t.Helper()
	info, err := request.Parse(method, path, "")
	if err != nil {
		t.Fatal(err)
	}
	m := classify.Compile(bootstrap.FlowSchemas(), bootstrap.PriorityLevels())
	return m.Classify(&request.Attributes{Info: info, User: user}).FlowSchema.Name
}

// TestSecurity runs one `apf serve` with a front-proxy CA, a token file
// and a debug-level log, and checks who the server believes a client is,
// what it lets that client do, and what it writes down.
func TestSecurity(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	proxyCA := testpki.NewCA(t, "front-proxy-ca")
	otherCA := testpki.NewCA(t, "unrelated-ca")
	logs := &lockedBuffer{}
	opts := DefaultOptions()
	opts.DataDir = filepath.Join(t.TempDir(), "data")
	opts.Auth.RequestHeaderClientCAFile = proxyCA.File
	opts.Auth.RequestHeaderAllowedNames = []string{"front-proxy"}
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := startServer(t, opts)
	defer srv.stop()

	plain := secClient(t, srv)
	proxy := secClient(t, srv, proxyCA.Issue(t, "front-proxy", nil))
	wrongCN := secClient(t, srv, proxyCA.Issue(t, "someone-else", nil))

	// UIDs of the schemas the server maintains, read as the admin.
	uid := func(name string) string {
		t.Helper()
		a := call(t, plain, srv, "GET", fsV1Path+"/"+name, nil, "Authorization", "Bearer "+adminToken)
		var o struct {
			Metadata struct{ UID string } `json:"metadata"`
		}
		if a.code != http.StatusOK || json.Unmarshal(a.body, &o) != nil || o.Metadata.UID == "" {
			t.Fatalf("reading FlowSchema %s: %d %s", name, a.code, a.body)
		}
		return o.Metadata.UID
	}
	anonymous := request.User{Name: request.AnonymousUser, Groups: []string{request.AllUnauthenticatedGroup}}
	anonWriteSchema := schemaFor(t, anonymous, "POST", fsV1Path)
	anonWriteUID := uid(anonWriteSchema)
	exemptUID := uid("exempt")
	if anonWriteUID == exemptUID {
		t.Fatalf("anonymous writes classify as exempt")
	}
	t.Logf("anonymous writes land on FlowSchema %s (%s)", anonWriteSchema, anonWriteUID)

	spoof := []string{"X-Remote-User", "admin", "X-Remote-Group", "system:masters", "X-Remote-Extra-Scopes", "all"}
	newFS := func(name string) []byte { return []byte(badFS(name, "")) }

	t.Run("spoofed request headers without the proxy certificate", func(t *testing.T) {
		a := call(t, plain, srv, "POST", fsV1Path, newFS("spoofed"), spoof...)
		a.refused(t, "spoofed write")
		if a.code == http.StatusForbidden && a.schema != anonWriteUID {
			t.Errorf("spoofed write classified as %q, want anonymous's %s (%s)", a.schema, anonWriteSchema, anonWriteUID)
		}
		if a.schema == exemptUID {
			t.Errorf("spoofed write ran exempt")
		}
		if a.code == http.StatusForbidden && !strings.Contains(a.status.Message, request.AnonymousUser) {
			t.Errorf("refusal does not name system:anonymous: %s", a.status.Message)
		}
		// With a proxy certificate whose common name is not allowed.
		b := call(t, wrongCN, srv, "POST", fsV1Path, newFS("spoofed"), spoof...)
		b.refused(t, "spoofed write with a disallowed proxy name")
		if b.schema == exemptUID {
			t.Errorf("disallowed proxy ran exempt")
		}
	})

	t.Run("certificate from an unknown CA is refused in the handshake", func(t *testing.T) {
		c := secClient(t, srv)
		// Go's client only offers a certificate the server's list of CAs
		// names; this one is offered regardless, as an attacker would.
		forged := otherCA.Issue(t, "front-proxy", nil)
		c.Transport.(*http.Transport).TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &forged, nil
		}
		req, _ := http.NewRequest("POST", srv.url+fsV1Path, bytes.NewReader(newFS("forged")))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(spoof); i += 2 {
			req.Header.Set(spoof[i], spoof[i+1])
		}
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("a certificate of an unknown CA was accepted: %d", resp.StatusCode)
		}
	})

	t.Run("request headers honoured from the front proxy", func(t *testing.T) {
		a := call(t, proxy, srv, "POST", fsV1Path, newFS("proxied"), spoof...)
		if a.code != http.StatusCreated {
			t.Fatalf("proxied admin write: %d %s", a.code, a.body)
		}
		if a.schema != exemptUID {
			t.Errorf("proxied system:masters request classified as %q, want exempt (%s)", a.schema, exemptUID)
		}
		// The proxy without identity headers proves nobody.
		b := call(t, proxy, srv, "POST", fsV1Path, newFS("proxied2"))
		b.refused(t, "proxy without identity headers")
		// A proxied ordinary user may read but not write.
		c := call(t, proxy, srv, "POST", fsV1Path, newFS("proxied3"), "X-Remote-User", "mallory", "X-Remote-Group", "devs")
		c.refused(t, "proxied non-admin write", http.StatusForbidden)
		if !strings.Contains(c.status.Message, "mallory") {
			t.Errorf("refusal does not name the proxied user: %s", c.status.Message)
		}
	})

	t.Run("writes and dumps are reserved to admins", func(t *testing.T) {
		for _, who := range []struct {
			name  string
			token string
			codes []int
		}{
			{"anonymous", "", []int{http.StatusForbidden}},
			{"bad token", "not-a-token-0123456789", []int{http.StatusUnauthorized}},
			{"reader", readerToken, []int{http.StatusForbidden}},
		} {
			var hdr []string
			if who.token != "" {
				hdr = []string{"Authorization", "Bearer " + who.token}
			}
			for _, r := range []struct {
				method, path string
				body         []byte
			}{
				{"POST", fsV1Path, newFS("denied")},
				{"PUT", fsV1Path + "/global-default", newFS("global-default")},
				{"DELETE", fsV1Path + "/global-default", nil},
				{"PATCH", plV1Path + "/global-default", []byte(`{}`)},
				{"DELETE", fsV1Path, nil},
				{"GET", "/debug/api_priority_and_fairness/dump_priority_levels", nil},
				{"GET", "/debug/api_priority_and_fairness/dump_queues", nil},
				{"GET", "/debug/api_priority_and_fairness/dump_requests", nil},
				{"GET", "/metrics", nil},
			} {
				h := hdr
				if r.method == "PATCH" {
					h = append(append([]string(nil), hdr...), "Content-Type", "application/merge-patch+json")
				}
				a := call(t, plain, srv, r.method, r.path, r.body, h...)
				a.refused(t, who.name+" "+r.method+" "+r.path, who.codes...)
			}
		}
		// The admin may: the refusals above are the authorizer's.
		a := call(t, plain, srv, "GET", "/debug/api_priority_and_fairness/dump_priority_levels", nil, "Authorization", "Bearer "+adminToken)
		if a.code != http.StatusOK {
			t.Errorf("admin dump: %d %s", a.code, a.body)
		}
	})

	t.Run("no header lets a client choose its priority", func(t *testing.T) {
		auth := []string{"Authorization", "Bearer " + readerToken}
		paths := []struct{ method, path string }{
			{"GET", fsV1Path},
			{"POST", fsV1Path},
			{"GET", "/apis"},
		}
		forged := [][]string{
			{apfhttp.FlowSchemaUIDHeader, exemptUID, apfhttp.PriorityLevelUIDHeader, "exempt"},
			{"X-Remote-User", "admin", "X-Remote-Group", "system:masters"},
			{"X-Forwarded-For", "127.0.0.1", "X-Real-Ip", "127.0.0.1"},
		}
		// Impersonation is a request to be someone else, which a reader
		// may not make: kube-apiserver's 400 or 403, before APF (no
		// FlowSchema at all, so certainly not exempt's), whatever the
		// request.
		impersonations := []struct {
			hdr  []string
			code int
			msg  func(method, path string) string
		}{
			{[]string{"Impersonate-User", "admin", "Impersonate-Group", "system:masters"}, http.StatusForbidden, func(method, path string) string {
				if path == "/apis" {
					return `forbidden: User "bob" cannot impersonate-on:user-info:get path "/apis"`
				}
				return fmt.Sprintf(`flowschemas.flowcontrol.apiserver.k8s.io is forbidden: User "bob" cannot impersonate-on:user-info:%s resource "flowschemas" in API group "flowcontrol.apiserver.k8s.io" at the cluster scope`,
					map[string]string{"GET": "list", "POST": "create"}[method])
			}},
			{[]string{"Impersonate-Uid", "uid-admin", "Impersonate-Extra-Scopes", "x"}, http.StatusBadRequest, func(string, string) string {
				return `requested &user.DefaultInfo{Name:"", UID:"uid-admin", Groups:[]string(nil), Extra:map[string][]string{"scopes":[]string{"x"}}} without impersonating a user name`
			}},
		}
		for _, p := range paths {
			var body []byte
			if p.method == "POST" {
				body = newFS("chosen")
			}
			base := call(t, plain, srv, p.method, p.path, body, auth...)
			if base.schema == "" || base.schema == exemptUID {
				t.Fatalf("%s %s as reader: FlowSchema %q", p.method, p.path, base.schema)
			}
			for _, f := range forged {
				a := call(t, plain, srv, p.method, p.path, body, append(append([]string(nil), auth...), f...)...)
				if a.schema != base.schema || a.code != base.code {
					t.Errorf("%s %s with %v: FlowSchema %q, status %d; without: %q, %d", p.method, p.path, f, a.schema, a.code, base.schema, base.code)
				}
			}
			for _, i := range impersonations {
				a := call(t, plain, srv, p.method, p.path, body, append(append([]string(nil), auth...), i.hdr...)...)
				if a.schema != "" || a.code != i.code || a.status.Code != i.code || a.status.Message != i.msg(p.method, p.path) {
					t.Errorf("%s %s with %v: FlowSchema %q, status %d %q; want no FlowSchema, %d %q", p.method, p.path, i.hdr, a.schema, a.code, a.status.Message, i.code, i.msg(p.method, p.path))
				}
			}
		}
	})

	t.Run("TLS below 1.2 is refused", func(t *testing.T) {
		addr := strings.TrimPrefix(srv.url, "https://")
		for _, v := range []uint16{tls.VersionTLS10, tls.VersionTLS11} {
			d := &net.Dialer{Timeout: 10 * time.Second}
			conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true, MinVersion: v, MaxVersion: v})
			if err == nil {
				conn.Close()
				t.Errorf("TLS version %x accepted", v)
			}
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12})
		if err != nil {
			t.Errorf("TLS 1.2 refused: %v", err)
		} else {
			conn.Close()
		}
	})

	t.Run("tokens never reach the log", func(t *testing.T) {
		const secret = "sekrit-token-5f1c9e"
		for _, tok := range []string{secret, adminToken, readerToken, secret + ",admin"} {
			for _, p := range []string{fsV1Path, "/debug/api_priority_and_fairness/dump_queues", "/nowhere"} {
				call(t, plain, srv, "GET", p, nil, "Authorization", "Bearer "+tok)
				call(t, plain, srv, "POST", p, newFS("logged"), "Authorization", "Bearer "+tok)
			}
			call(t, plain, srv, "GET", fsV1Path, nil, "Authorization", "Basic "+tok)
		}
		out := logs.String()
		for _, tok := range []string{secret, adminToken, readerToken} {
			if strings.Contains(out, tok) {
				i := strings.Index(out, tok)
				t.Errorf("token %q appears in the log: ...%s...", tok, out[max(0, i-200):min(len(out), i+100)])
			}
		}
		t.Logf("debug log: %d bytes, no token in it", len(out))
	})
}
