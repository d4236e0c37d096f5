package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apfproject/apf/request"
)

// The access log and tracing tests run a gateway in front of a stand-in
// upstream, with four callers: carol (global-default), dora (a level of
// one seat and one queue), erin (a reject level of one seat), and admin
// (system:masters: exempt). A request to a path ending in /hold waits in
// the upstream until the test releases it, so that the next one queues or
// is rejected.

// obsRig is such a gateway and its upstream.
type obsRig struct {
	t  *testing.T
	gw *e2eServer
	up *httptest.Server
	// entered receives the path of each held request once it is in the
	// upstream; release lets one go.
	entered, release chan string
	mu               sync.Mutex
	seen             map[string][]http.Header // the headers each path reached the upstream with
}

// obsLevels is the configuration of dora's and erin's levels: one seat
// each (the server's concurrency limit is 1, and they neither lend nor
// borrow).
var obsLevels = []struct{ res, body string }{
	{"prioritylevelconfigurations", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"one-queue"},
	  "spec":{"type":"Limited","limited":{"nominalConcurrencyShares":1,"lendablePercent":0,"borrowingLimitPercent":0,
	   "limitResponse":{"type":"Queue","queuing":{"queues":1,"handSize":1,"queueLengthLimit":10}}}}}`},
	{"flowschemas", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"dora"},
	  "spec":{"priorityLevelConfiguration":{"name":"one-queue"},"matchingPrecedence":400,
	   "rules":[{"subjects":[{"kind":"User","user":{"name":"dora"}}],
	    "resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"clusterScope":true,"namespaces":["*"]}]}]}}`},
	{"prioritylevelconfigurations", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"one-reject"},
	  "spec":{"type":"Limited","limited":{"nominalConcurrencyShares":1,"lendablePercent":0,"borrowingLimitPercent":0,"limitResponse":{"type":"Reject"}}}}`},
	{"flowschemas", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"erin"},
	  "spec":{"priorityLevelConfiguration":{"name":"one-reject"},"matchingPrecedence":401,
	   "rules":[{"subjects":[{"kind":"User","user":{"name":"erin"}}],
	    "resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"clusterScope":true,"namespaces":["*"]}]}]}}`},
}

func newObsRig(t *testing.T, tune func(*Options)) *obsRig {
	t.Helper()
	rig := &obsRig{t: t, entered: make(chan string, 16), release: make(chan string, 16), seen: map[string][]http.Header{}}
	rig.up = httptest.NewServer(kubeShaped(func(w http.ResponseWriter, r *http.Request) {
		rig.mu.Lock()
		rig.seen[r.URL.Path] = append(rig.seen[r.URL.Path], r.Header.Clone())
		rig.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/hold") {
			rig.entered <- r.URL.Path
			select {
			case <-rig.release:
			case <-time.After(20 * time.Second):
			}
		}
		w.Header().Set("Audit-Id", "upstream-audit-"+strings.ReplaceAll(r.URL.Path, "/", "-"))
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") != "" {
			fmt.Fprintln(w, `{"type":"ADDED","object":{"kind":"Pod"}}`)
			return
		}
		fmt.Fprint(w, `{"kind":"Pod"}`)
	}))
	t.Cleanup(rig.up.Close)
	rig.gw = startGateway(t, rig.up.URL, gatewayTokens(t, "carol", "dora", "erin"), func(o *Options) {
		o.InsecureHTTP = true
		o.MaxRequestsInflight, o.MaxMutatingRequestsInflight = 1, 0
		if tune != nil {
			tune(o)
		}
	})
	for _, obj := range obsLevels {
		if code, _, body := rig.gw.do(http.MethodPost, "/apis/flowcontrol.apiserver.k8s.io/v1/"+obj.res, adminToken, []byte(obj.body)); code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", obj.res, code, body)
		}
	}
	// The levels and the FlowSchemas that send dora and erin there, all
	// in force: on a busy machine the last object created can reach the
	// controller a moment after the others, and erin's first request
	// would go to global-default while her second, once the schema is in
	// force, finds her level free.
	inForce := func(user, level string) bool {
		a := &request.Attributes{
			Info: request.Info{IsResourceRequest: true, Verb: "get", APIVersion: "v1", Resource: "pods", Namespace: "shop", Name: "x"},
			User: request.User{Name: user, Groups: []string{request.AllAuthenticatedGroup}},
		}
		return rig.gw.server.ctl.Matcher().Classify(a).PriorityLevel.Name == level
	}
	if err := waitFor(10*time.Second, func() bool {
		return obsLevel(rig.gw, "one-queue") != nil && obsLevel(rig.gw, "one-reject") != nil &&
			inForce("dora", "one-queue") && inForce("erin", "one-reject")
	}); err != nil {
		t.Fatal("the controller never took the test levels and FlowSchemas")
	}
	return rig
}

// obsLevel returns the stats of a level in force, or nil.
func obsLevel(s *e2eServer, name string) *levelStats {
	for _, l := range s.server.ctl.Levels() {
		if l.Name == name && !l.Quiescing && l.Queue != nil {
			st := l.Queue.Stats()
			return &levelStats{waiting: st.WaitingRequests, limit: st.ConcurrencyLimit}
		}
	}
	return nil
}

type levelStats struct{ waiting, limit int }

// send sends one request as the holder of token with extra headers (name,
// value pairs) and returns its status.
func (rig *obsRig) send(method, path, token string, headers ...string) int {
	rig.t.Helper()
	req, err := http.NewRequest(method, rig.gw.url+path, nil)
	if err != nil {
		rig.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := rig.gw.client.Do(req)
	if err != nil {
		rig.t.Errorf("%s %s: %v", method, path, err)
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// occupy sends a held request as token's holder and returns once it is
// in the upstream, holding its level's only seat, with a function that
// lets it go and waits for its answer.
func (rig *obsRig) occupy(token, path string) (free func() int) {
	rig.t.Helper()
	done := make(chan int, 1)
	go func() { done <- rig.send(http.MethodGet, path, token) }()
	select {
	case <-rig.entered:
	case <-time.After(10 * time.Second):
		rig.t.Fatal("the held request never reached the upstream")
	}
	return func() int {
		rig.release <- path
		return <-done
	}
}

// queued sends a request of dora's while her level's seat is held: it
// waits in the queue until the held one is let go, and is then served.
func (rig *obsRig) queued(path string) int {
	rig.t.Helper()
	free := rig.occupy("token-dora", "/api/v1/namespaces/shop/pods/dora-first/hold")
	done := make(chan int, 1)
	go func() { done <- rig.send(http.MethodGet, path, "token-dora") }()
	if err := waitFor(10*time.Second, func() bool { l := obsLevel(rig.gw, "one-queue"); return l != nil && l.waiting == 1 }); err != nil {
		rig.t.Fatal("dora's second request never queued")
	}
	if code := free(); code != http.StatusOK {
		rig.t.Fatalf("the held request: %d", code)
	}
	return <-done
}

// rejected sends a request of erin's while her level's seat is held.
func (rig *obsRig) rejected(path string) int {
	rig.t.Helper()
	free := rig.occupy("token-erin", "/api/v1/namespaces/shop/pods/erin-first/hold")
	code := rig.send(http.MethodGet, path, "token-erin")
	if c := free(); c != http.StatusOK {
		rig.t.Fatalf("the held request: %d", c)
	}
	return code
}

// headersSeen returns the headers with which the upstream got path.
func (rig *obsRig) headersSeen(path string) []http.Header {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	return rig.seen[path]
}

// logBuffer is a Writer safe for the server's goroutines and the test.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
