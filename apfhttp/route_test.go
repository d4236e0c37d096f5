package apfhttp

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/request"
)

// A request a route made long-running is admitted, offered to Hold, and
// gives its seats back at its first output while it goes on; one Hold
// refuses gets Hold's answer and its seats back at once. Without Hold it
// is held all the same. It bypasses MaxInflight, as kube's long-running
// requests do.
func TestRoutedLongRunning(t *testing.T) {
	c := newController(t)
	seatsInUse := func() int { return tightLevel(c).Queue.Stats().SeatsInUse }
	routed := func() *http.Request {
		a := &request.Attributes{Info: request.Info{Path: "/events/x", Verb: "get"}, Route: request.Route{Name: "events", LongRunning: true}}
		return withAttrs(req("GET", "/events/x", "elephant"), a)
	}
	var held []string
	refuse := false
	hold := func(w http.ResponseWriter, r *http.Request, t *controller.Ticket) (func(), bool) {
		if refuse {
			w.WriteHeader(http.StatusTooManyRequests)
			return nil, false
		}
		held = append(held, t.FlowSchema+"/"+t.PriorityLevel)
		return func() { held = held[:len(held)-1] }, true
	}
	var during []int
	mw := Middleware(c, Options{Hold: hold})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		during = append(during, seatsInUse())
		w.WriteHeader(http.StatusOK)
		during = append(during, seatsInUse(), len(held))
	}))
	rec := httptest.NewRecorder()
	mw.ServeHTTP(rec, routed())
	if rec.Code != 200 || rec.Header().Get(FlowSchemaUIDHeader) != "fs-uid" {
		t.Fatalf("routed: %d %v", rec.Code, rec.Header())
	}
	if len(during) != 3 || during[0] != 1 || during[1] != 0 || during[2] != 1 {
		t.Fatalf("seats before and after the first output, and held: %v, want [1 0 1]", during)
	}
	if len(held) != 0 || seatsInUse() != 0 {
		t.Fatalf("after the end: held %v, %d seats", held, seatsInUse())
	}
	refuse, during = true, nil
	rec = httptest.NewRecorder()
	mw.ServeHTTP(rec, routed())
	if rec.Code != http.StatusTooManyRequests || during != nil || seatsInUse() != 0 {
		t.Fatalf("refused by Hold: %d, handler ran %v, %d seats", rec.Code, during, seatsInUse())
	}

	// The route's seats price the request (bounded by the level's
	// maximum seats per request).
	var seats int
	priced := Middleware(c, Options{})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { seats = seatsInUse() }))
	a := &request.Attributes{Info: request.Info{Path: "/heavy", Verb: "get"}, Route: request.Route{Seats: 2}}
	priced.ServeHTTP(httptest.NewRecorder(), withAttrs(req("GET", "/heavy", "elephant"), a))
	if seats != 2 {
		t.Fatalf("a route of 2 seats held %d", seats)
	}

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
	rec = httptest.NewRecorder()
	mi.ServeHTTP(rec, routed())
	close(block)
	<-done
	if rec.Code != 200 {
		t.Fatalf("max-inflight full, a routed long-running request: %d", rec.Code)
	}
}
