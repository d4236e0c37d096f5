package bootstrap

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// AutoUpdateAnnotation is the annotation key whose boolean value tells the
// config producer whether it may overwrite an object's spec with the
// bootstrap one. Every bootstrap object carries it with value "true".
const AutoUpdateAnnotation = "apf.kubernetes.io/autoupdate-spec"

// Names of the mandatory objects.
const (
	// PriorityLevelExempt names the mandatory level whose requests are never
	// limited. It is the only level allowed to have type Exempt.
	PriorityLevelExempt = "exempt"
	// PriorityLevelCatchAll names the mandatory level for requests no other
	// FlowSchema matched. It has few shares and rejects rather than queues.
	PriorityLevelCatchAll = "catch-all"
	// FlowSchemaExempt names the mandatory FlowSchema sending system:masters
	// to the exempt level. It is the only FlowSchema allowed precedence 1.
	FlowSchemaExempt = "exempt"
	// FlowSchemaCatchAll names the mandatory FlowSchema that matches every
	// request, at the largest precedence.
	FlowSchemaCatchAll = "catch-all"
)

// The builder lists give the objects in the order the functions
// below return them. Building on every call is what makes the results
// independent copies.
var (
	mandatoryPLCBuilders = []func() *flowcontrolv1.PriorityLevelConfiguration{
		plcExempt, plcCatchAll,
	}
	suggestedPLCBuilders = []func() *flowcontrolv1.PriorityLevelConfiguration{
		plcSystem, plcNodeHigh, plcLeaderElection, plcWorkloadHigh, plcWorkloadLow, plcGlobalDefault,
	}
	mandatoryFSBuilders = []func() *flowcontrolv1.FlowSchema{
		fsExempt, fsCatchAll,
	}
	suggestedFSBuilders = []func() *flowcontrolv1.FlowSchema{
		fsProbes, fsSystemLeaderElection, fsSystemNodeHigh, fsSystemNodes,
		fsKubeControllerManager, fsKubeScheduler, fsKubeSystemServiceAccounts,
		fsServiceAccounts, fsGlobalDefault,
	}
)

func build[T any](builders ...[]func() *T) []*T {
	var out []*T
	for _, list := range builders {
		for _, b := range list {
			out = append(out, b())
		}
	}
	return out
}

// MandatoryPriorityLevels returns the mandatory priority levels: exempt,
// then catch-all.
func MandatoryPriorityLevels() []*flowcontrolv1.PriorityLevelConfiguration {
	return build(mandatoryPLCBuilders)
}

// SuggestedPriorityLevels returns the suggested priority levels: system,
// node-high, leader-election, workload-high, workload-low, global-default.
func SuggestedPriorityLevels() []*flowcontrolv1.PriorityLevelConfiguration {
	return build(suggestedPLCBuilders)
}

// PriorityLevels returns every bootstrap priority level, the mandatory ones
// first.
func PriorityLevels() []*flowcontrolv1.PriorityLevelConfiguration {
	return build(mandatoryPLCBuilders, suggestedPLCBuilders)
}

// MandatoryFlowSchemas returns the mandatory FlowSchemas: exempt, then
// catch-all.
func MandatoryFlowSchemas() []*flowcontrolv1.FlowSchema {
	return build(mandatoryFSBuilders)
}

// SuggestedFlowSchemas returns the suggested FlowSchemas in matching order:
// probes, system-leader-election, system-node-high, system-nodes,
// kube-controller-manager, kube-scheduler, kube-system-service-accounts,
// service-accounts, global-default.
func SuggestedFlowSchemas() []*flowcontrolv1.FlowSchema {
	return build(suggestedFSBuilders)
}

// FlowSchemas returns every bootstrap FlowSchema, the mandatory ones first.
func FlowSchemas() []*flowcontrolv1.FlowSchema {
	return build(mandatoryFSBuilders, suggestedFSBuilders)
}

// MandatoryPriorityLevel returns a fresh copy of the mandatory priority
// level with the given name, or nil if no mandatory level has that name.
func MandatoryPriorityLevel(name string) *flowcontrolv1.PriorityLevelConfiguration {
	return findPLC(name, mandatoryPLCBuilders)
}

// SuggestedPriorityLevel returns a fresh copy of the suggested priority
// level with the given name, or nil if no suggested level has that name.
func SuggestedPriorityLevel(name string) *flowcontrolv1.PriorityLevelConfiguration {
	return findPLC(name, suggestedPLCBuilders)
}

// MandatoryFlowSchema returns a fresh copy of the mandatory FlowSchema with
// the given name, or nil if no mandatory FlowSchema has that name.
func MandatoryFlowSchema(name string) *flowcontrolv1.FlowSchema {
	return findFS(name, mandatoryFSBuilders)
}

// SuggestedFlowSchema returns a fresh copy of the suggested FlowSchema with
// the given name, or nil if no suggested FlowSchema has that name.
func SuggestedFlowSchema(name string) *flowcontrolv1.FlowSchema {
	return findFS(name, suggestedFSBuilders)
}

// Lookups build each candidate to read its name; with at most nine
// objects that is cheaper to reason about than a second table of names.
func findPLC(name string, builders []func() *flowcontrolv1.PriorityLevelConfiguration) *flowcontrolv1.PriorityLevelConfiguration {
	for _, b := range builders {
		if o := b(); o.Name == name {
			return o
		}
	}
	return nil
}

func findFS(name string, builders []func() *flowcontrolv1.FlowSchema) *flowcontrolv1.FlowSchema {
	for _, b := range builders {
		if o := b(); o.Name == name {
			return o
		}
	}
	return nil
}
