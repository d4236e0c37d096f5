package apfhttp

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/apfproject/apf/request"
)

// withAttrs returns r carrying a as its attributes, as an edge filter in
// front would have stored them.
func withAttrs(r *http.Request, a *request.Attributes) *http.Request {
	return r.WithContext(request.WithAttributes(r.Context(), a))
}

func TestWithRequestAttributes(t *testing.T) {
	var seen []*request.Attributes
	h := WithRequestAttributes(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := request.AttributesFrom(r.Context())
		if !ok {
			t.Error("no attributes in the context")
		}
		seen = append(seen, a)
	}))

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req("GET", "/api/v1/namespaces/ns/pods?limit=5&continue=c&timeout=3s", "alice"))
	if rec.Code != 200 || len(seen) != 1 {
		t.Fatalf("%d, %d calls", rec.Code, len(seen))
	}
	want, _ := request.Parse("GET", "/api/v1/namespaces/ns/pods", "limit=5&continue=c&timeout=3s")
	if a := seen[0]; a.Info != want || a.User.Name != "alice" {
		t.Fatalf("attributes %+v, want %+v and user alice", a, want)
	}
	if a := seen[0]; a.Info.List.Limit != 5 || !a.Info.List.Continue || a.Info.Timeout != 3*time.Second {
		t.Fatalf("query not read: %+v", a.Info)
	}

	// A request that does not parse gets upstream's 500 at the edge.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req("GET", "/api/v1/watch?x=1", "alice"))
	if rec.Code != 500 || rec.Body.String() != "Internal Server Error: \"/api/v1/watch?x=1\": failed to create RequestInfo: unable to determine kind and namespace from url, /api/v1/watch?x=1\n" || len(seen) != 1 {
		t.Fatalf("unparsable: %d %q, %d calls", rec.Code, rec.Body.String(), len(seen))
	}

	// Attributes already in the context are kept, and not parsed again:
	// these do not match the path, which does not even parse.
	mine := &request.Attributes{Info: request.Info{Path: "/mine", Verb: "get"}}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, withAttrs(req("GET", "/api/v1/watch", ""), mine))
	if rec.Code != 200 || len(seen) != 2 || seen[1] != mine || mine.Info.Path != "/mine" {
		t.Fatalf("existing attributes: %d, %d calls, %p (want %p) %+v", rec.Code, len(seen), seen[len(seen)-1], mine, mine.Info)
	}
}

// TestFiltersReadContextAttributes gives Middleware and MaxInflight
// attributes in the context for a path that does not parse: had either
// parsed the request again it would have answered 500.
func TestFiltersReadContextAttributes(t *testing.T) {
	c := newController(t)
	var inner *request.Attributes
	mw := Middleware(c, Options{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner, _ = request.AttributesFrom(r.Context())
	}))
	a := &request.Attributes{Info: request.Info{Path: "/healthz", Verb: "get"}}
	rec := httptest.NewRecorder()
	mw.ServeHTTP(rec, withAttrs(req("GET", "/api/v1/watch", "elephant"), a))
	if rec.Code != 200 || rec.Header().Get(FlowSchemaUIDHeader) != "fs-uid" {
		t.Fatalf("middleware: %d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}
	// The user it classified is on the same attributes, for the filters
	// after it.
	if inner != a || a.User.Name != "elephant" {
		t.Fatalf("middleware: the handler sees %p (want %p), user %q", inner, a, a.User.Name)
	}

	// Long-running attributes bypass MaxInflight even when it is full.
	block, entered := make(chan struct{}), make(chan struct{})
	mi := MaxInflight(1, 1)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			entered <- struct{}{}
			<-block
		}
	}))
	done := make(chan struct{})
	go func() { mi.ServeHTTP(httptest.NewRecorder(), req("GET", "/block", "u")); close(done) }()
	<-entered
	watch := &request.Attributes{Info: request.Info{IsResourceRequest: true, Verb: "watch", APIVersion: "v1", Resource: "pods"}}
	rec = httptest.NewRecorder()
	mi.ServeHTTP(rec, withAttrs(req("GET", "/api/v1/watch", "u"), watch))
	if rec.Code != 200 {
		t.Fatalf("max-inflight, long-running attributes: %d %q", rec.Code, rec.Body.String())
	}
	// A read-only request waits its turn: the attributes decide the class.
	list := &request.Attributes{Info: request.Info{IsResourceRequest: true, Verb: "list", APIVersion: "v1", Resource: "pods"}}
	rec = httptest.NewRecorder()
	mi.ServeHTTP(rec, withAttrs(req("POST", "/api/v1/watch", "u"), list))
	if rec.Code != 429 {
		t.Fatalf("max-inflight, list attributes on a POST: %d", rec.Code)
	}
	close(block)
	<-done
	rec = httptest.NewRecorder()
	mi.ServeHTTP(rec, req("GET", "/api/v1/watch", "u"))
	if rec.Code != 500 {
		t.Fatalf("max-inflight without attributes, unparsable: %d", rec.Code)
	}
}

// TestMiddlewareAllocations pins the cost of the two ways in: Middleware
// alone parses the request on its stack and allocates nothing for it;
// behind WithRequestAttributes it reads them from the context.
func TestMiddlewareAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	c := newController(t)
	noop := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	mw := Middleware(c, Options{})(noop)
	w := &nopWriter{h: http.Header{}}
	r := req("GET", "/api/v1/namespaces/ns/pods/p", "mouse")
	mw.ServeHTTP(w, r)
	if n := testing.AllocsPerRun(200, func() { mw.ServeHTTP(w, r) }); n != 0 {
		t.Errorf("Middleware alone allocates %v times per request, want 0", n)
	}
	parsed := withAttrs(r, &request.Attributes{Info: mustParse(t, "GET", "/api/v1/namespaces/ns/pods/p", "")})
	if n := testing.AllocsPerRun(200, func() { mw.ServeHTTP(w, parsed) }); n != 0 {
		t.Errorf("Middleware behind the edge allocates %v times per request, want 0", n)
	}
}

func mustParse(t *testing.T, method, path, query string) request.Info {
	t.Helper()
	info, err := request.Parse(method, path, query)
	if err != nil {
		t.Fatal(err)
	}
	return info
}
