package classify

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apfproject/apf/request"
)

// TestMemoAgreesWithIndex classifies requests that differ in one field at
// a time (user, groups and their order, verb, API group, resource,
// subresource, namespace, resource or not, path), each several times and
// in different orders, so that answers come from the memo and from the
// index alike, and checks every answer against a scan of the schemas and
// the uncached flow hash.
func TestMemoAgreesWithIndex(t *testing.T) {
	m := bootstrapMatcher(t)
	reqs := []string{
		"GET /api/v1/namespaces/kube-system/pods/p",
		"GET /api/v1/namespaces/default/pods/p",
		"GET /api/v1/namespaces/default/pods/p/log",
		"LIST /api/v1/namespaces/default/pods",
		"GET /api/v1/nodes/n1",
		"PUT /api/v1/nodes/n1/status",
		"GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l",
		"PUT /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l",
		"PUT /apis/coordination.k8s.io/v1/namespaces/default/leases/l",
		"GET /api/v1/namespaces/kube-system/endpoints/e",
		"PUT /api/v1/namespaces/kube-system/endpoints/e",
		"GET /apis/apps/v1/namespaces/default/deployments/d",
		"GET /apis/extensions/v1/namespaces/default/deployments/d",
		"GET /healthz",
		"GET /livez",
		"POST /livez",
	}
	users := []string{
		kubelet, kcm, sched, ksSA, appSA, admin, alice, anon, nobody, lonelySA,
		"alice|" + authn, "alice|" + authn + ",dev", "alice|system:masters",
		"system:kube-controller-manager|" + unauthn,
	}
	var all []*request.Attributes
	for _, r := range reqs {
		for _, u := range users {
			all = append(all, attrs(t, r, u))
		}
	}
	check := func(a *request.Attributes) {
		t.Helper()
		got := m.Classify(a)
		want := oracleFirst(m, a)
		if got.FlowSchema != want {
			t.Fatalf("%s %s as %s %v: %s, want %s", a.Info.Verb, a.Info.Path, a.User.Name, a.User.Groups, got.FlowSchema.Name, want.Name)
		}
		var dist string
		var hash uint64
		if want.PriorityLevel.distinguishes {
			switch want.distinguisher {
			case distinguishByUser:
				dist = a.User.Name
			case distinguishByNamespace:
				dist = a.Info.Namespace
			}
			hash = FlowHash(want.Name, dist)
		}
		if got.PriorityLevel != want.PriorityLevel || got.FlowDistinguisher != dist || got.FlowHash != hash {
			t.Fatalf("%s %s as %s: level %s, flow %q %d; want %s, %q %d", a.Info.Verb, a.Info.Path, a.User.Name,
				got.PriorityLevel.Name, got.FlowDistinguisher, got.FlowHash, want.PriorityLevel.Name, dist, hash)
		}
	}
	for round := range 3 {
		for i := range all {
			j := i
			if round == 1 {
				j = len(all) - 1 - i
			} else if round == 2 {
				j = (i * 7) % len(all)
			}
			check(all[j])
			check(all[j])
		}
	}
}

// TestMemoAnswersHits: a request classified before is answered from its
// memo entry, without the index.
func TestMemoAnswersHits(t *testing.T) {
	m := bootstrapMatcher(t)
	a := attrs(t, "GET /api/v1/namespaces/default/pods/p", alice)
	first := m.Classify(a)
	e := m.memo.slot(a).Load()
	if e == nil || !e.matches(a) {
		t.Fatal("no memo entry for a classified request")
	}
	// Point the entry at another schema: a hit must follow it.
	other := 0
	if m.schemas[other] == first.FlowSchema {
		other = 1
	}
	e.schema = other
	if got := m.Classify(a).FlowSchema; got != m.schemas[other] {
		t.Fatalf("hit answered %s, not the memo's %s", got.Name, m.schemas[other].Name)
	}
	// A request that differs in a field the classification reads is not
	// answered from that entry.
	b := attrs(t, "GET /api/v1/namespaces/default/pods/p", alice)
	b.User.Groups = append(b.User.Groups, "more")
	if m.memo.slot(b) == m.memo.slot(a) && e.matches(b) {
		t.Fatal("an entry matches a request with other groups")
	}
}

// TestMemoEntryFields: an entry matches a copy of its request and no
// request that differs in one of the fields a classification reads.
func TestMemoEntryFields(t *testing.T) {
	base := func() *request.Attributes {
		return &request.Attributes{
			Info: request.Info{
				IsResourceRequest: true, Path: "/apis/apps/v1/namespaces/ns/deployments/d/scale",
				Verb: "get", APIPrefix: "apis", APIGroup: "apps", APIVersion: "v1",
				Namespace: "ns", Resource: "deployments", Name: "d", Subresource: "scale",
			},
			User: request.User{Name: "alice", Groups: []string{"dev", authn}},
		}
	}
	e := newMemoEntry(base(), 3, 42)
	if !e.matches(base()) {
		t.Fatal("an entry does not match a copy of its request")
	}
	// Fields a classification does not read may differ.
	same := base()
	same.Info.Name, same.Info.APIVersion, same.Info.Path = "other", "v2", "/elsewhere"
	if !e.matches(same) {
		t.Error("an entry does not match a request differing only in name, version and path")
	}
	for name, change := range map[string]func(a *request.Attributes){
		"user":         func(a *request.Attributes) { a.User.Name = "bob" },
		"groups":       func(a *request.Attributes) { a.User.Groups = []string{"dev"} },
		"group order":  func(a *request.Attributes) { a.User.Groups = []string{authn, "dev"} },
		"group name":   func(a *request.Attributes) { a.User.Groups = []string{"ops", authn} },
		"resource":     func(a *request.Attributes) { a.Info.Resource = "replicasets" },
		"subresource":  func(a *request.Attributes) { a.Info.Subresource = "status" },
		"namespace":    func(a *request.Attributes) { a.Info.Namespace = "other" },
		"API group":    func(a *request.Attributes) { a.Info.APIGroup = "extensions" },
		"verb":         func(a *request.Attributes) { a.Info.Verb = "update" },
		"non-resource": func(a *request.Attributes) { a.Info.IsResourceRequest = false },
	} {
		a := base()
		change(a)
		if e.matches(a) {
			t.Errorf("an entry matches a request with another %s", name)
		}
	}
	// Non-resource entries compare the path.
	nr := base()
	nr.Info = request.Info{Path: "/healthz", Verb: "get"}
	e = newMemoEntry(nr, 1, 0)
	other := base()
	other.Info = request.Info{Path: "/livez", Verb: "get"}
	if !e.matches(nr) || e.matches(other) {
		t.Error("a non-resource entry does not tell paths apart")
	}
}

// TestMemoBoundsEntries: a request whose fields are too long to copy is
// classified right and not remembered.
func TestMemoBoundsEntries(t *testing.T) {
	m := bootstrapMatcher(t)
	long := "/" + strings.Repeat("x", memoMaxKeyBytes)
	a := attrs(t, "GET "+long, alice)
	if got, want := m.Classify(a).FlowSchema, oracleFirst(m, a); got != want {
		t.Fatalf("%s, want %s", got.Name, want.Name)
	}
	if e := m.memo.slot(a).Load(); e != nil && e.matches(a) {
		t.Fatal("a request with a path longer than the bound was remembered")
	}
	many := attrs(t, "GET /api/v1/namespaces/default/pods/p", alice)
	for i := range memoMaxKeyBytes {
		many.User.Groups = append(many.User.Groups, fmt.Sprint("g", i))
	}
	m.Classify(many)
	if e := m.memo.slot(many).Load(); e != nil && e.matches(many) {
		t.Fatal("a request with more group bytes than the bound was remembered")
	}
	empty := attrs(t, "GET /api/v1/namespaces/default/pods/p", alice)
	empty.User.Groups = make([]string, memoMaxKeyBytes)
	m.Classify(empty)
	if e := m.memo.slot(empty).Load(); e != nil && e.matches(empty) {
		t.Fatal("a request with a thousand empty groups was remembered")
	}
	short := attrs(t, "GET /healthz", alice)
	m.Classify(short)
	if e := m.memo.slot(short).Load(); e == nil || !e.matches(short) {
		t.Fatal("a short request was not remembered")
	}
}
