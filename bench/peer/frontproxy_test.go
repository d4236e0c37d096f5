package peer

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/apfproject/apf/internal/proxy"
	"github.com/apfproject/apf/internal/testing/testpki"
	"github.com/apfproject/apf/request"
)

// TestFrontProxyIdentity sends callers through apf's proxy in front-proxy
// mode to an HTTPS upstream that authenticates every request the way
// kube-apiserver authenticates its aggregator: upstream's request-header
// authenticator behind the check of the front proxy's certificate (CA and
// allowed name), inside the adder of system:authenticated. The user
// upstream reconstructs must be exactly the caller: name, UID, groups in
// order, and every extra key and value, the keys chosen to trip up the
// escaping (upper case, percent signs, slashes, spaces, non-ASCII, empty).
// Each caller also sends made-up identity headers of its own, which must
// not reach the upstream.
func TestFrontProxyIdentity(t *testing.T) {
	proxyCA := testpki.NewCA(t, "front-proxy-ca")
	certFile, keyFile := testpki.WriteFiles(t, proxyCA.Issue(t, "apf-front-proxy", nil))

	verify := func() (x509.VerifyOptions, bool) {
		return x509.VerifyOptions{Roots: proxyCA.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
	}
	authn := group.NewAuthenticatedGroupAdder(union.New(headerrequest.NewDynamicVerifyOptionsSecure(verify,
		headerrequest.StaticStringSlice{"apf-front-proxy"},
		headerrequest.StaticStringSlice{"X-Remote-User"},
		headerrequest.StaticStringSlice{"X-Remote-Uid"},
		headerrequest.StaticStringSlice{"X-Remote-Group"},
		headerrequest.StaticStringSlice{"X-Remote-Extra-"})))
	var mu sync.Mutex
	var got user.Info
	upstream := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := authn.AuthenticateRequest(r)
		if err != nil || !ok {
			http.Error(w, "not authenticated", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		got = resp.User
		mu.Unlock()
	}))
	// The certificate is asked for, and verified by the authenticator.
	upstream.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	upstream.StartTLS()
	defer upstream.Close()
	caFile := filepath.Join(t.TempDir(), "upstream.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: upstream.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(upstream.URL)
	px, err := proxy.New(proxy.Options{
		Upstream: u, CAFile: caFile, CertFile: certFile, KeyFile: keyFile,
		Identity: proxy.FrontProxy,
		User:     func(r *http.Request) (request.User, bool) { return request.UserFrom(r.Context()) },
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, caller := range []request.User{
		{
			Name:   "alice@example.com",
			UID:    "1234-abcd",
			Groups: []string{"dev", "system:authenticated", "ops"},
			Extra: map[string][]string{
				"scopes":              {"openid", "profile"},
				"example.com/Project": {"apf", "Other Value"},
				"odd key:with=100%":   {"v"},
				"UPPER":               {"x"},
				"%2F":                 {"literal percent"},
				"ключ":                {"значение"},
				"a_b.c~d":             {"1"},
				"":                    {"empty key"},
			},
		},
		{Name: "José Müller", Groups: []string{"system:masters", "system:authenticated"}},
		{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}},
		{Name: "system:serviceaccount:ns:sa", UID: "u-1", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"},
			Extra: map[string][]string{"authentication.kubernetes.io/pod-name": {"p"}, "authentication.kubernetes.io/pod-uid": {"9"}}},
	} {
		t.Run(caller.Name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/pods", nil)
			req.Header.Set("Authorization", "Bearer caller-token")
			req.Header.Set("X-Remote-User", "system:admin")
			req.Header["x-remote-group"] = []string{"system:masters"}
			req.Header["X-REMOTE-UID"] = []string{"0"}
			req.Header.Set("X-Remote-Extra-Scopes", "all")
			req.Header.Set("X-Remote-Extra-Injected", "yes")
			req = req.WithContext(request.WithUser(context.Background(), &caller))
			mu.Lock()
			got = nil
			mu.Unlock()
			rec := httptest.NewRecorder()
			px.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			mu.Lock()
			defer mu.Unlock()
			if got == nil {
				t.Fatal("the upstream authenticated nobody")
			}
			want := &user.DefaultInfo{Name: caller.Name, UID: caller.UID, Groups: caller.Groups, Extra: caller.Extra}
			if want.Extra == nil {
				want.Extra = map[string][]string{}
			}
			have := &user.DefaultInfo{Name: got.GetName(), UID: got.GetUID(), Groups: got.GetGroups(), Extra: got.GetExtra()}
			if !reflect.DeepEqual(have, want) {
				t.Errorf("upstream reconstructed\n  %+v\nwant\n  %+v", have, want)
			}
		})
	}
}
