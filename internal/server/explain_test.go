package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apfproject/apf/apfhttp"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/internal/debug/debugmux"
)

// The level and schema of TestExplainHeader: user flood alone on a level
// of 8 queues of one request, hands of 2, that neither lends nor borrows.
const (
	explainLevelJSON = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration",
"metadata":{"name":"tiny"},"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":1,
"lendablePercent":0,"borrowingLimitPercent":0,
"limitResponse":{"type":"Queue","queuing":{"queues":8,"handSize":2,"queueLengthLimit":1}}}}}`
	explainSchemaJSON = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema",
"metadata":{"name":"flood"},"spec":{"priorityLevelConfiguration":{"name":"tiny"},"matchingPrecedence":500,
"distinguisherMethod":{"type":"ByUser"},"rules":[{"subjects":[{"kind":"User","user":{"name":"flood"}}],
"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"namespaces":["*"],"clusterScope":true}],
"nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}]}]}}`
)

// explanation reads an X-APF-Explanation value into its members, strings
// unquoted. The values apf writes for these tests are plain ASCII.
func explanation(t *testing.T, v string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for v != "" {
		key, rest, hasValue := strings.Cut(v, "=")
		if comma := strings.Index(v, ", "); !hasValue || (comma >= 0 && comma < len(key)) {
			key, rest, _ = strings.Cut(v, ", ")
			m[key], v = "?1", rest
			continue
		}
		var val string
		switch {
		case strings.HasPrefix(rest, `"`):
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				t.Fatalf("%q: %v", rest, err)
			}
			val, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		case strings.HasPrefix(rest, "("):
			end := strings.IndexByte(rest, ')') + 1
			val, rest = rest[:end], rest[end:]
		default:
			val, rest, _ = strings.Cut(rest, ", ")
			rest = ", " + rest
		}
		m[key] = val
		v = strings.TrimPrefix(rest, ", ")
	}
	return m
}

func handIn(t *testing.T, m map[string]string) (queue int, hand []int) {
	t.Helper()
	queue, err := strconv.Atoi(m["queue"])
	if err != nil {
		t.Fatalf("queue %q: %v", m["queue"], err)
	}
	for f := range strings.FieldsSeq(strings.Trim(m["hand"], "()")) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("hand %q: %v", m["hand"], err)
		}
		hand = append(hand, n)
	}
	return queue, hand
}

// TestExplainHeader: apf serve explains a request to a caller that may
// read the dumps (here an admin group's member) and to nobody else, for a
// request dispatched at once, one that queued (a wait above zero, its
// queue one of its hand) and one rejected because its hand's queues were
// full; the access log line carries what the caller got. It also shows
// the header of a rejected request, as the README quotes it.
func TestExplainHeader(t *testing.T) {
	release := make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/slow/") {
			select {
			case <-release:
			case <-time.After(20 * time.Second):
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"PodList","items":[]}`)
	}))
	defer up.Close()
	defer free()
	logs := &logBuffer{}
	gw := startGateway(t, up.URL, gatewayTokens(t, "flood"), func(o *Options) {
		o.InsecureHTTP = true
		o.Authz.AdminGroups = []string{"clients"} // flood may read the dumps; bob may not
		o.AccessLog.Writer = logs
	})
	for _, obj := range []struct{ res, body string }{
		{"prioritylevelconfigurations", explainLevelJSON},
		{"flowschemas", explainSchemaJSON},
	} {
		if code, _, body := gw.do(http.MethodPost, "/apis/flowcontrol.apiserver.k8s.io/v1/"+obj.res, adminToken, []byte(obj.body)); code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", obj.res, code, body)
		}
	}
	level := func() *controller.LevelView {
		for _, l := range gw.server.Controller().Levels() {
			if l.Name == "tiny" {
				return &l
			}
		}
		return nil
	}
	send := func(path, token string, explain bool) (int, http.Header) {
		req, err := http.NewRequest(http.MethodGet, gw.url+path, nil)
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		req.Header.Set("Authorization", "Bearer "+token)
		if explain {
			req.Header.Set(apfhttp.ExplainHeader, "1")
		}
		resp, err := gw.client.Do(req)
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	if err := waitFor(10*time.Second, func() bool {
		l := level()
		if l == nil {
			return false
		}
		code, h := send("/api/v1/namespaces/shop/pods", "token-flood", false)
		return code == http.StatusOK && h.Get(apfhttp.PriorityLevelUIDHeader) == l.UID
	}); err != nil {
		t.Fatal("flood's requests never reached level tiny")
	}

	// At once: the whole explanation, for the allowed caller only.
	code, h := send("/api/v1/namespaces/shop/pods?limit=1", "token-flood", true)
	if code != http.StatusOK || len(h.Values(apfhttp.ExplanationHeader)) != 1 {
		t.Fatalf("flood: %d, explanations %q", code, h.Values(apfhttp.ExplanationHeader))
	}
	dispatched := h.Get(apfhttp.ExplanationHeader)
	m := explanation(t, dispatched)
	for k, v := range map[string]string{"outcome": "dispatched", "flow-schema": "flood", "precedence": "500",
		"priority-level": "tiny", "distinguisher": "flood", "queued": "?0", "wait": "0s", "initial-seats": "1"} {
		if m[k] != v {
			t.Errorf("dispatched at once: %s=%q, want %q in %q", k, m[k], v, h.Get(apfhttp.ExplanationHeader))
		}
	}
	if q, hand := handIn(t, m); len(hand) != 2 || !slices.Contains(hand, q) {
		t.Errorf("queue %d, hand %v", q, hand)
	}
	if code, h := send("/api/v1/namespaces/shop/pods?limit=2", readerToken, true); code == 0 || h.Get(apfhttp.ExplanationHeader) != "" {
		t.Errorf("bob: %d, explanation %q", code, h.Get(apfhttp.ExplanationHeader))
	}
	if code, _ := send(debugmux.ExplainPath+"?verb=get&path=/api", readerToken, false); code != http.StatusForbidden {
		t.Errorf("bob asks the explain endpoint: %d, want 403", code)
	}

	// Fill the level, queue two (one in each queue of the hand), and be
	// refused.
	limit := level().Queue.Stats().ConcurrencyLimit
	var wg sync.WaitGroup
	defer wg.Wait()
	defer free()
	for range limit {
		wg.Go(func() { send("/api/v1/namespaces/slow/pods", "token-flood", false) })
	}
	if err := waitFor(10*time.Second, func() bool { return level().Queue.Stats().ExecutingRequests == limit }); err != nil {
		t.Fatalf("the level's %d seats were not all taken", limit)
	}
	queued := make(chan http.Header, 2)
	for i := range 2 {
		wg.Go(func() {
			code, h := send(fmt.Sprintf("/api/v1/namespaces/slow/pods?limit=%d", 10+i), "token-flood", true)
			if code != http.StatusOK {
				t.Errorf("queued request %d: %d", i, code)
			}
			queued <- h
		})
		if err := waitFor(10*time.Second, func() bool { return level().Queue.Stats().WaitingRequests == i+1 }); err != nil {
			t.Fatalf("request %d did not queue", i)
		}
	}
	code, h = send("/api/v1/namespaces/shop/pods?limit=3", "token-flood", true)
	if code != http.StatusTooManyRequests {
		t.Fatalf("third waiting request: %d, want 429", code)
	}
	rejected := h.Get(apfhttp.ExplanationHeader)
	t.Logf("%s: %s", apfhttp.ExplanationHeader, rejected)
	m = explanation(t, rejected)
	for k, v := range map[string]string{"outcome": "rejected", "reason": "queue-full", "retry-after": h.Get("Retry-After"),
		"flow-schema": "flood", "priority-level": "tiny", "queued": "?0", "execution": ""} {
		if m[k] != v {
			t.Errorf("rejected: %s=%q, want %q in %q", k, m[k], v, rejected)
		}
	}
	q, hand := handIn(t, m)
	if !slices.Contains(hand, q) {
		t.Errorf("rejected: queue %d not in hand %v", q, hand)
	}
	// A line is written once the answer is out: wait for it.
	var rejectedLine map[string]string
	_ = waitFor(10*time.Second, func() bool {
		for _, l := range logLines(t, "text", logs.String(), "/api/v1/namespaces/shop/pods") {
			switch l["query"] {
			case "limit=1":
				if l["apf_explain"] != dispatched {
					t.Errorf("the dispatched request's log line: apf_explain=%q, want %q", l["apf_explain"], dispatched)
				}
			case "limit=2":
				if l["apf_explain"] != "" {
					t.Errorf("bob's line explains: %q", l["apf_explain"])
				}
			case "limit=3":
				rejectedLine = l
			}
		}
		return rejectedLine != nil
	})
	if rejectedLine == nil || rejectedLine["apf_explain"] != rejected || rejectedLine["status"] != "429" {
		t.Errorf("the rejected request's log line: %v, want apf_explain=%q", rejectedLine, rejected)
	}

	free()
	for range 2 {
		h := <-queued
		m := explanation(t, h.Get(apfhttp.ExplanationHeader))
		if m["outcome"] != "dispatched" || m["queued"] != "?1" {
			t.Errorf("queued: %q", h.Get(apfhttp.ExplanationHeader))
		}
		if d, err := time.ParseDuration(m["wait"]); err != nil || d <= 0 {
			t.Errorf("queued: wait %q, want above zero", m["wait"])
		}
		if q, h := handIn(t, m); !slices.Equal(h, hand) || !slices.Contains(hand, q) {
			t.Errorf("queued: queue %d, hand %v; the flow's hand is %v", q, h, hand)
		}
	}
}

// In gateway mode the upstream's own X-APF-Explanation (an upstream that
// is itself apf, or one that forges it) never reaches the caller: a caller
// apf does not explain to gets none, one it explains to gets apf's alone.
func TestExplainUpstreamHeaderDropped(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(apfhttp.ExplanationHeader, `outcome=dispatched, flow-schema="upstream's"`)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"Pod"}`)
	}))
	defer up.Close()
	gw := startGateway(t, up.URL, gatewayTokens(t, "flood"), func(o *Options) {
		o.InsecureHTTP = true
		o.Authz.AdminGroups = []string{"clients"}
	})
	for _, c := range []struct {
		token   string
		explain bool
		want    int // explanations, apf's
	}{
		{readerToken, true, 0},
		{"token-flood", false, 0},
		{"token-flood", true, 1},
	} {
		req, err := http.NewRequest(http.MethodGet, gw.url+"/api/v1/namespaces/shop/pods/web", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		if c.explain {
			req.Header.Set(apfhttp.ExplainHeader, "1")
		}
		resp, err := gw.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		got := resp.Header.Values(apfhttp.ExplanationHeader)
		if resp.StatusCode != http.StatusOK || len(got) != c.want || (len(got) == 1 && !strings.Contains(got[0], `flow-schema="global-default"`)) {
			t.Errorf("%s, asking %v: %d, explanations %q, want %d of apf's", c.token, c.explain, resp.StatusCode, got, c.want)
		}
	}
}
