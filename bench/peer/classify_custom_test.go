package peer

import (
	"slices"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/apfproject/apf/config/bootstrap"
)

// The custom configuration adds to the bootstrap objects a few levels and
// schemas that exercise the corners of matching
// (docs/spec/classification.md#rule-matching): wildcard subjects, service
// accounts by namespace, non-resource prefixes, namespace lists and cluster
// scope, subresources, equal precedences, dangling schemas, a Reject level
// and a one-queue level.

func customLevel(name string, limited *flowcontrolv1.LimitedPriorityLevelConfiguration) *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: limited},
	}
}

func queueLevel(name string, queues, handSize int32) *flowcontrolv1.PriorityLevelConfiguration {
	return customLevel(name, &flowcontrolv1.LimitedPriorityLevelConfiguration{
		NominalConcurrencyShares: ptr.To[int32](10),
		LendablePercent:          ptr.To[int32](0),
		LimitResponse: flowcontrolv1.LimitResponse{
			Type:    flowcontrolv1.LimitResponseTypeQueue,
			Queuing: &flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: handSize, QueueLengthLimit: 10},
		},
	})
}

func customLevels() []*flowcontrolv1.PriorityLevelConfiguration {
	return []*flowcontrolv1.PriorityLevelConfiguration{
		queueLevel("custom-queue", 32, 4),
		// One queue: no hand is dealt, so no distinguisher.
		queueLevel("custom-one-queue", 1, 1),
		customLevel("custom-reject", &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: ptr.To[int32](10),
			LendablePercent:          ptr.To[int32](0),
			LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
		}),
		// Broken levels (docs/spec/digest.md#unusable-priority-levels),
		// never written by a validating server but seen by a consumer all the
		// same: a hand larger than the deck, and a Limited level without its
		// limited section.
		queueLevel("broken-hand", 4, 8),
		customLevel("broken-shape", nil),
	}
}

func customSchema(name, pl string, precedence int32, dm flowcontrolv1.FlowDistinguisherMethodType, rules ...flowcontrolv1.PolicyRulesWithSubjects) *flowcontrolv1.FlowSchema {
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: pl},
			MatchingPrecedence:         precedence,
			Rules:                      rules,
		},
	}
	if dm != "" {
		fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: dm}
	}
	return fs
}

func userSubject(name string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: name}}
}

func groupSubject(name string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: name}}
}

func saSubject(ns, name string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount,
		ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: ns, Name: name}}
}

func resourceRule(verbs, groups, resources, namespaces []string, clusterScope bool) flowcontrolv1.ResourcePolicyRule {
	return flowcontrolv1.ResourcePolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, Namespaces: namespaces, ClusterScope: clusterScope}
}

func everything() flowcontrolv1.ResourcePolicyRule {
	return resourceRule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*"}, true)
}

func strs(s ...string) []string { return s }

func customSchemas() []*flowcontrolv1.FlowSchema {
	return []*flowcontrolv1.FlowSchema{
		// Dangling: they would catch every authenticated request
		// before nearly everything else if they were used.
		customSchema("c-dangling", "missing-level", 10, flowcontrolv1.FlowDistinguisherMethodByUserType,
			flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{groupSubject(authenticated)},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{everything()}}),
		customSchema("c-broken-hand", "broken-hand", 11, flowcontrolv1.FlowDistinguisherMethodByUserType,
			flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{groupSubject(authenticated)},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{everything()}}),
		customSchema("c-broken-shape", "broken-shape", 12, flowcontrolv1.FlowDistinguisherMethodByUserType,
			flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{groupSubject(authenticated)},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{everything()}}),
		// Any user, GET under /foo/ (not /foo itself).
		customSchema("c-star-user", "custom-queue", 50, flowcontrolv1.FlowDistinguisherMethodByUserType,
			flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{userSubject("*")},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: strs("get"), NonResourceURLs: strs("/foo/*")}}}),
		// Any verb on /foo and under it.
		customSchema("c-foo-exact", "custom-reject", 60, flowcontrolv1.FlowDistinguisherMethodByUserType,
			flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{groupSubject(authenticated)},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: strs("*"), NonResourceURLs: strs("/foo")}}}),
		// Every service account of team-a, in namespaces team-a and
		// team-b only.
		customSchema("c-sa-star", "custom-queue", 70, flowcontrolv1.FlowDistinguisherMethodByNamespaceType,
			flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{saSubject("team-a", "*")},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{resourceRule(strs("*"), strs("*"), strs("*"), strs("team-a", "team-b"), false)}}),
		// Cluster-scoped reads of namespaces only, on a one-queue level.
		customSchema("c-ns-cluster", "custom-one-queue", 75, flowcontrolv1.FlowDistinguisherMethodByUserType,
			flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{groupSubject("devs")},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{resourceRule(strs("get", "list"), strs(""), strs("namespaces"), nil, true)}}),
		// Equal precedence: the name decides, not the order given.
		customSchema("c-tie-b", "custom-reject", 80, flowcontrolv1.FlowDistinguisherMethodByUserType,
			flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{userSubject("carol")},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{everything()}}),
		customSchema("c-tie-a", "custom-queue", 80, flowcontrolv1.FlowDistinguisherMethodByUserType,
			flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{userSubject("carol")},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{everything()}}),
		// Any group: deleting one deployment (not a collection).
		customSchema("c-star-group", "custom-queue", 85, flowcontrolv1.FlowDistinguisherMethodByNamespaceType,
			flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{groupSubject("*")},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{resourceRule(strs("delete"), strs("apps"), strs("deployments"), strs("*"), false)}}),
		// A subresource named explicitly.
		customSchema("c-subres", "custom-queue", 86, flowcontrolv1.FlowDistinguisherMethodByUserType,
			flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{groupSubject("*")},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{resourceRule(strs("get"), strs(""), strs("pods/log"), strs("*"), false)}}),
		// One named service account.
		customSchema("c-sa-exact", "custom-reject", 87, flowcontrolv1.FlowDistinguisherMethodByUserType,
			flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{saSubject("team-a", "builder")},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{resourceRule(strs("*"), strs(""), strs("configmaps"), strs("*"), false)}}),
		// No distinguisher method on a queuing level.
		customSchema("c-nil-dist", "custom-queue", 88, "",
			flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{userSubject("dave")},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{everything()}}),
		// A suggested-style schema pointing at the exempt level.
		customSchema("c-exempt-user", "exempt", 90, flowcontrolv1.FlowDistinguisherMethodByUserType,
			flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{userSubject("eve")},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{everything()}}),
		// Several rules: the second one matches.
		customSchema("c-two-rules", "custom-queue", 95, flowcontrolv1.FlowDistinguisherMethodByNamespaceType,
			flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{userSubject("frank")},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: strs("*"), NonResourceURLs: strs("*")}}},
			flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{userSubject("frank"), groupSubject("ops")},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{resourceRule(strs("list", "watch"), strs("*"), strs("*"), strs("ops"), false)}}),
	}
}

var (
	carol      = testUser{"carol", []string{authenticated}}
	dave       = testUser{"dave", []string{authenticated}}
	eve        = testUser{"eve", []string{authenticated}}
	frank      = testUser{"frank", []string{authenticated}}
	opsUser    = testUser{"gina", []string{authenticated, "ops"}}
	teamA      = serviceAccount("team-a", "x")
	teamB      = serviceAccount("team-b", "x")
	teamABuild = serviceAccount("team-a", "builder")
)

var customCases = []classifyCase{
	{"GET", "/foo/bar", "", alice, "c-star-user", "custom-queue", "alice"},
	{"GET", "/foo/bar", "", anonymous, "c-star-user", "custom-queue", "system:anonymous"},
	{"GET", "/foo/bar", "", loner, "c-star-user", "custom-queue", "loner"},
	{"GET", "/foo/", "", alice, "c-star-user", "custom-queue", "alice"},
	{"GET", "/foo", "", alice, "c-foo-exact", "custom-reject", ""},
	{"POST", "/foo/bar", "", alice, "c-foo-exact", "custom-reject", ""},
	{"GET", "/foobar", "", alice, "global-default", "global-default", "alice"},
	{"GET", "/foo", "", anonymous, "global-default", "global-default", "system:anonymous"},
	{"GET", "/foo/bar", "", admin, "exempt", "exempt", ""},

	{"GET", "/api/v1/namespaces/team-b/pods", "", teamA, "c-sa-star", "custom-queue", "team-b"},
	{"PUT", "/api/v1/namespaces/team-a/configmaps/c", "", teamA, "c-sa-star", "custom-queue", "team-a"},
	{"GET", "/api/v1/nodes", "", teamA, "service-accounts", "workload-low", teamA.name},
	{"GET", "/api/v1/namespaces/team-c/pods", "", teamA, "service-accounts", "workload-low", teamA.name},
	{"GET", "/api/v1/namespaces/team-a/pods", "", teamB, "service-accounts", "workload-low", teamB.name},

	{"GET", "/api/v1/namespaces", "", alice, "c-ns-cluster", "custom-one-queue", ""},
	{"GET", "/api/v1/namespaces/foo", "", alice, "global-default", "global-default", "alice"},
	{"POST", "/api/v1/namespaces", "", alice, "global-default", "global-default", "alice"},

	{"GET", "/api/v1/namespaces/default/pods", "", carol, "c-tie-a", "custom-queue", "carol"},
	{"GET", "/healthz", "", carol, "probes", "exempt", ""},

	{"DELETE", "/apis/apps/v1/namespaces/default/deployments/d", "", anonymous, "c-star-group", "custom-queue", "default"},
	{"DELETE", "/apis/apps/v1/namespaces/default/deployments", "", anonymous, "global-default", "global-default", "system:anonymous"},
	// A "*" group matches even a user in no group.
	{"DELETE", "/apis/apps/v1/namespaces/default/deployments/d", "", loner, "c-star-group", "custom-queue", "default"},

	{"GET", "/api/v1/namespaces/default/pods/p/log", "", alice, "c-subres", "custom-queue", "alice"},
	{"GET", "/api/v1/namespaces/default/pods/p", "", alice, "global-default", "global-default", "alice"},
	{"GET", "/api/v1/namespaces/default/pods/p/status", "", alice, "global-default", "global-default", "alice"},

	{"GET", "/api/v1/namespaces/default/configmaps/c", "", teamABuild, "c-sa-exact", "custom-reject", ""},
	{"GET", "/api/v1/namespaces/default/configmaps/c", "", teamA, "service-accounts", "workload-low", teamA.name},

	{"GET", "/api/v1/pods", "", dave, "c-nil-dist", "custom-queue", ""},
	{"GET", "/api/v1/pods", "", eve, "c-exempt-user", "exempt", ""},

	{"GET", "/api/v1/namespaces/ops/pods", "", frank, "c-two-rules", "custom-queue", "ops"},
	{"GET", "/api/v1/namespaces/ops/pods", "watch=1", opsUser, "c-two-rules", "custom-queue", "ops"},
	{"GET", "/api/v1/namespaces/ops/pods/p", "", opsUser, "global-default", "global-default", "gina"},
	{"GET", "/metrics", "", frank, "c-two-rules", "custom-queue", ""},

	// Dangling schemas are skipped.
	{"GET", "/api/v1/pods", "", alice, "global-default", "global-default", "alice"},
	{"PATCH", "/api/v1/nodes/n1/status", "", kubelet, "system-node-high", "node-high", "system:node:n1"},
	{"GET", "/api/v1/pods", "", loner, "catch-all", "catch-all", ""},
}

// customConfig is the bootstrap configuration (ours, so that both sides
// read the same objects) plus the custom objects.
func customConfig() ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration) {
	return slices.Concat(bootstrap.FlowSchemas(), customSchemas()), slices.Concat(bootstrap.PriorityLevels(), customLevels())
}

// TestClassifyCustom compares classification under the custom
// configuration, loaded identically into both implementations.
func TestClassifyCustom(t *testing.T) {
	fss, pls := customConfig()
	p := startPair(t, fss, pls, fss, pls)
	runClassifyTable(t, p, customCases)
}
