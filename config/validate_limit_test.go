package config

import (
	"fmt"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An object wrong in many places of every list validation walks: the
// errors reported are the first MaxErrors in the order of a full report,
// and one more that says the list was cut; the cost does not grow with the
// number of wrong places.
func TestValidationStopsAtMaxErrors(t *testing.T) {
	const many = 20 * MaxErrors
	base := func() *flowcontrolv1.FlowSchema {
		fs := validFlowSchema()
		fs.Status = flowcontrolv1.FlowSchemaStatus{}
		return fs
	}
	cases := []struct {
		name string
		// make builds a FlowSchema with n wrong places.
		make func(n int) *flowcontrolv1.FlowSchema
		// fields names, in order, the fields of the errors of the
		// object made with n: each place is reported by these.
		fields func(i int) []string
	}{
		{"empty rules", func(n int) *flowcontrolv1.FlowSchema {
			fs := base()
			fs.Spec.Rules = make([]flowcontrolv1.PolicyRulesWithSubjects, n)
			return fs
		}, func(i int) []string {
			return []string{fmt.Sprintf("spec.rules[%d].subjects", i), fmt.Sprintf("spec.rules[%d]", i)}
		}},
		{"subjects without kind", func(n int) *flowcontrolv1.FlowSchema {
			fs := base()
			fs.Spec.Rules[0].Subjects = make([]flowcontrolv1.Subject, n)
			return fs
		}, func(i int) []string { return []string{fmt.Sprintf("spec.rules[0].subjects[%d].kind", i)} }},
		{"empty resource rules", func(n int) *flowcontrolv1.FlowSchema {
			fs := base()
			fs.Spec.Rules[0].ResourceRules = make([]flowcontrolv1.ResourcePolicyRule, n)
			return fs
		}, func(i int) []string {
			p := fmt.Sprintf("spec.rules[0].resourceRules[%d].", i)
			return []string{p + "verbs", p + "apiGroups", p + "resources", p + "namespaces"}
		}},
		{"invalid namespaces", func(n int) *flowcontrolv1.FlowSchema {
			fs := base()
			fs.Spec.Rules[0].ResourceRules[0].Namespaces = slicesOf("Not_OK", n)
			return fs
		}, func(i int) []string { return []string{fmt.Sprintf("spec.rules[0].resourceRules[0].namespaces[%d]", i)} }},
		{"empty non-resource rules", func(n int) *flowcontrolv1.FlowSchema {
			fs := base()
			fs.Spec.Rules[0].NonResourceRules = make([]flowcontrolv1.NonResourcePolicyRule, n)
			return fs
		}, func(i int) []string {
			p := fmt.Sprintf("spec.rules[0].nonResourceRules[%d].", i)
			return []string{p + "verbs", p + "nonResourceURLs"}
		}},
		{"relative URLs", func(n int) *flowcontrolv1.FlowSchema {
			fs := base()
			fs.Spec.Rules[0].NonResourceRules[0].NonResourceURLs = slicesOf("x", n)
			return fs
		}, func(i int) []string {
			return []string{fmt.Sprintf("spec.rules[0].nonResourceRules[0].nonResourceURLs[%d]", i)}
		}},
		{"conditions without type", func(n int) *flowcontrolv1.FlowSchema {
			fs := base()
			fs.Status.Conditions = make([]flowcontrolv1.FlowSchemaCondition, n)
			return fs
		}, func(i int) []string {
			// Every type after the first is also a duplicate.
			p := fmt.Sprintf("status.conditions[%d].type", i)
			if i == 0 {
				return []string{p}
			}
			return []string{p, p}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var want []string
			for i := 0; len(want) <= MaxErrors; i++ {
				want = append(want, c.fields(i)...)
			}
			want = want[:MaxErrors+1]
			errs := validateFlowSchema(c.make(many))
			if len(errs) != MaxErrors+1 || !Truncated(errs) {
				t.Fatalf("%d errors (truncated %v), want %d", len(errs), Truncated(errs), MaxErrors+1)
			}
			for i, e := range errs {
				if e.Field != want[i] {
					t.Fatalf("error %d is about %s, want %s: %v", i, e.Field, want[i], e)
				}
			}
			// Just under the limit, everything is reported.
			n := 0
			for count := 0; count+len(c.fields(n)) <= MaxErrors; n++ {
				count += len(c.fields(n))
			}
			if errs := validateFlowSchema(c.make(n)); Truncated(errs) || len(errs) != len(want[:len(errs)]) || len(errs) > MaxErrors {
				t.Errorf("%d places: %d errors, truncated %v", n, len(errs), Truncated(errs))
			}
			// The cost does not follow the number of wrong places.
			small, large := c.make(many), c.make(100*many)
			a1 := testing.AllocsPerRun(2, func() { validateFlowSchema(small) })
			a100 := testing.AllocsPerRun(2, func() { validateFlowSchema(large) })
			t.Logf("%d places: %.0f allocations; %d places: %.0f", many, a1, 100*many, a100)
			if a100 > 2*a1+100 {
				t.Errorf("validating %d places took %.0f allocations, %d places %.0f", 100*many, a100, many, a1)
			}
		})
	}
}

// Metadata errors come first and count towards the limit; a priority
// level stops too.
func TestValidationStopsAtMaxErrorsMetadata(t *testing.T) {
	fs := validFlowSchema()
	fs.Labels = map[string]string{}
	for i := range 3 * MaxErrors {
		fs.Labels[fmt.Sprintf("bad key %d", i)] = "v"
	}
	fs.Spec.Rules = make([]flowcontrolv1.PolicyRulesWithSubjects, 10*MaxErrors)
	errs := validateFlowSchema(fs)
	if !Truncated(errs) || len(errs) != MaxErrors+1 {
		t.Fatalf("%d errors, want %d", len(errs), MaxErrors+1)
	}
	for _, e := range errs {
		if !strings.HasPrefix(e.Field, "metadata.labels") {
			t.Fatalf("an error about %s among the first: %v", e.Field, e)
		}
	}
	pl := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	pl.Status.Conditions = make([]flowcontrolv1.PriorityLevelConfigurationCondition, 10*MaxErrors)
	if errs := validatePriorityLevel(pl, V1); !Truncated(errs) || len(errs) != MaxErrors+1 {
		t.Fatalf("priority level: %d errors, want %d", len(errs), MaxErrors+1)
	}
}

func slicesOf(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
