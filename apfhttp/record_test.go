package apfhttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/fairqueue"
)

type recordKey struct{}

// Options.Record receives what APF did: the classification of a served
// request with its execution time once the handler returned (a watch's
// once its initial phase ended), a rejection with its reason, and nothing
// for a long-running request that bypasses APF.
func TestMiddlewareRecord(t *testing.T) {
	c := newController(t)
	limit := tightLevel(c).Queue.Stats().ConcurrencyLimit
	block := make(chan struct{})
	entered := make(chan struct{}, 16)
	// What the handler sees of the record while it runs: the admission is
	// filled in, the execution time is not yet.
	var during controller.Record
	h := Middleware(c, Options{Record: func(r *http.Request) *controller.Record {
		rec, _ := r.Context().Value(recordKey{}).(*controller.Record)
		return rec
	}})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rec, _ := r.Context().Value(recordKey{}).(*controller.Record); rec != nil {
			during = *rec
		}
		if r.URL.Path == "/block" {
			entered <- struct{}{}
			<-block
		}
		w.WriteHeader(200)
	}))
	serve := func(target string, rec *controller.Record) int {
		r := req("GET", target, "elephant")
		if rec != nil {
			r = r.WithContext(context.WithValue(r.Context(), recordKey{}, rec))
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}

	var served controller.Record
	if code := serve("/api/v1/namespaces/ns/pods/p", &served); code != 200 {
		t.Fatalf("answered %d", code)
	}
	if served.Outcome != controller.OutcomeDispatched || served.FlowSchema != "tight" || served.PriorityLevelUID != "pl-uid" ||
		served.Queue != -1 || served.Estimate.InitialSeats != 1 {
		t.Fatalf("served: %+v", served)
	}
	if during.Outcome != controller.OutcomeDispatched || during.Execution != 0 {
		t.Fatalf("seen by the handler: %+v", during)
	}

	// Fill the level and be refused.
	var blocked sync.WaitGroup
	for range limit {
		blocked.Go(func() { serve("/block", nil) })
		<-entered
	}
	var refused controller.Record
	if code := serve("/api/v1/namespaces/ns/pods/p", &refused); code != http.StatusTooManyRequests {
		t.Fatalf("answered %d", code)
	}
	if refused.Outcome != controller.OutcomeRejected || refused.Reason != fairqueue.ConcurrencyLimit || refused.RetryAfter < 1 {
		t.Fatalf("refused: %+v", refused)
	}
	// The level's seats come back once the blocked requests are over.
	close(block)
	blocked.Wait()

	// A long-running request other than a watch does not go through APF.
	var bypass controller.Record
	if code := serve("/api/v1/namespaces/ns/pods/p/exec", &bypass); code != 200 {
		t.Fatalf("exec answered %d", code)
	}
	if bypass.Outcome != controller.OutcomeNone {
		t.Fatalf("exec: %+v", bypass)
	}
	// Without a record, nothing is recorded and nothing breaks.
	if code := serve("/api/v1/namespaces/ns/pods/p", nil); code != 200 {
		t.Fatalf("answered %d", code)
	}
}
