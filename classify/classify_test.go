package classify

import (
	"fmt"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/request"
)

func bootstrapMatcher(t testing.TB) *Matcher {
	t.Helper()
	m := Compile(bootstrap.FlowSchemas(), bootstrap.PriorityLevels())
	if p := m.Problems(); len(p) != 0 {
		t.Fatalf("bootstrap configuration has problems: %v", p)
	}
	return m
}

// attrs builds request attributes from "METHOD /path?query" and a user
// spec "name" or "name|group1,group2".
func attrs(t testing.TB, req, user string) *request.Attributes {
	t.Helper()
	method, target, ok := strings.Cut(req, " ")
	if !ok {
		t.Fatalf("bad request spec %q", req)
	}
	path, query, _ := strings.Cut(target, "?")
	info, err := request.Parse(method, path, query)
	if err != nil {
		t.Fatalf("parse %q: %v", req, err)
	}
	name, groups, _ := strings.Cut(user, "|")
	u := request.User{Name: name}
	if groups != "" {
		u.Groups = strings.Split(groups, ",")
	}
	return &request.Attributes{Info: info, User: u}
}

const (
	authn    = "system:authenticated"
	unauthn  = "system:unauthenticated"
	kubelet  = "system:node:n1|system:nodes," + authn
	kcm      = "system:kube-controller-manager|" + authn
	sched    = "system:kube-scheduler|" + authn
	ksSA     = "system:serviceaccount:kube-system:generic-garbage-collector|system:serviceaccounts,system:serviceaccounts:kube-system," + authn
	appSA    = "system:serviceaccount:shop:builder|system:serviceaccounts,system:serviceaccounts:shop," + authn
	admin    = "admin|system:masters," + authn
	alice    = "alice|dev," + authn
	anon     = "system:anonymous|" + unauthn
	nobody   = "stranger"
	lonelySA = "system:serviceaccount:shop:builder" // no groups at all
)

func TestClassifyBootstrap(t *testing.T) {
	m := bootstrapMatcher(t)
	cases := []struct {
		req, user       string
		fs, pl, distinc string
	}{
		// system:masters is exempt whatever it does.
		{"DELETE /api/v1/namespaces/default/pods/p", admin, "exempt", "exempt", ""},
		{"GET /metrics", admin, "exempt", "exempt", ""},
		// Health probes from anyone are exempt, for GET only, with prefix matching on /healthz.
		{"GET /healthz", anon, "probes", "exempt", ""},
		{"GET /readyz", anon, "probes", "exempt", ""},
		{"GET /livez", alice, "probes", "exempt", ""},
		{"GET /healthz/etcd", anon, "probes", "exempt", ""},
		{"POST /healthz", anon, "global-default", "global-default", "system:anonymous"},
		{"GET /healthzx", anon, "global-default", "global-default", "system:anonymous"},
		{"GET /version", anon, "global-default", "global-default", "system:anonymous"},
		// Leader election: only leases in coordination.k8s.io, only get/create/update.
		{"PUT /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager", kcm, "system-leader-election", "leader-election", "system:kube-controller-manager"},
		{"GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler", sched, "system-leader-election", "leader-election", "system:kube-scheduler"},
		{"POST /apis/coordination.k8s.io/v1/namespaces/kube-system/leases", ksSA, "system-leader-election", "leader-election", "system:serviceaccount:kube-system:generic-garbage-collector"},
		{"PATCH /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x", kcm, "kube-controller-manager", "workload-high", "kube-system"},
		{"GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases", kcm, "kube-controller-manager", "workload-high", "kube-system"},
		{"PUT /api/v1/namespaces/kube-system/endpoints/kube-scheduler", sched, "kube-scheduler", "workload-high", "kube-system"},
		{"PUT /api/v1/namespaces/kube-system/configmaps/kube-controller-manager", kcm, "kube-controller-manager", "workload-high", "kube-system"},
		{"PUT /apis/coordination.k8s.io/v1/namespaces/shop/leases/x", appSA, "service-accounts", "workload-low", "system:serviceaccount:shop:builder"},
		// Kubelets.
		{"PATCH /api/v1/nodes/n1/status", kubelet, "system-node-high", "node-high", "system:node:n1"},
		{"GET /api/v1/nodes/n1", kubelet, "system-node-high", "node-high", "system:node:n1"},
		{"PUT /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", kubelet, "system-node-high", "node-high", "system:node:n1"},
		{"GET /api/v1/pods?fieldSelector=spec.nodeName%3Dn1", kubelet, "system-nodes", "system", "system:node:n1"},
		{"GET /api/v1/namespaces/default/pods?watch=true", kubelet, "system-nodes", "system", "system:node:n1"},
		{"POST /api/v1/namespaces/default/events", kubelet, "system-nodes", "system", "system:node:n1"},
		{"GET /api/v1/nodes/n1/proxy/metrics", kubelet, "system-nodes", "system", "system:node:n1"},
		{"GET /version", kubelet, "system-nodes", "system", "system:node:n1"},
		// Controllers and scheduler are distinguished by namespace.
		{"GET /api/v1/namespaces/shop/pods", kcm, "kube-controller-manager", "workload-high", "shop"},
		{"GET /api/v1/pods", kcm, "kube-controller-manager", "workload-high", ""},
		{"PUT /api/v1/namespaces/shop", kcm, "kube-controller-manager", "workload-high", "shop"},
		{"POST /api/v1/namespaces/shop/pods/p/binding", sched, "kube-scheduler", "workload-high", "shop"},
		{"GET /openapi/v2", sched, "kube-scheduler", "workload-high", ""},
		// Service accounts.
		{"GET /apis/apps/v1/namespaces/kube-system/deployments", ksSA, "kube-system-service-accounts", "workload-high", "kube-system"},
		{"DELETE /api/v1/namespaces/shop/pods", ksSA, "kube-system-service-accounts", "workload-high", "shop"},
		{"GET /apis/apps/v1/namespaces/shop/deployments/web/scale", appSA, "service-accounts", "workload-low", "system:serviceaccount:shop:builder"},
		{"GET /api/v1/namespaces/shop/pods/web/log", appSA, "service-accounts", "workload-low", "system:serviceaccount:shop:builder"},
		// The ServiceAccount subject looks at the user name only, not the groups.
		{"GET /api/v1/namespaces/kube-system/pods", "system:serviceaccount:kube-system:x|" + authn, "kube-system-service-accounts", "workload-high", "kube-system"},
		{"GET /api/v1/namespaces/shop/pods", lonelySA, "catch-all", "catch-all", ""},
		// Ordinary users.
		{"GET /api/v1/namespaces/default/pods", alice, "global-default", "global-default", "alice"},
		{"POST /apis/apps/v1/namespaces/default/deployments", alice, "global-default", "global-default", "alice"},
		{"GET /apis", alice, "global-default", "global-default", "alice"},
		{"GET /api/v1/namespaces/default/pods/p/status", alice, "global-default", "global-default", "alice"},
		{"GET /api/v1/namespaces?watch=1", alice, "global-default", "global-default", "alice"},
		{"GET /api/v1/namespaces/default/configmaps", anon, "global-default", "global-default", "system:anonymous"},
		// Someone in neither system:authenticated nor system:unauthenticated.
		{"GET /api/v1/pods", nobody, "catch-all", "catch-all", ""},
		{"GET /healthz", nobody, "catch-all", "catch-all", ""},
		{"GET /healthz", "admin|system:masters", "exempt", "exempt", ""},
	}
	for _, c := range cases {
		t.Run(c.req+" as "+c.user, func(t *testing.T) {
			got := m.Classify(attrs(t, c.req, c.user))
			if got.FlowSchema.Name != c.fs || got.PriorityLevel.Name != c.pl || got.FlowDistinguisher != c.distinc {
				t.Fatalf("got fs=%s pl=%s distinguisher=%q; want fs=%s pl=%s distinguisher=%q",
					got.FlowSchema.Name, got.PriorityLevel.Name, got.FlowDistinguisher, c.fs, c.pl, c.distinc)
			}
			wantHash := uint64(0)
			if got.PriorityLevel.distinguishes {
				wantHash = FlowHash(c.fs, c.distinc)
			}
			if got.FlowHash != wantHash {
				t.Fatalf("hash %d, want %d", got.FlowHash, wantHash)
			}
		})
	}
}

// The hash test vectors were checked against upstream's own computation.
func TestFlowHashVectors(t *testing.T) {
	for _, c := range []struct {
		fs, d string
		want  uint64
	}{
		{"global-default", "alice", 17644606172554983095},
		{"service-accounts", "system:serviceaccount:default:builder", 6620097910960460477},
		{"kube-system-service-accounts", "kube-system", 5788695476672829020},
	} {
		if got := FlowHash(c.fs, c.d); got != c.want {
			t.Errorf("FlowHash(%q, %q) = %d, want %d", c.fs, c.d, got, c.want)
		}
	}
	long := strings.Repeat("n", 300)
	if FlowHash(long, "x") == FlowHash(long, "y") {
		t.Error("long inputs collide")
	}
}

func TestMatcherReportsPositions(t *testing.T) {
	m := bootstrapMatcher(t)
	want := []string{"exempt", "probes", "system-leader-election", "system-node-high", "system-nodes",
		"kube-controller-manager", "kube-scheduler", "kube-system-service-accounts", "service-accounts",
		"global-default", "catch-all"}
	var got []string
	for i, fs := range m.FlowSchemas() {
		got = append(got, fs.Name)
		if fs.Index != i || fs.Imagined {
			t.Errorf("%s: index %d imagined %v", fs.Name, fs.Index, fs.Imagined)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	for i, pl := range m.PriorityLevels() {
		if pl.Index != i || m.PriorityLevel(pl.Name) != pl || pl.UID != string(pl.Object.UID) {
			t.Errorf("level %s misindexed", pl.Name)
		}
	}
	if !m.PriorityLevel("exempt").Exempt || m.PriorityLevel("catch-all").Exempt {
		t.Error("exempt flags wrong")
	}
}

// helpers to build small configurations for semantic tests.

func level(name string, queues int32) *flowcontrolv1.PriorityLevelConfiguration {
	shares := int32(10)
	lendable := int32(0)
	pl := &flowcontrolv1.PriorityLevelConfiguration{}
	pl.Name = name
	pl.UID = types.UID("uid-" + name)
	pl.Spec.Type = flowcontrolv1.PriorityLevelEnablementLimited
	pl.Spec.Limited = &flowcontrolv1.LimitedPriorityLevelConfiguration{
		NominalConcurrencyShares: &shares,
		LendablePercent:          &lendable,
	}
	if queues == 0 {
		pl.Spec.Limited.LimitResponse.Type = flowcontrolv1.LimitResponseTypeReject
	} else {
		hand := min(queues, 4)
		pl.Spec.Limited.LimitResponse = flowcontrolv1.LimitResponse{
			Type:    flowcontrolv1.LimitResponseTypeQueue,
			Queuing: &flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: hand, QueueLengthLimit: 50},
		}
	}
	return pl
}

func schema(name, pl string, prec int32, by flowcontrolv1.FlowDistinguisherMethodType, rules ...flowcontrolv1.PolicyRulesWithSubjects) *flowcontrolv1.FlowSchema {
	fs := &flowcontrolv1.FlowSchema{}
	fs.Name = name
	fs.UID = types.UID("uid-" + name)
	fs.Spec.PriorityLevelConfiguration.Name = pl
	fs.Spec.MatchingPrecedence = prec
	if by != "" {
		fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: by}
	}
	fs.Spec.Rules = rules
	return fs
}

func users(names ...string) []flowcontrolv1.Subject {
	var out []flowcontrolv1.Subject
	for _, n := range names {
		kind, rest, _ := strings.Cut(n, ":")
		switch kind {
		case "user":
			out = append(out, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: rest}})
		case "group":
			out = append(out, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: rest}})
		case "sa":
			ns, name, _ := strings.Cut(rest, "/")
			out = append(out, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: ns, Name: name}})
		default:
			panic("bad subject " + n)
		}
	}
	return out
}

func resources(subjects []flowcontrolv1.Subject, verbs, groups, res, namespaces []string, cluster bool) flowcontrolv1.PolicyRulesWithSubjects {
	return flowcontrolv1.PolicyRulesWithSubjects{Subjects: subjects, ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
		Verbs: verbs, APIGroups: groups, Resources: res, Namespaces: namespaces, ClusterScope: cluster,
	}}}
}

func paths(subjects []flowcontrolv1.Subject, verbs, urls []string) flowcontrolv1.PolicyRulesWithSubjects {
	return flowcontrolv1.PolicyRulesWithSubjects{Subjects: subjects, NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{
		Verbs: verbs, NonResourceURLs: urls,
	}}}
}

func l(s ...string) []string { return s }

func TestClassifySemantics(t *testing.T) {
	levels := []*flowcontrolv1.PriorityLevelConfiguration{level("q", 64), level("one", 1), level("rej", 0)}
	all := users("group:*")
	schemas := []*flowcontrolv1.FlowSchema{
		schema("url-exact", "q", 100, "ByUser", paths(all, l("get"), l("/foo"))),
		schema("url-prefix", "q", 100, "ByUser", paths(all, l("get"), l("/bar/*"))),
		schema("url-star-anywhere", "q", 100, "ByUser", paths(users("user:star"), l("get"), l("/x", "*"))),
		schema("verb-literal-star", "q", 100, "ByUser", paths(users("user:lit"), l("get", "*"), l("/lit"))),
		schema("subresource", "q", 200, "ByNamespace", resources(all, l("*"), l(""), l("pods/status"), l("*"), false)),
		schema("pods", "q", 200, "ByNamespace", resources(all, l("get"), l(""), l("pods"), l("a", "b"), false)),
		schema("cluster", "one", 200, "ByUser", resources(all, l("list"), l("*"), l("*"), nil, true)),
		schema("sa-any", "rej", 300, "ByUser", resources(users("sa:ns1/*"), l("*"), l("*"), l("*"), l("*"), true)),
		schema("sa-one", "q", 300, "", resources(users("sa:ns2/bob"), l("*"), l("*"), l("*"), l("*"), true)),
		// Equal precedence: name decides ("a-first" before "b-second").
		schema("b-second", "q", 400, "ByUser", resources(users("user:tie"), l("*"), l("*"), l("*"), l("*"), true)),
		schema("a-first", "q", 400, "ByUser", resources(users("user:tie"), l("*"), l("*"), l("*"), l("*"), true)),
		schema("dangling", "missing", 1, "ByUser", resources(all, l("*"), l("*"), l("*"), l("*"), true)),
	}
	m := Compile(schemas, levels)
	if !m.Dangling("dangling") || m.Dangling("pods") {
		t.Fatalf("dangling report wrong: %v", m.Problems())
	}
	// Mandatory objects were missing: both levels and both schemas are imagined.
	if first := m.FlowSchemas()[0]; first.Name != "exempt" || !first.Imagined || first.UID != "" {
		t.Fatalf("first schema %+v", first)
	}
	if last := m.FlowSchemas()[len(m.FlowSchemas())-1]; last.Name != "catch-all" || !last.Imagined {
		t.Fatalf("last schema %+v", last)
	}
	if pl := m.PriorityLevel("exempt"); pl == nil || !pl.Imagined || pl.UID != "" {
		t.Fatalf("exempt level %+v", pl)
	}

	cases := []struct{ req, user, fs, d string }{
		{"GET /foo", "u|g", "url-exact", "u"},
		{"GET /foo/deeper", "u|g", "url-exact", "u"},
		{"GET /foobar", "u|g", "catch-all", ""}, // not under "/foo/"
		{"GET /bar", "u|g", "catch-all", ""},
		{"GET /bar/", "u|g", "url-prefix", "u"},
		{"GET /bar/x/y", "u|g", "url-prefix", "u"},
		{"GET /anything", "star", "url-star-anywhere", "star"},
		{"GET /lit", "lit", "verb-literal-star", "lit"},
		{"POST /lit", "lit", "catch-all", ""},
		{"GET /api/v1/namespaces/a/pods/p/status", "u|g", "subresource", "a"},
		{"GET /api/v1/namespaces/c/pods/p", "u|g", "catch-all", ""},
		{"GET /api/v1/namespaces/b/pods/p", "u|g", "pods", "b"},
		{"GET /api/v1/namespaces/b/pods/p/log", "u|g", "catch-all", ""},
		{"GET /api/v1/pods", "u|g", "cluster", ""}, // queues=1: no distinguisher
		{"GET /api/v1/namespaces/a/pods", "u|g", "catch-all", ""},
		{"GET /api/v1/nodes/n", "system:serviceaccount:ns1:x", "sa-any", ""}, // Reject level: no distinguisher
		{"GET /api/v1/nodes/n", "system:serviceaccount:ns1x:x", "catch-all", ""},
		{"GET /api/v1/nodes/n", "system:serviceaccount:ns2:bob", "sa-one", ""},
		{"GET /api/v1/nodes/n", "system:serviceaccount:ns2:bob2", "catch-all", ""},
		{"GET /api/v1/nodes/n", "tie", "a-first", "tie"},
	}
	for _, c := range cases {
		got := m.Classify(attrs(t, c.req, c.user))
		if got.FlowSchema.Name != c.fs || got.FlowDistinguisher != c.d {
			t.Errorf("%s as %s: got %s %q, want %s %q", c.req, c.user, got.FlowSchema.Name, got.FlowDistinguisher, c.fs, c.d)
		}
		if got.PriorityLevel != got.FlowSchema.PriorityLevel {
			t.Errorf("%s: level not the schema's", c.req)
		}
	}
	if got := m.Classify(attrs(t, "GET /api/v1/pods", "u|g")); got.FlowHash != 0 {
		t.Errorf("queues=1 level got hash %d", got.FlowHash)
	}
	if got := m.Classify(attrs(t, "GET /bar/x", "u|g")); got.FlowHash != FlowHash("url-prefix", "u") {
		t.Errorf("hash %d", got.FlowHash)
	}
}

func TestBrokenLevels(t *testing.T) {
	badHand := level("bad-hand", 128)
	badHand.Spec.Limited.LimitResponse.Queuing.HandSize = 9 // 63 bits of entropy
	rejectWithQueuing := level("reject-queuing", 8)
	rejectWithQueuing.Spec.Limited.LimitResponse.Type = flowcontrolv1.LimitResponseTypeReject
	noLimited := level("no-limited", 8)
	noLimited.Spec.Limited = nil
	wrongExempt := level("not-exempt", 8)
	wrongExempt.Spec.Type = flowcontrolv1.PriorityLevelEnablementExempt
	exemptNoSection := bootstrap.MandatoryPriorityLevel("exempt")
	exemptNoSection.Spec.Exempt = nil
	levels := []*flowcontrolv1.PriorityLevelConfiguration{badHand, rejectWithQueuing, noLimited, wrongExempt, exemptNoSection, level("ok", 8)}
	var schemas []*flowcontrolv1.FlowSchema
	for _, pl := range levels {
		schemas = append(schemas, schema("to-"+pl.Name, pl.Name, 100, "", resources(users("group:*"), l("*"), l("*"), l("*"), l("*"), true)))
	}
	m := Compile(schemas, levels)
	for _, pl := range levels[:5] {
		if m.PriorityLevel(pl.Name) != nil && pl.Name != "exempt" {
			t.Errorf("broken level %s accepted", pl.Name)
		}
		if !m.Dangling("to-" + pl.Name) {
			t.Errorf("schema to %s should dangle", pl.Name)
		}
	}
	// The exempt object without its section is ignored; the built-in one
	// stands in, but a schema naming it still dangles, as in the API
	// server, which imagines mandatory levels after digesting the schemas.
	if ex := m.PriorityLevel("exempt"); ex == nil || !ex.Imagined {
		t.Errorf("exempt level not imagined: %+v", ex)
	}
	if m.PriorityLevel("ok") == nil || m.Dangling("to-ok") {
		t.Error("good level rejected")
	}
	if len(m.Problems()) != 10 {
		t.Errorf("problems: %v", m.Problems())
	}
}

// The index must never change an answer: compare with a plain scan of the
// matching order over a grid of users and requests.
func TestIndexAgreesWithScan(t *testing.T) {
	levels := append(bootstrap.PriorityLevels(), level("q", 64))
	schemas := append(bootstrap.FlowSchemas(),
		schema("ns-star", "q", 150, "ByUser", resources(users("sa:a:b/*"), l("*"), l("*"), l("*"), l("*"), true)),
		schema("fixed-sa", "q", 160, "ByUser", resources(users("sa:shop/builder", "user:alice"), l("get"), l("*"), l("*"), l("*"), true)),
		schema("group-dev", "q", 170, "ByUser", paths(users("group:dev"), l("*"), l("/dev"))),
	)
	m := Compile(schemas, levels)
	userSpecs := []string{admin, alice, anon, nobody, kubelet, kcm, sched, ksSA, appSA, lonelySA,
		"system:serviceaccount:a:b:c", "system:serviceaccount:a:b", "bob|dev", "*|*"}
	reqs := []string{"GET /dev", "GET /healthz", "GET /api/v1/pods", "PUT /api/v1/namespaces/shop/pods/p",
		"GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x", "PATCH /api/v1/nodes/n1/status"}
	for _, u := range userSpecs {
		for _, r := range reqs {
			agreeWithScan(t, m, attrs(t, r, u))
		}
	}
	for _, shared := range []bool{false, true} {
		m := Compile(thousandSchemas(shared))
		for _, ns := range []string{"tenant-0", "tenant-500", "tenant-999", "kube-system", "*"} {
			for _, u := range []string{"carol|tenant-500," + authn, "carol|" + authn, kcm, appSA} {
				for _, r := range []string{"GET /apis/apps/v1/namespaces/" + ns + "/deployments/web",
					"DELETE /api/v1/namespaces/" + ns + "/pods", "GET /api/v1/pods", "GET /metrics"} {
					agreeWithScan(t, m, attrs(t, r, u))
				}
			}
		}
	}
}

// agreeWithScan checks the indexed answer against a plain scan of the
// matching order that reads the objects themselves (oracle_test.go).
func agreeWithScan(t *testing.T, m *Matcher, a *request.Attributes) {
	t.Helper()
	want := oracleFirst(m, a)
	if got := m.Classify(a).FlowSchema; got != want {
		t.Errorf("%s %s as %s: index gave %s, scan %s", a.Info.Verb, a.Info.Path, a.User.Name, got.Name, want.Name)
	}
}

func TestClassifyAllocatesNothing(t *testing.T) {
	m := bootstrapMatcher(t)
	a := attrs(t, "GET /api/v1/namespaces/shop/pods/web", appSA)
	if n := testing.AllocsPerRun(100, func() { m.Classify(a) }); n != 0 {
		t.Fatalf("Classify allocated %v times", n)
	}
}

func TestFlowCache(t *testing.T) {
	m := bootstrapMatcher(t)
	// Many distinct flows through the same slots: every answer must be the
	// uncached hash, whatever was evicted.
	for i := range 3 * flowCacheSize {
		user := fmt.Sprintf("user-%d", i%(flowCacheSize+7))
		got := m.Classify(attrs(t, "GET /api/v1/namespaces/default/pods", user+"|"+authn))
		if want := FlowHash("global-default", user); got.FlowHash != want {
			t.Fatalf("%s: hash %d, want %d", user, got.FlowHash, want)
		}
	}
}
