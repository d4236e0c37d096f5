package request

import (
	"strings"
	"testing"
)

func TestServiceAccountUsername(t *testing.T) {
	if got, want := ServiceAccountUsername("kube-system", "default"), "system:serviceaccount:kube-system:default"; got != want {
		t.Errorf("ServiceAccountUsername = %q, want %q", got, want)
	}
	if got, want := ServiceAccountNamespaceGroup("kube-system"), "system:serviceaccounts:kube-system"; got != want {
		t.Errorf("ServiceAccountNamespaceGroup = %q, want %q", got, want)
	}
	if !strings.HasPrefix(ServiceAccountNamespaceGroup("x"), AllServiceAccountsGroup+":") {
		t.Error("namespace group does not extend the all-service-accounts group")
	}
}

func TestSplitServiceAccountUsername(t *testing.T) {
	cases := []struct {
		user     string
		ns, name string
		ok       bool
	}{
		{"system:serviceaccount:kube-system:default", "kube-system", "default", true},
		{"system:serviceaccount:ns:a.b-c", "ns", "a.b-c", true},
		{"system:serviceaccount:0:1", "0", "1", true},
		{"system:serviceaccount:" + strings.Repeat("n", 63) + ":" + strings.Repeat("s", 253), strings.Repeat("n", 63), strings.Repeat("s", 253), true},
		{"system:serviceaccount:ns", "", "", false},
		{"system:serviceaccount:ns:", "", "", false},
		{"system:serviceaccount::name", "", "", false},
		{"system:serviceaccount:", "", "", false},
		{"system:serviceaccount:ns:name:extra", "", "", false},
		{"system:serviceaccounts:ns:name", "", "", false},
		{"System:serviceaccount:ns:name", "", "", false},
		{"alice", "", "", false},
		{"", "", "", false},
		// Both parts must be valid object names, as the API server
		// checks: the namespace a DNS label, the name a DNS subdomain.
		{"system:serviceaccount:Ns:name", "", "", false},
		{"system:serviceaccount:n.s:name", "", "", false},
		{"system:serviceaccount:ns:Name", "", "", false},
		{"system:serviceaccount:ns:-name", "", "", false},
		{"system:serviceaccount:ns:na me", "", "", false},
		{"system:serviceaccount:" + strings.Repeat("n", 64) + ":name", "", "", false},
		{"system:serviceaccount:ns:" + strings.Repeat("s", 254), "", "", false},
	}
	for _, c := range cases {
		ns, name, ok := SplitServiceAccountUsername(c.user)
		if ns != c.ns || name != c.name || ok != c.ok {
			t.Errorf("SplitServiceAccountUsername(%q) = %q, %q, %v; want %q, %q, %v", c.user, ns, name, ok, c.ns, c.name, c.ok)
		}
		if ok {
			if back := ServiceAccountUsername(ns, name); back != c.user {
				t.Errorf("round trip of %q gave %q", c.user, back)
			}
		}
	}
}

func TestWellKnownNames(t *testing.T) {
	for got, want := range map[string]string{
		SystemMastersGroup:           "system:masters",
		AllAuthenticatedGroup:        "system:authenticated",
		AllUnauthenticatedGroup:      "system:unauthenticated",
		AllServiceAccountsGroup:      "system:serviceaccounts",
		serviceAccountGroupPrefix:    "system:serviceaccounts:",
		NodesGroup:                   "system:nodes",
		AnonymousUser:                "system:anonymous",
		ServiceAccountUsernamePrefix: "system:serviceaccount:",
	} {
		if got != want {
			t.Errorf("constant is %q, want %q", got, want)
		}
	}
}
