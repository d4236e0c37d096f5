package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestFlowCounts: Counts reads what the request path counted, without
// creating series for counters never used, and reads 0 after the pair is
// deleted.
func TestFlowCounts(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	f := s.Flow("pl", "fs")
	if got := f.Counts(); got != (FlowCounts{}) {
		t.Fatalf("fresh counts %+v", got)
	}
	f.Dispatched.Add(3)
	f.RejectedQueueFull.Inc()
	f.RejectedTimeOut.Add(2)
	got := f.Counts()
	if got != (FlowCounts{Dispatched: 3, QueueFull: 1, TimeOut: 2}) || got.Rejected() != 3 {
		t.Fatalf("counts %+v", got)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range fams {
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reasonConcurrencyLimit {
					t.Errorf("reading created the unused series %s", fam.GetName())
				}
			}
		}
	}
	s.DeleteFlow("pl", "fs")
	if g := s.Flow("pl", "fs").Counts(); g != (FlowCounts{}) {
		t.Errorf("after deletion, a new pair reads %+v", g)
	}
}
