package classify

import (
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/request"
)

// FuzzClassify drives arbitrary requests and users through a configuration
// mixing the bootstrap objects with wildcard, prefix and service-account
// rules, and checks that classification always answers, agrees with a plain
// scan of the matching order, and computes the flow as the level requires.
func FuzzClassify(f *testing.F) {
	levels := append(bootstrap.PriorityLevels(), level("q", 64), level("rej", 0))
	schemas := append(bootstrap.FlowSchemas(),
		schema("ns-star", "q", 150, "ByUser", resources(users("sa:a/*"), l("*"), l("*"), l("*"), l("*"), true)),
		schema("fixed", "rej", 160, "ByNamespace", resources(users("sa:shop/builder", "user:alice"), l("get", "*"), l("*"), l("pods/status", "pods"), l("a", "*"), false)),
		schema("urls", "q", 170, "ByNamespace", paths(users("group:dev", "user:*"), l("*"), l("/dev/*", "/x", ""))),
		schema("cluster-only", "q", 180, "", resources(users("group:dev"), l("*"), l("*"), l("*"), nil, true)),
		schema("two-namespaces", "q", 190, "ByUser", resources(users("group:dev"), l("get"), l(""), l("pods"), l("a", "b"), false),
			resources(users("group:ops"), l("list"), l("apps"), l("*"), l("c"), false)),
	)
	m := Compile(schemas, levels)
	f.Add("GET", "/api/v1/namespaces/a/pods/p/status", "", "system:serviceaccount:a:b", "dev\x00system:authenticated")
	f.Add("POST", "/healthz/etcd", "", "system:anonymous", "system:unauthenticated")
	f.Add("GET", "/apis/apps/v1/deployments", "watch=1&fieldSelector=metadata.name%3Dx", "alice", "")
	f.Add("DELETE", "/api/v1/namespaces/x", "", "admin", "system:masters")
	f.Add("GET", "/apis/apps/v1/namespaces/c/deployments", "", "u", "ops\x00dev")
	f.Fuzz(func(t *testing.T, method, path, query, user, groups string) {
		info, err := request.Parse(method, path, query)
		if err != nil {
			return
		}
		a := &request.Attributes{Info: info, User: request.User{Name: user}}
		if groups != "" {
			a.User.Groups = strings.Split(groups, "\x00")
		}
		got := m.Classify(a)
		if got.FlowSchema == nil || got.PriorityLevel == nil || got.PriorityLevel != got.FlowSchema.PriorityLevel {
			t.Fatalf("incomplete result %+v", got)
		}
		agreeWithScan(t, m, a)
		lim := got.PriorityLevel.Object.Spec.Limited
		queued := lim != nil && lim.LimitResponse.Queuing != nil && lim.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue && lim.LimitResponse.Queuing.Queues > 1
		if !queued && (got.FlowDistinguisher != "" || got.FlowHash != 0) {
			t.Fatalf("flow computed for level %s that does not need one", got.PriorityLevel.Name)
		}
		if queued && got.FlowHash != FlowHash(got.FlowSchema.Name, got.FlowDistinguisher) {
			t.Fatal("hash does not match the flow")
		}
	})
}
