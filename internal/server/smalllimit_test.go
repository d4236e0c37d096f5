package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/apfproject/apf/fairqueue"
)

// With a small server limit (--max-requests-inflight 10
// --max-mutating-requests-inflight 0) an ordinary user's request is
// answered at once after /readyz first answers 200: global-default's
// current limit is 0 then (as in kube-apiserver, where such a request
// waits for the next borrowing adjustment, up to 10 s), but its queue set
// enforces one seat. And /readyz fails while a level that has nominal
// seats admits nothing.
func TestSmallLimitReadyAdmits(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","items":[]}`))
	}))
	defer upstream.Close()
	s := startGateway(t, upstream.URL, "", func(o *Options) {
		o.MaxRequestsInflight, o.MaxMutatingRequestsInflight = 10, 0
	})
	// startGateway returns as soon as /readyz answers 200.
	start := time.Now()
	code, h, body := s.do(http.MethodGet, "/api/v1/namespaces/default/pods", readerToken, nil)
	took := time.Since(start)
	if code != http.StatusOK || h.Get("X-Kubernetes-PF-PriorityLevel-UID") == "" {
		t.Fatalf("bob's request: %d %s %v", code, body, h)
	}
	// Without the floor the request waits for the first periodic
	// adjustment, 10 s after the start; the bound leaves room for a
	// loaded machine.
	if took > 3*time.Second {
		t.Fatalf("bob's request was answered %v after /readyz", took)
	}
	t.Logf("bob's request answered %v after /readyz", took)
	for _, l := range s.server.ctl.Levels() {
		if l.Name == "global-default" && (l.Limits == nil || l.Limits.Nominal != 1 || l.Limits.Lower != 0) {
			t.Fatalf("global-default's limits %+v: the test expects a nominal limit of 1 and a lower limit of 0", l.Limits)
		}
	}

	// A level with nominal seats whose queue set admits nothing: not
	// ready. (The periodic adjustment may set the limit back between the
	// two steps: then try again.)
	var gd *fairqueue.Level
	for _, l := range s.server.ctl.Levels() {
		if l.Name == "global-default" {
			gd = l.Queue
		}
	}
	for try := 0; ; try++ {
		gd.SetConcurrencyLimit(0)
		code, _, body = s.do(http.MethodGet, "/readyz?verbose", adminToken, nil)
		if code == http.StatusInternalServerError {
			break
		}
		if gd.Config().ConcurrencyLimit == 0 || try == 3 {
			t.Fatalf("/readyz with global-default admitting nothing: %d %s", code, body)
		}
	}
	gd.SetConcurrencyLimit(1)
	if code, _, body := s.do(http.MethodGet, "/readyz", adminToken, nil); code != http.StatusOK {
		t.Fatalf("/readyz once global-default admits again: %d %s", code, body)
	}
}
