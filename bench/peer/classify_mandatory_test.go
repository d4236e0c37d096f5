package peer

import (
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/config/bootstrap"
)

// TestClassifyMissingMandatoryLevels compares classification when the
// exempt and catch-all PriorityLevelConfiguration objects are missing, so
// that both implementations stand the built-in ones in. A FlowSchema that
// names a missing mandatory level dangles like any other: it takes no part
// in matching, and the mandatory schemas whose objects now dangle are
// replaced by the built-in ones (UID "").
func TestClassifyMissingMandatoryLevels(t *testing.T) {
	var pls []*flowcontrolv1.PriorityLevelConfiguration
	for _, pl := range bootstrap.PriorityLevels() {
		if pl.Name != "exempt" && pl.Name != "catch-all" {
			pls = append(pls, pl)
		}
	}
	fss := append(bootstrap.FlowSchemas(),
		customSchema("devs-to-exempt", "exempt", 100, "",
			flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{groupSubject("devs")}, ResourceRules: []flowcontrolv1.ResourcePolicyRule{everything()}}),
		customSchema("loner-to-catch-all", "catch-all", 200, flowcontrolv1.FlowDistinguisherMethodByUserType,
			flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{userSubject("loner")}, ResourceRules: []flowcontrolv1.ResourcePolicyRule{everything()}}),
	)
	// The default readiness check waits for the exempt FlowSchema object,
	// which dangles here: wait for alice to reach global-default instead
	// (before its first digest upstream sends everyone to catch-all).
	upFS, upPL := withUIDs(fss, pls)
	pods := &apirequest.RequestInfo{IsResourceRequest: true, Verb: "list", APIVersion: "v1", Resource: "pods", Namespace: "default", Path: "/api/v1/namespaces/default/pods"}
	aliceInfo := &user.DefaultInfo{Name: alice.name, Groups: alice.groups}
	up, err := StartUpstream(UpstreamConfig{FlowSchemas: upFS, PriorityLevels: upPL,
		Ready: func(u *Upstream) bool { return u.Classify(pods, aliceInfo).FlowSchema == "global-default" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(up.Stop)
	ourFS, ourPL := withUIDs(fss, pls)
	p := peerPair{up: up, ours: classify.Compile(ourFS, ourPL)}
	runClassifyTable(t, p, []classifyCase{
		{"GET", "/api/v1/namespaces/default/pods", "", alice, "global-default", "global-default", "alice"},
		{"GET", "/api/v1/namespaces/default/pods", "", admin, "exempt", "exempt", ""},
		{"GET", "/api/v1/namespaces/default/pods", "", loner, "catch-all", "catch-all", ""},
	})
	for _, name := range []string{"exempt", "catch-all", "devs-to-exempt", "loner-to-catch-all"} {
		if !p.ours.Dangling(name) {
			t.Errorf("ours: FlowSchema %s should dangle", name)
		}
	}
}
