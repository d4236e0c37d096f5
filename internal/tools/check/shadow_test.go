package check

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/request"
)

var update = flag.Bool("update", false, "rewrite the expected outputs of testdata/shadowing")

// TestShadowingGolden checks each manifest of testdata/shadowing as apf
// check does, over the bootstrap objects, and compares the findings with
// the file of the same name ending in .golden (-update rewrites them).
// Every shadowing warning names the request that shows it.
func TestShadowingGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/shadowing/*.yaml")
	if err != nil || len(inputs) < 10 {
		t.Fatalf("inputs: %v %v", inputs, err)
	}
	for _, in := range inputs {
		t.Run(strings.TrimSuffix(filepath.Base(in), ".yaml"), func(t *testing.T) {
			r := files(t, in)
			var b strings.Builder
			for _, f := range r.Findings {
				fmt.Fprintln(&b, f)
				if strings.Contains(f.Message, "can never match") && !strings.Contains(f.Message, "for example, apf classify ") {
					t.Errorf("a shadowing warning without its request: %s", f)
				}
			}
			golden := strings.TrimSuffix(in, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if b.String() != string(want) {
				t.Errorf("findings of %s:\n%s\nwant (%s):\n%s", in, b.String(), golden, want)
			}
		})
	}
}

// fuzzWords are the values the schemas and requests of FuzzShadowing are
// made of: a few that rules name, and for each field one that no rule
// names, so that wildcards are told from lists.
var (
	fuzzVerbs      = []string{"get", "list", "create", "delete"}
	fuzzGroups     = []string{"", "apps", "batch"}
	fuzzResources  = []string{"pods", "deployments", "pods/status", "jobs"}
	fuzzNamespaces = []string{"ns1", "ns2", "other"}
	fuzzURLs       = []string{"/healthz", "/healthz/x", "/metrics", "/a", "/a/b", "/a/*", "/zz"}
	fuzzUsers      = []string{"alice", "bob", "system:serviceaccount:ns1:sa1", "system:serviceaccount:ns1:sa2", "system:serviceaccount:ns2:sa1", "system:anonymous"}
	fuzzUserGroups = []string{"g1", "g2", "system:serviceaccounts", "system:serviceaccounts:ns1"}
)

// fuzzReader hands out choices from the fuzzer's bytes, zeros once they
// run out.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) n(k int) int {
	if len(r.b) == 0 {
		return 0
	}
	v := int(r.b[0]) % k
	r.b = r.b[1:]
	return v
}

// list picks one or two values of words, or "*".
func (r *fuzzReader) list(words []string) []string {
	if r.n(4) == 0 {
		return []string{"*"}
	}
	out := []string{words[r.n(len(words))]}
	if r.n(2) == 0 {
		if w := words[r.n(len(words))]; w != out[0] {
			out = append(out, w)
		}
	}
	return out
}

func (r *fuzzReader) subject() flowcontrolv1.Subject {
	switch r.n(6) {
	case 0:
		return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: []string{"*", "alice", "system:anonymous", "system:serviceaccount:ns1:sa1"}[r.n(4)]}}
	case 1, 2:
		g := []string{"*", "system:authenticated", "system:unauthenticated", "system:serviceaccounts", "system:serviceaccounts:ns1", "g1"}[r.n(6)]
		return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: g}}
	default:
		return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{
			Namespace: []string{"ns1", "ns2"}[r.n(2)], Name: []string{"*", "sa1"}[r.n(2)]}}
	}
}

func (r *fuzzReader) schema(i int) *flowcontrolv1.FlowSchema {
	fs := &flowcontrolv1.FlowSchema{}
	fs.APIVersion, fs.Kind = "flowcontrol.apiserver.k8s.io/v1", "FlowSchema"
	fs.Name = fmt.Sprintf("s%d", i)
	fs.Spec.MatchingPrecedence = int32(100 * (1 + r.n(3)))
	fs.Spec.PriorityLevelConfiguration.Name = "workload-low"
	if r.n(8) == 0 {
		fs.Spec.PriorityLevelConfiguration.Name = "nowhere"
	}
	for range 1 + r.n(2) {
		var rule flowcontrolv1.PolicyRulesWithSubjects
		for range 1 + r.n(2) {
			rule.Subjects = append(rule.Subjects, r.subject())
		}
		for range r.n(3) {
			rr := flowcontrolv1.ResourcePolicyRule{Verbs: r.list(fuzzVerbs), APIGroups: r.list(fuzzGroups), Resources: r.list(fuzzResources)}
			switch r.n(3) {
			case 0:
				rr.ClusterScope = true
			case 1:
				rr.Namespaces = r.list(fuzzNamespaces[:2])
			default:
				rr.ClusterScope, rr.Namespaces = true, r.list(fuzzNamespaces[:2])
			}
			rule.ResourceRules = append(rule.ResourceRules, rr)
		}
		if len(rule.ResourceRules) == 0 || r.n(2) == 0 {
			rule.NonResourceRules = append(rule.NonResourceRules, flowcontrolv1.NonResourcePolicyRule{
				Verbs: r.list(fuzzVerbs[:2]), NonResourceURLs: r.list(fuzzURLs[:6])})
		}
		fs.Spec.Rules = append(fs.Spec.Rules, rule)
	}
	return fs
}

// fuzzRequests are every request of the fuzz vocabulary, from every user
// of it, as Kubernetes' authenticators give them their groups.
func fuzzRequests() []request.Attributes {
	var users []request.User
	for _, name := range fuzzUsers {
		if name == request.AnonymousUser {
			users = append(users, request.User{Name: name, Groups: []string{request.AllUnauthenticatedGroup}})
			continue
		}
		base := []string{request.AllAuthenticatedGroup}
		if ns, _, ok := request.SplitServiceAccountUsername(name); ok {
			base = append(base, request.AllServiceAccountsGroup, request.ServiceAccountNamespaceGroup(ns))
		}
		users = append(users, request.User{Name: name, Groups: base})
		for _, g := range fuzzUserGroups {
			users = append(users, request.User{Name: name, Groups: append([]string{g}, base...)})
		}
	}
	var infos []request.Info
	for _, v := range append(fuzzVerbs, "watch") {
		for _, g := range fuzzGroups {
			for _, res := range append(fuzzResources, "secrets") {
				r, sub, _ := strings.Cut(res, "/")
				for _, ns := range append(fuzzNamespaces, "") {
					infos = append(infos, request.Info{IsResourceRequest: true, Verb: v, APIGroup: g, Resource: r, Subresource: sub, Namespace: ns})
				}
			}
		}
		for _, u := range append(fuzzURLs, "/healthzx", "/a/b/c") {
			infos = append(infos, request.Info{Path: u, Verb: v})
		}
	}
	var out []request.Attributes
	for _, u := range users {
		for _, info := range infos {
			out = append(out, request.Attributes{User: u, Info: info})
		}
	}
	return out
}

// FuzzShadowing checks that the shadowing warnings are sound: for random
// small sets of schemas over the mandatory objects, whenever apf check
// says a schema can never match, no request of the vocabulary, from any
// user of it, classifies to that schema; and the example each warning
// gives goes where it says.
func FuzzShadowing(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{1, 1, 1, 0, 0, 0, 0, 0, 2, 2, 2, 2, 1, 1, 1, 3, 3, 3})
	f.Add([]byte("the quick brown fox jumps over the lazy dog, twice over"))
	f.Add([]byte{5, 2, 0, 0, 1, 3, 0, 0, 0, 0, 1, 4, 2, 0, 1, 1, 0, 0, 0, 0, 1, 4, 1, 2})
	reqs := fuzzRequests()
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzReader{b: data}
		n := 2 + r.n(3)
		var objs []config.Object
		var schemas []*flowcontrolv1.FlowSchema
		for i := range n {
			fs := r.schema(i)
			schemas = append(schemas, fs)
			objs = append(objs, config.Object{FlowSchema: fs, Version: config.V1, Source: config.Source{File: "fuzz", Line: i + 1}})
		}
		base := bootstrapObjects(bootstrap.ProfileKubernetes, false)
		levels := []*flowcontrolv1.PriorityLevelConfiguration{}
		for _, o := range base {
			if o.PriorityLevel != nil {
				levels = append(levels, o.PriorityLevel)
			}
		}
		// workload-low is the input's one level, so the objects are
		// checked over the mandatory ones plus it.
		for _, pl := range bootstrapObjects(bootstrap.ProfileKubernetes, true) {
			if pl.PriorityLevel != nil && pl.PriorityLevel.Name == "workload-low" {
				base = append(base, pl)
				levels = append(levels, pl.PriorityLevel)
			}
		}
		rep := Inputs(objs, nil, Options{Base: base})
		if rep.Count(Error) != 0 {
			return // the generator made something invalid: not our subject
		}
		all := append([]*flowcontrolv1.FlowSchema{}, schemas...)
		for _, o := range base {
			if o.FlowSchema != nil {
				all = append(all, o.FlowSchema)
			}
		}
		m := classify.Compile(all, levels)
		for _, fd := range rep.Findings {
			if !strings.Contains(fd.Message, "can never match") && !strings.Contains(fd.Message, "matches no request") {
				continue
			}
			for i := range reqs {
				if got := m.Classify(&reqs[i]).FlowSchema.Name; got == fd.Name {
					t.Fatalf("%s\nbut %+v classifies to it\nschemas: %s", fd, reqs[i], describe(schemas))
				}
			}
		}
	})
}

func describe(schemas []*flowcontrolv1.FlowSchema) string {
	var b strings.Builder
	for _, fs := range schemas {
		fmt.Fprintf(&b, "\n%s %d %s: %+v", fs.Name, fs.Spec.MatchingPrecedence, fs.Spec.PriorityLevelConfiguration.Name, fs.Spec.Rules)
	}
	return b.String()
}
