package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/apfhttp"
)

// impersonationSchema is a FlowSchema of precedence 500 sending every
// request of one subject to workload-low.
func impersonationSchema(name, subject string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":%q},
"spec":{"priorityLevelConfiguration":{"name":"workload-low"},"matchingPrecedence":500,"distinguisherMethod":{"type":"ByUser"},
"rules":[{"subjects":[%s],
"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"clusterScope":true,"namespaces":["*"]}],
"nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}]}]}}`, name, subject)
}

// createSchemas creates FlowSchemas (name → subject) as the admin and
// returns their UIDs.
func createSchemas(t *testing.T, s *e2eServer, schemas map[string]string) map[string]string {
	t.Helper()
	uids := map[string]string{}
	for name, subject := range schemas {
		code, _, body := s.do(http.MethodPost, fsV1Path, adminToken, impersonationSchema(name, subject))
		var o struct {
			Metadata struct{ UID string } `json:"metadata"`
		}
		if code != http.StatusCreated || json.Unmarshal(body, &o) != nil {
			t.Fatalf("creating FlowSchema %s: %d %s", name, code, body)
		}
		uids[name] = o.Metadata.UID
	}
	return uids
}

// impersonating sends method path as token with the impersonation
// headers hdr (name, value, ...), with a body for writes.
func impersonating(t *testing.T, s *e2eServer, method, path, token string, hdr ...string) (int, http.Header, statusBody) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st statusBody
	_ = json.NewDecoder(resp.Body).Decode(&st)
	return resp.StatusCode, resp.Header, st
}

// waitClassified waits until the request impersonating hdr is classified
// by the FlowSchema whose UID is want (the controller takes the new
// FlowSchemas in asynchronously).
func waitClassified(t *testing.T, s *e2eServer, want string, hdr ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, h, st := impersonating(t, s, http.MethodGet, "/version", adminToken, hdr...)
		got := h.Get(apfhttp.FlowSchemaUIDHeader)
		if code == http.StatusOK && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /version impersonating %v: %d %q, FlowSchema %q; want %q", hdr, code, st.Message, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestImpersonationStandalone is Kubernetes' own e2e test of APF
// classification against apf serve alone, and more: an admin sending GET
// /version impersonating noxu (and system:authenticated) is classified by
// the FlowSchema made for noxu; a service account and a group are
// classified by theirs; apf's own authorization judges the impersonated
// user; a reader may impersonate nobody (kube-apiserver's 403, before
// APF); groups without a user are a 400; the access log names both the
// caller and the user it acted as.
func TestImpersonationStandalone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	logs := &lockedBuffer{}
	opts := DefaultOptions()
	opts.DataDir = filepath.Join(t.TempDir(), "data")
	opts.AccessLog.Writer = logs
	srv := startServer(t, opts)
	defer srv.stop()

	uids := createSchemas(t, srv, map[string]string{
		"imp-noxu": `{"kind":"User","user":{"name":"noxu"}}`,
		"imp-sa":   `{"kind":"ServiceAccount","serviceAccount":{"namespace":"ns1","name":"sa1"}}`,
		"imp-team": `{"kind":"Group","group":{"name":"team-blue"}}`,
	})

	t.Run("the FlowSchema of the impersonated user wins", func(t *testing.T) {
		waitClassified(t, srv, uids["imp-noxu"], "Impersonate-User", "noxu", "Impersonate-Group", "system:authenticated")
		// Extras and a UID change nothing of the classification.
		waitClassified(t, srv, uids["imp-noxu"], "Impersonate-User", "noxu", "Impersonate-Uid", "u-1", "Impersonate-Extra-Example.com%2fteam", "blue")
		waitClassified(t, srv, uids["imp-sa"], "Impersonate-User", "system:serviceaccount:ns1:sa1")
		waitClassified(t, srv, uids["imp-team"], "Impersonate-User", "someone", "Impersonate-Group", "team-blue")
		// Without impersonation the admin is exempt.
		_, h, _ := impersonating(t, srv, http.MethodGet, "/version", adminToken)
		if got := h.Get(apfhttp.FlowSchemaUIDHeader); got == uids["imp-noxu"] || got == "" {
			t.Errorf("the admin itself: FlowSchema %q", got)
		}
	})

	t.Run("apf's authorization judges the impersonated user", func(t *testing.T) {
		code, _, st := impersonating(t, srv, http.MethodDelete, fsV1Path+"/imp-noxu", adminToken, "Impersonate-User", "noxu")
		want := `flowschemas.flowcontrol.apiserver.k8s.io "imp-noxu" is forbidden: User "noxu" cannot delete resource "flowschemas" in API group "flowcontrol.apiserver.k8s.io" at the cluster scope`
		if code != http.StatusForbidden || st.Message != want {
			t.Errorf("DELETE as the admin impersonating noxu: %d %q; want 403 %q", code, st.Message, want)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for _, c := range []struct {
			name, method, path, token string
			hdr                       []string
			code                      int
			msg                       string
		}{
			{"a reader may not impersonate", http.MethodGet, "/version", readerToken, []string{"Impersonate-User", "noxu", "Impersonate-Group", "system:authenticated"},
				http.StatusForbidden, `forbidden: User "bob" cannot impersonate-on:user-info:get path "/version"`},
			{"nor be a service account", http.MethodGet, fsV1Path, readerToken, []string{"Impersonate-User", "system:serviceaccount:ns1:sa1"},
				http.StatusForbidden, `flowschemas.flowcontrol.apiserver.k8s.io is forbidden: User "bob" cannot impersonate-on:serviceaccount:list resource "flowschemas" in API group "flowcontrol.apiserver.k8s.io" at the cluster scope`},
			{"nor be a service account in groups", http.MethodGet, fsV1Path, readerToken, []string{"Impersonate-User", "system:serviceaccount:ns1:sa1", "Impersonate-Group", "g"},
				http.StatusForbidden, `serviceaccounts "sa1" is forbidden: User "bob" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns1"`},
			{"groups without a user", http.MethodGet, "/version", adminToken, []string{"Impersonate-Group", "system:masters"},
				http.StatusBadRequest, `requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"system:masters"}, Extra:map[string][]string(nil)} without impersonating a user name`},
			{"an extra without a user", http.MethodGet, "/version", readerToken, []string{"Impersonate-Extra-Scopes", "x"},
				http.StatusBadRequest, `requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string(nil), Extra:map[string][]string{"scopes":[]string{"x"}}} without impersonating a user name`},
		} {
			code, h, st := impersonating(t, srv, c.method, c.path, c.token, c.hdr...)
			if code != c.code || st.Code != c.code || st.Message != c.msg || h.Get("X-Content-Type-Options") != "nosniff" || h.Get(apfhttp.FlowSchemaUIDHeader) != "" {
				t.Errorf("%s: %d %q (FlowSchema %q); want %d %q before APF", c.name, code, st.Message, h.Get(apfhttp.FlowSchemaUIDHeader), c.code, c.msg)
			}
		}
	})

	t.Run("the access log names the caller and the user it acted as", func(t *testing.T) {
		out := logs.String()
		if !strings.Contains(out, "user=admin impersonatedUser=noxu") || !strings.Contains(out, "user=admin impersonatedUser=system:serviceaccount:ns1:sa1") {
			t.Errorf("access log:\n%s", out)
		}
	})
}
