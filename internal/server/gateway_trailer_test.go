package server

import (
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apfproject/apf/apfhttp"
)

// TestGatewayDropsUpstreamTrailers: the APF headers an upstream sends as
// trailers (an upstream that is itself an API server with APF, or one
// that forges them) never reach the caller, announced or not, whether the
// caller talks HTTP/1.1 or HTTP/2 to apf and apf HTTP/1.1 or HTTP/2 to the
// upstream: a caller apf explains its request to gets apf's explanation
// alone, and apf's UIDs alone. Other trailers come through.
func TestGatewayDropsUpstreamTrailers(t *testing.T) {
	dropped := []string{apfhttp.ExplanationHeader, apfhttp.FlowSchemaUIDHeader, apfhttp.PriorityLevelUIDHeader}
	var upstreamProto atomic.Value
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/namespaces/shop/pods/web" {
			upstreamProto.Store(r.Proto)
		}
		names := append(slices.Clone(dropped), "X-Other")
		announced := r.URL.Query().Get("announce") == "1"
		if announced {
			w.Header().Set("Trailer", strings.Join(names, ", "))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, `{"kind":"Pod"}`)
		w.(http.Flusher).Flush()
		for _, n := range names {
			if !announced {
				n = http.TrailerPrefix + n
			}
			w.Header().Set(n, "upstream's")
		}
	})
	plain := httptest.NewServer(up)
	defer plain.Close()
	h2 := httptest.NewUnstartedServer(up)
	h2.EnableHTTP2 = true
	h2.StartTLS()
	defer h2.Close()
	caFile := filepath.Join(t.TempDir(), "upstream-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h2.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := gatewayTokens(t, "flood")
	for _, upstream := range []string{"HTTP/1.1", "HTTP/2.0"} {
		url := plain.URL
		if upstream == "HTTP/2.0" {
			url = h2.URL
		}
		gw := startGateway(t, url, tokens, func(o *Options) {
			o.Authz.AdminGroups = []string{"clients"}
			if upstream == "HTTP/2.0" {
				o.UpstreamCAFile = caFile
			}
		})
		uids := map[string]bool{}
		for _, fs := range gw.server.Controller().Matcher().FlowSchemas() {
			uids[string(fs.UID)], uids[string(fs.PriorityLevel.UID)] = true, true
		}
		for _, client := range []string{"HTTP/1.1", "HTTP/2.0"} {
			tr := &http.Transport{TLSClientConfig: gw.client.Transport.(*http.Transport).TLSClientConfig.Clone(), ForceAttemptHTTP2: client == "HTTP/2.0"}
			if client == "HTTP/1.1" {
				tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
			}
			for _, announce := range []string{"0", "1"} {
				t.Run(fmt.Sprintf("upstream %s, client %s, announced %s", upstream, client, announce), func(t *testing.T) {
					req, _ := http.NewRequest(http.MethodGet, gw.url+"/api/v1/namespaces/shop/pods/web?announce="+announce, nil)
					req.Header.Set("Authorization", "Bearer token-flood")
					req.Header.Set(apfhttp.ExplainHeader, "1")
					resp, err := tr.RoundTrip(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					if resp.Proto != client {
						t.Fatalf("the client talked %s to apf, want %s", resp.Proto, client)
					}
					if p, _ := upstreamProto.Load().(string); p != upstream {
						t.Fatalf("apf talked %s to the upstream, want %s", p, upstream)
					}
					var trailers []string
					for k := range resp.Trailer {
						trailers = append(trailers, k)
					}
					if _, err := io.Copy(io.Discard, resp.Body); err != nil {
						t.Fatal(err)
					}
					for _, n := range dropped {
						k := http.CanonicalHeaderKey(n)
						if _, ok := resp.Trailer[k]; ok || slices.Contains(trailers, k) {
							t.Errorf("trailer %s reached the caller (announced %q, received %q)", n, trailers, resp.Trailer)
						}
					}
					if got := resp.Trailer.Values("X-Other"); !slices.Equal(got, []string{"upstream's"}) {
						t.Errorf("trailer X-Other = %q, want the upstream's", got)
					}
					if got := resp.Header.Values(apfhttp.ExplanationHeader); resp.StatusCode != http.StatusOK || len(got) != 1 || !strings.Contains(got[0], "flow-schema=") {
						t.Errorf("%d, explanations %q; want 200 and apf's alone", resp.StatusCode, got)
					}
					for _, h := range []string{apfhttp.FlowSchemaUIDHeader, apfhttp.PriorityLevelUIDHeader} {
						if got := resp.Header.Values(h); len(got) != 1 || !uids[got[0]] {
							t.Errorf("%s = %q, want one of apf's UIDs", h, got)
						}
					}
				})
			}
			tr.CloseIdleConnections()
		}
		gw.stop()
	}
}
