package bootstrap

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Well-known identities the bootstrap FlowSchemas match.
const (
	groupMasters         = "system:masters"
	groupUnauthenticated = "system:unauthenticated"
	groupAuthenticated   = "system:authenticated"
	groupNodes           = "system:nodes"
	groupServiceAccounts = "system:serviceaccounts"
	userControllerMgr    = "system:kube-controller-manager"
	userScheduler        = "system:kube-scheduler"
	namespaceKubeSystem  = "kube-system"
	apiGroupCoordination = "coordination.k8s.io"
)

func newFS(name, priorityLevel string, precedence int32, distinguisher flowcontrolv1.FlowDistinguisherMethodType, rule flowcontrolv1.PolicyRulesWithSubjects) *flowcontrolv1.FlowSchema {
	fs := &flowcontrolv1.FlowSchema{
		TypeMeta: metav1.TypeMeta{
			APIVersion: flowcontrolv1.SchemeGroupVersion.String(),
			Kind:       "FlowSchema",
		},
		ObjectMeta: objectMeta(name),
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: priorityLevel},
			MatchingPrecedence:         precedence,
			// Every bootstrap FlowSchema has exactly one rule.
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{rule},
		},
	}
	// "" means no distinguisher: the whole schema is one flow.
	if distinguisher != "" {
		fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: distinguisher}
	}
	return fs
}

func groups(names ...string) []flowcontrolv1.Subject {
	out := make([]flowcontrolv1.Subject, len(names))
	for i, n := range names {
		out[i] = flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: n}}
	}
	return out
}

func user(name string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: name}}
}

// kubeSystemServiceAccounts matches every service account of kube-system.
func kubeSystemServiceAccounts() flowcontrolv1.Subject {
	return flowcontrolv1.Subject{
		Kind:           flowcontrolv1.SubjectKindServiceAccount,
		ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: namespaceKubeSystem, Name: flowcontrolv1.NameAll},
	}
}

// matchAll is the rule pair docs/spec/configuration.md#bootstrap-flowschemas
// calls "ALL": every verb on every resource, cluster-scoped or in any
// namespace, and every non-resource URL.
func matchAll(subjects ...flowcontrolv1.Subject) flowcontrolv1.PolicyRulesWithSubjects {
	return flowcontrolv1.PolicyRulesWithSubjects{
		Subjects: subjects,
		ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
			Verbs:        []string{flowcontrolv1.VerbAll},
			APIGroups:    []string{flowcontrolv1.APIGroupAll},
			Resources:    []string{flowcontrolv1.ResourceAll},
			Namespaces:   []string{flowcontrolv1.NamespaceEvery},
			ClusterScope: true,
		}},
		NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{
			Verbs:           []string{flowcontrolv1.VerbAll},
			NonResourceURLs: []string{flowcontrolv1.NonResourceAll},
		}},
	}
}

// leasesRule matches namespaced Lease objects only: no endpoints or
// configmaps, which older releases used for leader election (the v1.25
// documentation differs, see
// docs/spec/configuration.md#docs-differ-on-the-bootstrap-objects).
func leasesRule(verbs ...string) flowcontrolv1.ResourcePolicyRule {
	return flowcontrolv1.ResourcePolicyRule{
		Verbs:      verbs,
		APIGroups:  []string{apiGroupCoordination},
		Resources:  []string{"leases"},
		Namespaces: []string{flowcontrolv1.NamespaceEvery},
	}
}

const (
	byUser      = flowcontrolv1.FlowDistinguisherMethodByUserType
	byNamespace = flowcontrolv1.FlowDistinguisherMethodByNamespaceType
)

// fsExempt: cluster administrators are never throttled.
func fsExempt() *flowcontrolv1.FlowSchema {
	return newFS(FlowSchemaExempt, PriorityLevelExempt, 1, "", matchAll(groups(groupMasters)...))
}

// fsCatchAll matches everything not matched earlier, by anyone.
func fsCatchAll() *flowcontrolv1.FlowSchema {
	return newFS(FlowSchemaCatchAll, PriorityLevelCatchAll, 10000, byUser,
		matchAll(groups(groupUnauthenticated, groupAuthenticated)...))
}

// fsProbes exempts health checks so that an overloaded server is not also
// declared dead by its load balancer or kubelet.
func fsProbes() *flowcontrolv1.FlowSchema {
	return newFS("probes", PriorityLevelExempt, 2, "", flowcontrolv1.PolicyRulesWithSubjects{
		Subjects: groups(groupUnauthenticated, groupAuthenticated),
		NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{
			Verbs:           []string{"get"},
			NonResourceURLs: []string{"/healthz", "/readyz", "/livez"},
		}},
	})
}

func fsSystemLeaderElection() *flowcontrolv1.FlowSchema {
	return newFS("system-leader-election", "leader-election", 100, byUser, flowcontrolv1.PolicyRulesWithSubjects{
		Subjects:      []flowcontrolv1.Subject{user(userControllerMgr), user(userScheduler), kubeSystemServiceAccounts()},
		ResourceRules: []flowcontrolv1.ResourcePolicyRule{leasesRule("get", "create", "update")},
	})
}

// fsSystemNodeHigh gives node status updates and node lease renewals their
// own level, so heartbeats survive when kubelets are busy with other work.
func fsSystemNodeHigh() *flowcontrolv1.FlowSchema {
	return newFS("system-node-high", "node-high", 400, byUser, flowcontrolv1.PolicyRulesWithSubjects{
		Subjects: groups(groupNodes),
		ResourceRules: []flowcontrolv1.ResourcePolicyRule{
			{
				Verbs:        []string{flowcontrolv1.VerbAll},
				APIGroups:    []string{""}, // the core group
				Resources:    []string{"nodes", "nodes/status"},
				Namespaces:   []string{flowcontrolv1.NamespaceEvery},
				ClusterScope: true,
			},
			leasesRule(flowcontrolv1.VerbAll),
		},
	})
}

func fsSystemNodes() *flowcontrolv1.FlowSchema {
	return newFS("system-nodes", "system", 500, byUser, matchAll(groups(groupNodes)...))
}

func fsKubeControllerManager() *flowcontrolv1.FlowSchema {
	return newFS("kube-controller-manager", "workload-high", 800, byNamespace, matchAll(user(userControllerMgr)))
}

func fsKubeScheduler() *flowcontrolv1.FlowSchema {
	return newFS("kube-scheduler", "workload-high", 800, byNamespace, matchAll(user(userScheduler)))
}

func fsKubeSystemServiceAccounts() *flowcontrolv1.FlowSchema {
	return newFS("kube-system-service-accounts", "workload-high", 900, byNamespace, matchAll(kubeSystemServiceAccounts()))
}

func fsServiceAccounts() *flowcontrolv1.FlowSchema {
	return newFS("service-accounts", "workload-low", 9000, byUser, matchAll(groups(groupServiceAccounts)...))
}

func fsGlobalDefault() *flowcontrolv1.FlowSchema {
	return newFS("global-default", "global-default", 9900, byUser,
		matchAll(groups(groupUnauthenticated, groupAuthenticated)...))
}
