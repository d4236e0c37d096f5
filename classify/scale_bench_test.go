package classify

import (
	"fmt"
	"runtime"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/config/bootstrap"
)

// ownSubjectRules is one FlowSchema whose n rules each name their own user
// and their own namespace: the shape that once made the subject index grow
// with users × namespaces.
func ownSubjectRules(n int) ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration) {
	levels := append(bootstrap.PriorityLevels(), level("tenants", 128))
	rules := make([]flowcontrolv1.PolicyRulesWithSubjects, n)
	for i := range rules {
		rules[i] = resources(users(fmt.Sprintf("user:user-%d", i)), l("get", "list"), l(""), l("pods"), l(fmt.Sprintf("ns-%d", i)), false)
	}
	return append(bootstrap.FlowSchemas(), schema("big", "tenants", 500, "ByUser", rules...)), levels
}

// manySchemas is n FlowSchemas of one rule each, every one naming its own
// group and namespace.
func manySchemas(n int) ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration) {
	levels := append(bootstrap.PriorityLevels(), level("tenants", 128))
	schemas := bootstrap.FlowSchemas()
	for i := range n {
		schemas = append(schemas, schema(fmt.Sprintf("tenant-%06d", i), "tenants", int32(1000+i%8000), "ByNamespace",
			resources(users(fmt.Sprintf("group:tenant-%d", i)), l("get", "list"), l(""), l("pods"), l(fmt.Sprintf("ns-%d", i)), false)))
	}
	return schemas, levels
}

// BenchmarkCompileScale compiles large configurations and reports, beside
// time and allocations, the heap the compiled matcher keeps (heap-B).
func BenchmarkCompileScale(b *testing.B) {
	shapes := []struct {
		name string
		make func(int) ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration)
		n    int
	}{
		{"rules=1k", ownSubjectRules, 1_000},
		{"rules=10k", ownSubjectRules, 10_000},
		{"rules=100k", ownSubjectRules, 100_000},
		{"schemas=10k", manySchemas, 10_000},
	}
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) {
			schemas, levels := s.make(s.n)
			b.ReportAllocs()
			for b.Loop() {
				Compile(schemas, levels)
			}
			// Measured after the loop: the benchmark clock's reset at its
			// start would discard it.
			b.ReportMetric(float64(retainedHeap(func() any { return Compile(schemas, levels) })), "heap-B")
		})
	}
}

// retainedHeap returns the live heap that the value f builds keeps.
func retainedHeap(f func() any) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := f()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return after.HeapAlloc - before.HeapAlloc
}

// BenchmarkClassifyScale classifies against the large configurations of
// BenchmarkCompileScale: the cost must not grow with them. "last" is the
// last rule or schema of the large one; "other" is an authenticated user it
// does not name, who passes it for global-default.
func BenchmarkClassifyScale(b *testing.B) {
	for _, s := range []struct {
		name string
		make func(int) ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration)
		n    int
		user string
	}{
		{"rules=1k", ownSubjectRules, 1_000, "user-999|" + authn},
		{"rules=10k", ownSubjectRules, 10_000, "user-9999|" + authn},
		{"rules=100k", ownSubjectRules, 100_000, "user-99999|" + authn},
		{"schemas=10k", manySchemas, 10_000, "carol|tenant-9999," + authn},
	} {
		m := Compile(s.make(s.n))
		last := fmt.Sprintf("GET /api/v1/namespaces/ns-%d/pods", s.n-1)
		for _, c := range []struct{ name, req, user string }{
			{"last", last, s.user},
			{"other", last, "dave|" + authn},
		} {
			b.Run(s.name+"/"+c.name, func(b *testing.B) {
				a := attrs(b, c.req, c.user)
				if got := m.Classify(a).FlowSchema.Name; (c.name == "other") != (got == "global-default") {
					b.Fatalf("classified to %s", got)
				}
				b.ReportAllocs()
				for b.Loop() {
					m.Classify(a)
				}
			})
		}
	}
}
