package bootstrap

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// objectMeta is the metadata every bootstrap object has: a name and the
// auto-update annotation set to "true".
func objectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        name,
		Annotations: map[string]string{AutoUpdateAnnotation: "true"},
	}
}

func int32Ptr(v int32) *int32 { return &v }

func newPLC(name string, spec flowcontrolv1.PriorityLevelConfigurationSpec) *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{
		TypeMeta: metav1.TypeMeta{
			APIVersion: flowcontrolv1.SchemeGroupVersion.String(),
			Kind:       "PriorityLevelConfiguration",
		},
		ObjectMeta: objectMeta(name),
		Spec:       spec,
	}
}

// queuingPLC is a Limited level that queues. borrowingLimitPercent stays
// nil (no limit) on every suggested level.
func queuingPLC(name string, shares, lendablePercent, queues, handSize, queueLengthLimit int32) *flowcontrolv1.PriorityLevelConfiguration {
	return newPLC(name, flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementLimited,
		Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: int32Ptr(shares),
			LendablePercent:          int32Ptr(lendablePercent),
			LimitResponse: flowcontrolv1.LimitResponse{
				Type: flowcontrolv1.LimitResponseTypeQueue,
				Queuing: &flowcontrolv1.QueuingConfiguration{
					Queues:           queues,
					HandSize:         handSize,
					QueueLengthLimit: queueLengthLimit,
				},
			},
		},
	})
}

// plcExempt never limits. Its spec.exempt is written out with the values
// the defaulter would give it (0 shares, 0% lendable) so the object is
// complete; operators may change those two numbers.
func plcExempt() *flowcontrolv1.PriorityLevelConfiguration {
	return newPLC(PriorityLevelExempt, flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementExempt,
		Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{
			NominalConcurrencyShares: int32Ptr(0),
			LendablePercent:          int32Ptr(0),
		},
	})
}

// plcCatchAll is deliberately small and never queues: traffic reaching it
// means the configuration is missing a FlowSchema.
func plcCatchAll() *flowcontrolv1.PriorityLevelConfiguration {
	return newPLC(PriorityLevelCatchAll, flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementLimited,
		Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: int32Ptr(5),
			LendablePercent:          int32Ptr(0),
			LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
		},
	})
}

// The suggested levels, with the numbers of
// docs/spec/configuration.md#bootstrap-priority-levels: name, shares,
// lendable %, queues, hand size, queue length limit.

func plcSystem() *flowcontrolv1.PriorityLevelConfiguration {
	return queuingPLC("system", 30, 33, 64, 6, 50)
}

func plcNodeHigh() *flowcontrolv1.PriorityLevelConfiguration {
	return queuingPLC("node-high", 40, 25, 64, 6, 50)
}

// Leader election lends nothing: a starved lease renewal costs a failover.
func plcLeaderElection() *flowcontrolv1.PriorityLevelConfiguration {
	return queuingPLC("leader-election", 10, 0, 16, 4, 50)
}

func plcWorkloadHigh() *flowcontrolv1.PriorityLevelConfiguration {
	return queuingPLC("workload-high", 40, 50, 128, 6, 50)
}

func plcWorkloadLow() *flowcontrolv1.PriorityLevelConfiguration {
	return queuingPLC("workload-low", 100, 90, 128, 6, 50)
}

func plcGlobalDefault() *flowcontrolv1.PriorityLevelConfiguration {
	return queuingPLC("global-default", 20, 50, 128, 6, 50)
}
