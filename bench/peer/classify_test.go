package peer

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/request"
)

// testUser is who sends a request: a user name and its groups.
type testUser struct {
	name   string
	groups []string
}

const (
	authenticated   = "system:authenticated"
	unauthenticated = "system:unauthenticated"
)

func serviceAccount(ns, name string) testUser {
	return testUser{"system:serviceaccount:" + ns + ":" + name,
		[]string{"system:serviceaccounts", "system:serviceaccounts:" + ns, authenticated}}
}

// Users of the classification tables.
var (
	kubelet        = testUser{"system:node:n1", []string{"system:nodes", authenticated}}
	controllerMgr  = testUser{"system:kube-controller-manager", []string{authenticated}}
	scheduler      = testUser{"system:kube-scheduler", []string{authenticated}}
	admin          = testUser{"admin", []string{"system:masters", authenticated}}
	adminNode      = testUser{"system:node:n2", []string{"system:nodes", "system:masters", authenticated}}
	anonymous      = testUser{"system:anonymous", []string{unauthenticated}}
	alice          = testUser{"alice", []string{authenticated, "devs"}}
	loner          = testUser{"loner", nil}
	bareCtrlMgr    = testUser{"system:kube-controller-manager", nil}
	ksLeader       = serviceAccount("kube-system", "leader")
	ksDeployCtrl   = serviceAccount("kube-system", "deployment-controller")
	ksNamespaceCtl = serviceAccount("kube-system", "namespace-controller")
	// ksNameOnly has a kube-system service-account name but none of the
	// service-account groups: ServiceAccount subjects look only at the name.
	ksNameOnly = testUser{"system:serviceaccount:kube-system:weird", []string{authenticated}}
	builder    = serviceAccount("default", "builder")
	// saGroupOnly is in system:serviceaccounts without being one.
	saGroupOnly = testUser{"bob", []string{"system:serviceaccounts", authenticated}}
)

// classifyCase is one request with the classification written out by hand
// from docs/spec/classification.md and the bootstrap objects of
// docs/spec/configuration.md#mandatory-and-suggested-objects (or, for the
// custom configuration, from the objects in classify_custom_test.go).
type classifyCase struct {
	method, path, query string
	user                testUser
	fs, pl, dist        string
}

func (c classifyCase) String() string {
	q := ""
	if c.query != "" {
		q = "?" + c.query
	}
	return fmt.Sprintf("%s %s%s as %s%v", c.method, c.path, q, c.user.name, c.user.groups)
}

// classification is the part of a classification both sides report.
type classification struct {
	FS, FSUID, PL, PLUID, Dist string
}

func (c classification) String() string {
	return fmt.Sprintf("fs=%s pl=%s dist=%q (uids %q, %q)", c.FS, c.PL, c.Dist, c.FSUID, c.PLUID)
}

// withUIDs returns copies of the objects, each with a UID made from its
// name the way StartUpstream makes them, so that both sides report the
// same UIDs for real objects and "" for imagined ones.
func withUIDs(fss []*flowcontrolv1.FlowSchema, pls []*flowcontrolv1.PriorityLevelConfiguration) ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration) {
	outFS := make([]*flowcontrolv1.FlowSchema, len(fss))
	for i, fs := range fss {
		fs = fs.DeepCopy()
		if fs.UID == "" {
			fs.UID = types.UID("uid-fs-" + fs.Name)
		}
		outFS[i] = fs
	}
	outPL := make([]*flowcontrolv1.PriorityLevelConfiguration, len(pls))
	for i, pl := range pls {
		pl = pl.DeepCopy()
		if pl.UID == "" {
			pl.UID = types.UID("uid-pl-" + pl.Name)
		}
		outPL[i] = pl
	}
	return outFS, outPL
}

// peerPair is one configuration loaded into both implementations.
type peerPair struct {
	up   *Upstream
	ours *classify.Matcher
}

// startPair loads upstream with upFS/upPL and ours with ourFS/ourPL (which
// may be the same objects) and stops upstream when the test ends.
func startPair(t testing.TB, upFS []*flowcontrolv1.FlowSchema, upPL []*flowcontrolv1.PriorityLevelConfiguration,
	ourFS []*flowcontrolv1.FlowSchema, ourPL []*flowcontrolv1.PriorityLevelConfiguration) peerPair {
	t.Helper()
	upFS, upPL = withUIDs(upFS, upPL)
	up, err := StartUpstream(UpstreamConfig{FlowSchemas: upFS, PriorityLevels: upPL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(up.Stop)
	ourFS, ourPL = withUIDs(ourFS, ourPL)
	return peerPair{up: up, ours: classify.Compile(ourFS, ourPL)}
}

// classifyBoth runs one request through both implementations.
func (p peerPair) classifyBoth(method, path, query string, u testUser) (ours, up classification, err error) {
	info, err := request.Parse(method, path, query)
	if err != nil {
		return ours, up, fmt.Errorf("ours: %w", err)
	}
	upInfo, err := UpstreamRequestInfo(method, path, query)
	if err != nil {
		return ours, up, fmt.Errorf("upstream: %w", err)
	}
	attrs := request.Attributes{Info: info, User: request.User{Name: u.name, Groups: slices.Clone(u.groups)}}
	r := p.ours.Classify(&attrs)
	ours = classification{FS: r.FlowSchema.Name, FSUID: r.FlowSchema.UID,
		PL: r.PriorityLevel.Name, PLUID: r.PriorityLevel.UID, Dist: r.FlowDistinguisher}

	ur := p.up.Classify(upInfo, &user.DefaultInfo{Name: u.name, Groups: slices.Clone(u.groups)})
	up = classification{FS: ur.FlowSchema, FSUID: string(ur.FlowSchemaUID),
		PL: ur.PriorityLevel, PLUID: string(ur.PriorityLevelUID), Dist: ur.Distinguisher}
	return ours, up, nil
}

// runClassifyTable checks each case three ways: upstream against the hand-
// written answer, ours against it, and ours against upstream (names,
// distinguisher and UIDs).
func runClassifyTable(t *testing.T, p peerPair, cases []classifyCase) {
	t.Helper()
	for _, c := range cases {
		ours, up, err := p.classifyBoth(c.method, c.path, c.query, c.user)
		if err != nil {
			t.Errorf("%v: %v", c, err)
			continue
		}
		want := classification{FS: c.fs, PL: c.pl, Dist: c.dist}
		if !sameNames(up, want) {
			t.Errorf("%v: upstream disagrees with the expected answer:\n  upstream %v\n  expected %v", c, up, want)
		}
		if !sameNames(ours, want) {
			t.Errorf("%v: ours disagrees with the expected answer:\n  ours     %v\n  upstream %v\n  expected %v", c, ours, up, want)
		}
		if ours != up {
			t.Errorf("%v: ours disagrees with upstream:\n  ours     %v\n  upstream %v", c, ours, up)
		}
	}
}

func sameNames(a, b classification) bool {
	return a.FS == b.FS && a.PL == b.PL && a.Dist == b.Dist
}

const (
	leasesPath = "/apis/coordination.k8s.io/v1/namespaces/"
	nodeLease  = leasesPath + "kube-node-lease/leases/n1"
	ksLease    = leasesPath + "kube-system/leases/"
)

// bootstrapCases is the default configuration (the bootstrap objects) seen
// from the clients that use it.
var bootstrapCases = []classifyCase{
	// Kubelets: node objects and node leases are node-high; everything
	// else they do is system. Both distinguish by user.
	{"PATCH", "/api/v1/nodes/n1/status", "", kubelet, "system-node-high", "node-high", "system:node:n1"},
	{"GET", "/api/v1/nodes/n1", "", kubelet, "system-node-high", "node-high", "system:node:n1"},
	{"GET", "/api/v1/nodes", "watch=1&fieldSelector=metadata.name%3Dn1", kubelet, "system-node-high", "node-high", "system:node:n1"},
	{"PUT", nodeLease, "", kubelet, "system-node-high", "node-high", "system:node:n1"},
	{"POST", leasesPath + "kube-node-lease/leases", "", kubelet, "system-node-high", "node-high", "system:node:n1"},
	{"GET", "/api/v1/pods", "fieldSelector=spec.nodeName%3Dn1", kubelet, "system-nodes", "system", "system:node:n1"},
	{"GET", "/api/v1/namespaces/default/pods/p1", "", kubelet, "system-nodes", "system", "system:node:n1"},
	{"PATCH", "/api/v1/namespaces/default/pods/p1/status", "", kubelet, "system-nodes", "system", "system:node:n1"},
	{"POST", "/api/v1/namespaces/default/events", "", kubelet, "system-nodes", "system", "system:node:n1"},
	{"GET", "/version", "", kubelet, "system-nodes", "system", "system:node:n1"},
	{"GET", "/healthz", "", kubelet, "probes", "exempt", ""},

	// Leader election: leases only, verbs get/create/update only.
	{"GET", ksLease + "kube-controller-manager", "", controllerMgr, "system-leader-election", "leader-election", "system:kube-controller-manager"},
	{"PUT", ksLease + "kube-controller-manager", "", controllerMgr, "system-leader-election", "leader-election", "system:kube-controller-manager"},
	{"PUT", ksLease + "kube-scheduler", "", scheduler, "system-leader-election", "leader-election", "system:kube-scheduler"},
	{"POST", leasesPath + "kube-system/leases", "", ksLeader, "system-leader-election", "leader-election", ksLeader.name},
	{"PUT", leasesPath + "other/leases/x", "", ksLeader, "system-leader-election", "leader-election", ksLeader.name},
	{"PUT", ksLease + "x", "", bareCtrlMgr, "system-leader-election", "leader-election", "system:kube-controller-manager"},
	{"PUT", "/api/v1/namespaces/kube-system/endpoints/kube-controller-manager", "", controllerMgr, "kube-controller-manager", "workload-high", "kube-system"},
	{"PUT", "/api/v1/namespaces/kube-system/configmaps/kube-controller-manager", "", controllerMgr, "kube-controller-manager", "workload-high", "kube-system"},
	{"PUT", "/api/v1/namespaces/kube-system/endpoints/kube-scheduler", "", scheduler, "kube-scheduler", "workload-high", "kube-system"},
	{"PUT", "/api/v1/namespaces/kube-system/configmaps/x", "", ksLeader, "kube-system-service-accounts", "workload-high", "kube-system"},
	{"PATCH", ksLease + "kube-controller-manager", "", controllerMgr, "kube-controller-manager", "workload-high", "kube-system"},
	{"GET", leasesPath + "kube-system/leases", "", controllerMgr, "kube-controller-manager", "workload-high", "kube-system"},
	{"PUT", ksLease + "x", "", alice, "global-default", "global-default", "alice"},
	{"PUT", leasesPath + "default/leases/x", "", builder, "service-accounts", "workload-low", builder.name},

	// Controllers and kube-system service accounts distinguish by
	// namespace: "" for cluster-scoped and non-resource requests, the
	// object's own name for a Namespace.
	{"GET", "/api/v1/nodes", "", controllerMgr, "kube-controller-manager", "workload-high", ""},
	{"GET", "/api/v1/namespaces/foo", "", controllerMgr, "kube-controller-manager", "workload-high", "foo"},
	{"GET", "/openapi/v2", "", controllerMgr, "kube-controller-manager", "workload-high", ""},
	{"GET", "/healthz", "", controllerMgr, "probes", "exempt", ""},
	{"GET", "/api/v1/namespaces/kube-system/configmaps/x", "", bareCtrlMgr, "kube-controller-manager", "workload-high", "kube-system"},
	{"POST", "/api/v1/namespaces/default/pods/p1/binding", "", scheduler, "kube-scheduler", "workload-high", "default"},
	{"GET", "/api/v1/pods", "watch=true", scheduler, "kube-scheduler", "workload-high", ""},
	{"GET", "/apis/apps/v1/namespaces/default/deployments/d", "", ksDeployCtrl, "kube-system-service-accounts", "workload-high", "default"},
	{"PUT", "/apis/apps/v1/namespaces/default/deployments/d/scale", "", ksDeployCtrl, "kube-system-service-accounts", "workload-high", "default"},
	{"GET", "/apis/apps/v1/deployments", "", ksDeployCtrl, "kube-system-service-accounts", "workload-high", ""},
	{"DELETE", "/api/v1/namespaces/foo", "", ksNamespaceCtl, "kube-system-service-accounts", "workload-high", "foo"},
	{"PUT", "/api/v1/namespaces/foo/finalize", "", ksNamespaceCtl, "kube-system-service-accounts", "workload-high", "foo"},
	{"DELETE", "/api/v1/namespaces/foo/configmaps", "", ksNamespaceCtl, "kube-system-service-accounts", "workload-high", "foo"},
	{"GET", "/api/v1/namespaces", "", ksNamespaceCtl, "kube-system-service-accounts", "workload-high", ""},
	{"GET", "/apis/apps/v1", "", ksNamespaceCtl, "kube-system-service-accounts", "workload-high", ""},
	{"GET", "/api/v1/namespaces/default/pods", "", ksNameOnly, "kube-system-service-accounts", "workload-high", "default"},

	// Other service accounts go to service-accounts by group, by user.
	{"GET", "/api/v1/namespaces/default/pods", "", builder, "service-accounts", "workload-low", builder.name},
	{"GET", "/api/v1/nodes", "", builder, "service-accounts", "workload-low", builder.name},
	{"GET", "/healthz", "", builder, "probes", "exempt", ""},
	{"GET", "/api/v1/namespaces/default/secrets", "", saGroupOnly, "service-accounts", "workload-low", "bob"},

	// system:masters is exempt whatever it does.
	{"DELETE", "/api/v1/namespaces/foo", "", admin, "exempt", "exempt", ""},
	{"GET", "/metrics", "", admin, "exempt", "exempt", ""},
	{"POST", "/healthz", "", admin, "exempt", "exempt", ""},
	{"PUT", "/api/v1/nodes/n2/status", "", adminNode, "exempt", "exempt", ""},

	// Probes: GET of /healthz, /readyz, /livez and what lies under them.
	{"GET", "/healthz", "", anonymous, "probes", "exempt", ""},
	{"GET", "/readyz", "", anonymous, "probes", "exempt", ""},
	{"GET", "/livez", "", anonymous, "probes", "exempt", ""},
	{"GET", "/healthz/etcd", "", anonymous, "probes", "exempt", ""},
	{"GET", "/readyz/ping", "verbose", anonymous, "probes", "exempt", ""},
	{"GET", "/livez/", "", anonymous, "probes", "exempt", ""},
	{"POST", "/healthz", "", anonymous, "global-default", "global-default", "system:anonymous"},
	{"HEAD", "/healthz", "", anonymous, "global-default", "global-default", "system:anonymous"},
	{"GET", "/healthzfoo", "", anonymous, "global-default", "global-default", "system:anonymous"},

	// Everyone else.
	{"GET", "/api/v1/namespaces/default/pods", "", anonymous, "global-default", "global-default", "system:anonymous"},
	{"GET", "/version", "", anonymous, "global-default", "global-default", "system:anonymous"},
	{"GET", "/api/v1/namespaces/default/pods", "watch=true", alice, "global-default", "global-default", "alice"},
	{"DELETE", "/api/v1/namespaces/default/pods", "labelSelector=app%3Dx", alice, "global-default", "global-default", "alice"},
	{"GET", "/apis/apps/v1/namespaces/default/deployments/d/scale", "", alice, "global-default", "global-default", "alice"},
	{"GET", "/api/v1/namespaces/default/pods/p/log", "", alice, "global-default", "global-default", "alice"},
	{"GET", "/apis", "", alice, "global-default", "global-default", "alice"},
	{"GET", "/openapi/v2", "", alice, "global-default", "global-default", "alice"},
	{"GET", "/api/v1/namespaces/foo", "", alice, "global-default", "global-default", "alice"},

	// A user in no group matches no schema and falls back to catch-all,
	// a Reject level, so no distinguisher.
	{"GET", "/api/v1/pods", "", loner, "catch-all", "catch-all", ""},
	{"GET", "/healthz", "", loner, "catch-all", "catch-all", ""},
}

// TestClassifyBootstrap compares classification under the default
// configuration: upstream's controller loaded with upstream's bootstrap
// objects, ours compiled from config/bootstrap.
func TestClassifyBootstrap(t *testing.T) {
	if n := len(bootstrapCases); n < 45 {
		t.Fatalf("only %d classification cases; want at least 45", n)
	}
	p := startPair(t, upstreamFlowSchemas(), upstreamPriorityLevels(), bootstrap.FlowSchemas(), bootstrap.PriorityLevels())
	runClassifyTable(t, p, bootstrapCases)
}

// describeGroups is for failure messages of random requests.
func describeGroups(groups []string) string {
	if len(groups) == 0 {
		return "(no groups)"
	}
	return strings.Join(groups, ",")
}
