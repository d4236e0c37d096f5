package peer

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericfilters "k8s.io/apiserver/pkg/server/filters"

	"github.com/apfproject/apf/internal/api/apistatus"
)

// TestTimeoutFilterAnswer: what kube-apiserver answers when a request's
// deadline passes, from its own filters (request info, cache control, the
// request deadline and WithTimeoutForNonLongRunningRequests, in its
// order), against what apf writes (apistatus.WriteTimeout, which apf
// serve's request deadline answers with, behind the same cache control):
// before the handler has answered, the same status, header and body,
// byte for byte, none of the handler's header; after the header, the
// answer is cut (the client gets an error, not a short body).
//
// The handler writes its late answer only once the client has read the
// filters' one: if it wrote as soon as the deadline passed, upstream's
// timeout filter would see, now and then, the handler's header before its
// own deadline branch ran, and cut the connection instead of answering.
func TestTimeoutFilterAnswer(t *testing.T) {
	var answered atomic.Pointer[chan struct{}]
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		read := *answered.Load()
		w.Header().Set("X-Handler", "set before the deadline")
		if r.URL.Path == "/api/v1/half" {
			fmt.Fprint(w, `{"kind":"Pod",`)
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
		<-read
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, "late")
	})
	var kube http.Handler = genericfilters.WithTimeoutForNonLongRunningRequests(handler, func(*http.Request, *apirequest.RequestInfo) bool { return false })
	kube = withDeadline(kube, 200*time.Millisecond)
	kube = genericapifilters.WithCacheControl(kube)
	kube = genericapifilters.WithRequestInfo(kube, &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")})
	apf := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache, private")
		apistatus.WriteTimeout(w)
	})
	get := func(h http.Handler, path string) (*http.Response, string, error) {
		read := make(chan struct{})
		answered.Store(&read)
		defer close(read)
		srv := httptest.NewServer(h)
		defer srv.Close()
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		resp.Header.Del("Date")
		return resp, string(body), err
	}
	kr, kb, kerr := get(kube, "/api/v1/pods")
	ar, ab, aerr := get(apf, "/api/v1/pods")
	if kerr != nil || aerr != nil || kr.StatusCode != ar.StatusCode || kb != ab || fmt.Sprint(kr.Header) != fmt.Sprint(ar.Header) {
		t.Errorf("before the header:\nkube-apiserver %d %v %q %v\napf            %d %v %q %v", kr.StatusCode, kr.Header, kb, kerr, ar.StatusCode, ar.Header, ab, aerr)
	}
	if kr.StatusCode != http.StatusGatewayTimeout || kr.Header.Get("X-Handler") != "" {
		t.Errorf("kube-apiserver: %d %v", kr.StatusCode, kr.Header)
	}
	kr, kb, kerr = get(kube, "/api/v1/half")
	if kr.StatusCode != http.StatusOK || kerr == nil {
		t.Errorf("after the header: %d %q, error %v; want the answer cut", kr.StatusCode, kb, kerr)
	}
}

// withDeadline is kube-apiserver's request deadline, reduced to what the
// test needs: the request's context ends after d.
func withDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
