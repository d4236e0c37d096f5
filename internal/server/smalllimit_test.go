package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// With a small server limit (--max-requests-inflight 10
// --max-mutating-requests-inflight 0) an ordinary user's request is
// answered at once after /readyz first answers 200: global-default's
// current limit is 0 then (as in kube-apiserver, where such a request
// waits for the next borrowing adjustment, up to 10 s), but its queue set
// enforces one seat. /readyz runs the check that every level with
// nominal seats admits.
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

	// The readiness hook that says every level with nominal seats admits
	// a request (controller.Admitting, whose refusals TestAdmitting
	// proves) is among the checks /readyz runs.
	code, _, body = s.do(http.MethodGet, "/readyz?verbose", adminToken, nil)
	if code != http.StatusOK || !strings.Contains(string(body), "[+]poststarthook/priority-and-fairness-config-producer ok") {
		t.Fatalf("/readyz?verbose: %d %s", code, body)
	}
}
