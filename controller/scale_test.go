package controller

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/engine"
)

// tenantObjects is a priority level and n FlowSchemas sending one group and
// namespace each to it.
func tenantObjects(n int) []config.Object {
	shares := int32(10)
	pl := &flowcontrolv1.PriorityLevelConfiguration{}
	pl.Name = "tenants"
	pl.Spec.Type = flowcontrolv1.PriorityLevelEnablementLimited
	pl.Spec.Limited = &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: &shares}
	pl.Spec.Limited.LimitResponse = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
		Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 64, HandSize: 6, QueueLengthLimit: 50}}
	objs := []config.Object{{PriorityLevel: pl, Version: config.V1}}
	for i := range n {
		fs := &flowcontrolv1.FlowSchema{}
		fs.Name = fmt.Sprintf("tenant-%d", i)
		fs.Spec.PriorityLevelConfiguration.Name = "tenants"
		fs.Spec.MatchingPrecedence = 1000
		fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType}
		fs.Spec.Rules = []flowcontrolv1.PolicyRulesWithSubjects{{
			Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: fmt.Sprintf("g%d", i)}}},
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""},
				Resources: []string{"pods"}, Namespaces: []string{fmt.Sprintf("ns-%d", i)}}},
		}}
		objs = append(objs, config.Object{FlowSchema: fs, Version: config.V1})
	}
	return objs
}

// bigSchemaObjects is the tenants level and one FlowSchema of n rules, each
// naming its own user and namespace.
func bigSchemaObjects(n int) []config.Object {
	objs := tenantObjects(1)
	fs := objs[1].FlowSchema
	rule := fs.Spec.Rules[0]
	fs.Spec.Rules = make([]flowcontrolv1.PolicyRulesWithSubjects, n)
	for i := range fs.Spec.Rules {
		r := rule
		r.Subjects = []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: fmt.Sprintf("user-%d", i)}}}
		r.ResourceRules = []flowcontrolv1.ResourcePolicyRule{rule.ResourceRules[0]}
		r.ResourceRules[0].Namespaces = []string{fmt.Sprintf("ns-%d", i)}
		fs.Spec.Rules[i] = r
	}
	return objs
}

// applyCycle applies a configuration and then an empty one, so that both
// building and tearing down its levels, schemas and metric series count.
func applyCycle(tb testing.TB, c *Controller, objs []config.Object) {
	if err := c.apply(objs); err != nil {
		tb.Fatal(err)
	}
	if err := c.apply(nil); err != nil {
		tb.Fatal(err)
	}
}

// TestApplyCostIsLinear checks that taking a configuration into use and
// dropping it again (validation, compilation, levels, metric series) costs
// allocations linear in its size, for many schemas and for one schema of
// many rules: ten times the configuration may cost at most 15 times the
// allocations and bytes.
func TestApplyCostIsLinear(t *testing.T) {
	const n, factor, limit = 200, 10, 15.0
	for _, shape := range []struct {
		name string
		make func(int) []config.Object
	}{
		{"schemas", tenantObjects},
		{"rules", bigSchemaObjects},
	} {
		t.Run(shape.name, func(t *testing.T) {
			cost := func(n int) (allocs, bytes float64) {
				c, err := New(Config{})
				if err != nil {
					t.Fatal(err)
				}
				objs := shape.make(n)
				applyCycle(t, c, objs) // warm: the mandatory levels exist from here on
				allocs = testing.AllocsPerRun(2, func() { applyCycle(t, c, objs) })
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				applyCycle(t, c, objs)
				runtime.ReadMemStats(&after)
				return allocs, float64(after.TotalAlloc - before.TotalAlloc)
			}
			a1, b1 := cost(n)
			a10, b10 := cost(factor * n)
			t.Logf("n=%d: %.0f allocs, %.0f B; n=%d: %.0f allocs (x%.1f), %.0f B (x%.1f)",
				n, a1, b1, factor*n, a10, a10/a1, b10, b10/b1)
			if a10/a1 > limit || b10/b1 > limit {
				t.Errorf("applying %d times the configuration cost %.1f times the allocations and %.1f times the bytes", factor, a10/a1, b10/b1)
			}
		})
	}
}

// BenchmarkApplyCycle times taking a large configuration into use and
// dropping it, and reports the heap the controller keeps while it is in use
// (heap-B).
func BenchmarkApplyCycle(b *testing.B) {
	for _, s := range []struct {
		name string
		make func(int) []config.Object
		n    int
	}{
		{"schemas=1k", tenantObjects, 1_000},
		{"schemas=10k", tenantObjects, 10_000},
		{"rules=10k", bigSchemaObjects, 10_000},
		{"rules=100k", bigSchemaObjects, 100_000},
	} {
		b.Run(s.name, func(b *testing.B) {
			objs := s.make(s.n)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			c, err := New(Config{})
			if err != nil {
				b.Fatal(err)
			}
			if err := c.apply(objs); err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			heap := float64(int64(after.HeapAlloc) - int64(before.HeapAlloc))
			b.ReportAllocs()
			for b.Loop() {
				applyCycle(b, c, objs)
			}
			b.ReportMetric(heap, "heap-B")
		})
	}
}

// switchSource serves its first configuration until next is set, then
// next, closing fetched when it hands next out.
type switchSource struct {
	mu      sync.Mutex
	first   []config.Object
	next    []config.Object
	fetched chan struct{}
}

func (s *switchSource) Objects() ([]config.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == nil {
		return s.first, nil
	}
	close(s.fetched)
	return s.next, nil
}

func (s *switchSource) Watch(ctx context.Context, _ func()) { <-ctx.Done() }

// TestAdmitsWhileCompiling reloads a configuration of 50,000 rules while
// requests keep arriving: every request is admitted without waiting for the
// new configuration, on the previous snapshot until the new one is in
// force, and on the new one after. The compilation itself does not return
// before 100 requests have been admitted on the previous snapshot (10 s at
// most): were admission to wait for it, the test would fail.
func TestAdmitsWhileCompiling(t *testing.T) {
	src := &switchSource{first: decode(t, manifests(false)), fetched: make(chan struct{})}
	c, _ := newTest(t, src, 100)

	const during = 100
	var admitted atomic.Int64 // requests admitted after the compilation began
	admittedEnough := make(chan struct{})
	compiling, compiled := make(chan struct{}), make(chan struct{})
	var compileWaited bool
	c.compile = func(objs []config.Object) *engine.Compiled {
		close(compiling)
		m := engine.Compile(objs)
		select {
		case <-admittedEnough:
			compileWaited = true
		case <-time.After(10 * time.Second):
		}
		close(compiled)
		return m
	}

	// The new configuration sends the mouse to a schema of its own, ahead
	// of "queued", among 50,000 rules for other users.
	next := append(decode(t, manifests(false)), bigSchemaObjects(50_000)...)
	big := next[len(next)-1].FlowSchema
	big.Name, big.UID = "big", "uid-fs-big"
	big.Spec.MatchingPrecedence = 100
	big.Spec.Rules[len(big.Spec.Rules)-1].Subjects[0].User.Name = "mouse"
	big.Spec.Rules[len(big.Spec.Rules)-1].ResourceRules[0].Namespaces = []string{"ns"}
	src.mu.Lock()
	src.next = next
	src.mu.Unlock()

	reloaded := make(chan error, 1)
	go func() { reloaded <- c.reload() }()
	<-src.fetched

	a := attrs(t, "mouse", "GET", "/api/v1/namespaces/ns/pods/p", "")
	var onPrevious, onNew int
	for done := false; !done; {
		select {
		case err := <-reloaded:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		default:
		}
		began := false
		select {
		case <-compiling:
			began = true
		default:
		}
		tk, err := c.Admit(context.Background(), a)
		if err != nil {
			t.Fatalf("admission during the reload: %v", err)
		}
		switch tk.FlowSchema {
		case "queued":
			if onNew > 0 {
				t.Fatal("a request went back to the previous configuration")
			}
			onPrevious++
			if began && admitted.Add(1) == during {
				close(admittedEnough)
			}
		case "big":
			onNew++
		default:
			t.Fatalf("classified to %s", tk.FlowSchema)
		}
		tk.Done()
	}
	<-compiled
	if !compileWaited {
		t.Fatalf("only %d requests were admitted while the configuration compiled", admitted.Load())
	}
	if tk, err := c.Admit(context.Background(), a); err != nil || tk.FlowSchema != "big" {
		t.Fatalf("after the reload: %v, %v", tk, err)
	} else {
		tk.Done()
	}
	t.Logf("%d requests admitted on the previous configuration during the reload, %d on the new one", onPrevious, onNew)
}
