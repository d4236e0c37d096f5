package classify

import (
	"fmt"
	"runtime"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/config/bootstrap"
)

// scaleShapes grow a configuration along one dimension each. A compiled
// configuration must cost memory linear in its size whatever the shape: a
// schema's subjects and its namespaces, say, must not be multiplied.
var scaleShapes = []struct {
	name string
	make func(n int) *flowcontrolv1.FlowSchema // one large schema, or nil for manySchemas
}{
	{"rules each with their own user and namespace", func(n int) *flowcontrolv1.FlowSchema {
		rules := make([]flowcontrolv1.PolicyRulesWithSubjects, n)
		for i := range rules {
			rules[i] = resources(users(fmt.Sprintf("user:u%d", i)), l("get"), l(""), l("pods"), l(fmt.Sprintf("ns-%d", i)), false)
		}
		return schema("big", "tenants", 500, "ByUser", rules...)
	}},
	{"subjects in one rule", func(n int) *flowcontrolv1.FlowSchema {
		return schema("big", "tenants", 500, "ByUser",
			resources(mixedSubjects(n), l("get"), l(""), l("pods"), l("a", "b", "c"), false))
	}},
	{"subjects and namespaces in one rule", func(n int) *flowcontrolv1.FlowSchema {
		return schema("big", "tenants", 500, "ByUser",
			resources(mixedSubjects(n), l("get"), l(""), l("pods"), numbered("ns-", n), false))
	}},
	{"namespaces in one rule", func(n int) *flowcontrolv1.FlowSchema {
		return schema("big", "tenants", 500, "ByUser",
			resources(users("group:dev"), l("get"), l(""), l("pods"), numbered("ns-", n), false))
	}},
	{"resource rules in one rule", func(n int) *flowcontrolv1.FlowSchema {
		r := flowcontrolv1.PolicyRulesWithSubjects{Subjects: mixedSubjects(10)}
		for i := range n {
			r.ResourceRules = append(r.ResourceRules, flowcontrolv1.ResourcePolicyRule{
				Verbs: l("get"), APIGroups: l(""), Resources: l("pods", fmt.Sprintf("res-%d", i)), Namespaces: l(fmt.Sprintf("ns-%d", i), "x"),
			})
		}
		return schema("big", "tenants", 500, "ByUser", r)
	}},
	{"non-resource URLs in one rule", func(n int) *flowcontrolv1.FlowSchema {
		return schema("big", "tenants", 500, "ByUser", paths(mixedSubjects(10), l("get"), numbered("/path-", n)))
	}},
	{"schemas", nil},
}

// mixedSubjects returns n subjects of every kind, each naming its own user,
// group, service account or service-account namespace.
func mixedSubjects(n int) []flowcontrolv1.Subject {
	names := make([]string, n)
	for i := range names {
		switch i % 4 {
		case 0:
			names[i] = fmt.Sprintf("user:u%d", i)
		case 1:
			names[i] = fmt.Sprintf("group:g%d", i)
		case 2:
			names[i] = fmt.Sprintf("sa:ns%d/sa", i)
		default:
			names[i] = fmt.Sprintf("sa:ns%d/*", i)
		}
	}
	return users(names...)
}

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// TestCompileCostIsLinear compiles every shape at two sizes, n and 10n, and
// fails when the allocations or the bytes allocated grow more than linearly
// (by more than 15 times; a product of two dimensions grows a hundredfold).
// It counts allocations, not time, so a busy machine does not change it.
func TestCompileCostIsLinear(t *testing.T) {
	const n, factor, limit = 300, 10, 15.0
	for _, shape := range scaleShapes {
		t.Run(shape.name, func(t *testing.T) {
			config := func(n int) ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration) {
				if shape.make == nil {
					return manySchemas(n)
				}
				return append(bootstrap.FlowSchemas(), shape.make(n)), append(bootstrap.PriorityLevels(), level("tenants", 128))
			}
			cost := func(n int) (allocs, bytes float64) {
				schemas, levels := config(n)
				allocs = testing.AllocsPerRun(3, func() { Compile(schemas, levels) })
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for range 3 {
					Compile(schemas, levels)
				}
				runtime.ReadMemStats(&after)
				return allocs, float64(after.TotalAlloc-before.TotalAlloc) / 3
			}
			a1, b1 := cost(n)
			a10, b10 := cost(factor * n)
			t.Logf("n=%d: %.0f allocs, %.0f B; n=%d: %.0f allocs (x%.1f), %.0f B (x%.1f)",
				n, a1, b1, factor*n, a10, a10/a1, b10, b10/b1)
			if a10/a1 > limit || b10/b1 > limit {
				t.Errorf("compiling %d times the configuration cost %.1f times the allocations and %.1f times the bytes", factor, a10/a1, b10/b1)
			}
		})
	}
}
