package apfhttp

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/request"
)

const tight = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: tight, uid: pl-uid}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 100
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: tight, uid: fs-uid}
spec:
  priorityLevelConfiguration: {name: tight}
  matchingPrecedence: 100
  rules:
  - subjects: [{kind: User, user: {name: elephant}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`

func newController(t *testing.T) *controller.Controller {
	t.Helper()
	objs, err := config.Decode([]byte(tight), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Config{ServerConcurrencyLimit: 2, Source: controller.StaticSource(objs)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func tightLevel(c *controller.Controller) controller.LevelView {
	for _, l := range c.Levels() {
		if l.Name == "tight" {
			return l
		}
	}
	return controller.LevelView{}
}

func req(method, target, user string) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	if user != "" {
		r = r.WithContext(request.WithUser(r.Context(), &request.User{Name: user, Groups: []string{"system:authenticated"}}))
	}
	return r
}

func TestHeadersAnd429(t *testing.T) {
	c := newController(t)
	limit := tightLevel(c).Queue.Stats().ConcurrencyLimit
	block := make(chan struct{})
	entered := make(chan struct{}, 16)
	h := Middleware(c, Options{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			entered <- struct{}{}
			<-block
		}
		w.WriteHeader(200)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req("GET", "/api/v1/pods", "elephant"))
	if rec.Code != 200 || rec.Header().Get(FlowSchemaUIDHeader) != "fs-uid" || rec.Header().Get(PriorityLevelUIDHeader) != "pl-uid" {
		t.Fatalf("200: %d %v", rec.Code, rec.Header())
	}
	done := make(chan struct{})
	for range limit {
		go func() { h.ServeHTTP(httptest.NewRecorder(), req("GET", "/block", "elephant")); done <- struct{}{} }()
		<-entered
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req("GET", "/api/v1/pods", "elephant"))
	want := "Too many requests, please try again later.\n"
	if rec.Code != 429 || rec.Body.String() != want ||
		rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" ||
		rec.Header().Get("X-Content-Type-Options") != "nosniff" ||
		rec.Header().Get("Retry-After") != "1" ||
		rec.Header().Get(FlowSchemaUIDHeader) != "fs-uid" || rec.Header().Get(PriorityLevelUIDHeader) != "pl-uid" {
		t.Fatalf("429: %d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}
	close(block)
	for range limit {
		<-done
	}
	if !tightLevel(c).Queue.IsIdle() {
		t.Fatal("seats leaked")
	}
}

func TestPanicReleases(t *testing.T) {
	c := newController(t)
	h := Middleware(c, Options{})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	func() {
		defer func() {
			if recover() != "boom" {
				t.Fatal("panic not re-raised")
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), req("GET", "/api/v1/pods", "elephant"))
	}()
	if !tightLevel(c).Queue.IsIdle() {
		t.Fatal("seats leaked")
	}
}

func TestBypassAnd500(t *testing.T) {
	c := newController(t)
	h := Middleware(c, Options{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req("GET", "/api/v1/namespaces/d/pods/p/log", "elephant"))
	if rec.Code != 200 || rec.Header().Get(FlowSchemaUIDHeader) != "" {
		t.Fatalf("bypass: %d %v", rec.Code, rec.Header())
	}
	if len(rec.Header().Values(FlowSchemaUIDHeader)) != 0 {
		t.Fatal("bypass got PF headers")
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req("GET", "/api/v1/pods", ""))
	if rec.Code != 500 || rec.Body.String() != "Internal Server Error: \"/api/v1/pods\"\n" {
		t.Fatalf("no user: %d %q", rec.Code, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req("GET", "/api/v1/watch", "elephant"))
	if rec.Code != 500 {
		t.Fatalf("parse error: %d", rec.Code)
	}
}

// Under request.Service, kube-apiserver's long-running paths and watches
// are the service's ordinary calls: admitted, their seats held until the
// handler returns.
func TestServicePolicyHasNoBypass(t *testing.T) {
	c := newController(t)
	var busyAfter []bool
	h := Middleware(c, Options{LongRunning: request.Service})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		busyAfter = append(busyAfter, !tightLevel(c).Queue.IsIdle())
	}))
	for _, p := range []string{"/api/v1/namespaces/d/pods/p/log", "/api/v1/namespaces/d/pods/p/exec", "/api/v1/pods?watch=1", "/debug/pprof/profile"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req("GET", p, "elephant"))
		if rec.Code != 200 || rec.Header().Get(PriorityLevelUIDHeader) != "pl-uid" {
			t.Errorf("%s: %d %v, want admitted with the PF headers", p, rec.Code, rec.Header())
		}
		if len(busyAfter) == 0 || !busyAfter[len(busyAfter)-1] {
			t.Errorf("%s: seats given back at the first flush, want held until the handler returns", p)
		}
		if !tightLevel(c).Queue.IsIdle() {
			t.Errorf("%s: seats still held after the handler returned", p)
		}
	}
}

func TestWatchReleasesAtFirstFlush(t *testing.T) {
	c := newController(t)
	var busyAfter bool
	h := Middleware(c, Options{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tightLevel(c).Queue.IsIdle() {
			t.Error("watch holds no seat in its initial phase")
		}
		w.(http.Flusher).Flush()
		busyAfter = !tightLevel(c).Queue.IsIdle()
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req("GET", "/api/v1/pods?watch=1", "elephant"))
	if busyAfter || rec.Header().Get(PriorityLevelUIDHeader) != "pl-uid" {
		t.Fatalf("watch: busy after flush %v, headers %v", busyAfter, rec.Header())
	}
}

func TestMaxInflight(t *testing.T) {
	block := make(chan struct{})
	entered := make(chan struct{})
	h := MaxInflight(1, 1)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			entered <- struct{}{}
			<-block
		}
	}))
	done := make(chan struct{})
	go func() { h.ServeHTTP(httptest.NewRecorder(), req("GET", "/block", "u")); close(done) }()
	<-entered
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req("GET", "/api/v1/pods", "u"))
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "1" || rec.Body.String() != "Too many requests, please try again later.\n" {
		t.Fatalf("full: %d %v", rec.Code, rec.Header())
	}
	// Mutating has its own semaphore; long-running bypasses; masters pass.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req("POST", "/api/v1/namespaces/d/pods", "u"))
	if rec.Code != 200 {
		t.Fatalf("mutating: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req("GET", "/api/v1/pods?watch=true", "u"))
	if rec.Code != 200 {
		t.Fatalf("watch: %d", rec.Code)
	}
	r := httptest.NewRequest("GET", "/api/v1/pods", nil)
	r = r.WithContext(request.WithUser(r.Context(), &request.User{Name: "root", Groups: []string{"system:masters"}}))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != 200 {
		t.Fatalf("masters: %d", rec.Code)
	}
	close(block)
	<-done
}
