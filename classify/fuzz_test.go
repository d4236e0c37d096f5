package classify

import (
	"fmt"
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

// FuzzCompile builds a configuration from the fuzzer's bytes (schemas of
// every kind of subject, long and short lists, wildcards used as values,
// many resource rules or URLs in one rule, dangling and tied schemas) and
// classifies requests built from the same bytes, checking every answer
// against the plain reading of the objects in oracle_test.go. It exercises
// the rule index, the sets behind long lists and the per-rule resource
// index, none of which may ever change an answer.
func FuzzCompile(f *testing.F) {
	f.Add([]byte("\x03\x01\x02\x0b\x0b\x0b\x05\x07\x09\x0a\x0c\x04\x02\x01"))
	f.Add([]byte("seed: a schema with many namespaces and subjects in one rule \xff\xfe\x10\x11\x12"))
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &fuzzGen{data: data}
		schemas, levels := g.config()
		m := Compile(schemas, levels)
		for range 1 + g.n(16) {
			a := g.request(t)
			if a == nil {
				continue
			}
			if got, want := m.Classify(a).FlowSchema, oracleFirst(m, a); got != want {
				t.Fatalf("%s %s (ns %q) as %s %v: index gave %s, scan %s",
					a.Info.Verb, a.Info.Path, a.Info.Namespace, a.User.Name, a.User.Groups, got.Name, want.Name)
			}
		}
	})
}

// fuzzGen draws a configuration and requests from a byte string; once the
// bytes run out every draw is zero.
type fuzzGen struct {
	data []byte
	i    int
}

func (g *fuzzGen) byte() byte {
	if g.i >= len(g.data) {
		return 0
	}
	g.i++
	return g.data[g.i-1]
}

// n draws a number below limit.
func (g *fuzzGen) n(limit int) int { return int(g.byte()) % limit }

func (g *fuzzGen) pick(from ...string) string { return from[g.n(len(from))] }

// list draws up to 11 elements, so that lists both shorter and longer than
// shortList occur, or the wildcard alone, often.
func (g *fuzzGen) list(from ...string) []string {
	k := g.n(16)
	if k >= 12 {
		return []string{"*"}
	}
	out := make([]string, k)
	for i := range out {
		out[i] = g.pick(from...)
	}
	return out
}

var (
	fuzzNames      = []string{"alice", "bob", "*", "system:serviceaccount:a:x", "a:b"}
	fuzzNamespaces = []string{"a", "b", "a:b", "*", "kube-system", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9"}
	fuzzVerbs      = []string{"get", "list", "watch", "create", "update", "patch", "delete", "*"}
	fuzzGroups     = []string{"", "apps", "*", "batch"}
	fuzzResources  = []string{"pods", "pods/status", "*", "deployments", "nodes", "pods/log", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8"}
	fuzzURLs       = []string{"*", "/a", "/a/*", "/a/b", "/", "/ab*", "/x/y/", "/healthz", "/u1", "/u2", "/u3", "/u4", "/u5", "/u6", "/u7", "/u8", "/u9"}
)

func (g *fuzzGen) config() ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration) {
	levels := []*flowcontrolv1.PriorityLevelConfiguration{level("q", 64), level("one", 1), level("rej", 0)}
	if g.n(2) == 0 {
		levels = append(levels, bootstrap.PriorityLevels()...)
	}
	var schemas []*flowcontrolv1.FlowSchema
	if g.n(2) == 0 {
		schemas = bootstrap.FlowSchemas()
	}
	for s := range 1 + g.n(6) {
		var rules []flowcontrolv1.PolicyRulesWithSubjects
		for range g.n(4) {
			rules = append(rules, g.rule())
		}
		schemas = append(schemas, schema(fmt.Sprintf("s%d", s), g.pick("q", "one", "rej", "exempt", "missing"),
			int32(1+g.n(4)*100), flowcontrolv1.FlowDistinguisherMethodType(g.pick("", "ByUser", "ByNamespace")), rules...))
	}
	return schemas, levels
}

func (g *fuzzGen) rule() flowcontrolv1.PolicyRulesWithSubjects {
	var r flowcontrolv1.PolicyRulesWithSubjects
	for range g.n(12) {
		name := g.pick(fuzzNames...)
		switch g.n(5) {
		case 0:
			r.Subjects = append(r.Subjects, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: name}})
		case 1:
			r.Subjects = append(r.Subjects, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: name}})
		case 2:
			r.Subjects = append(r.Subjects, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount,
				ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: g.pick(fuzzNamespaces...), Name: g.pick("x", "*", "y")}})
		case 3: // a subject missing its member: matches nobody
			r.Subjects = append(r.Subjects, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount})
		default:
			r.Subjects = append(r.Subjects, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "system:authenticated"}})
		}
	}
	for range g.n(12) {
		r.ResourceRules = append(r.ResourceRules, flowcontrolv1.ResourcePolicyRule{
			Verbs: g.list(fuzzVerbs...), APIGroups: g.list(fuzzGroups...), Resources: g.list(fuzzResources...),
			Namespaces: g.list(fuzzNamespaces...), ClusterScope: g.n(2) == 0,
		})
	}
	for range g.n(3) {
		r.NonResourceRules = append(r.NonResourceRules, flowcontrolv1.NonResourcePolicyRule{
			Verbs: g.list(fuzzVerbs...), NonResourceURLs: g.list(fuzzURLs...),
		})
	}
	return r
}

func (g *fuzzGen) request(t *testing.T) *request.Attributes {
	method := g.pick("GET", "POST", "PUT", "PATCH", "DELETE")
	var path string
	switch g.n(4) {
	case 0:
		path = g.pick("/a", "/a/", "/a/b", "/a/b/c", "/ab", "/abc/d", "/x/y", "/x/y/z", "/healthz", "/healthz/etcd", "/u5", "/u5/v", "/")
	case 1:
		path = "/api/v1/" + g.pick("pods", "nodes/n", "namespaces", "nodes/n/status")
	default:
		group := g.pick("/api/v1", "/apis/apps/v1", "/apis/batch/v1")
		path = group + "/namespaces/" + g.pick("a", "b", "n5", "kube-system", "zz") + "/" + g.pick("pods/p", "pods/p/status", "pods/p/log", "deployments", "r5/x")
	}
	info, err := request.Parse(method, path, "")
	if err != nil {
		return nil
	}
	u := request.User{Name: g.pick(append(fuzzNames, "system:serviceaccount:a:b:x", "system:serviceaccount:n5:x", "carol")...)}
	for range g.n(4) {
		u.Groups = append(u.Groups, g.pick(append(fuzzNames, "system:authenticated")...))
	}
	return &request.Attributes{Info: info, User: u}
}
