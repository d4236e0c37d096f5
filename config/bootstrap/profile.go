package bootstrap

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// Profile names a built-in configuration: the suggested objects a server
// creates and maintains beside the mandatory ones. The mandatory objects
// are the same in every profile, because the flowcontrol API fixes them:
// a write that changes them is refused, and every client of the API
// (kubectl, controllers reading the Dangling condition) may rely on
// system:masters being exempt and on the catch-all schema being there.
//
// ProfileKubernetes, the default, is kube-apiserver's configuration.
// ProfileService is made for a gateway in front of a service that is not
// Kubernetes; see ProfileService.
type Profile string

// The profiles.
const (
	ProfileKubernetes Profile = "kubernetes"
	// ProfileService gives ordinary traffic the whole server limit and
	// keeps a small reserved share for health checks and operators:
	//
	//   - service-health (shares 5, lends nothing, 16 queues, hand 2,
	//     queue length 50): any method on the usual health paths
	//     (/healthz, /readyz, /livez, /health, /ping and what lies under
	//     the first four), by anyone, flows by user, matched first
	//     (precedence 2), so a prober is answered while the service is
	//     flooded;
	//   - service-operator (shares 5, lends nothing, 16 queues, hand 4,
	//     queue length 50): every request of the group ServiceOperators
	//     (precedence 3), flows by user; members of system:masters are
	//     exempt, by the mandatory exempt schema, as on kube-apiserver;
	//   - service-default (shares 485, lends nothing, 128 queues, hand 6,
	//     queue length 64): everything else, authenticated or not
	//     (precedence 9900), flows by user.
	//
	// With the mandatory catch-all's 5 shares the shares sum to 500, so
	// service-default's nominal limit is ceil(0.97 N) of a server limit
	// of N seats: N minus floor(0.03 N), the reserved share, and each
	// reserved level has ceil(0.01 N): a seat per hundred is plenty for
	// probes, which are cheap, and for an operator's few requests, while
	// ordinary traffic keeps 97% of the limit at any size. Below 34
	// seats the reserved share rounds to nothing and service-default has
	// all N seats from the first request; the reserved levels and
	// catch-all then have the one seat each that rounding up gives every
	// level, on top of N (kube-apiserver's rule, which sums the levels'
	// seats above the server limit by up to one per level). No level
	// lends, so ordinary traffic never holds more than service-default's
	// nominal seats: the server limit is what reaches the upstream, not
	// a figure that borrowing, adjusted every 10 s, approaches later.
	// A server running the profile paces its queuing levels by default
	// (engine.Config.PacedDispatch), so that a light user's request is
	// the next to start and starts soon while a flood fills the level.
	//
	// A flow's requests go to the shortest of its hand of 6 queues of 128;
	// a queue holds 64. One user with a few hundred requests outstanding
	// thus fills at most 6 queues, room for 384 requests, before any is
	// refused: measured, what matters is that a flooding user's
	// outstanding requests fit, for a refused request is sent again at
	// once and the refusals' CPU slows everyone; among the sizes that fit
	// (hand 2 to 8) the differences were within noise, and the hand of 6
	// is kube-apiserver's, which keeps a user out of the way of several
	// flooders at once. A user with one request outstanding finds a queue
	// of its own unless all 6 of its hand are the flooder's (1 in
	// 5 × 10⁹), and is dispatched among the next few whenever a seat
	// frees. docs/benchmarks.md#fairness-in-front-of-a-service has the
	// measurements.
	ProfileService Profile = "service"
)

// ServiceOperators is the group whose members the service profile sends
// to its reserved level service-operator.
const ServiceOperators = "apf:operators"

// Names of the service profile's objects.
const (
	ServiceLevelDefault   = "service-default"
	ServiceLevelHealth    = "service-health"
	ServiceLevelOperator  = "service-operator"
	ServiceSchemaDefault  = "service-default"
	ServiceSchemaHealth   = "service-health"
	ServiceSchemaOperator = "service-operator"
)

// Profiles lists the profiles' names, the default first.
func Profiles() []string { return []string{string(ProfileKubernetes), string(ProfileService)} }

// ParseProfile returns the profile named s ("" is ProfileKubernetes),
// and false when no profile has that name.
func ParseProfile(s string) (Profile, bool) {
	switch Profile(s) {
	case "", ProfileKubernetes:
		return ProfileKubernetes, true
	case ProfileService:
		return ProfileService, true
	}
	return "", false
}

func (p Profile) builders() ([]func() *flowcontrolv1.PriorityLevelConfiguration, []func() *flowcontrolv1.FlowSchema) {
	if p == ProfileService {
		return serviceSuggestedPLCBuilders, serviceSuggestedFSBuilders
	}
	return suggestedPLCBuilders, suggestedFSBuilders
}

// SuggestedPriorityLevels returns the profile's suggested levels.
func (p Profile) SuggestedPriorityLevels() []*flowcontrolv1.PriorityLevelConfiguration {
	pl, _ := p.builders()
	return build(pl)
}

// SuggestedFlowSchemas returns the profile's suggested FlowSchemas in
// matching order.
func (p Profile) SuggestedFlowSchemas() []*flowcontrolv1.FlowSchema {
	_, fs := p.builders()
	return build(fs)
}

// PriorityLevels returns the mandatory levels, then the profile's
// suggested ones.
func (p Profile) PriorityLevels() []*flowcontrolv1.PriorityLevelConfiguration {
	pl, _ := p.builders()
	return build(mandatoryPLCBuilders, pl)
}

// FlowSchemas returns the mandatory FlowSchemas, then the profile's
// suggested ones.
func (p Profile) FlowSchemas() []*flowcontrolv1.FlowSchema {
	_, fs := p.builders()
	return build(mandatoryFSBuilders, fs)
}

// SuggestedPriorityLevel returns a fresh copy of the profile's suggested
// level of that name, or nil.
func (p Profile) SuggestedPriorityLevel(name string) *flowcontrolv1.PriorityLevelConfiguration {
	pl, _ := p.builders()
	return findPLC(name, pl)
}

// SuggestedFlowSchema returns a fresh copy of the profile's suggested
// FlowSchema of that name, or nil.
func (p Profile) SuggestedFlowSchema(name string) *flowcontrolv1.FlowSchema {
	_, fs := p.builders()
	return findFS(name, fs)
}

var (
	serviceSuggestedPLCBuilders = []func() *flowcontrolv1.PriorityLevelConfiguration{
		plcServiceHealth, plcServiceOperator, plcServiceDefault,
	}
	serviceSuggestedFSBuilders = []func() *flowcontrolv1.FlowSchema{
		fsServiceHealth, fsServiceOperator, fsServiceDefault,
	}
)

// The service profile's levels (see ProfileService for the numbers).

func plcServiceHealth() *flowcontrolv1.PriorityLevelConfiguration {
	return queuingPLC(ServiceLevelHealth, 5, 0, 16, 2, 50)
}

func plcServiceOperator() *flowcontrolv1.PriorityLevelConfiguration {
	return queuingPLC(ServiceLevelOperator, 5, 0, 16, 4, 50)
}

func plcServiceDefault() *flowcontrolv1.PriorityLevelConfiguration {
	return queuingPLC(ServiceLevelDefault, 485, 0, 128, 6, 64)
}

// ServiceHealthPaths are the non-resource URLs the service profile treats
// as health checks.
var ServiceHealthPaths = []string{
	"/healthz", "/healthz/*", "/readyz", "/readyz/*", "/livez", "/livez/*",
	"/health", "/health/*", "/ping",
}

func fsServiceHealth() *flowcontrolv1.FlowSchema {
	return newFS(ServiceSchemaHealth, ServiceLevelHealth, 2, byUser, flowcontrolv1.PolicyRulesWithSubjects{
		Subjects: groups(groupUnauthenticated, groupAuthenticated),
		NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{
			Verbs:           []string{flowcontrolv1.VerbAll},
			NonResourceURLs: append([]string(nil), ServiceHealthPaths...),
		}},
	})
}

func fsServiceOperator() *flowcontrolv1.FlowSchema {
	return newFS(ServiceSchemaOperator, ServiceLevelOperator, 3, byUser, matchAll(groups(ServiceOperators)...))
}

func fsServiceDefault() *flowcontrolv1.FlowSchema {
	return newFS(ServiceSchemaDefault, ServiceLevelDefault, 9900, byUser,
		matchAll(groups(groupUnauthenticated, groupAuthenticated)...))
}
