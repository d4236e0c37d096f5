package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apfproject/apf/clock/fakeclock"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/request"
)

// manifests: a reject level "tight" and a queuing level "queued", each fed
// by a flow schema matching one user.
func manifests(withTight bool) string {
	s := `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: queued, uid: uid-pl-queued}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 100
    limitResponse:
      type: Queue
      queuing: {queues: 1, handSize: 1, queueLengthLimit: 2}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: queued, uid: uid-fs-queued}
spec:
  priorityLevelConfiguration: {name: queued}
  matchingPrecedence: 200
  rules:
  - subjects: [{kind: User, user: {name: mouse}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`
	if withTight {
		s += `---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: tight, uid: uid-pl-tight}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 100
    lendablePercent: 50
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: tight, uid: uid-fs-tight}
spec:
  priorityLevelConfiguration: {name: tight}
  matchingPrecedence: 100
  rules:
  - subjects: [{kind: User, user: {name: elephant}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`
	}
	return s
}

func decode(t *testing.T, y string) []config.Object {
	t.Helper()
	objs, err := config.Decode([]byte(y), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func attrs(t *testing.T, user, method, path, query string) *request.Attributes {
	t.Helper()
	info, err := request.Parse(method, path, query)
	if err != nil {
		t.Fatal(err)
	}
	return &request.Attributes{Info: info, User: request.User{Name: user, Groups: []string{"system:authenticated"}}}
}

// t0 is near real time, so that context deadlines (which count real
// time) and the fake clock agree.
var t0 = time.Now().Truncate(time.Second)

func newTest(t *testing.T, src Source, scl int) (*Controller, *fakeclock.Clock) {
	t.Helper()
	clk := fakeclock.New(t0)
	c, err := New(Config{ServerConcurrencyLimit: scl, Source: src, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigError(); err != nil {
		t.Fatal(err)
	}
	return c, clk
}

func level(c *Controller, name string) LevelView {
	for _, l := range c.Levels() {
		if l.Name == name && !l.Quiescing {
			return l
		}
	}
	for _, l := range c.Levels() {
		if l.Name == name {
			return l
		}
	}
	return LevelView{}
}

func TestClassifyAndReject(t *testing.T) {
	c, clk := newTest(t, StaticSource(decode(t, manifests(true))), 21)
	limit := level(c, "tight").Queue.Stats().ConcurrencyLimit
	if limit < 1 {
		t.Fatalf("tight limit %d", limit)
	}
	ctx := context.Background()
	var held []*Ticket
	for i := range limit {
		tk, err := c.Admit(ctx, attrs(t, "elephant", "GET", "/api/v1/namespaces/ns/pods/p", ""))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if tk.FlowSchema != "tight" || tk.FlowSchemaUID != "uid-fs-tight" || tk.PriorityLevel != "tight" || tk.PriorityLevelUID != "uid-pl-tight" {
			t.Fatalf("ticket %+v", tk)
		}
		held = append(held, tk)
	}
	_, err := c.Admit(ctx, attrs(t, "elephant", "GET", "/healthz", ""))
	var rej *RejectedError
	if !errors.As(err, &rej) || rej.Reason != fairqueue.ConcurrencyLimit || rej.FlowSchemaUID != "uid-fs-tight" || rej.PriorityLevelUID != "uid-pl-tight" || rej.RetryAfter != 1 {
		t.Fatalf("over limit: %v %+v", err, rej)
	}
	// Other users go elsewhere: someone unknown lands in global-default or
	// catch-all (imagined, empty UID).
	tk, err := c.Admit(ctx, attrs(t, "stranger", "GET", "/healthz", ""))
	if err != nil || tk.PriorityLevel != "catch-all" || tk.PriorityLevelUID != "" {
		t.Fatalf("stranger: %v %+v", err, tk)
	}
	tk.Done()
	// system:masters is exempt.
	a := attrs(t, "root", "GET", "/healthz", "")
	a.User.Groups = []string{"system:masters"}
	tk, err = c.Admit(ctx, a)
	if err != nil || tk.PriorityLevel != "exempt" {
		t.Fatalf("exempt: %v %+v", err, tk)
	}
	tk.Done()
	held[0].Done()
	if tk, err := c.Admit(ctx, attrs(t, "elephant", "GET", "/healthz", "")); err != nil {
		t.Fatalf("after a release: %v", err)
	} else {
		tk.Done()
	}
	for _, tk := range held[1:] {
		tk.Done()
	}
	// Retry-After grows under sustained rejection.
	var last int
	for sec := range 6 {
		clk.Set(t0.Add(time.Duration(sec) * time.Second))
		for range 20 * limit {
			held = holdSeats(t, c, limit, "elephant")
			_, err := c.Admit(ctx, attrs(t, "elephant", "GET", "/healthz", ""))
			if !errors.As(err, &rej) {
				t.Fatal(err)
			}
			last = rej.RetryAfter
			for _, tk := range held {
				tk.Done()
			}
		}
	}
	if last < 2 {
		t.Fatalf("Retry-After stayed at %d", last)
	}
	if !level(c, "tight").Queue.IsIdle() {
		t.Fatal("seats leaked")
	}
}

// holdSeats admits n requests of user for GET /healthz, each of which
// must be dispatched at once, and returns their tickets, not done.
func holdSeats(t *testing.T, c *Controller, n int, user string) []*Ticket {
	t.Helper()
	held := make([]*Ticket, 0, n)
	for range n {
		tk, err := c.Admit(context.Background(), attrs(t, user, "GET", "/healthz", ""))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, tk)
	}
	return held
}

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestQueueTimeoutAndFull(t *testing.T) {
	c, clk := newTest(t, StaticSource(decode(t, manifests(false))), 12)
	q := level(c, "queued").Queue
	limit := q.Stats().ConcurrencyLimit
	ctx := context.Background()
	held := holdSeats(t, c, limit, "mouse")
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			tk, err := c.Admit(ctx, attrs(t, "mouse", "GET", "/healthz", ""))
			if err == nil {
				tk.Done()
			}
			errs <- err
		}()
	}
	waitFor(t, "two waiters", func() bool { return q.Stats().WaitingRequests == 2 })
	_, err := c.Admit(ctx, attrs(t, "mouse", "GET", "/healthz", ""))
	var rej *RejectedError
	if !errors.As(err, &rej) || rej.Reason != fairqueue.QueueFull {
		t.Fatalf("third waiter: %v", err)
	}
	// The wait limit is RequestTimeout/4 = 15 s.
	clk.Advance(14 * time.Second)
	if q.Stats().WaitingRequests != 2 {
		t.Fatal("gave up early")
	}
	clk.Advance(time.Second)
	for range 2 {
		if err := <-errs; !errors.As(err, &rej) || rej.Reason != fairqueue.TimeOut {
			t.Fatalf("waiter: %v", err)
		}
	}
	// A context deadline shortens the wait: 8 s ahead gives 2 s.
	dctx, cancel := context.WithDeadline(ctx, clk.Now().Add(8*time.Second))
	defer cancel()
	go func() {
		_, err := c.Admit(dctx, attrs(t, "mouse", "GET", "/healthz", ""))
		errs <- err
	}()
	waitFor(t, "waiter", func() bool { return q.Stats().WaitingRequests == 1 })
	clk.Advance(2 * time.Second)
	if err := <-errs; !errors.As(err, &rej) || rej.Reason != fairqueue.TimeOut {
		t.Fatalf("deadline waiter: %v", err)
	}
	// A waiter is dispatched when a seat frees.
	go func() {
		tk, err := c.Admit(ctx, attrs(t, "mouse", "GET", "/healthz", ""))
		if err == nil {
			tk.Done()
		}
		errs <- err
	}()
	waitFor(t, "waiter", func() bool { return q.Stats().WaitingRequests == 1 })
	held[0].Done()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	for _, tk := range held[1:] {
		tk.Done()
	}
	if !q.IsIdle() {
		t.Fatal("not idle")
	}
}

func TestReconfigureQuiesces(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "apf.yaml")
	if err := os.WriteFile(file, []byte(manifests(true)), 0o644); err != nil {
		t.Fatal(err)
	}
	src := NewDirSource(dir, time.Hour)
	c, _ := newTest(t, src, 21)
	ctx := context.Background()
	tk, err := c.Admit(ctx, attrs(t, "elephant", "GET", "/healthz", ""))
	if err != nil || tk.PriorityLevel != "tight" {
		t.Fatalf("%v %+v", err, tk)
	}
	// A broken manifest keeps the configuration and is reported.
	if err := os.WriteFile(file, []byte("apiVersion: nope/v1\nkind: X\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.reload(); err == nil || c.ConfigError() == nil {
		t.Fatal("broken manifest accepted")
	}
	if l := level(c, "tight"); l.Quiescing || l.Queue == nil {
		t.Fatal("broken manifest dropped the level")
	}
	if err := os.WriteFile(file, []byte(manifests(false)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.reload(); err != nil {
		t.Fatal(err)
	}
	l := level(c, "tight")
	if !l.Quiescing {
		t.Fatalf("tight not quiescing: %+v", l)
	}
	// New requests from the elephant go elsewhere; the held one finishes.
	tk2, err := c.Admit(ctx, attrs(t, "elephant", "GET", "/healthz", ""))
	if err != nil || tk2.PriorityLevel == "tight" {
		t.Fatalf("%v %+v", err, tk2)
	}
	tk2.Done()
	c.adjust()
	if level(c, "tight").Queue == nil {
		t.Fatal("dropped while busy")
	}
	tk.Done()
	c.adjust()
	if l := level(c, "tight"); l.Queue != nil {
		t.Fatalf("idle quiescing level kept: %+v", l)
	}
	// The level comes back.
	if err := os.WriteFile(file, []byte(manifests(true)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.reload(); err != nil {
		t.Fatal(err)
	}
	tk, err = c.Admit(ctx, attrs(t, "elephant", "GET", "/healthz", ""))
	if err != nil || tk.PriorityLevel != "tight" {
		t.Fatalf("%v %+v", err, tk)
	}
	tk.Done()
}

func TestQuiescingRetry(t *testing.T) {
	c, _ := newTest(t, StaticSource(decode(t, manifests(true))), 21)
	old := c.snap.Load()
	// Simulate the race: the request classified against the old snapshot
	// finds its level quiescing and must classify again.
	src := StaticSource(decode(t, manifests(false)))
	c.source = src
	if err := c.reload(); err != nil {
		t.Fatal(err)
	}
	tight := old.levels[old.eng.Matcher().PriorityLevel("tight").Index]
	tight.mu.Lock()
	quiescing := tight.el.Quiescing()
	tight.mu.Unlock()
	if !quiescing {
		t.Fatal("not quiescing")
	}
	tk, err := c.Admit(context.Background(), attrs(t, "elephant", "GET", "/healthz", ""))
	if err != nil || tk.PriorityLevel == "tight" {
		t.Fatalf("%v %+v", err, tk)
	}
	tk.Done()
}

func TestBorrowing(t *testing.T) {
	c, clk := newTest(t, StaticSource(decode(t, manifests(true))), 40)
	before := level(c, "queued").Limits
	if before == nil {
		t.Fatal("no adjustment")
	}
	// Hold many seats in "queued" for a whole period.
	ctx := context.Background()
	var held []*Ticket
	for range before.Current {
		tk, err := c.Admit(ctx, attrs(t, "mouse", "GET", "/healthz", ""))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, tk)
	}
	done := make(chan struct{})
	for range 2 {
		go func() {
			tk, err := c.Admit(ctx, attrs(t, "mouse", "GET", "/healthz", ""))
			if err == nil {
				tk.Done()
			}
			done <- struct{}{}
		}()
	}
	q := level(c, "queued").Queue
	waitFor(t, "waiters", func() bool { return q.Stats().WaitingRequests == 2 })
	clk.Advance(10 * time.Second)
	c.adjust()
	after := level(c, "queued").Limits
	if after.HighWatermark != before.Current+2 {
		t.Fatalf("high watermark %d, want %d", after.HighWatermark, before.Current+2)
	}
	if after.Current <= before.Current || q.Stats().ConcurrencyLimit != after.Current {
		t.Fatalf("limit %d → %d (queue set %d)", before.Current, after.Current, q.Stats().ConcurrencyLimit)
	}
	<-done
	<-done
	for _, tk := range held {
		tk.Done()
	}
}

func TestRunStops(t *testing.T) {
	tick := make(chan time.Time)
	src := &DirSource{Dir: t.TempDir(), Tick: tick}
	c, clk := newTest(t, src, 0)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { c.Run(ctx); close(stopped) }()
	if err := os.WriteFile(filepath.Join(src.Dir, "a.yaml"), []byte(manifests(true)), 0o644); err != nil {
		t.Fatal(err)
	}
	tick <- time.Time{}
	tick <- time.Time{} // a change is taken once it has stayed for a poll
	waitFor(t, "reload", func() bool { return c.Matcher().PriorityLevel("tight") != nil })
	clk.Advance(10 * time.Second)
	cancel()
	<-stopped
}

func BenchmarkAdmit(b *testing.B) {
	c, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	info, _ := request.Parse("GET", "/api/v1/namespaces/ns/pods/p", "")
	a := &request.Attributes{Info: info, User: request.User{Name: "u", Groups: []string{"system:authenticated"}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		tk, err := c.Admit(ctx, a)
		if err != nil {
			b.Fatal(err)
		}
		tk.Done()
	}
	_ = fmt.Sprint()
}

// BenchmarkAdmitQueued is the controller's saturated level: 64 goroutines
// of 1,000 users on a level of about four seats, each request spinning
// about 1 µs while it holds its seat, so that most requests wait in a
// queue and are woken by another's Done.
func BenchmarkAdmitQueued(b *testing.B) {
	objs, err := config.Decode([]byte(`
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: q}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 100
    lendablePercent: 0
    limitResponse: {type: Queue, queuing: {queues: 64, handSize: 8, queueLengthLimit: 64}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: q}
spec:
  priorityLevelConfiguration: {name: q}
  matchingPrecedence: 200
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: system:authenticated}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`), "q.yaml")
	if err != nil {
		b.Fatal(err)
	}
	c, err := New(Config{ServerConcurrencyLimit: 4, Source: StaticSource(objs)})
	if err != nil {
		b.Fatal(err)
	}
	users := make([]*request.Attributes, 1000)
	for i := range users {
		info, _ := request.Parse("GET", "/healthz", "")
		users[i] = &request.Attributes{Info: info, User: request.User{Name: fmt.Sprintf("user-%d", i), Groups: []string{"system:authenticated"}}}
	}
	var next, failed atomic.Int64
	n := int64(b.N)
	var wg sync.WaitGroup
	b.ReportAllocs()
	for range 64 {
		wg.Go(func() {
			var kept uint64
			defer func() { spinSink.Add(kept) }()
			for {
				i := next.Add(1) - 1
				if i >= n {
					return
				}
				tk, err := c.Admit(context.Background(), users[i%1000])
				if err != nil {
					failed.Add(1)
					continue
				}
				x := uint64(i) | 1
				for range 640 {
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
				}
				kept ^= x
				tk.Done()
			}
		})
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d requests were rejected", f)
	}
}

// spinSink keeps BenchmarkAdmitQueued's spins from being optimized away;
// each goroutine adds its own at the end, so that no memory is written
// from both processors on every request.
var spinSink atomic.Uint64
