package bootstrap

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// wantPLC is one row of the table of
// docs/spec/configuration.md#bootstrap-priority-levels. queues == 0 means the
// level does not queue (Reject, or Exempt).
type wantPLC struct {
	name                      string
	mandatory                 bool
	typ                       flowcontrolv1.PriorityLevelEnablement
	shares, lendable          int32
	queues, handSize, qLength int32
	response                  flowcontrolv1.LimitResponseType
}

var priorityLevelTable = []wantPLC{
	{"exempt", true, "Exempt", 0, 0, 0, 0, 0, ""},
	{"catch-all", true, "Limited", 5, 0, 0, 0, 0, "Reject"},
	{"system", false, "Limited", 30, 33, 64, 6, 50, "Queue"},
	{"node-high", false, "Limited", 40, 25, 64, 6, 50, "Queue"},
	{"leader-election", false, "Limited", 10, 0, 16, 4, 50, "Queue"},
	{"workload-high", false, "Limited", 40, 50, 128, 6, 50, "Queue"},
	{"workload-low", false, "Limited", 100, 90, 128, 6, 50, "Queue"},
	{"global-default", false, "Limited", 20, 50, 128, 6, 50, "Queue"},
}

func TestPriorityLevelTable(t *testing.T) {
	got := PriorityLevels()
	if len(got) != len(priorityLevelTable) {
		t.Fatalf("got %d priority levels, want %d", len(got), len(priorityLevelTable))
	}
	for i, want := range priorityLevelTable {
		t.Run(want.name, func(t *testing.T) {
			plc := got[i]
			if plc.Name != want.name {
				t.Fatalf("position %d holds %q", i, plc.Name)
			}
			if (MandatoryPriorityLevel(want.name) != nil) != want.mandatory {
				t.Errorf("mandatory = %v, want %v", !want.mandatory, want.mandatory)
			}
			if (SuggestedPriorityLevel(want.name) != nil) == want.mandatory {
				t.Errorf("suggested lookup disagrees with mandatory = %v", want.mandatory)
			}
			s := plc.Spec
			if s.Type != want.typ {
				t.Errorf("type %q, want %q", s.Type, want.typ)
			}
			if want.typ == flowcontrolv1.PriorityLevelEnablementExempt {
				if s.Limited != nil {
					t.Errorf("exempt level has limited %+v", s.Limited)
				}
				e := s.Exempt
				if e == nil || e.NominalConcurrencyShares == nil || *e.NominalConcurrencyShares != want.shares ||
					e.LendablePercent == nil || *e.LendablePercent != want.lendable {
					t.Errorf("spec.exempt = %+v, want shares %d lendable %d", e, want.shares, want.lendable)
				}
				return
			}
			if s.Exempt != nil {
				t.Errorf("limited level has exempt %+v", s.Exempt)
			}
			l := s.Limited
			if l == nil {
				t.Fatal("limited is nil")
			}
			if l.NominalConcurrencyShares == nil || *l.NominalConcurrencyShares != want.shares {
				t.Errorf("nominalConcurrencyShares %v, want %d", l.NominalConcurrencyShares, want.shares)
			}
			if l.LendablePercent == nil || *l.LendablePercent != want.lendable {
				t.Errorf("lendablePercent %v, want %d", l.LendablePercent, want.lendable)
			}
			if l.BorrowingLimitPercent != nil {
				t.Errorf("borrowingLimitPercent %d, want nil", *l.BorrowingLimitPercent)
			}
			if l.LimitResponse.Type != want.response {
				t.Errorf("limitResponse.type %q, want %q", l.LimitResponse.Type, want.response)
			}
			q := l.LimitResponse.Queuing
			switch {
			case want.queues == 0 && q != nil:
				t.Errorf("queuing %+v, want nil", q)
			case want.queues != 0 && q == nil:
				t.Error("queuing is nil")
			case q != nil && (q.Queues != want.queues || q.HandSize != want.handSize || q.QueueLengthLimit != want.qLength):
				t.Errorf("queuing %+v, want queues %d handSize %d queueLengthLimit %d", *q, want.queues, want.handSize, want.qLength)
			}
		})
	}
}

// Subjects and rules of docs/spec/configuration.md#bootstrap-flowschemas,
// written out in full rather than through the package's helpers so that a
// helper bug cannot hide here.
func group(n string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: "Group", Group: &flowcontrolv1.GroupSubject{Name: n}}
}

func usr(n string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: "User", User: &flowcontrolv1.UserSubject{Name: n}}
}

var kubeSystemSAs = flowcontrolv1.Subject{Kind: "ServiceAccount",
	ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: "kube-system", Name: "*"}}

var (
	allResources = []flowcontrolv1.ResourcePolicyRule{{
		Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
		Namespaces: []string{"*"}, ClusterScope: true,
	}}
	allNonResources = []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}
)

func all(subjects ...flowcontrolv1.Subject) flowcontrolv1.PolicyRulesWithSubjects {
	return flowcontrolv1.PolicyRulesWithSubjects{Subjects: subjects, ResourceRules: allResources, NonResourceRules: allNonResources}
}

type wantFS struct {
	name          string
	mandatory     bool
	precedence    int32
	level         string
	distinguisher flowcontrolv1.FlowDistinguisherMethodType // "" = none
	rule          flowcontrolv1.PolicyRulesWithSubjects
}

// In effective matching order (precedence, then the order listed), which
// is also the order of FlowSchemas() except that the mandatory ones come
// first there.
var flowSchemaTable = []wantFS{
	{"exempt", true, 1, "exempt", "", all(group("system:masters"))},
	{"probes", false, 2, "exempt", "", flowcontrolv1.PolicyRulesWithSubjects{
		Subjects: []flowcontrolv1.Subject{group("system:unauthenticated"), group("system:authenticated")},
		NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{
			Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/readyz", "/livez"}}},
	}},
	{"system-leader-election", false, 100, "leader-election", "ByUser", flowcontrolv1.PolicyRulesWithSubjects{
		Subjects: []flowcontrolv1.Subject{usr("system:kube-controller-manager"), usr("system:kube-scheduler"), kubeSystemSAs},
		ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
			Verbs: []string{"get", "create", "update"}, APIGroups: []string{"coordination.k8s.io"},
			Resources: []string{"leases"}, Namespaces: []string{"*"}, ClusterScope: false}},
	}},
	{"system-node-high", false, 400, "node-high", "ByUser", flowcontrolv1.PolicyRulesWithSubjects{
		Subjects: []flowcontrolv1.Subject{group("system:nodes")},
		ResourceRules: []flowcontrolv1.ResourcePolicyRule{
			{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"nodes", "nodes/status"},
				Namespaces: []string{"*"}, ClusterScope: true},
			{Verbs: []string{"*"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
				Namespaces: []string{"*"}, ClusterScope: false},
		},
	}},
	{"system-nodes", false, 500, "system", "ByUser", all(group("system:nodes"))},
	{"kube-controller-manager", false, 800, "workload-high", "ByNamespace", all(usr("system:kube-controller-manager"))},
	{"kube-scheduler", false, 800, "workload-high", "ByNamespace", all(usr("system:kube-scheduler"))},
	{"kube-system-service-accounts", false, 900, "workload-high", "ByNamespace", all(kubeSystemSAs)},
	{"service-accounts", false, 9000, "workload-low", "ByUser", all(group("system:serviceaccounts"))},
	{"global-default", false, 9900, "global-default", "ByUser", all(group("system:unauthenticated"), group("system:authenticated"))},
	{"catch-all", true, 10000, "catch-all", "ByUser", all(group("system:unauthenticated"), group("system:authenticated"))},
}

func TestFlowSchemaTable(t *testing.T) {
	got := map[string]*flowcontrolv1.FlowSchema{}
	for _, fs := range FlowSchemas() {
		got[fs.Name] = fs
	}
	if len(got) != len(flowSchemaTable) {
		t.Fatalf("got %d FlowSchemas, want %d", len(got), len(flowSchemaTable))
	}
	for _, want := range flowSchemaTable {
		t.Run(want.name, func(t *testing.T) {
			fs := got[want.name]
			if fs == nil {
				t.Fatal("missing")
			}
			if (MandatoryFlowSchema(want.name) != nil) != want.mandatory {
				t.Errorf("mandatory = %v, want %v", !want.mandatory, want.mandatory)
			}
			if (SuggestedFlowSchema(want.name) != nil) == want.mandatory {
				t.Errorf("suggested lookup disagrees with mandatory = %v", want.mandatory)
			}
			s := fs.Spec
			if s.MatchingPrecedence != want.precedence {
				t.Errorf("matchingPrecedence %d, want %d", s.MatchingPrecedence, want.precedence)
			}
			if s.PriorityLevelConfiguration.Name != want.level {
				t.Errorf("priority level %q, want %q", s.PriorityLevelConfiguration.Name, want.level)
			}
			switch {
			case want.distinguisher == "" && s.DistinguisherMethod != nil:
				t.Errorf("distinguisher %+v, want none", *s.DistinguisherMethod)
			case want.distinguisher != "" && (s.DistinguisherMethod == nil || s.DistinguisherMethod.Type != want.distinguisher):
				t.Errorf("distinguisher %v, want %q", s.DistinguisherMethod, want.distinguisher)
			}
			if len(s.Rules) != 1 {
				t.Fatalf("%d rules, want exactly 1", len(s.Rules))
			}
			if !reflect.DeepEqual(s.Rules[0], want.rule) {
				gotJSON, _ := json.Marshal(s.Rules[0])
				wantJSON, _ := json.Marshal(want.rule)
				t.Errorf("rule\n got %s\nwant %s", gotJSON, wantJSON)
			}
		})
	}
}

func TestOrderAndPartition(t *testing.T) {
	names := func(plcs []*flowcontrolv1.PriorityLevelConfiguration) []string {
		var out []string
		for _, o := range plcs {
			out = append(out, o.Name)
		}
		return out
	}
	fsNames := func(fss []*flowcontrolv1.FlowSchema) []string {
		var out []string
		for _, o := range fss {
			out = append(out, o.Name)
		}
		return out
	}
	check := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	check("MandatoryPriorityLevels", names(MandatoryPriorityLevels()), []string{PriorityLevelExempt, PriorityLevelCatchAll})
	check("SuggestedPriorityLevels", names(SuggestedPriorityLevels()),
		[]string{"system", "node-high", "leader-election", "workload-high", "workload-low", "global-default"})
	check("PriorityLevels", names(PriorityLevels()), append(names(MandatoryPriorityLevels()), names(SuggestedPriorityLevels())...))
	check("MandatoryFlowSchemas", fsNames(MandatoryFlowSchemas()), []string{FlowSchemaExempt, FlowSchemaCatchAll})
	check("SuggestedFlowSchemas", fsNames(SuggestedFlowSchemas()),
		[]string{"probes", "system-leader-election", "system-node-high", "system-nodes", "kube-controller-manager",
			"kube-scheduler", "kube-system-service-accounts", "service-accounts", "global-default"})
	check("FlowSchemas", fsNames(FlowSchemas()), append(fsNames(MandatoryFlowSchemas()), fsNames(SuggestedFlowSchemas())...))

	// The suggested FlowSchemas are listed in matching order.
	prev := int32(0)
	for _, fs := range SuggestedFlowSchemas() {
		if fs.Spec.MatchingPrecedence < prev {
			t.Errorf("%s (precedence %d) listed after precedence %d", fs.Name, fs.Spec.MatchingPrecedence, prev)
		}
		prev = fs.Spec.MatchingPrecedence
	}
}

func TestNamesUniqueAndReferencesResolve(t *testing.T) {
	levels := map[string]bool{}
	for _, plc := range PriorityLevels() {
		if levels[plc.Name] {
			t.Errorf("priority level %q defined twice", plc.Name)
		}
		levels[plc.Name] = true
	}
	schemas := map[string]bool{}
	for _, fs := range FlowSchemas() {
		if schemas[fs.Name] {
			t.Errorf("FlowSchema %q defined twice", fs.Name)
		}
		schemas[fs.Name] = true
		if !levels[fs.Spec.PriorityLevelConfiguration.Name] {
			t.Errorf("FlowSchema %q references unknown priority level %q", fs.Name, fs.Spec.PriorityLevelConfiguration.Name)
		}
	}
}

// Every object carries the annotation and a TypeMeta, and satisfies the
// structural rules validation will apply to it, in their defaulted form.
func TestObjectsAreCompleteAndDefaulted(t *testing.T) {
	checkMeta := func(kind, name, gotKind, apiVersion, namespace string, ann map[string]string) {
		t.Helper()
		if gotKind != kind || apiVersion != "flowcontrol.apiserver.k8s.io/v1" {
			t.Errorf("%s %q: TypeMeta %s %s", kind, name, apiVersion, gotKind)
		}
		if namespace != "" {
			t.Errorf("%s %q: namespace %q", kind, name, namespace)
		}
		if len(ann) != 1 || ann[AutoUpdateAnnotation] != "true" {
			t.Errorf("%s %q: annotations %v", kind, name, ann)
		}
	}
	for _, plc := range PriorityLevels() {
		checkMeta("PriorityLevelConfiguration", plc.Name, plc.Kind, plc.APIVersion, plc.Namespace, plc.Annotations)
		if (plc.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) != (plc.Name == PriorityLevelExempt) {
			t.Errorf("%q has type %q", plc.Name, plc.Spec.Type)
		}
		if l := plc.Spec.Limited; l != nil && l.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue {
			q := l.LimitResponse.Queuing
			if q.HandSize > q.Queues || q.Queues <= 0 || q.QueueLengthLimit <= 0 {
				t.Errorf("%q: invalid queuing %+v", plc.Name, *q)
			}
		}
	}
	for _, fs := range FlowSchemas() {
		checkMeta("FlowSchema", fs.Name, fs.Kind, fs.APIVersion, fs.Namespace, fs.Annotations)
		p := fs.Spec.MatchingPrecedence
		if p < 1 || p > 10000 || (p == 1) != (fs.Name == FlowSchemaExempt) {
			t.Errorf("%q: matchingPrecedence %d", fs.Name, p)
		}
		for _, r := range fs.Spec.Rules {
			if len(r.Subjects) == 0 || len(r.ResourceRules)+len(r.NonResourceRules) == 0 {
				t.Errorf("%q: incomplete rule %+v", fs.Name, r)
			}
		}
	}
}

// Callers may mutate what they get: nothing may be shared between calls.
func TestResultsAreIndependentCopies(t *testing.T) {
	a, b := PriorityLevels(), PriorityLevels()
	for i := range a {
		if a[i] == b[i] || reflect.ValueOf(a[i].Annotations).Pointer() == reflect.ValueOf(b[i].Annotations).Pointer() {
			t.Fatalf("%q shared between calls", a[i].Name)
		}
		a[i].Annotations[AutoUpdateAnnotation] = "false"
		if l := a[i].Spec.Limited; l != nil {
			*l.NominalConcurrencyShares = 999
			if q := l.LimitResponse.Queuing; q != nil {
				q.Queues = 1
			}
		} else {
			*a[i].Spec.Exempt.NominalConcurrencyShares = 999
		}
	}
	fa := FlowSchemas()
	for _, fs := range fa {
		fs.Spec.Rules[0].Subjects[0].Kind = "Mutated"
		if len(fs.Spec.Rules[0].ResourceRules) > 0 {
			fs.Spec.Rules[0].ResourceRules[0].Verbs[0] = "mutated"
		}
		if len(fs.Spec.Rules[0].NonResourceRules) > 0 {
			fs.Spec.Rules[0].NonResourceRules[0].NonResourceURLs[0] = "/mutated"
		}
		if fs.Spec.DistinguisherMethod != nil {
			fs.Spec.DistinguisherMethod.Type = "Mutated"
		}
	}
	MandatoryPriorityLevel(PriorityLevelCatchAll).Spec.Limited.LendablePercent = nil
	MandatoryFlowSchema(FlowSchemaExempt).Spec.MatchingPrecedence = 7

	// Everything must still match the tables.
	TestPriorityLevelTable(t)
	TestFlowSchemaTable(t)
	TestObjectsAreCompleteAndDefaulted(t)
}

func TestLookupUnknownNames(t *testing.T) {
	for _, name := range []string{"", "system", "global-default", "nope"} {
		if MandatoryPriorityLevel(name) != nil {
			t.Errorf("MandatoryPriorityLevel(%q) is not nil", name)
		}
	}
	for _, name := range []string{"", "probes", "global-default", "nope"} {
		if MandatoryFlowSchema(name) != nil {
			t.Errorf("MandatoryFlowSchema(%q) is not nil", name)
		}
	}
	if SuggestedPriorityLevel("exempt") != nil || SuggestedFlowSchema("catch-all") != nil || SuggestedFlowSchema("nope") != nil {
		t.Error("suggested lookup returned a mandatory or unknown object")
	}
	if MandatoryPriorityLevel("exempt").Name != "exempt" || MandatoryFlowSchema("catch-all").Name != "catch-all" {
		t.Error("mandatory lookup returned the wrong object")
	}
}

// The objects survive a JSON round trip unchanged, and v1's
// nominalConcurrencyShares is always present on the wire.
func TestJSONRoundTrip(t *testing.T) {
	for _, plc := range PriorityLevels() {
		data, err := json.Marshal(plc)
		if err != nil {
			t.Fatal(err)
		}
		var back flowcontrolv1.PriorityLevelConfiguration
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&back, plc) {
			t.Errorf("%q changed in a JSON round trip: %s", plc.Name, data)
		}
	}
	for _, fs := range FlowSchemas() {
		data, err := json.Marshal(fs)
		if err != nil {
			t.Fatal(err)
		}
		var back flowcontrolv1.FlowSchema
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&back, fs) {
			t.Errorf("%q changed in a JSON round trip: %s", fs.Name, data)
		}
	}
}
