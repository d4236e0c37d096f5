package config

import (
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta1 "k8s.io/api/flowcontrol/v1beta1"
	flowcontrolv1beta2 "k8s.io/api/flowcontrol/v1beta2"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	"k8s.io/apimachinery/pkg/runtime"
)

// Default values filled in by defaulting
// (docs/spec/configuration.md#defaulting). They are the same in every
// version; what differs between versions is which zero values count as
// "unset".
const (
	defaultMatchingPrecedence int32 = 1000
	DefaultShares             int32 = 30
	DefaultLendablePercent    int32 = 0
	defaultQueues             int32 = 64
	defaultHandSize           int32 = 8
	defaultQueueLengthLimit   int32 = 50
)

// PreserveZeroSharesAnnotation is the annotation key with which a v1beta3
// PriorityLevelConfiguration says "my nominalConcurrencyShares of 0 is a real
// zero, do not default it to 30". Its value is ignored. It exists only on the
// v1beta3 wire: conversion adds it when writing v1beta3 and removes it when
// reading, and validation refuses it on the hub form.
const PreserveZeroSharesAnnotation = flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey

// Default applies the defaulting of the object's own version, in place.
// obj must be a FlowSchema or PriorityLevelConfiguration of v1beta1 (which
// also carries v1alpha1, whose rules are the same), v1beta2, v1beta3 or v1.
//
// Defaulting has to run in the version the object was written in, before
// conversion: whether a zero is "unset" depends on the version (a v1beta2
// assuredConcurrencyShares of 0 means 30, a v1 nominalConcurrencyShares of 0
// means zero), and the v1beta3 marker annotation is gone after conversion.
func Default(obj runtime.Object) error {
	switch o := obj.(type) {
	case *flowcontrolv1.FlowSchema:
		DefaultFlowSchemaV1(o)
	case *flowcontrolv1.PriorityLevelConfiguration:
		DefaultPriorityLevelV1(o)
	case *flowcontrolv1beta3.FlowSchema:
		defaultFlowSchemaV1Beta3(o)
	case *flowcontrolv1beta3.PriorityLevelConfiguration:
		defaultPriorityLevelV1Beta3(o)
	case *flowcontrolv1beta2.FlowSchema:
		defaultFlowSchemaV1Beta2(o)
	case *flowcontrolv1beta2.PriorityLevelConfiguration:
		defaultPriorityLevelV1Beta2(o)
	case *flowcontrolv1beta1.FlowSchema:
		defaultFlowSchemaV1Beta1(o)
	case *flowcontrolv1beta1.PriorityLevelConfiguration:
		defaultPriorityLevelV1Beta1(o)
	default:
		return fmt.Errorf("config: cannot default %T: not a flowcontrol object", obj)
	}
	return nil
}

// defaultPrecedence is the one FlowSchema default, shared by all versions.
func defaultPrecedence(p *int32) {
	if *p == 0 {
		*p = defaultMatchingPrecedence
	}
}

// defaultInt32 sets a zero *p to def. Only the version-specific callers know
// whether zero means "unset".
func defaultInt32(p *int32, def int32) {
	if *p == 0 {
		*p = def
	}
}

// defaultPtr gives a nil pointer field a fresh copy of def.
func defaultPtr(p **int32, def int32) {
	if *p == nil {
		v := def
		*p = &v
	}
}

// DefaultFlowSchemaV1 defaults a v1 FlowSchema: matchingPrecedence 0 becomes
// 1000. Nothing else in a FlowSchema has a default; in particular a nil
// distinguisherMethod stays nil (it means "no distinguisher").
func DefaultFlowSchemaV1(fs *flowcontrolv1.FlowSchema) {
	defaultPrecedence(&fs.Spec.MatchingPrecedence)
}

// defaultFlowSchemaV1Beta3 is DefaultFlowSchemaV1 for v1beta3.
func defaultFlowSchemaV1Beta3(fs *flowcontrolv1beta3.FlowSchema) {
	defaultPrecedence(&fs.Spec.MatchingPrecedence)
}

// defaultFlowSchemaV1Beta2 is DefaultFlowSchemaV1 for v1beta2.
func defaultFlowSchemaV1Beta2(fs *flowcontrolv1beta2.FlowSchema) {
	defaultPrecedence(&fs.Spec.MatchingPrecedence)
}

// defaultFlowSchemaV1Beta1 is DefaultFlowSchemaV1 for v1beta1 and v1alpha1.
func defaultFlowSchemaV1Beta1(fs *flowcontrolv1beta1.FlowSchema) {
	defaultPrecedence(&fs.Spec.MatchingPrecedence)
}

// DefaultPriorityLevelV1 defaults a v1 PriorityLevelConfiguration. v1 is the
// version where nominalConcurrencyShares is a pointer: nil becomes 30 and an
// explicit 0 is kept. The exempt and queuing sections are defaulted only when
// present; defaulting never creates them, because their absence is meaningful.
func DefaultPriorityLevelV1(pl *flowcontrolv1.PriorityLevelConfiguration) {
	if l := pl.Spec.Limited; l != nil {
		defaultPtr(&l.NominalConcurrencyShares, DefaultShares)
		defaultPtr(&l.LendablePercent, DefaultLendablePercent)
		if q := l.LimitResponse.Queuing; q != nil {
			defaultQueuing(&q.Queues, &q.HandSize, &q.QueueLengthLimit)
		}
	}
	if e := pl.Spec.Exempt; e != nil {
		defaultPtr(&e.NominalConcurrencyShares, 0)
		defaultPtr(&e.LendablePercent, DefaultLendablePercent)
	}
}

// defaultPriorityLevelV1Beta3 defaults a v1beta3 PriorityLevelConfiguration.
// Its nominalConcurrencyShares is a plain int32, so 0 is ambiguous; it means
// 30 unless the object carries PreserveZeroSharesAnnotation (with any value).
func defaultPriorityLevelV1Beta3(pl *flowcontrolv1beta3.PriorityLevelConfiguration) {
	if l := pl.Spec.Limited; l != nil {
		if _, keep := pl.Annotations[PreserveZeroSharesAnnotation]; !keep {
			defaultInt32(&l.NominalConcurrencyShares, DefaultShares)
		}
		defaultPtr(&l.LendablePercent, DefaultLendablePercent)
		if q := l.LimitResponse.Queuing; q != nil {
			defaultQueuing(&q.Queues, &q.HandSize, &q.QueueLengthLimit)
		}
	}
	if e := pl.Spec.Exempt; e != nil {
		defaultPtr(&e.NominalConcurrencyShares, 0)
		defaultPtr(&e.LendablePercent, DefaultLendablePercent)
	}
}

// defaultPriorityLevelV1Beta2 defaults a v1beta2 PriorityLevelConfiguration:
// assuredConcurrencyShares 0 always becomes 30, so these versions cannot
// express a zero share.
func defaultPriorityLevelV1Beta2(pl *flowcontrolv1beta2.PriorityLevelConfiguration) {
	if l := pl.Spec.Limited; l != nil {
		defaultInt32(&l.AssuredConcurrencyShares, DefaultShares)
		defaultPtr(&l.LendablePercent, DefaultLendablePercent)
		if q := l.LimitResponse.Queuing; q != nil {
			defaultQueuing(&q.Queues, &q.HandSize, &q.QueueLengthLimit)
		}
	}
	if e := pl.Spec.Exempt; e != nil {
		defaultPtr(&e.NominalConcurrencyShares, 0)
		defaultPtr(&e.LendablePercent, DefaultLendablePercent)
	}
}

// defaultPriorityLevelV1Beta1 is defaultPriorityLevelV1Beta2 for v1beta1. It
// also serves v1alpha1, whose rules are identical except that it has no exempt
// section to default (Decode refuses one).
func defaultPriorityLevelV1Beta1(pl *flowcontrolv1beta1.PriorityLevelConfiguration) {
	if l := pl.Spec.Limited; l != nil {
		defaultInt32(&l.AssuredConcurrencyShares, DefaultShares)
		defaultPtr(&l.LendablePercent, DefaultLendablePercent)
		if q := l.LimitResponse.Queuing; q != nil {
			defaultQueuing(&q.Queues, &q.HandSize, &q.QueueLengthLimit)
		}
	}
	if e := pl.Spec.Exempt; e != nil {
		defaultPtr(&e.NominalConcurrencyShares, 0)
		defaultPtr(&e.LendablePercent, DefaultLendablePercent)
	}
}

// defaultQueuing fills the queuing parameters. Every version spells the
// QueuingConfiguration struct separately, so it takes the three fields
// rather than the struct.
func defaultQueuing(queues, handSize, queueLengthLimit *int32) {
	defaultInt32(queues, defaultQueues)
	defaultInt32(handSize, defaultHandSize)
	defaultInt32(queueLengthLimit, defaultQueueLengthLimit)
}
