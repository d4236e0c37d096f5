package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/request"
)

// BenchmarkPlace times the request path of the engine: classification,
// work estimation and the wait limit, on the bootstrap configuration.
func BenchmarkPlace(b *testing.B) {
	snap := installed(b, CompileObjects(bootstrap.FlowSchemas(), bootstrap.PriorityLevels())).snap
	for _, c := range []struct {
		name, method, path, query, user, groups string
	}{
		{"user-get", "GET", "/api/v1/namespaces/shop/pods/web", "", "alice", "devs,system:authenticated"},
		{"user-list", "GET", "/api/v1/namespaces/shop/pods", "limit=500", "alice", "devs,system:authenticated"},
		{"kubelet-patch", "PATCH", "/api/v1/nodes/n1/status", "", "system:node:n1", "system:nodes,system:authenticated"},
		{"service-account-update", "PUT", "/apis/apps/v1/namespaces/shop/deployments/web", "", "system:serviceaccount:shop:ci", "system:serviceaccounts,system:serviceaccounts:shop,system:authenticated"},
		{"probe", "GET", "/readyz", "", "system:anonymous", "system:unauthenticated"},
	} {
		b.Run(c.name, func(b *testing.B) {
			info, err := request.Parse(c.method, c.path, c.query)
			if err != nil {
				b.Fatal(err)
			}
			a := &request.Attributes{Info: info, User: request.User{Name: c.user, Groups: strings.Split(c.groups, ",")}}
			now := base
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(time.Microsecond)
				snap.Place(now, a, time.Time{})
			}
		})
	}
}
