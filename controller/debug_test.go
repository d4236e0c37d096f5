package controller_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/apfdebug"
	"github.com/apfproject/apf/config"
	. "github.com/apfproject/apf/controller"
)

// debugFixture: the "queued" level (1 queue) with its limit executing and
// one waiter, and one exempt request executing.
func debugFixture(t *testing.T) (c *Controller, cleanup func()) {
	t.Helper()
	// Two queues, so that the level distinguishes flows.
	m := strings.Replace(Manifests(false), "matchingPrecedence: 200", "matchingPrecedence: 200\n  distinguisherMethod: {type: ByUser}", 1)
	m = strings.Replace(m, "queues: 1,", "queues: 2,", 1)
	c, clk := NewTest(t, StaticSource(Decode(t, m)), 12)
	q := LevelNamed(c, "queued").Queue
	limit := q.Stats().ConcurrencyLimit
	ctx := context.Background()
	var held []*Ticket
	for range limit {
		tk, err := c.Admit(ctx, Attrs(t, "mouse", "GET", "/api/v1/namespaces/ns/pods/p", ""))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, tk)
	}
	clk.Advance(time.Second)
	root := Attrs(t, "root", "DELETE", "/apis/apps/v1/namespaces/kube-system/deployments/coredns/scale", "")
	root.User.Groups = []string{"system:masters"}
	ex, err := c.Admit(ctx, root)
	if err != nil || ex.PriorityLevel != "exempt" {
		t.Fatalf("exempt: %v", err)
	}
	clk.Advance(time.Second)
	errs := make(chan error, 1)
	go func() {
		tk, err := c.Admit(ctx, Attrs(t, "mouse", "GET", "/healthz", ""))
		if err == nil {
			tk.Done()
		}
		errs <- err
	}()
	WaitFor(t, "waiter", func() bool { return q.Stats().WaitingRequests == 1 })
	return c, func() {
		for _, tk := range held {
			tk.Done()
		}
		if err := <-errs; err != nil {
			t.Error(err)
		}
		ex.Done()
	}
}

func get(t *testing.T, srv *httptest.Server, path string) string {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d", path, resp.StatusCode)
	}
	for k, want := range map[string]string{
		"Content-Type":           "text/plain; charset=utf-8",
		"X-Content-Type-Options": "nosniff",
		"Content-Length":         strconv.Itoa(len(body)),
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s: %s = %q, want %q", path, k, got, want)
		}
	}
	return string(body)
}

func TestDebugDumps(t *testing.T) {
	c, cleanup := debugFixture(t)
	defer cleanup()
	srv := httptest.NewServer(apfdebug.Handler(apfdebug.FromController(c)))
	defer srv.Close()

	wantLevels := `PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests, DispatchedRequests, RejectedRequests, TimedoutRequests, CancelledRequests
catch-all,         0,            true,   false,       0,               0,                 0,                  0,                0,                0
exempt,            0,            false,  false,       0,               1,                 1,                  0,                0,                0
queued,            1,            false,  false,       1,               12,                12,                 0,                0,                0
`
	if got := get(t, srv, apfdebug.PathPriorityLevels); got != wantLevels {
		t.Errorf("dump_priority_levels:\n%s\nwant:\n%s", got, wantLevels)
	}
	// The mouse flow's hand is queue 0.
	wantQueues := `PriorityLevelName, Index,  PendingRequests, ExecutingRequests, SeatsInUse, NextDispatchR, InitialSeatsSum, MaxSeatsSum, TotalWorkSum
queued,            0,      1,               12,                12,         24.00000000ss, 1,               1,           0.00300000ss
queued,            1,      0,               0,                 0,          0.00000000ss,  0,               0,           0.00000000ss
`
	if got := get(t, srv, apfdebug.PathQueues); got != wantQueues {
		t.Errorf("dump_queues:\n%s\nwant:\n%s", got, wantQueues)
	}
	if qs := apfdebug.FromController(c).DumpQueues(); len(qs) != 2 || qs[1] != (apfdebug.Queue{PriorityLevel: "queued", Index: 1}) || qs[0] != (apfdebug.Queue{
		PriorityLevel: "queued", PendingRequests: 1, ExecutingRequests: 12, SeatsInUse: 12,
		NextDispatchR: 24 * 100_000_000, InitialSeatsSum: 1, MaxSeatsSum: 1, TotalWorkSum: 300_000,
	}) {
		t.Errorf("queue rows %+v", qs)
	}

	rows := apfdebug.FromController(c).DumpRequests(true)
	if len(rows) != 14 {
		t.Fatalf("%d request rows", len(rows))
	}
	t1, t2 := T0.Add(time.Second), T0.Add(2*time.Second)
	want := apfdebug.Request{
		PriorityLevel: "exempt", FlowSchema: "exempt", QueueIndex: -1, IndexInQueue: -1,
		ArriveTime: t1, InitialSeats: 1, StartTime: t1,
		Details: &apfdebug.RequestDetails{
			UserName: "root", Verb: "delete", APIPath: "/apis/apps/v1/namespaces/kube-system/deployments/coredns/scale",
			Namespace: "kube-system", Name: "coredns", APIVersion: "apps/v1", Resource: "deployments", Subresource: "scale",
		},
	}
	checkRow(t, rows[0], want)
	want = apfdebug.Request{
		PriorityLevel: "queued", FlowSchema: "queued", QueueIndex: 0, IndexInQueue: 0, FlowDistinguisher: "mouse",
		ArriveTime: t2, InitialSeats: 1,
		Details: &apfdebug.RequestDetails{UserName: "mouse", Verb: "get", APIPath: "/healthz"},
	}
	checkRow(t, rows[1], want)
	for _, r := range rows[2:] {
		want = apfdebug.Request{
			PriorityLevel: "queued", FlowSchema: "queued", QueueIndex: 0, IndexInQueue: -1, FlowDistinguisher: "mouse",
			ArriveTime: T0, InitialSeats: 1, StartTime: T0,
			Details: &apfdebug.RequestDetails{
				UserName: "mouse", Verb: "get", APIPath: "/api/v1/namespaces/ns/pods/p",
				Namespace: "ns", Name: "p", APIVersion: "v1", Resource: "pods",
			},
		}
		checkRow(t, r, want)
	}
	for _, r := range apfdebug.FromController(c).DumpRequests(false) {
		if r.Details != nil || r.FlowSchema == "" {
			t.Errorf("row without details %+v", r)
		}
	}
	for _, details := range []bool{false, true} {
		path := apfdebug.PathRequests
		if details {
			path += "?includeRequestDetails=1"
		}
		var b bytes.Buffer
		if err := apfdebug.WriteRequests(&b, apfdebug.FromController(c).DumpRequests(details), details); err != nil {
			t.Fatal(err)
		}
		if got := get(t, srv, path); got != b.String() {
			t.Errorf("%s:\n%s\nwant:\n%s", path, got, b.String())
		}
	}
	body := get(t, srv, apfdebug.PathRequests+"?includeRequestDetails=1")
	if !strings.Contains(body, "apps/v1,    deployments, scale\n") || strings.Count(body, "\n") != 15 {
		t.Errorf("details dump:\n%s", body)
	}
}

func checkRow(t *testing.T, got, want apfdebug.Request) {
	t.Helper()
	gd, wd := got.Details, want.Details
	got.Details, want.Details = nil, nil
	if !got.ArriveTime.Equal(want.ArriveTime) || !got.StartTime.Equal(want.StartTime) {
		t.Errorf("times %+v, want %+v", got, want)
	}
	got.ArriveTime, got.StartTime, want.ArriveTime, want.StartTime = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if got != want || (gd == nil) != (wd == nil) || (gd != nil && *gd != *wd) {
		t.Errorf("row %+v %+v, want %+v %+v", got, gd, want, wd)
	}
}

// A level that leaves the configuration while it holds requests is still
// dumped, as quiescing.
func TestDebugDumpQuiescing(t *testing.T) {
	src := &quietSource{objs: Decode(t, Manifests(true))}
	c, _ := NewTest(t, src, 21)
	tk, err := c.Admit(context.Background(), Attrs(t, "elephant", "GET", "/healthz", ""))
	if err != nil || tk.PriorityLevel != "tight" {
		t.Fatalf("%v %+v", err, tk)
	}
	src.objs = Decode(t, Manifests(false))
	if err := c.Reload(); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, pl := range apfdebug.FromController(c).DumpPriorityLevels() {
		if pl.Name == "tight" {
			found = pl.IsQuiescing && pl.ExecutingRequests == 1
		}
	}
	if !found {
		t.Errorf("quiescing level missing: %+v", apfdebug.FromController(c).DumpPriorityLevels())
	}
	rows := apfdebug.FromController(c).DumpRequests(false)
	if n := len(rows); n != 1 || rows[0].PriorityLevel != "tight" || rows[0].QueueIndex != -1 || rows[0].FlowSchema != "tight" {
		t.Errorf("rows %+v", rows)
	}
	if qs := apfdebug.FromController(c).DumpQueues(); len(qs) != 1 || qs[0].PriorityLevel != "queued" || qs[0].Index != 0 {
		t.Errorf("queues %+v", qs)
	}
	tk.Done()
}

// quietSource is a Source a test changes by hand and Reloads.
type quietSource struct{ objs []config.Object }

func (s *quietSource) Objects() ([]config.Object, error)   { return s.objs, nil }
func (s *quietSource) Watch(ctx context.Context, _ func()) { <-ctx.Done() }

// Dumps and metric samples taken while requests come and go are race-free.
func TestDebugDumpConcurrent(t *testing.T) {
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	a := Attrs(t, "u", "GET", "/api/v1/namespaces/ns/pods/p", "")
	stop := make(chan struct{})
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				tk, err := c.Admit(context.Background(), a)
				if err != nil {
					continue
				}
				tk.Done()
			}
		}()
	}
	for range 200 {
		apfdebug.FromController(c).DumpRequests(true)
		apfdebug.FromController(c).DumpQueues()
		apfdebug.FromController(c).DumpPriorityLevels()
		c.SampleMetrics()
	}
	close(stop)
	for range 4 {
		<-done
	}
}
