package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/request"
)

// TestArrivalsCarryTheParsedQuery: workloads and audit logs are parsed
// once, when they are read; an arrival's list options and timeout travel in
// its attributes, where estimation and the wait limit read them.
func TestArrivalsCarryTheParsedQuery(t *testing.T) {
	want := request.ListOptions{Limit: 50, ResourceVersion: "0"}
	w, err := ParseWorkload([]byte(`
duration: 1s
clients:
- name: a
  user: alice
  arrival: {process: constant, rate: 10}
  requests:
  - {verb: list, resource: pods, namespace: default, query: "limit=50&resourceVersion=0&timeout=2s", share: 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	src, err := w.NewSource()
	if err != nil {
		t.Fatal(err)
	}
	a, ok, err := src.Next()
	if !ok || err != nil {
		t.Fatalf("no arrival: %v", err)
	}
	if in := a.Attributes.Info; in.Verb != request.VerbList || in.List != want || in.Timeout != 2*time.Second {
		t.Errorf("workload arrival: %+v", in)
	}

	log := `{"stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods?limit=50&resourceVersion=0&timeout=2s","verb":"list","user":{"username":"u"},"requestReceivedTimestamp":"2024-05-01T12:00:00Z","stageTimestamp":"2024-05-01T12:00:01Z"}`
	asrc, err := NewAuditSource(strings.NewReader(log), AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a, ok, err = asrc.Next(); !ok || err != nil {
		t.Fatalf("no audit arrival: %v", err)
	}
	if in := a.Attributes.Info; in.Verb != request.VerbList || in.List != want || in.Timeout != 2*time.Second {
		t.Errorf("audit arrival: %+v", in)
	}
}
