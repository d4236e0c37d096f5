package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/apfproject/apf/internal/auth/authz"
	"github.com/apfproject/apf/internal/testing/testpki"
	authorizationv1 "k8s.io/api/authorization/v1"
)

// What the upstream learns about a caller, as the identity tests see it.
type upstreamView struct {
	// cert is the common name of the TLS client certificate the upstream
	// saw ("" for none).
	cert string
	// auth is the Authorization header that arrived.
	auth string
	// identity holds every X-Remote-* and Impersonate-* header that
	// arrived, names lower-cased.
	identity map[string][]string
}

// identityUpstream is an HTTPS upstream that asks for a client
// certificate (verified against roots when given) and records, per path,
// what it saw. It answers self access reviews as a kube-apiserver would
// for the callers whose bearer tokens are in allowed: it allows them
// everything, and everyone else nothing.
type identityUpstream struct {
	srv     *httptest.Server
	caFile  string
	allowed map[string]bool // "Bearer <token>" → allowed everything
	mu      sync.Mutex
	seen    map[string]upstreamView
	reviews []selfReview
}

// selfReview is a self access review the upstream got: the Authorization
// it came with, and what it asked ("VERB GROUP/RESOURCE NAME", or "VERB
// PATH").
type selfReview struct{ auth, asked string }

func newIdentityUpstream(t *testing.T, roots *x509.CertPool) *identityUpstream {
	t.Helper()
	u := &identityUpstream{seen: map[string]upstreamView{}, allowed: map[string]bool{}}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := upstreamView{auth: r.Header.Get("Authorization"), identity: map[string][]string{}}
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			v.cert = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		for k, vs := range r.Header {
			if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-remote-") || strings.HasPrefix(lk, "impersonate-") {
				v.identity[lk] = append(v.identity[lk], vs...)
			}
		}
		if r.Method == http.MethodPost && r.URL.Path == authz.SelfSubjectAccessReviewPath {
			u.review(w, r, v)
			return
		}
		u.mu.Lock()
		u.seen[r.URL.Path] = v
		u.mu.Unlock()
		if r.URL.Path == "/version" {
			// Enough for the gateway to take it for a Kubernetes API
			// server, whose /version is proxied.
			fmt.Fprint(w, `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`)
			return
		}
		fmt.Fprint(w, `{"kind":"Pod"}`)
	}))
	u.srv.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: roots}
	if roots == nil {
		u.srv.TLS.ClientAuth = tls.RequestClientCert
	}
	u.srv.StartTLS()
	t.Cleanup(u.srv.Close)
	u.caFile = filepath.Join(t.TempDir(), "upstream-ca.crt")
	if err := os.WriteFile(u.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: u.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return u
}

// review answers a self access review.
func (u *identityUpstream) review(w http.ResponseWriter, r *http.Request, v upstreamView) {
	var ssar authorizationv1.SelfSubjectAccessReview
	if err := json.NewDecoder(r.Body).Decode(&ssar); err != nil || len(v.identity) != 0 {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	asked := ""
	if ra := ssar.Spec.ResourceAttributes; ra != nil {
		asked = fmt.Sprintf("%s %s/%s %s", ra.Verb, ra.Group, ra.Resource, ra.Name)
	} else if nra := ssar.Spec.NonResourceAttributes; nra != nil {
		asked = nra.Verb + " " + nra.Path
	}
	u.mu.Lock()
	u.reviews = append(u.reviews, selfReview{auth: v.auth, asked: asked})
	u.mu.Unlock()
	ssar.APIVersion, ssar.Kind = "authorization.k8s.io/v1", "SelfSubjectAccessReview"
	ssar.Status.Allowed = u.allowed[v.auth]
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(&ssar)
}

// selfReviews returns the self access reviews the upstream got.
func (u *identityUpstream) selfReviews() []selfReview {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]selfReview(nil), u.reviews...)
}

// view returns what the upstream saw for path, and whether the request
// arrived at all.
func (u *identityUpstream) view(path string) (upstreamView, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	v, ok := u.seen[path]
	return v, ok
}

// spoofedIdentity is what every caller of the identity tests sends besides
// its credentials: a front proxy's identity headers naming someone
// mightier, in mixed case (sent as written, not canonicalized). (Asking to
// impersonate someone mightier is TestGatewayImpersonation's.)
var spoofedIdentity = map[string][]string{
	"X-Remote-User":         {"admin"},
	"x-remote-group":        {"system:masters"},
	"X-REMOTE-UID":          {"0"},
	"X-Remote-Extra-Scopes": {"all"},
}

// identityCaller is one kind of caller of the gateway.
type identityCaller struct {
	name   string
	client func(t *testing.T, gw *e2eServer) *http.Client
	token  string
	// headers, when set, are sent instead of spoofedIdentity.
	headers map[string][]string
}

// identityCallers are a caller authenticated by client certificate (dave,
// in dev-team), one by bearer token (carol, uid-carol, in clients), an
// anonymous one, and one named by a front proxy in front of apf (erin, in
// ops, with extra attributes; the proxy's certificate is signed by edgeCA).
func identityCallers(callerCA, edgeCA *testpki.CA) []identityCaller {
	return []identityCaller{
		{name: "cert", client: func(t *testing.T, gw *e2eServer) *http.Client {
			return secClient(t, gw, callerCA.Issue(t, "dave", []string{"dev-team"}))
		}},
		{name: "token", token: "token-carol", client: func(t *testing.T, gw *e2eServer) *http.Client { return secClient(t, gw) }},
		{name: "anonymous", client: func(t *testing.T, gw *e2eServer) *http.Client { return secClient(t, gw) }},
		{name: "proxied", client: func(t *testing.T, gw *e2eServer) *http.Client {
			return secClient(t, gw, edgeCA.Issue(t, "edge-proxy", nil))
		}, headers: map[string][]string{
			"X-Remote-User":                     {"erin"},
			"X-Remote-Group":                    {"ops"},
			"X-Remote-Extra-Scopes":             {"openid", "profile"},
			"X-Remote-Extra-Example.com%2fteam": {"blue"},
		}},
	}
}

// identityMode is one --upstream-identity setup and what the upstream must
// learn about each caller.
type identityMode struct {
	name string
	// tune sets the mode's options; apfCA signs apf's own certificates.
	tune func(t *testing.T, o *Options, apfCA *testpki.CA)
	// want is the upstream's view of each caller (by name); a caller
	// missing here must be refused by apf with refusedWith and never
	// reach the upstream.
	want        map[string]upstreamView
	refusedWith int
}

// TestGatewayIdentity runs the gateway in each identity mode in front of
// an HTTPS upstream that records the TLS client certificate it saw and the
// identity headers that arrived, for a caller authenticated by client
// certificate, one by bearer token and an anonymous one, each also sending
// made-up X-Remote-* headers, and one named by a front proxy in front of
// apf.
func TestGatewayIdentity(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	callerCA := testpki.NewCA(t, "caller-ca")
	edgeCA := testpki.NewCA(t, "edge-proxy-ca")
	none := map[string][]string{}
	modes := []identityMode{
		{
			// apf's credentials are refused in this mode (see
			// TestGatewayRefusesLendingItsIdentity): the caller's own
			// bearer token goes upstream, and other callers arrive with
			// no credentials at all.
			name: "passthrough",
			tune: func(t *testing.T, o *Options, _ *testpki.CA) { o.UpstreamIdentity = "passthrough" },
			want: map[string]upstreamView{
				"cert":      {identity: none},
				"token":     {auth: "Bearer token-carol", identity: none},
				"anonymous": {identity: none},
				"proxied":   {identity: none},
			},
		},
		{
			name: "impersonate",
			tune: func(t *testing.T, o *Options, apfCA *testpki.CA) {
				o.UpstreamIdentity = "impersonate"
				o.UpstreamCertFile, o.UpstreamKeyFile = testpki.WriteFiles(t, apfCA.Issue(t, "apf-impersonator", nil))
			},
			want: map[string]upstreamView{
				"cert": {cert: "apf-impersonator", identity: map[string][]string{
					"impersonate-user": {"dave"}, "impersonate-group": {"dev-team"},
				}},
				"token": {cert: "apf-impersonator", identity: map[string][]string{
					"impersonate-user": {"carol"}, "impersonate-uid": {"uid-carol"}, "impersonate-group": {"clients"},
				}},
				// Impersonating system:anonymous gives the upstream the
				// anonymous identity, if it lets apf impersonate it.
				"anonymous": {cert: "apf-impersonator", identity: map[string][]string{
					"impersonate-user": {"system:anonymous"}, "impersonate-group": {"system:unauthenticated"},
				}},
				"proxied": {cert: "apf-impersonator", identity: map[string][]string{
					"impersonate-user": {"erin"}, "impersonate-group": {"ops"},
					"impersonate-extra-scopes": {"openid", "profile"}, "impersonate-extra-example.com%2fteam": {"blue"},
				}},
			},
		},
		{
			// apf's certificate is signed by the CA the upstream trusts
			// for front proxies; every group goes as it is, and the
			// anonymous caller goes as the anonymous identity.
			name: "front-proxy",
			tune: func(t *testing.T, o *Options, apfCA *testpki.CA) {
				o.UpstreamIdentity = "front-proxy"
				o.UpstreamCertFile, o.UpstreamKeyFile = testpki.WriteFiles(t, apfCA.Issue(t, "apf-front-proxy", nil))
			},
			want: map[string]upstreamView{
				"cert": {cert: "apf-front-proxy", identity: map[string][]string{
					"x-remote-user": {"dave"}, "x-remote-group": {"dev-team", "system:authenticated"},
				}},
				"token": {cert: "apf-front-proxy", identity: map[string][]string{
					"x-remote-user": {"carol"}, "x-remote-uid": {"uid-carol"}, "x-remote-group": {"clients", "system:authenticated"},
				}},
				"anonymous": {cert: "apf-front-proxy", identity: map[string][]string{
					"x-remote-user": {"system:anonymous"}, "x-remote-group": {"system:unauthenticated"},
				}},
				"proxied": {cert: "apf-front-proxy", identity: map[string][]string{
					"x-remote-user": {"erin"}, "x-remote-group": {"ops", "system:authenticated"},
					"x-remote-extra-scopes": {"openid", "profile"}, "x-remote-extra-example.com%2fteam": {"blue"},
				}},
			},
		},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			apfCA := testpki.NewCA(t, "apf-client-ca")
			up := newIdentityUpstream(t, apfCA.Pool())
			gw := startGateway(t, up.srv.URL, gatewayTokens(t, "carol"), func(o *Options) {
				o.UpstreamCAFile = up.caFile
				o.Auth.ClientCAFile = callerCA.File
				o.Auth.RequestHeaderClientCAFile = edgeCA.File
				o.Auth.RequestHeaderAllowedNames = []string{"edge-proxy"}
				m.tune(t, o, apfCA)
			})
			defer gw.stop()
			for _, c := range identityCallers(callerCA, edgeCA) {
				path := "/api/v1/namespaces/" + c.name + "/pods"
				req, err := http.NewRequest(http.MethodGet, gw.url+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				sent := spoofedIdentity
				if c.headers != nil {
					sent = c.headers
				}
				for k, vs := range sent {
					req.Header[k] = vs
				}
				if c.token != "" {
					req.Header.Set("Authorization", "Bearer "+c.token)
				}
				resp, err := c.client(t, gw).Do(req)
				if err != nil {
					t.Fatalf("%s caller: %v", c.name, err)
				}
				resp.Body.Close()
				got, arrived := up.view(path)
				want, forwarded := m.want[c.name]
				if !forwarded {
					if resp.StatusCode != m.refusedWith || arrived {
						t.Errorf("%s caller: %d, upstream reached: %v (%+v); want %d from apf and nothing forwarded", c.name, resp.StatusCode, arrived, got, m.refusedWith)
					}
					continue
				}
				if resp.StatusCode != http.StatusOK || !arrived {
					t.Errorf("%s caller: %d, upstream reached: %v", c.name, resp.StatusCode, arrived)
					continue
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s caller: the upstream saw\n  certificate %q, Authorization %q, identity headers %v\nwant\n  certificate %q, Authorization %q, identity headers %v",
						c.name, got.cert, got.auth, got.identity, want.cert, want.auth, want.identity)
				}
			}
		})
	}
}

// TestGatewayRefusesLendingItsIdentity: passthrough (named, or by
// default) with any of apf's own credentials for the upstream is refused
// when the server is built, before etcd starts, with one message naming
// the flags and the modes they belong to.
func TestGatewayRefusesLendingItsIdentity(t *testing.T) {
	apfCA := testpki.NewCA(t, "apf-client-ca")
	certFile, keyFile := testpki.WriteFiles(t, apfCA.Issue(t, "apf", []string{"system:masters"}))
	tokenFile := filepath.Join(t.TempDir(), "apf-token")
	if err := os.WriteFile(tokenFile, []byte("apf-own-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		set  func(o *Options)
	}{
		{"certificate and key", func(o *Options) { o.UpstreamCertFile, o.UpstreamKeyFile = certFile, keyFile }},
		{"certificate and key, default mode", func(o *Options) {
			o.UpstreamIdentity = ""
			o.UpstreamCertFile, o.UpstreamKeyFile = certFile, keyFile
		}},
		{"key alone", func(o *Options) { o.UpstreamKeyFile = keyFile }},
		{"token", func(o *Options) { o.UpstreamTokenFile = tokenFile }},
		{"everything", func(o *Options) {
			o.UpstreamCertFile, o.UpstreamKeyFile, o.UpstreamTokenFile = certFile, keyFile, tokenFile
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions()
			// A data directory that cannot be made: etcd must not be
			// reached.
			opts.DataDir = filepath.Join(tokenFile, "not-a-directory")
			opts.Upstream = "https://127.0.0.1:1"
			opts.UpstreamIdentity = "passthrough"
			tc.set(&opts)
			srv, err := New(context.Background(), opts)
			if err == nil {
				_ = srv.Close()
				t.Fatal("New accepted passthrough with apf's own credentials")
			}
			msg := err.Error()
			for _, want := range []string{"passthrough", "never apf's", "--upstream-client-cert-file", "--upstream-token-file", "impersonate"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not mention %q", msg, want)
				}
			}
			if strings.Contains(msg, "etcd") {
				t.Errorf("refused only once etcd was tried: %q", msg)
			}
		})
	}
	// The same credentials are accepted in impersonate mode (checked up to
	// the options; nothing is started).
	opts := DefaultOptions()
	opts.Upstream = "https://127.0.0.1:1"
	opts.UpstreamIdentity = "impersonate"
	opts.UpstreamCertFile, opts.UpstreamKeyFile, opts.UpstreamTokenFile = certFile, keyFile, tokenFile
	if err := opts.check(); err != nil {
		t.Errorf("impersonate with apf's credentials: %v", err)
	}
}

// TestGatewayFrontProxyOptions: front-proxy mode needs apf's client
// certificate and key and an HTTPS upstream, and refuses a token, each with
// a message naming the flags.
func TestGatewayFrontProxyOptions(t *testing.T) {
	apfCA := testpki.NewCA(t, "front-proxy-ca")
	certFile, keyFile := testpki.WriteFiles(t, apfCA.Issue(t, "apf-front-proxy", nil))
	for _, tc := range []struct {
		name string
		set  func(o *Options)
		want string // "" when accepted
	}{
		{"certificate and key", func(o *Options) { o.UpstreamCertFile, o.UpstreamKeyFile = certFile, keyFile }, ""},
		{"no certificate", func(o *Options) {}, "--upstream-client-cert-file and --upstream-client-key-file"},
		{"certificate without key", func(o *Options) { o.UpstreamCertFile = certFile }, "--upstream-client-key-file"},
		{"a token besides", func(o *Options) {
			o.UpstreamCertFile, o.UpstreamKeyFile, o.UpstreamTokenFile = certFile, keyFile, certFile
		}, "--upstream-token-file is for --upstream-identity impersonate"},
		{"plain http upstream", func(o *Options) {
			o.Upstream = "http://127.0.0.1:1"
			o.UpstreamCertFile, o.UpstreamKeyFile = certFile, keyFile
		}, "https://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.Upstream = "https://127.0.0.1:1"
			opts.UpstreamIdentity = "front-proxy"
			tc.set(&opts)
			err := opts.check()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
