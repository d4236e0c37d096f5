package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/debug/debugmux"
	"github.com/apfproject/apf/internal/testing/testserve"
)

// The explain endpoint of a running apf serve and `apf classify` reading
// that server's configuration through a kubeconfig give the same answer
// for every request of a table: who asks and what, on every kind of
// level, resource and non-resource, reads, watches and writes. Only the
// seats a level has after borrowing, which a configuration on paper has
// not, are the server's alone, and only the server concurrency limit
// (read from the server) and where it came from are the command's.
func TestClassifyAgreesWithExplainEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("starts apf serve")
	}
	srv, kc := startCluster(t)
	pem, err := os.ReadFile(srv.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer client.CloseIdleConnections()

	type asked struct {
		as     string
		groups []string
		uid    string
		verb   string
		path   string
	}
	table := []asked{
		{"admin", []string{"system:masters"}, "", "delete", "/api/v1/namespaces/shop/pods/web-1"},
		{"", nil, "", "get", "/readyz"},
		{"", nil, "", "get", "/api/v1/namespaces"},
		{"system:node:node-1", []string{"system:nodes"}, "", "patch", "/api/v1/nodes/node-1/status"},
		{"system:node:node-1", []string{"system:nodes"}, "", "get", "/api/v1/namespaces/shop/pods/web-1"},
		{"system:node:node-1", []string{"system:nodes"}, "", "watch", "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1"},
		{"system:kube-controller-manager", nil, "", "update", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"},
		{"system:kube-scheduler", nil, "", "create", "/api/v1/namespaces/shop/pods/web-1/binding"},
		{"system:serviceaccount:kube-system:deployment-controller", nil, "", "put", "/apis/apps/v1/namespaces/shop/deployments/web/status"},
		{"system:serviceaccount:ci:deployer", nil, "", "patch", "/apis/apps/v1/namespaces/shop/deployments/web"},
		{"ci", nil, "", "list", "/api/v1/namespaces/shop/pods?labelSelector=app%3Dweb"},
		{"ci", []string{"builders"}, "uid-ci", "deletecollection", "/api/v1/namespaces/shop/pods"},
		{"alice", []string{"devs"}, "", "get", "/api/v1/namespaces/shop/pods?limit=500"},
		{"alice", []string{"devs"}, "", "post", "/api/v1/namespaces/shop/configmaps"},
		{"bob", nil, "", "get", "/version"},
		{"bob", nil, "", "options", "/apis/apps/v1/namespaces/shop/deployments"},
		{"mystery", []string{"system:unauthenticated"}, "", "get", "/api/v1/pods?timeout=8s"},
	}
	for _, rq := range table {
		name := rq.as + " " + rq.verb + " " + rq.path
		args := []string{"classify", "--kubeconfig", kc, "-o", "json"}
		q := url.Values{"verb": {rq.verb}, "path": {rq.path}, "output": {"json"}}
		if rq.as != "" {
			args = append(args, "--as", rq.as)
			q.Set("user", rq.as)
		}
		for _, g := range rq.groups {
			args = append(args, "--as-group", g)
			q.Add("group", g)
		}
		if rq.uid != "" {
			args = append(args, "--as-uid", rq.uid)
			q.Set("uid", rq.uid)
		}
		args = append(args, rq.verb, rq.path)
		code, out, errOut := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%s: apf classify exit %d: %s", name, code, errOut)
		}
		req, err := http.NewRequest(http.MethodGet, srv.URL+debugmux.ExplainPath+"?"+q.Encode(), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testserve.AdminToken)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: the endpoint answered %d: %s %v", name, resp.StatusCode, body, err)
		}
		fromCLI, fromServer := decodeExplanation(t, []byte(out)), decodeExplanation(t, body)
		if pl, ok := fromServer["priorityLevel"].(map[string]any); ok {
			delete(pl, "currentSeats")
		}
		if scl, src := fromCLI["serverConcurrencyLimit"], fromCLI["serverConcurrencyLimitSource"]; scl != 600.0 || src != "read from cluster apf (apf_server_concurrency_limit_seats)" {
			t.Errorf("%s: server concurrency limit %v, %v", name, scl, src)
		}
		delete(fromCLI, "serverConcurrencyLimit")
		delete(fromCLI, "serverConcurrencyLimitSource")
		if !reflect.DeepEqual(fromCLI, fromServer) {
			t.Errorf("%s:\napf classify: %s\nthe endpoint: %s", name, out, body)
		}
	}
}

func decodeExplanation(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if strings.TrimSpace(string(b)) == "" {
		t.Fatal("empty explanation")
	}
	return m
}
