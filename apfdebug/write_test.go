package apfdebug

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apfproject/apf/fairqueue"
)

// -update rewrites the golden files from the writers. The committed files
// were derived from the format rules by hand (column width = max(8, widest
// cell + 1), last cell unpadded); review any regenerated diff by eye.
var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s mismatch\n--- got ---\n%s--- want ---\n%s", name, got, want)
	}
}

func idleLevel(name string) PriorityLevel { return PriorityLevel{Name: name, IsIdle: true} }

func TestWritePriorityLevels(t *testing.T) {
	tests := []struct {
		golden string
		rows   []PriorityLevel
	}{
		{
			// The example of docs/spec/observability.md#priority-levels-dump;
			// input deliberately unsorted.
			golden: "priority_levels_idle.golden",
			rows:   []PriorityLevel{idleLevel("global-default"), idleLevel("exempt"), idleLevel("catch-all")},
		},
		{
			golden: "priority_levels_busy.golden",
			rows: []PriorityLevel{
				{Name: "workload-high", IsIdle: true, DispatchedRequests: 1},
				{Name: "kube-system-service-accounts", ActiveQueues: 12, IsQuiescing: true,
					WaitingRequests: 1234567, ExecutingRequests: 8, DispatchedRequests: 99,
					RejectedRequests: 5, CancelledRequests: 3},
				{Name: "exempt", ExecutingRequests: 4, DispatchedRequests: 17},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			first := tc.rows[0]
			var buf bytes.Buffer
			if err := WritePriorityLevels(&buf, tc.rows); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.golden, buf.Bytes())
			if tc.rows[0] != first {
				t.Error("WritePriorityLevels reordered its input")
			}
		})
	}
}

func TestWritePriorityLevelsEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WritePriorityLevels(&buf, nil); err != nil {
		t.Fatal(err)
	}
	// A lone header line is still aligned: every cell but the last padded.
	const want = "PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests, DispatchedRequests, RejectedRequests, TimedoutRequests, CancelledRequests\n"
	if buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}

func TestWriteQueues(t *testing.T) {
	rows := []Queue{
		{PriorityLevel: "workload-low", Index: 0},
		{PriorityLevel: "workload-low", Index: 1, PendingRequests: 2, ExecutingRequests: 1, SeatsInUse: 3,
			NextDispatchR: 123456789012, InitialSeatsSum: 4, MaxSeatsSum: 6, TotalWorkSum: 1234567890},
		{PriorityLevel: "leader-election", Index: 15},
	}
	var buf bytes.Buffer
	if err := WriteQueues(&buf, rows); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "queues.golden", buf.Bytes())
}

func requestRows() []Request {
	plus2 := time.FixedZone("UTC+2", 2*60*60)
	return []Request{
		{ // waiting
			PriorityLevel: "workload-low", FlowSchema: "service-accounts",
			QueueIndex: 3, IndexInQueue: 0, FlowDistinguisher: "alice",
			// Not UTC on purpose: the dump converts.
			ArriveTime:   time.Date(2026, 1, 2, 5, 4, 5, 123456789, plus2),
			InitialSeats: 1,
			Details: &RequestDetails{UserName: "alice", Verb: "list", APIPath: "/api/v1/namespaces/default/pods",
				Namespace: "default", APIVersion: groupVersion("", "v1"), Resource: "pods"},
		},
		{ // executing in a queue
			PriorityLevel: "workload-low", FlowSchema: "service-accounts",
			QueueIndex: 3, IndexInQueue: -1, FlowDistinguisher: "bob",
			ArriveTime:   time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC),
			InitialSeats: 10, FinalSeats: 5, AdditionalLatency: 7500 * time.Microsecond,
			StartTime: time.Date(2026, 1, 2, 3, 4, 0, 500_000_000, time.UTC),
			Details: &RequestDetails{UserName: "bob", Verb: "get",
				APIPath:   "/apis/apps/v1/namespaces/kube-system/deployments/coredns/scale",
				Namespace: "kube-system", Name: "coredns", APIVersion: groupVersion("apps", "v1"),
				Resource: "deployments", Subresource: "scale"},
		},
		{ // queueless (exempt), no details known
			PriorityLevel: "exempt", FlowSchema: "exempt",
			QueueIndex: -1, IndexInQueue: -1,
			ArriveTime:   time.Date(2026, 1, 2, 3, 4, 6, 1000, time.UTC),
			InitialSeats: 1,
			StartTime:    time.Date(2026, 1, 2, 3, 4, 6, 2000, time.UTC),
		},
	}
}

func TestWriteRequests(t *testing.T) {
	for _, tc := range []struct {
		golden  string
		details bool
	}{
		{"requests.golden", false},
		{"requests_details.golden", true},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteRequests(&buf, requestRows(), tc.details); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.golden, buf.Bytes())
		})
	}
}

func TestGroupVersion(t *testing.T) {
	for _, tc := range []struct{ group, version, want string }{
		{"", "v1", "v1"},
		{"apps", "v1", "apps/v1"},
		{"flowcontrol.apiserver.k8s.io", "v1", "flowcontrol.apiserver.k8s.io/v1"},
		{"", "", ""},
	} {
		if got := groupVersion(tc.group, tc.version); got != tc.want {
			t.Errorf("GroupVersion(%q, %q) = %q, want %q", tc.group, tc.version, got, tc.want)
		}
	}
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

func TestWriteErrors(t *testing.T) {
	boom := errors.New("boom")
	w := failWriter{boom}
	if err := WritePriorityLevels(w, []PriorityLevel{idleLevel("a")}); !errors.Is(err, boom) {
		t.Errorf("WritePriorityLevels: got %v", err)
	}
	if err := WriteQueues(w, []Queue{{PriorityLevel: "a"}}); !errors.Is(err, boom) {
		t.Errorf("WriteQueues: got %v", err)
	}
	if err := WriteRequests(w, requestRows(), true); !errors.Is(err, boom) {
		t.Errorf("WriteRequests: got %v", err)
	}
}

func TestFromDump(t *testing.T) {
	arrive := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d := fairqueue.Dump{
		Stats: fairqueue.Stats{WaitingRequests: 1, ExecutingRequests: 2, ActiveQueues: 1,
			Dispatched: 7, Rejected: 3, Cancelled: 2},
		Queues: []fairqueue.QueueDump{
			{Index: 0, PendingRequests: 1, ExecutingRequests: 1, SeatsInUse: 2,
				NextDispatchR: 5, InitialSeatsSum: 1, MaxSeatsSum: 1, TotalWorkSum: 9},
			{Index: 1},
		},
		Requests: []fairqueue.RequestDump{
			{QueueIndex: 0, IndexInQueue: 0, Tag: "fs-a", ArriveTime: arrive, InitialSeats: 1},
			{QueueIndex: -1, IndexInQueue: -1, Tag: "fs-b", ArriveTime: arrive, StartTime: arrive,
				InitialSeats: 2, FinalSeats: 1, AdditionalLatency: time.Millisecond},
		},
	}
	pl := priorityLevelFromDump("p", true, d)
	wantPL := PriorityLevel{Name: "p", ActiveQueues: 1, IsQuiescing: true, WaitingRequests: 1,
		ExecutingRequests: 2, DispatchedRequests: 7, RejectedRequests: 3, CancelledRequests: 2}
	if pl != wantPL {
		t.Errorf("PriorityLevelFromDump = %+v, want %+v", pl, wantPL)
	}

	qs := appendQueues([]Queue{{PriorityLevel: "earlier"}}, "p", d)
	if len(qs) != 3 || qs[0].PriorityLevel != "earlier" {
		t.Fatalf("AppendQueues = %+v", qs)
	}
	wantQ := Queue{PriorityLevel: "p", Index: 0, PendingRequests: 1, ExecutingRequests: 1, SeatsInUse: 2,
		NextDispatchR: 5, InitialSeatsSum: 1, MaxSeatsSum: 1, TotalWorkSum: 9}
	if qs[1] != wantQ || qs[2] != (Queue{PriorityLevel: "p", Index: 1}) {
		t.Errorf("AppendQueues = %+v", qs)
	}

	details := &RequestDetails{UserName: "u"}
	tag := func(tag any, includeDetails bool) (string, string, *RequestDetails) {
		if !includeDetails {
			return tag.(string), "d", nil
		}
		return tag.(string), "d", details
	}
	rs := appendRequests(nil, "p", d, true, tag)
	if len(rs) != 2 {
		t.Fatalf("AppendRequests = %+v", rs)
	}
	want0 := Request{PriorityLevel: "p", FlowSchema: "fs-a", QueueIndex: 0, IndexInQueue: 0,
		FlowDistinguisher: "d", ArriveTime: arrive, InitialSeats: 1, Details: details}
	want1 := Request{PriorityLevel: "p", FlowSchema: "fs-b", QueueIndex: -1, IndexInQueue: -1,
		FlowDistinguisher: "d", ArriveTime: arrive, StartTime: arrive, InitialSeats: 2, FinalSeats: 1,
		AdditionalLatency: time.Millisecond, Details: details}
	if rs[0] != want0 || rs[1] != want1 {
		t.Errorf("AppendRequests = %+v", rs)
	}
	if rs := appendRequests(nil, "p", d, false, nil); rs[0].FlowSchema != "" || rs[0].Details != nil {
		t.Errorf("AppendRequests with nil TagFunc = %+v", rs[0])
	}
}
