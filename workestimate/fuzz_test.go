package workestimate

import (
	"testing"
)

// FuzzEstimate checks that any query (read by request.Parse) and verb give
// an estimate within [min, max] seats and never panic.
func FuzzEstimate(f *testing.F) {
	f.Add("list", "pods", "limit=5&resourceVersion=3", 0)
	f.Add("watch", "pods", "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", 7)
	f.Add("create", "pods", "", 3)
	f.Add("list", "deployments", "limit=%zz&fieldSelector=a%3D", 200)
	tr := listTracker()
	wt := NewWatchTracker()
	for range 25 {
		wt.Register(watchInfo("", "pods", "", "", ""))
	}
	e := New(DefaultConfig(), tr, wt)
	f.Fuzz(func(t *testing.T, verb, resource, query string, levelMax int) {
		in := withQuery(t, info(verb, "", resource, "ns", ""), query)
		est := e.estimateAt(t0, in, levelMax)
		hi := 100
		if levelMax > 0 && levelMax < hi {
			hi = levelMax
		}
		if est.InitialSeats < 1 || est.InitialSeats > hi || est.FinalSeats < 0 || est.FinalSeats > hi || est.AdditionalLatency < 0 {
			t.Fatalf("%s %s?%s max %d: %+v", verb, resource, query, levelMax, est)
		}
	})
}
