package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// trailerNames are the trailers trailingUpstream sends: the three that
// apf serve drops (one in lower case) and one it does not.
var trailerNames = []string{"X-APF-Explanation", "X-Kubernetes-PF-FlowSchema-UID", "x-kubernetes-pf-prioritylevel-uid", "X-Other"}

// trailingUpstream answers with a streamed body and trailerNames as
// trailers, each "upstream": announced in its Trailer header, not
// announced, or X-Other announced and the others not.
func trailingUpstream(mode string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch mode {
		case "announced":
			w.Header().Set("Trailer", strings.Join(trailerNames, ", "))
		case "mixed":
			w.Header().Set("Trailer", "X-Other")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"kind":"Pod"}`)
		w.(http.Flusher).Flush()
		for _, n := range trailerNames {
			if mode == "announced" || (mode == "mixed" && n == "X-Other") {
				w.Header().Set(n, "upstream")
			} else {
				w.Header().Set(http.TrailerPrefix+n, "upstream")
			}
		}
	})
}

// TestDropResponseTrailers: the names in DropResponseHeaders are dropped
// from the upstream's trailer as from its header, announced or not, over
// HTTP/1.1 and HTTP/2 on either side of the proxy; other trailers reach
// the caller, and the front's own headers of those names are the only
// ones it sees.
func TestDropResponseTrailers(t *testing.T) {
	drop := []string{"X-APF-Explanation", "X-Kubernetes-PF-FlowSchema-UID", "X-Kubernetes-PF-PriorityLevel-UID"}
	for _, mode := range []string{"announced", "unannounced", "mixed"} {
		for _, h2Up := range []bool{false, true} {
			for _, h2Client := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/upstream-h2=%v/client-h2=%v", mode, h2Up, h2Client), func(t *testing.T) {
					o := Options{DropResponseHeaders: drop}
					if h2Up {
						up := tlsUpstream(t, trailingUpstream(mode), nil)
						o.Upstream, o.CAFile = mustURL(t, up.URL), caFileFor(t, up)
					} else {
						o.Upstream = mustURL(t, front(t, trailingUpstream(mode)).URL)
					}
					px := newProxy(t, o)
					gw := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						w.Header().Set("X-APF-Explanation", "apf's")
						px.ServeHTTP(w, r)
					}))
					gw.EnableHTTP2 = h2Client
					gw.StartTLS()
					defer gw.Close()
					client := gw.Client()
					resp, err := client.Get(gw.URL + "/api/v1/namespaces/default/pods/p")
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					if want := map[bool]int{false: 1, true: 2}[h2Client]; resp.ProtoMajor != want {
						t.Fatalf("the client talked HTTP/%d to the proxy, want HTTP/%d", resp.ProtoMajor, want)
					}
					var announced []string
					for k := range resp.Trailer {
						announced = append(announced, k)
					}
					body, err := io.ReadAll(resp.Body)
					if err != nil || string(body) != `{"kind":"Pod"}` {
						t.Fatalf("body %q, %v", body, err)
					}
					for _, n := range drop {
						if slices.Contains(announced, http.CanonicalHeaderKey(n)) {
							t.Errorf("trailer %s announced to the caller (%q)", n, announced)
						}
						if v, ok := resp.Trailer[http.CanonicalHeaderKey(n)]; ok {
							t.Errorf("trailer %s = %q reached the caller", n, v)
						}
					}
					if got := resp.Trailer.Values("X-Other"); !slices.Equal(got, []string{"upstream"}) {
						t.Errorf("trailer X-Other = %q, want the upstream's", got)
					}
					if got := resp.Header.Values("X-APF-Explanation"); !slices.Equal(got, []string{"apf's"}) {
						t.Errorf("header X-APF-Explanation = %q, want the front's alone", got)
					}
				})
			}
		}
	}
}

// TestTrailerDropAllocations: dropping the names costs no allocation for
// an answer that cannot carry a trailer (a body of known length over
// HTTP/1.1, or none), and one, the filter on its body, for one that can;
// looking at an ordinary request's upgrade costs none.
func TestTrailerDropAllocations(t *testing.T) {
	px := newProxy(t, Options{Upstream: mustURL(t, "http://127.0.0.1:1"), DropResponseHeaders: []string{"X-APF-Explanation", "X-Kubernetes-PF-FlowSchema-UID"}}).(*proxy)
	body := io.NopCloser(strings.NewReader(`{"kind":"Pod"}`))
	for _, c := range []struct {
		name   string
		res    http.Response
		allocs float64
	}{
		{"HTTP/1.1 with a length", http.Response{StatusCode: 200, ProtoMajor: 1, ProtoMinor: 1, ContentLength: 14}, 0},
		{"HTTP/1.1 without a body", http.Response{StatusCode: 204, ProtoMajor: 1, ProtoMinor: 1}, 0},
		{"HTTP/2 without a body", http.Response{StatusCode: 204, ProtoMajor: 2}, 0},
		{"HTTP/1.1 chunked", http.Response{StatusCode: 200, ProtoMajor: 1, ProtoMinor: 1, ContentLength: -1, TransferEncoding: []string{"chunked"}}, 1},
		{"HTTP/2 with a body", http.Response{StatusCode: 200, ProtoMajor: 2, ContentLength: 14}, 1},
	} {
		res := c.res
		res.Header = http.Header{"Content-Type": {"application/json"}}
		b := io.ReadCloser(body)
		if c.res.StatusCode == http.StatusNoContent {
			b = http.NoBody
		}
		got := testing.AllocsPerRun(100, func() {
			res.Body = b
			if err := px.modifyResponse(&res); err != nil {
				t.Fatal(err)
			}
		})
		if got != c.allocs {
			t.Errorf("%s: %v allocations, want %v", c.name, got, c.allocs)
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
	r.Header.Set("Accept", "application/json")
	if got := testing.AllocsPerRun(100, func() {
		if out, st := upgradeHeaders(r); out != r || st != nil {
			t.Fatal("an ordinary request was changed")
		}
	}); got != 0 {
		t.Errorf("an ordinary request's upgrade: %v allocations, want 0", got)
	}
}
