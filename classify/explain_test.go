package classify

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/request"
)

// A configuration where every schema ahead of the winner fails for its own
// reason: the explanation names that reason, and only it.
func TestExplainWhyNot(t *testing.T) {
	levels := []*flowcontrolv1.PriorityLevelConfiguration{level("q", 64), level("rej", 0)}
	devs := users("group:devs")
	schemas := []*flowcontrolv1.FlowSchema{
		schema("ops-only", "q", 100, "ByUser", resources(users("group:ops", "user:root", "sa:kube-system/*"), l("*"), l("*"), l("*"), l("*"), true)),
		schema("writes", "q", 110, "ByUser", resources(devs, l("create", "update", "patch"), l(""), l("pods"), l("*"), true)),
		schema("apps-group", "q", 120, "ByUser", resources(devs, l("list"), l("apps"), l("pods"), l("*"), true)),
		schema("secrets", "q", 130, "ByUser", resources(devs, l("list"), l(""), l("secrets", "configmaps"), l("*"), true)),
		schema("kube-system-ns", "q", 140, "ByUser", resources(devs, l("list"), l(""), l("pods"), l("kube-system"), false)),
		schema("urls", "rej", 150, "", paths(devs, l("get"), l("/healthz", "/readyz"))),
		schema("two-rules", "q", 160, "ByUser",
			resources(users("user:bob"), l("list"), l(""), l("pods"), l("shop"), false),
			resources(devs, l("get"), l("batch"), l("pods"), l("shop"), false)),
		schema("winner", "q", 200, "ByNamespace",
			resources(devs, l("delete"), l(""), l("pods"), l("*"), false),
			resources(devs, l("list"), l(""), l("pods"), l("shop"), false)),
		schema("after", "q", 300, "ByUser", resources(devs, l("*"), l("*"), l("*"), l("*"), true)),
	}
	m := Compile(schemas, levels)
	a := attrs(t, "GET /api/v1/namespaces/shop/pods", "alice|devs,"+authn)
	ex := m.Explain(a)
	if ex.FlowSchema.Name != "winner" || ex.Rule != 1 || ex.FlowDistinguisher != "shop" || ex.FlowHash != FlowHash("winner", "shop") {
		t.Fatalf("winner %s rule %d flow %q %d", ex.FlowSchema.Name, ex.Rule, ex.FlowDistinguisher, ex.FlowHash)
	}
	if got := m.Classify(a); got != ex.Result {
		t.Fatalf("Classify %+v, Explain %+v", got, ex.Result)
	}
	want := []struct {
		name   string
		failed [][]Field
		detail []string
	}{
		// The imagined exempt schema comes first: only system:masters.
		{"exempt", [][]Field{{FieldSubject}}, []string{"subject: the user is none of [Group system:masters]"}},
		{"ops-only", [][]Field{{FieldSubject}}, []string{"subject: the user is none of [Group ops, User root, ServiceAccount kube-system/*]"}},
		{"writes", [][]Field{{FieldVerb}}, []string{"verb list not in [create, update, patch]"}},
		{"apps-group", [][]Field{{FieldAPIGroup}}, []string{`apiGroup "" not in [apps]`}},
		{"secrets", [][]Field{{FieldResource}}, []string{"resource pods not in [secrets, configmaps]"}},
		{"kube-system-ns", [][]Field{{FieldNamespace}}, []string{"namespace shop not in [kube-system]"}},
		{"urls", [][]Field{{FieldResourceRules}}, []string{"a resource request, and the rule has only nonResourceRules"}},
		{"two-rules", [][]Field{{FieldSubject}, {FieldVerb, FieldAPIGroup}}, []string{
			"subject: the user is none of [User bob]", "verb list not in [get], apiGroup \"\" not in [batch]"}},
	}
	if len(ex.Misses) != len(want) {
		t.Fatalf("%d misses, want %d: %+v", len(ex.Misses), len(want), ex.Misses)
	}
	for i, w := range want {
		got := ex.Misses[i]
		if got.Name != w.name || got.FlowSchema.Name != w.name || got.Precedence != got.FlowSchema.Object.Spec.MatchingPrecedence {
			t.Errorf("miss %d is %s (%d), want %s", i, got.Name, got.Precedence, w.name)
			continue
		}
		if len(got.Rules) != len(w.failed) {
			t.Errorf("%s: %d rules explained, want %d", w.name, len(got.Rules), len(w.failed))
			continue
		}
		for j, r := range got.Rules {
			if r.Rule != j || !slices.Equal(r.Failed, w.failed[j]) || r.Detail != w.detail[j] {
				t.Errorf("%s rule %d: %d %v %q, want %v %q", w.name, j, r.Rule, r.Failed, r.Detail, w.failed[j], w.detail[j])
			}
		}
	}

	// Cluster scope and non-resource URLs, and a non-resource request
	// against resource rules.
	ex = m.Explain(attrs(t, "GET /api/v1/nodes", "alice|devs,"+authn))
	if ex.FlowSchema.Name != "after" {
		t.Fatalf("GET /api/v1/nodes went to %s", ex.FlowSchema.Name)
	}
	for _, sm := range ex.Misses {
		if r := sm.Rules[0]; sm.Name == "kube-system-ns" && (!slices.Equal(r.Failed, []Field{FieldResource, FieldClusterScope}) ||
			r.Detail != "resource nodes not in [pods], cluster-scoped, and the rule is for namespaced resources only (clusterScope: false)") {
			t.Errorf("cluster-scoped list against a namespaced rule: %v %q", r.Failed, r.Detail)
		}
	}
	ex = m.Explain(attrs(t, "GET /version", "alice|devs,"+authn))
	if ex.FlowSchema.Name != "catch-all" || ex.Rule != 0 {
		t.Fatalf("GET /version went to %s rule %d", ex.FlowSchema.Name, ex.Rule)
	}
	for _, sm := range ex.Misses {
		switch sm.Name {
		case "urls":
			if r := sm.Rules[0]; !slices.Equal(r.Failed, []Field{FieldNonResourceURL}) || r.Detail != "path /version not in nor under [/healthz, /readyz]" {
				t.Errorf("urls: %v %q", r.Failed, r.Detail)
			}
		case "writes":
			if r := sm.Rules[0]; !slices.Equal(r.Failed, []Field{FieldNonResourceRules}) || r.PolicyRule != -1 {
				t.Errorf("writes: %v %d", r.Failed, r.PolicyRule)
			}
		}
	}
	ex = m.Explain(attrs(t, "POST /healthz", "alice|devs,"+authn))
	for _, sm := range ex.Misses {
		if sm.Name == "urls" && (!slices.Equal(sm.Rules[0].Failed, []Field{FieldVerb}) || sm.Rules[0].Detail != "verb post not in [get]") {
			t.Errorf("urls for POST: %v %q", sm.Rules[0].Failed, sm.Rules[0].Detail)
		}
	}
}

// A user in neither system:authenticated nor system:unauthenticated
// matches nothing, not even catch-all: the explanation says so with rule
// -1 and lists every schema, catch-all included.
func TestExplainDefaultCatchAll(t *testing.T) {
	m := bootstrapMatcher(t)
	ex := m.Explain(attrs(t, "GET /api/v1/pods", nobody))
	if ex.FlowSchema.Name != "catch-all" || ex.Rule != -1 {
		t.Fatalf("%s rule %d", ex.FlowSchema.Name, ex.Rule)
	}
	if len(ex.Misses) != len(m.FlowSchemas()) || ex.Misses[len(ex.Misses)-1].Name != "catch-all" {
		t.Fatalf("misses %d of %d", len(ex.Misses), len(m.FlowSchemas()))
	}
}

// The closest policy rule of a rule is the one failing on the fewest
// fields, and the sentence lists are cut short.
func TestExplainClosestPolicyAndLongLists(t *testing.T) {
	var namespaces []string
	for i := range 20 {
		namespaces = append(namespaces, fmt.Sprintf("ns-%d", i))
	}
	r := flowcontrolv1.PolicyRulesWithSubjects{Subjects: users("group:*"), ResourceRules: []flowcontrolv1.ResourcePolicyRule{
		{Verbs: l("create"), APIGroups: l("apps"), Resources: l("deployments"), Namespaces: l("*")},
		{Verbs: l("list"), APIGroups: l(""), Resources: l("pods"), Namespaces: namespaces},
		{Verbs: l("list"), APIGroups: l(""), Resources: l("pods"), Namespaces: l("other")},
	}}
	m := Compile([]*flowcontrolv1.FlowSchema{schema("s", "q", 100, "", r)}, []*flowcontrolv1.PriorityLevelConfiguration{level("q", 8)})
	ex := m.Explain(attrs(t, "GET /api/v1/namespaces/shop/pods", "u|"+authn))
	var miss *RuleMiss
	for _, sm := range ex.Misses {
		if sm.Name == "s" {
			miss = &sm.Rules[0]
		}
	}
	if miss == nil {
		t.Fatalf("s not among the misses: %+v", ex.Misses)
	}
	want := "resourceRules[1]: namespace shop not in [ns-0, ns-1, ns-2, ns-3, ns-4, ns-5, … 14 more]"
	if miss.PolicyRule != 1 || !slices.Equal(miss.Failed, []Field{FieldNamespace}) || miss.Detail != want {
		t.Fatalf("got %d %v %q", miss.PolicyRule, miss.Failed, miss.Detail)
	}
}

func TestSubjectString(t *testing.T) {
	for _, c := range []struct {
		s    flowcontrolv1.Subject
		want string
	}{
		{users("user:alice")[0], "User alice"},
		{users("group:")[0], `Group ""`},
		{users("sa:ns/*")[0], "ServiceAccount ns/*"},
		{flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser}, "User (without its user member: matches nobody)"},
		{users("user:a b")[0], `User "a b"`},
	} {
		if got := subjectString(c.s); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// checkExplanation holds an explanation to the matcher's normal path and
// to the plain reading of the objects (oracle_test.go): the same winner
// and flow, the winning rule matches, every rule of every schema ahead
// failed, and a rule is said to fail on its subject exactly when none of
// its subjects is the user.
func checkExplanation(t *testing.T, m *Matcher, a *request.Attributes) {
	t.Helper()
	ex := m.Explain(a)
	if got := m.Classify(a); got != ex.Result {
		t.Fatalf("%s %s as %s %v: Classify %s %q, Explain %s %q", a.Info.Verb, a.Info.Path, a.User.Name, a.User.Groups,
			got.FlowSchema.Name, got.FlowDistinguisher, ex.FlowSchema.Name, ex.FlowDistinguisher)
	}
	if ex.Rule >= 0 && !oracleRule(ex.FlowSchema.Object.Spec.Rules[ex.Rule], a) {
		t.Fatalf("winning rule %s[%d] does not match", ex.FlowSchema.Name, ex.Rule)
	}
	want := ex.FlowSchema.Index
	if ex.Rule < 0 {
		want = len(m.FlowSchemas())
	}
	if len(ex.Misses) != want {
		t.Fatalf("%d misses ahead of %s at %d", len(ex.Misses), ex.FlowSchema.Name, want)
	}
	for i, sm := range ex.Misses {
		if sm.FlowSchema != m.FlowSchemas()[i] || len(sm.Rules) != len(sm.FlowSchema.Object.Spec.Rules) {
			t.Fatalf("miss %d is %s, want %s", i, sm.Name, m.FlowSchemas()[i].Name)
		}
		for j, r := range sm.Rules {
			obj := sm.FlowSchema.Object.Spec.Rules[j]
			if len(r.Failed) == 0 || r.Detail == "" || oracleRule(obj, a) {
				t.Fatalf("%s rule %d: failed %v %q, though the rule matches: %v", sm.Name, j, r.Failed, r.Detail, oracleRule(obj, a))
			}
			subjectOK := slices.ContainsFunc(obj.Subjects, func(s flowcontrolv1.Subject) bool { return oracleSubject(s, &a.User) })
			if subjectOK == slices.Contains(r.Failed, FieldSubject) {
				t.Fatalf("%s rule %d: subject matches %v, failed %v", sm.Name, j, subjectOK, r.Failed)
			}
			// The request part alone fails exactly when no policy rule
			// of the request's kind matches it.
			requestFailed := slices.ContainsFunc(r.Failed, func(f Field) bool { return f != FieldSubject })
			if requestFailed == oracleRequest(obj, a) {
				t.Fatalf("%s rule %d: failed %v, request part matches %v", sm.Name, j, r.Failed, oracleRequest(obj, a))
			}
		}
	}
}

func oracleRule(r flowcontrolv1.PolicyRulesWithSubjects, a *request.Attributes) bool {
	fs := &flowcontrolv1.FlowSchema{}
	fs.Spec.Rules = []flowcontrolv1.PolicyRulesWithSubjects{r}
	return oracleSchema(fs, a)
}

// oracleRequest is oracleRule with a subject that is everyone.
func oracleRequest(r flowcontrolv1.PolicyRulesWithSubjects, a *request.Attributes) bool {
	r.Subjects = users("user:*")
	return oracleRule(r, a)
}

func TestExplainAgreesOnBootstrap(t *testing.T) {
	m := bootstrapMatcher(t)
	for _, u := range []string{admin, alice, anon, nobody, kubelet, kcm, sched, ksSA, appSA, lonelySA} {
		for _, r := range []string{"GET /healthz", "POST /healthz", "GET /version", "GET /api/v1/pods", "PUT /api/v1/namespaces/shop/pods/p",
			"GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x", "PATCH /api/v1/nodes/n1/status",
			"GET /api/v1/namespaces/kube-system/configmaps", "POST /api/v1/namespaces/shop/pods/p/binding"} {
			checkExplanation(t, m, attrs(t, r, u))
		}
	}
}

// Random configurations and requests from the fuzz generator, drawn from a
// seeded source so that the test is the same every run: the explanation
// agrees with the index and the oracle every time.
func TestExplainAgreesOnRandomConfigurations(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 2024))
	data := make([]byte, 256)
	for range 400 {
		for i := range data {
			data[i] = byte(rng.UintN(256))
		}
		g := &fuzzGen{data: data}
		m := Compile(g.config())
		for range 8 {
			if a := g.request(t); a != nil {
				checkExplanation(t, m, a)
			}
		}
	}
}

// FuzzExplain: on any configuration and request the fuzz generator draws,
// Explain answers without panicking and agrees with Classify and with the
// plain reading of the objects, rule by rule.
func FuzzExplain(f *testing.F) {
	f.Add([]byte("\x03\x01\x02\x0b\x0b\x0b\x05\x07\x09\x0a\x0c\x04\x02\x01"))
	f.Add([]byte("seed: a schema with many namespaces and subjects in one rule \xff\xfe\x10\x11\x12"))
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &fuzzGen{data: data}
		m := Compile(g.config())
		for range 1 + g.n(16) {
			if a := g.request(t); a != nil {
				checkExplanation(t, m, a)
			}
		}
	})
}

// Explaining touches nothing the request path uses: the flow cache stays
// as it was.
func TestExplainLeavesFlowCache(t *testing.T) {
	m := Compile(bootstrap.FlowSchemas(), bootstrap.PriorityLevels())
	m.Explain(attrs(t, "GET /api/v1/namespaces/default/pods", alice))
	for i := range m.flows.slots {
		if m.flows.slots[i].Load() != nil {
			t.Fatal("Explain filled the flow cache")
		}
	}
	if !strings.Contains(m.Explain(attrs(t, "GET /healthz", anon)).Misses[0].Rules[0].Detail, "system:masters") {
		t.Error("exempt's miss does not name system:masters")
	}
}
