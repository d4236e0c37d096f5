package config

import (
	"strconv"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDefaultingPerVersion decodes the same small documents in every
// version and checks the hub values defaulting produced. The shares rows are
// where the versions differ.
func TestDefaultingPerVersion(t *testing.T) {
	type want struct {
		shares      *int32 // nil: no limited section expected
		lendable    *int32
		borrowing   *int32
		queuing     *flowcontrolv1.QueuingConfiguration
		exemptNCS   *int32
		exemptLend  *int32
		noExempt    bool
		annotations map[string]string
	}
	cases := []struct {
		name     string
		versions []Version
		spec     string // the PriorityLevelConfiguration spec, sharesField spelled as %s
		meta     string // extra metadata lines
		want     want
	}{
		{
			name:     "shares 0 defaults to 30 where 0 means unset",
			versions: []Version{V1Alpha1, V1Beta1, V1Beta2, V1Beta3},
			spec:     "type: Limited\nlimited:\n  SHARES: 0\n  limitResponse: {type: Reject}",
			want:     want{shares: ptr(int32(30)), lendable: ptr(int32(0)), noExempt: true},
		},
		{
			name:     "shares absent defaults to 30 everywhere",
			versions: Versions,
			spec:     "type: Limited\nlimited:\n  limitResponse: {type: Reject}",
			want:     want{shares: ptr(int32(30)), lendable: ptr(int32(0)), noExempt: true},
		},
		{
			name:     "v1 keeps an explicit 0",
			versions: []Version{V1},
			spec:     "type: Limited\nlimited:\n  SHARES: 0\n  limitResponse: {type: Reject}",
			want:     want{shares: ptr(int32(0)), lendable: ptr(int32(0)), noExempt: true},
		},
		{
			name:     "v1 null is unset",
			versions: []Version{V1},
			spec:     "type: Limited\nlimited:\n  SHARES: null\n  limitResponse: {type: Reject}",
			want:     want{shares: ptr(int32(30)), lendable: ptr(int32(0)), noExempt: true},
		},
		{
			name:     "v1beta3 marker keeps 0, whatever its value, and is consumed",
			versions: []Version{V1Beta3},
			meta:     "  annotations:\n    flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares: \"false\"\n    other: kept",
			spec:     "type: Limited\nlimited:\n  SHARES: 0\n  limitResponse: {type: Reject}",
			want:     want{shares: ptr(int32(0)), lendable: ptr(int32(0)), noExempt: true, annotations: map[string]string{"other": "kept"}},
		},
		{
			name:     "v1beta3 marker does not touch other values",
			versions: []Version{V1Beta3},
			meta:     "  annotations:\n    flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares: \"\"",
			spec:     "type: Limited\nlimited:\n  SHARES: 7\n  limitResponse: {type: Reject}",
			want:     want{shares: ptr(int32(7)), lendable: ptr(int32(0)), noExempt: true},
		},
		{
			name:     "marker means nothing outside v1beta3",
			versions: []Version{V1Beta2, V1},
			meta:     "  annotations:\n    flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares: \"\"",
			spec:     "type: Limited\nlimited:\n  limitResponse: {type: Reject}",
			want: want{shares: ptr(int32(30)), lendable: ptr(int32(0)), noExempt: true,
				annotations: map[string]string{PreserveZeroSharesAnnotation: ""}},
		},
		{
			name:     "empty queuing section is filled, borrowing stays unset",
			versions: Versions,
			spec:     "type: Limited\nlimited:\n  SHARES: 12\n  limitResponse:\n    type: Queue\n    queuing: {}",
			want: want{shares: ptr(int32(12)), lendable: ptr(int32(0)), noExempt: true,
				queuing: &flowcontrolv1.QueuingConfiguration{Queues: 64, HandSize: 8, QueueLengthLimit: 50}},
		},
		{
			name:     "partial queuing section keeps what is set",
			versions: Versions,
			spec:     "type: Limited\nlimited:\n  limitResponse:\n    type: Queue\n    queuing: {queues: 7}",
			want: want{shares: ptr(int32(30)), lendable: ptr(int32(0)), noExempt: true,
				queuing: &flowcontrolv1.QueuingConfiguration{Queues: 7, HandSize: 8, QueueLengthLimit: 50}},
		},
		{
			name:     "missing queuing section is not created",
			versions: Versions,
			spec:     "type: Limited\nlimited:\n  limitResponse: {type: Queue}",
			want:     want{shares: ptr(int32(30)), lendable: ptr(int32(0)), noExempt: true},
		},
		{
			name:     "lendable and borrowing are kept",
			versions: Versions,
			spec:     "type: Limited\nlimited:\n  lendablePercent: 40\n  borrowingLimitPercent: 0\n  limitResponse: {type: Reject}",
			want:     want{shares: ptr(int32(30)), lendable: ptr(int32(40)), borrowing: ptr(int32(0)), noExempt: true},
		},
		{
			name:     "empty exempt section is filled",
			versions: []Version{V1Beta1, V1Beta2, V1Beta3, V1},
			spec:     "type: Exempt\nexempt: {}",
			want:     want{exemptNCS: ptr(int32(0)), exemptLend: ptr(int32(0))},
		},
		{
			name:     "exempt section values are kept",
			versions: []Version{V1Beta1, V1Beta2, V1Beta3, V1},
			spec:     "type: Exempt\nexempt: {nominalConcurrencyShares: 3, lendablePercent: 9}",
			want:     want{exemptNCS: ptr(int32(3)), exemptLend: ptr(int32(9))},
		},
		{
			name:     "missing exempt section is not created",
			versions: Versions,
			spec:     "type: Exempt",
			want:     want{noExempt: true},
		},
	}
	for _, c := range cases {
		for _, v := range c.versions {
			t.Run(c.name+"/"+string(v), func(t *testing.T) {
				doc := "apiVersion: " + v.APIVersion() + "\nkind: PriorityLevelConfiguration\nmetadata:\n  name: x\n" + c.meta + "\nspec:\n" +
					"  " + strings.ReplaceAll(strings.ReplaceAll(c.spec, "SHARES", v.SharesField()), "\n", "\n  ") + "\n"
				pl := decodeOne(t, []byte(doc)).PriorityLevel
				l, e := pl.Spec.Limited, pl.Spec.Exempt
				if (c.want.shares == nil) != (l == nil) {
					t.Fatalf("limited = %+v", l)
				}
				if l != nil {
					eqPtr(t, "shares", l.NominalConcurrencyShares, c.want.shares)
					eqPtr(t, "lendablePercent", l.LendablePercent, c.want.lendable)
					eqPtr(t, "borrowingLimitPercent", l.BorrowingLimitPercent, c.want.borrowing)
					if !equality.Semantic.DeepEqual(l.LimitResponse.Queuing, c.want.queuing) {
						t.Errorf("queuing = %+v, want %+v", l.LimitResponse.Queuing, c.want.queuing)
					}
				}
				if c.want.noExempt != (e == nil) {
					t.Fatalf("exempt = %+v", e)
				}
				if e != nil {
					eqPtr(t, "exempt.nominalConcurrencyShares", e.NominalConcurrencyShares, c.want.exemptNCS)
					eqPtr(t, "exempt.lendablePercent", e.LendablePercent, c.want.exemptLend)
				}
				if !equality.Semantic.DeepEqual(pl.Annotations, c.want.annotations) {
					t.Errorf("annotations = %v, want %v", pl.Annotations, c.want.annotations)
				}
			})
		}
	}
}

func eqPtr(t *testing.T, what string, got, want *int32) {
	t.Helper()
	if (got == nil) != (want == nil) || (got != nil && *got != *want) {
		t.Errorf("%s = %s, want %s", what, showPtr(got), showPtr(want))
	}
}

func showPtr(p *int32) string {
	if p == nil {
		return "nil"
	}
	return itoa(*p)
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }

func TestDefaultFlowSchemaPrecedence(t *testing.T) {
	for _, v := range Versions {
		for _, c := range []struct{ in, want int32 }{{0, 1000}, {1, 1}, {500, 500}, {-3, -3}} {
			doc := "apiVersion: " + v.APIVersion() + "\nkind: FlowSchema\nmetadata: {name: x}\nspec:\n  priorityLevelConfiguration: {name: pl}\n  matchingPrecedence: " + itoa(c.in) + "\n"
			fs := decodeOne(t, []byte(doc)).FlowSchema
			if fs.Spec.MatchingPrecedence != c.want {
				t.Errorf("%s: precedence %d defaulted to %d, want %d", v, c.in, fs.Spec.MatchingPrecedence, c.want)
			}
			if fs.Spec.DistinguisherMethod != nil || fs.Spec.Rules != nil {
				t.Errorf("%s: defaulting invented parts of the spec: %+v", v, fs.Spec)
			}
		}
	}
}

func TestDefaultDirect(t *testing.T) {
	if err := Default(&metav1.Status{}); err == nil || err.Error() != "config: cannot default *v1.Status: not a flowcontrol object" {
		t.Errorf("Default(Status) = %v", err)
	}
	// The typed functions are usable on their own, and idempotent.
	pl := &flowcontrolv1beta3.PriorityLevelConfiguration{Spec: flowcontrolv1beta3.PriorityLevelConfigurationSpec{
		Limited: &flowcontrolv1beta3.LimitedPriorityLevelConfiguration{
			LimitResponse: flowcontrolv1beta3.LimitResponse{Queuing: &flowcontrolv1beta3.QueuingConfiguration{}},
		},
		Exempt: &flowcontrolv1beta3.ExemptPriorityLevelConfiguration{},
	}}
	defaultPriorityLevelV1Beta3(pl)
	once := pl.DeepCopy()
	if err := Default(pl); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(once, pl) {
		t.Errorf("defaulting is not idempotent: %+v vs %+v", once, pl)
	}
	if l := pl.Spec.Limited; l.NominalConcurrencyShares != 30 || *l.LendablePercent != 0 || l.BorrowingLimitPercent != nil ||
		*l.LimitResponse.Queuing != (flowcontrolv1beta3.QueuingConfiguration{Queues: 64, HandSize: 8, QueueLengthLimit: 50}) {
		t.Errorf("limited = %+v", l)
	}
	// A nil lendablePercent pointer gets its own value, not a shared one.
	a := &flowcontrolv1.PriorityLevelConfiguration{Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{}}}
	b := a.DeepCopy()
	DefaultPriorityLevelV1(a)
	DefaultPriorityLevelV1(b)
	*a.Spec.Limited.LendablePercent = 5
	if *b.Spec.Limited.LendablePercent != 0 {
		t.Error("defaulted pointers are shared between objects")
	}
}
