package kube

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// as returns r sent with the impersonation headers hdr (name, value, ...).
func as(r request, hdr ...string) request {
	r.header = http.Header{}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.header[hdr[i]] = append(r.header[hdr[i]], hdr[i+1])
	}
	return r
}

// asBob is r sent by bob.
func asBob(r request) request {
	r.token = readerToken
	return r
}

// TestImpersonation: apf alone and the kube-apiserver answer the same
// impersonation requests the same way, status, Status body and headers:
// what an admin may impersonate and what the impersonated user may then
// do (kube's RBAC and apf's fixed policy agree on these), every refusal
// of the kinds of users and parts (the constrained modes' and the legacy
// mode's words), and the 400s of headers without a user; and an unknown
// resource under a group version both serve.
func TestImpersonation(t *testing.T) {
	fs := flowschemas + "/kt-fs"
	noxu := []string{"Impersonate-User", "noxu", "Impersonate-Group", "system:authenticated"}
	sa := []string{"Impersonate-User", "system:serviceaccount:kt-ns:kt-sa"}
	runCases(t, []diffCase{{
		name: "impersonation",
		setup: []request{
			create(levels, plObject("kt-level", plQueueSpec)),
			create(flowschemas, fsObject("kt-fs", fsMinimalSpec)),
		},
		steps: []step{
			// What an admin may do, and what the user it acts as may not.
			{"admin as noxu: GET /healthz", as(get("/healthz"), noxu...), http.StatusOK},
			{"admin as noxu: delete", as(del(fs), noxu...), http.StatusForbidden},
			{"admin as noxu with a uid and extras: delete", as(del(fs), "Impersonate-User", "noxu", "Impersonate-Uid", "u-1",
				"Impersonate-Extra-Example.com%2fteam", "blue", "Impersonate-Extra-Scopes", "view"), http.StatusForbidden},
			{"admin as a service account: delete", as(del(fs), sa...), http.StatusForbidden},
			{"admin as a service account in groups: delete", as(del(fs), "Impersonate-User", "system:serviceaccount:kt-ns:kt-sa", "Impersonate-Group", "kt-group"), http.StatusForbidden},
			{"admin as a node: delete", as(del(fs), "Impersonate-User", "system:node:kt-node"), http.StatusForbidden},
			{"admin as system:anonymous: get", as(get(fs), "Impersonate-User", "system:anonymous"), http.StatusForbidden},
			{"admin as noxu in system:masters: get", as(get(fs), "Impersonate-User", "noxu", "Impersonate-Group", "system:masters"), http.StatusOK},
			{"admin as noxu: an unknown resource", as(get("/api/v1/foos"), noxu...), http.StatusForbidden},
			// Nobody else may impersonate.
			{"bob as noxu: GET /version", asBob(as(get("/version"), noxu...)), http.StatusForbidden},
			{"bob as noxu: list", asBob(as(get(flowschemas), noxu...)), http.StatusForbidden},
			{"bob as noxu: get one", asBob(as(get(fs), noxu...)), http.StatusForbidden},
			{"bob as the admin in system:masters: create", asBob(as(create(flowschemas, fsObject("kt-bob", fsMinimalSpec)), "Impersonate-User", "admin", "Impersonate-Group", "system:masters")), http.StatusForbidden},
			{"bob as a service account", asBob(as(get(flowschemas), sa...)), http.StatusForbidden},
			{"bob as a service account in groups", asBob(as(get(flowschemas), "Impersonate-User", "system:serviceaccount:kt-ns:kt-sa", "Impersonate-Group", "kt-group")), http.StatusForbidden},
			{"bob as a node", asBob(as(get(flowschemas), "Impersonate-User", "system:node:kt-node")), http.StatusForbidden},
			{"bob as a node in groups", asBob(as(get(flowschemas), "Impersonate-User", "system:node:kt-node", "Impersonate-Group", "system:nodes")), http.StatusForbidden},
			{"bob as himself", asBob(as(get(flowschemas), "Impersonate-User", "bob")), http.StatusForbidden},
			{"anonymous as noxu", request{method: http.MethodGet, path: "/version", token: "-", header: http.Header{"Impersonate-User": {"noxu"}}}, http.StatusForbidden},
			// Headers without a user.
			{"groups without a user", as(get("/version"), "Impersonate-Group", "system:masters", "Impersonate-Group", "devs"), http.StatusBadRequest},
			{"a uid and extras without a user", as(get(fs), "Impersonate-Uid", "u-1", "Impersonate-Extra-Scopes", "a", "Impersonate-Extra-Scopes", "b",
				"Impersonate-Extra-Example.com%2fteam", "blue"), http.StatusBadRequest},
			{"an empty user and a group", as(get(fs), "Impersonate-User", "", "Impersonate-Group", "g"), http.StatusBadRequest},
			{"an empty user alone", as(get(fs), "Impersonate-User", ""), http.StatusOK},
			// An unknown resource under a group version both serve.
			{"an unknown resource under /api/v1", get("/api/v1/foos"), http.StatusNotFound},
			{"an unknown namespaced resource under /api/v1", get("/api/v1/namespaces/default/foos/x"), http.StatusNotFound},
			{"an unknown resource under /api/v1 as bob", asBob(get("/api/v1/foos")), http.StatusForbidden},
			{"an unknown resource of authorization.k8s.io/v1", get("/apis/authorization.k8s.io/v1/foos"), http.StatusNotFound},
			{"a group version nobody serves", get("/apis/kt.example.com/v1/foos"), http.StatusNotFound},
		},
	}})
}

// TestImpersonatedUserIsClassified is Kubernetes' own e2e test of APF
// classification, against each server: a FlowSchema for noxu is created
// through the server's flowcontrol API, and GET /version sent as the
// admin impersonating noxu and system:authenticated must come back with
// that FlowSchema's UID and its level's; through the gateway, whose
// flowcontrol API is apf's, the kube-apiserver lets the admin impersonate
// and the gateway's classification is of noxu.
func TestImpersonatedUserIsClassified(t *testing.T) {
	e := testEnv(t)
	name := testPrefix + "e2e-noxu"
	spec := `{"matchingPrecedence":700,"priorityLevelConfiguration":{"name":"workload-low"},"distinguisherMethod":{"type":"ByUser"},` +
		`"rules":[{"subjects":[{"kind":"User","user":{"name":"noxu"}}],"nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}]}]}`
	for _, s := range []*server{e.kube, e.apf, e.gateway} {
		t.Run(s.name, func(t *testing.T) {
			a := s.mustSend(t, create(flowschemas, fsObject(name, spec)))
			if a.code != http.StatusCreated {
				t.Fatalf("creating %s: %d %s", name, a.code, a.raw)
			}
			t.Cleanup(func() { s.mustSend(t, del(flowschemas+"/"+name)) })
			fsUID := uidOf(a.body)
			pl := s.mustSend(t, get(levels+"/workload-low"))
			plUID := uidOf(pl.body)
			r := as(get("/version"), "Impersonate-User", "noxu", "Impersonate-Group", "system:authenticated")
			deadline := time.Now().Add(30 * time.Second)
			for {
				got := s.mustSend(t, r)
				gotFS, gotPL := got.header.Get("X-Kubernetes-PF-FlowSchema-UID"), got.header.Get("X-Kubernetes-PF-PriorityLevel-UID")
				if got.code == http.StatusOK && gotFS == fsUID && gotPL == plUID {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: %d, FlowSchema %q, level %q; want %s's %q and workload-low's %q", r, got.code, gotFS, gotPL, name, fsUID, plUID)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// uidOf is metadata.uid of a decoded object.
func uidOf(body any) string {
	o, _ := body.(map[string]any)
	md, _ := o["metadata"].(map[string]any)
	uid, _ := md["uid"].(string)
	return uid
}

// TestGatewayForwardsImpersonation: kubectl --as (and --as-group) through
// the gateway (passthrough) reaches the kube-apiserver as the impersonated
// user, which its audit log records as the admin impersonating noxu; what
// noxu may not do is refused by the kube-apiserver as it is refused
// without the gateway; and bob, who may impersonate nobody, gets from the
// gateway exactly the kube-apiserver's refusal, without his request
// reaching it.
func TestGatewayForwardsImpersonation(t *testing.T) {
	e := testEnv(t)
	for _, args := range [][]string{
		{"--as=noxu", "get", "pods", "-n", "default"},
		{"--as=noxu", "--as-group=system:masters", "get", "namespace", "default", "-o", "name"},
		{"--as=system:serviceaccount:default:kt-deployer", "get", "configmaps", "-n", "default"},
	} {
		direct, okDirect := e.kube.kubectl(t, "", args...)
		proxied, okProxied := e.gateway.kubectl(t, "", args...)
		if okDirect != okProxied || direct != proxied {
			t.Errorf("kubectl %s: kube (ok=%v):\n%s\ngateway (ok=%v):\n%s", strings.Join(args, " "), okDirect, direct, okProxied, proxied)
		}
	}
	bobAs, ok := e.gateway.kubectl(t, readerToken, "--as=noxu", "get", "pods", "-n", "default")
	bobDirect, _ := e.kube.kubectl(t, readerToken, "--as=noxu", "get", "pods", "-n", "default")
	if ok || bobAs != bobDirect {
		t.Errorf("bob --as=noxu: gateway (ok=%v):\n%s\nkube:\n%s", ok, bobAs, bobDirect)
	}

	// The audit log: each request through the gateway, found by the
	// Audit-Id the kube-apiserver answered with, was the admin acting as
	// noxu (in system:masters for the second).
	type audited struct {
		User             struct{ Username string } `json:"user"`
		ImpersonatedUser *struct {
			Username string
			Groups   []string
		} `json:"impersonatedUser"`
		ResponseStatus struct{ Code int } `json:"responseStatus"`
	}
	sent := []struct {
		header http.Header
		path   string
		code   int
		groups []string
	}{
		{http.Header{"Impersonate-User": {"noxu"}}, "/api/v1/namespaces/default/pods", http.StatusForbidden, []string{"system:authenticated"}},
		{http.Header{"Impersonate-User": {"noxu"}, "Impersonate-Group": {"system:masters"}}, "/api/v1/namespaces/default", http.StatusOK, []string{"system:masters", "system:authenticated"}},
	}
	ids := map[string]int{}
	for i, s := range sent {
		code, id := sendAudited(t, e.gateway, adminToken, http.MethodGet, s.path, "", s.header)
		if code != s.code {
			t.Fatalf("GET %s through the gateway as the admin impersonating %v: %d, want %d", s.path, s.header, code, s.code)
		}
		ids[id] = i
	}
	deadline := time.Now().Add(30 * time.Second)
	found := map[string]audited{}
	for len(found) < len(ids) {
		data, err := os.ReadFile(e.auditLog)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			var ev struct {
				audited
				AuditID, Stage string
			}
			if json.Unmarshal(line, &ev) != nil || ev.Stage != "ResponseComplete" {
				continue
			}
			if _, ok := ids[ev.AuditID]; ok {
				found[ev.AuditID] = ev.audited
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the audit log lacks some of the requests %v: found %v", ids, found)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for id, ev := range found {
		s := sent[ids[id]]
		if ev.User.Username != "admin" || ev.ImpersonatedUser == nil || ev.ImpersonatedUser.Username != "noxu" ||
			strings.Join(ev.ImpersonatedUser.Groups, ",") != strings.Join(s.groups, ",") || ev.ResponseStatus.Code != s.code {
			t.Errorf("GET %s: the audit event says user %q impersonating %+v, code %d; want admin impersonating noxu in %v, %d",
				s.path, ev.User.Username, ev.ImpersonatedUser, ev.ResponseStatus.Code, s.groups, s.code)
		}
	}

	// bob's refusal, the kube-apiserver's words, from the gateway alone.
	r := asBob(as(get("/api/v1/namespaces/default/pods"), "Impersonate-User", "noxu"))
	compareAnswers(t, r, e.kube.mustSend(t, r), e.gateway.mustSend(t, r))
}
