package config

import (
	"testing"

	"github.com/apfproject/apf/config/bootstrap"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// validQueuing is a valid defaulted Limited/Queue level.
func validQueuing() *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "workload-low"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr(int32(100)),
				LendablePercent:          ptr(int32(90)),
				LimitResponse: flowcontrolv1.LimitResponse{
					Type:    flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 64, HandSize: 8, QueueLengthLimit: 50},
				},
			},
		},
	}
}

// validExempt is a valid exempt level with its optional section.
func validExempt() *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "exempt"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type:   flowcontrolv1.PriorityLevelEnablementExempt,
			Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: ptr(int32(0)), LendablePercent: ptr(int32(0))},
		},
	}
}

func TestValidatePriorityLevel(t *testing.T) {
	type pl = flowcontrolv1.PriorityLevelConfiguration
	queuing := func(p *pl) *flowcontrolv1.QueuingConfiguration { return p.Spec.Limited.LimitResponse.Queuing }
	cases := []struct {
		name   string
		base   func() *pl
		from   Version
		mutate func(*pl)
		want   []string
	}{
		{"valid queuing level", validQueuing, V1, func(*pl) {}, nil},
		{"valid exempt level", validExempt, V1, func(*pl) {}, nil},
		{"exempt level without its section", validExempt, V1, func(p *pl) { p.Spec.Exempt = nil }, nil},
		{"valid reject level", validQueuing, V1, func(p *pl) {
			p.Spec.Limited.LimitResponse = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
		}, nil},

		// metadata
		{"name not a subdomain", validQueuing, V1, func(p *pl) { p.Name = "workload low" },
			[]string{`metadata.name: Invalid value: "workload low": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		{"namespace set", validQueuing, V1, func(p *pl) { p.Namespace = "kube-system" },
			[]string{"metadata.namespace: Forbidden: not allowed on this type"}},
		{"v1beta3 marker sent through another version", validQueuing, V1, func(p *pl) {
			p.Annotations = map[string]string{PreserveZeroSharesAnnotation: ""}
		}, []string{"metadata.annotations: Forbidden: annotation 'flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares' is forbidden"}},

		// type
		{"exempt type on another name", validExempt, V1, func(p *pl) { p.Name = "vip" },
			[]string{`spec.type: Invalid value: "Exempt": must be 'Exempt' if and only if ` + "`name`" + ` is 'exempt'`}},
		{"limited type on the exempt name", validQueuing, V1, func(p *pl) { p.Name = "exempt" },
			[]string{
				`spec.type: Invalid value: "Limited": must be 'Exempt' if and only if ` + "`name`" + ` is 'exempt'`,
				`spec: Invalid value: {"Type":"Limited","Limited":{"NominalConcurrencyShares":100,"LimitResponse":{"Type":"Queue","Queuing":{"Queues":64,"HandSize":8,"QueueLengthLimit":50}},"LendablePercent":90,"BorrowingLimitPercent":null},"Exempt":null}: spec of 'exempt' except the 'spec.exempt' field must equal the fixed value`,
			}},
		{"unknown type", validQueuing, V1, func(p *pl) { p.Spec.Type = "Unlimited" },
			[]string{`spec.type: Unsupported value: "Unlimited": supported values: "Exempt", "Limited"`}},
		{"empty type", validQueuing, V1, func(p *pl) { p.Spec.Type = "" },
			[]string{"spec.type: Required value"}},
		{"exempt with a limited section", validExempt, V1, func(p *pl) { p.Spec.Limited = validQueuing().Spec.Limited },
			[]string{
				"spec.limited: Forbidden",
				`spec: Invalid value: {"Type":"Exempt","Limited":{"NominalConcurrencyShares":100,"LimitResponse":{"Type":"Queue","Queuing":{"Queues":64,"HandSize":8,"QueueLengthLimit":50}},"LendablePercent":90,"BorrowingLimitPercent":null},"Exempt":{"NominalConcurrencyShares":0,"LendablePercent":0}}: spec of 'exempt' except the 'spec.exempt' field must equal the fixed value`,
			}},
		{"limited without its section", validQueuing, V1, func(p *pl) { p.Spec.Limited = nil },
			[]string{"spec.limited: Required value"}},
		{"limited with an exempt section", validQueuing, V1, func(p *pl) { p.Spec.Exempt = validExempt().Spec.Exempt },
			[]string{"spec.exempt: Forbidden"}},

		// exempt section
		{"exempt shares negative", validExempt, V1, func(p *pl) { p.Spec.Exempt.NominalConcurrencyShares = ptr(int32(-1)) },
			[]string{"spec.exempt.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer"}},
		{"exempt lendable above 100", validExempt, V1, func(p *pl) { p.Spec.Exempt.LendablePercent = ptr(int32(101)) },
			[]string{"spec.exempt.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive"}},
		{"exempt section may be tuned", validExempt, V1, func(p *pl) {
			p.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: ptr(int32(50)), LendablePercent: ptr(int32(100))}
		}, nil},

		// shares
		{"shares negative, v1", validQueuing, V1, func(p *pl) { p.Spec.Limited.NominalConcurrencyShares = ptr(int32(-1)) },
			[]string{"spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer"}},
		{"shares negative, v1beta3", validQueuing, V1Beta3, func(p *pl) { p.Spec.Limited.NominalConcurrencyShares = ptr(int32(-5)) },
			[]string{"spec.limited.nominalConcurrencyShares: Invalid value: -5: must be a non-negative integer"}},
		{"shares negative, v1beta2", validQueuing, V1Beta2, func(p *pl) { p.Spec.Limited.NominalConcurrencyShares = ptr(int32(-1)) },
			[]string{"spec.limited.assuredConcurrencyShares: Invalid value: -1: must be a non-negative integer"}},
		{"shares negative, v1beta1", validQueuing, V1Beta1, func(p *pl) { p.Spec.Limited.NominalConcurrencyShares = ptr(int32(-1)) },
			[]string{"spec.limited.assuredConcurrencyShares: Invalid value: -1: must be a non-negative integer"}},
		{"shares negative, v1alpha1", validQueuing, V1Alpha1, func(p *pl) { p.Spec.Limited.NominalConcurrencyShares = ptr(int32(-1)) },
			[]string{"spec.limited.assuredConcurrencyShares: Invalid value: -1: must be a non-negative integer"}},
		{"shares zero", validQueuing, V1, func(p *pl) { p.Spec.Limited.NominalConcurrencyShares = ptr(int32(0)) }, nil},
		{"shares unset (not defaulted)", validQueuing, V1, func(p *pl) { p.Spec.Limited.NominalConcurrencyShares = nil }, nil},

		// lendable and borrowing
		{"lendable above 100", validQueuing, V1, func(p *pl) { p.Spec.Limited.LendablePercent = ptr(int32(101)) },
			[]string{"spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive"}},
		{"lendable negative", validQueuing, V1, func(p *pl) { p.Spec.Limited.LendablePercent = ptr(int32(-1)) },
			[]string{"spec.limited.lendablePercent: Invalid value: -1: must be between 0 and 100, inclusive"}},
		{"lendable bounds", validQueuing, V1, func(p *pl) { p.Spec.Limited.LendablePercent = ptr(int32(100)) }, nil},
		{"borrowing negative", validQueuing, V1, func(p *pl) { p.Spec.Limited.BorrowingLimitPercent = ptr(int32(-1)) },
			[]string{"spec.limited.borrowingLimitPercent: Invalid value: -1: if specified, must be a non-negative integer"}},
		{"borrowing above 100", validQueuing, V1, func(p *pl) { p.Spec.Limited.BorrowingLimitPercent = ptr(int32(500)) }, nil},

		// limit response
		{"unknown limit response", validQueuing, V1, func(p *pl) { p.Spec.Limited.LimitResponse.Type = "Drop" },
			[]string{`spec.limited.limitResponse.type: Unsupported value: "Drop": supported values: "Queue", "Reject"`}},
		{"empty limit response type", validQueuing, V1, func(p *pl) { p.Spec.Limited.LimitResponse = flowcontrolv1.LimitResponse{} },
			[]string{"spec.limited.limitResponse.type: Required value"}},
		{"reject with queuing", validQueuing, V1, func(p *pl) { p.Spec.Limited.LimitResponse.Type = flowcontrolv1.LimitResponseTypeReject },
			[]string{"spec.limited.limitResponse.queuing: Forbidden"}},
		{"queue without queuing", validQueuing, V1, func(p *pl) { p.Spec.Limited.LimitResponse.Queuing = nil },
			[]string{"spec.limited.limitResponse.queuing: Required value"}},

		// queuing
		{"queue length limit zero", validQueuing, V1, func(p *pl) { queuing(p).QueueLengthLimit = 0 },
			[]string{"spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: 0: must be positive"}},
		{"queues zero", validQueuing, V1, func(p *pl) { queuing(p).Queues = 0 },
			[]string{
				"spec.limited.limitResponse.queuing.queues: Invalid value: 0: must be positive",
				"spec.limited.limitResponse.queuing.handSize: Invalid value: 8: should not be greater than queues (0)",
			}},
		{"queues above 10^7", validQueuing, V1, func(p *pl) { queuing(p).Queues, queuing(p).HandSize = 10_000_001, 2 },
			[]string{"spec.limited.limitResponse.queuing.queues: Invalid value: 10000001: must not be greater than 10000000"}},
		{"queues at 10^7", validQueuing, V1, func(p *pl) { queuing(p).Queues, queuing(p).HandSize = 10_000_000, 2 }, nil},
		{"hand size zero", validQueuing, V1, func(p *pl) { queuing(p).HandSize = 0 },
			[]string{"spec.limited.limitResponse.queuing.handSize: Invalid value: 0: must be positive"}},
		{"hand size above queues", validQueuing, V1, func(p *pl) { queuing(p).HandSize = 70 },
			[]string{"spec.limited.limitResponse.queuing.handSize: Invalid value: 70: should not be greater than queues (64)"}},
		{"entropy: 128 queues, hand 9", validQueuing, V1, func(p *pl) { queuing(p).Queues, queuing(p).HandSize = 128, 9 },
			[]string{"spec.limited.limitResponse.queuing.handSize: Invalid value: 9: required entropy bits of deckSize 128 and handSize 9 should not be greater than 60"}},
		{"entropy: 128 queues, hand 8", validQueuing, V1, func(p *pl) { queuing(p).Queues, queuing(p).HandSize = 128, 8 }, nil},
		{"entropy: 64 queues, hand 11", validQueuing, V1, func(p *pl) { queuing(p).HandSize = 11 },
			[]string{"spec.limited.limitResponse.queuing.handSize: Invalid value: 11: required entropy bits of deckSize 64 and handSize 11 should not be greater than 60"}},
		{"entropy: 64 queues, hand 10", validQueuing, V1, func(p *pl) { queuing(p).HandSize = 10 }, nil},
		{"one queue, hand one", validQueuing, V1, func(p *pl) { queuing(p).Queues, queuing(p).HandSize = 1, 1 }, nil},

		// status
		{"condition type empty and repeated", validQueuing, V1, func(p *pl) {
			p.Status.Conditions = []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "ConcurrencyShared"}, {Type: ""}, {Type: "ConcurrencyShared"}}
		}, []string{
			"status.conditions[1].type: Required value",
			`status.conditions[2].type: Duplicate value: "ConcurrencyShared"`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.base()
			c.mutate(p)
			checkErrors(t, validatePriorityLevel(p, c.from), c.want)
			checkErrors(t, Object{PriorityLevel: p, Version: c.from}.Validate(), c.want)
		})
	}
}

// TestValidateSharesPathFromDecode checks the shares field name end to end:
// a negative share written in each version is reported under that version's
// spelling.
func TestValidateSharesPathFromDecode(t *testing.T) {
	for _, v := range Versions {
		doc := "apiVersion: " + v.APIVersion() + "\nkind: PriorityLevelConfiguration\nmetadata: {name: x}\nspec:\n  type: Limited\n  limited:\n    " +
			v.SharesField() + ": -3\n    limitResponse: {type: Reject}\n"
		checkErrors(t, decodeOne(t, []byte(doc)).Validate(),
			[]string{"spec.limited." + v.SharesField() + ": Invalid value: -3: must be a non-negative integer"})
	}
}

// TestValidateMarkerThroughV1 checks docs/spec/configuration.md#zero-shares:
// the v1beta3 marker is consumed when it arrives in v1beta3 and an error when
// it arrives in v1.
func TestValidateMarkerThroughV1(t *testing.T) {
	const body = "kind: PriorityLevelConfiguration\nmetadata:\n  name: x\n  annotations: {flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares: \"\"}\n" +
		"spec: {type: Limited, limited: {nominalConcurrencyShares: 0, limitResponse: {type: Reject}}}\n"
	checkErrors(t, decodeOne(t, []byte("apiVersion: flowcontrol.apiserver.k8s.io/v1beta3\n"+body)).Validate(), nil)
	checkErrors(t, decodeOne(t, []byte("apiVersion: flowcontrol.apiserver.k8s.io/v1\n"+body)).Validate(),
		[]string{"metadata.annotations: Forbidden: annotation 'flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares' is forbidden"})
}

func TestValidateMandatoryPriorityLevels(t *testing.T) {
	for _, name := range []string{"exempt", "catch-all"} {
		pl := bootstrap.MandatoryPriorityLevel(name)
		if pl == nil {
			t.Fatalf("bootstrap has no mandatory priority level %q", name)
		}
		checkErrors(t, validatePriorityLevel(pl, V1), nil)
		for _, v := range Versions {
			data, err := Encode(Object{PriorityLevel: pl}, v, FormatJSON)
			if err != nil {
				t.Fatal(err)
			}
			checkErrors(t, decodeOne(t, data).Validate(), nil)
		}
	}

	catchAll := bootstrap.MandatoryPriorityLevel("catch-all")
	catchAll.Spec.Limited.NominalConcurrencyShares = ptr(int32(6))
	checkErrors(t, validatePriorityLevel(catchAll, V1), []string{
		`spec: Invalid value: {"Type":"Limited","Limited":{"NominalConcurrencyShares":6,"LimitResponse":{"Type":"Reject","Queuing":null},"LendablePercent":0,"BorrowingLimitPercent":null},"Exempt":null}: spec of 'catch-all' must equal the fixed value`,
	})

	// The exempt level's spec.exempt may change, or be absent after a trip
	// through v1alpha1; nothing else may.
	exempt := bootstrap.MandatoryPriorityLevel("exempt")
	exempt.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: ptr(int32(7)), LendablePercent: ptr(int32(30))}
	checkErrors(t, validatePriorityLevel(exempt, V1), nil)
	exempt.Spec.Exempt = nil
	checkErrors(t, validatePriorityLevel(exempt, V1Alpha1), nil)
	if exempt.Spec.Exempt != nil {
		t.Error("validation modified spec.exempt")
	}

	// A suggested level is not fixed.
	sugg := bootstrap.SuggestedPriorityLevel("global-default")
	if sugg == nil {
		t.Fatal("bootstrap has no suggested level global-default")
	}
	sugg.Spec.Limited.NominalConcurrencyShares = ptr(int32(1))
	checkErrors(t, validatePriorityLevel(sugg, V1), nil)
}

// TestValidateNeverPanics feeds half-built objects that defaulting would
// never produce; validation must report, not crash.
func TestValidateNeverPanics(t *testing.T) {
	objs := []*flowcontrolv1.PriorityLevelConfiguration{
		{},
		{Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited}},
		{Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{}}},
		{Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "exempt"}, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt, Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "catch-all"}},
	}
	for _, pl := range objs {
		_ = validatePriorityLevel(pl, "")
	}
	for _, fs := range []*flowcontrolv1.FlowSchema{
		{},
		{ObjectMeta: metav1.ObjectMeta{Name: "exempt"}, Spec: flowcontrolv1.FlowSchemaSpec{Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
			Subjects:         []flowcontrolv1.Subject{{}, {Kind: "User"}, {Kind: "Group"}, {Kind: "ServiceAccount"}},
			ResourceRules:    []flowcontrolv1.ResourcePolicyRule{{}},
			NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{NonResourceURLs: []string{"*", "/"}}},
		}}}},
	} {
		_ = validateFlowSchema(fs)
	}
	checkErrors(t, validateFlowSchema(nil), []string{"<nil>: Internal error: nil FlowSchema"})
	checkErrors(t, validatePriorityLevel(nil, V1), []string{"<nil>: Internal error: nil PriorityLevelConfiguration"})
}
