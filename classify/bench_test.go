package classify

import (
	"fmt"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/request"
)

// thousandSchemas returns the bootstrap configuration plus 1,000 tenant
// schemas. With shared, every tenant schema names the same group (so the
// subject index cannot prune and the request must pass all of them); without
// it each names its own group.
func thousandSchemas(shared bool) ([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration) {
	levels := append(bootstrap.PriorityLevels(), level("tenants", 128))
	schemas := bootstrap.FlowSchemas()
	for i := range 1000 {
		group := fmt.Sprintf("tenant-%d", i)
		if shared {
			group = "system:authenticated"
		}
		ns := fmt.Sprintf("tenant-%d", i)
		schemas = append(schemas, schema(fmt.Sprintf("tenant-%04d", i), "tenants", int32(1000+i), "ByNamespace",
			resources(users("group:"+group), l("get", "list", "watch", "create", "update", "patch", "delete"),
				l("", "apps", "batch"), l("pods", "deployments", "jobs", "configmaps", "secrets"), l(ns), false)))
	}
	return schemas, levels
}

func BenchmarkClassify(b *testing.B) {
	run := func(b *testing.B, m *Matcher, req, user, wantFS string) {
		a := attrs(b, req, user)
		if got := m.Classify(a).FlowSchema.Name; got != wantFS {
			b.Fatalf("classified to %s, want %s", got, wantFS)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			m.Classify(a)
		}
	}
	boot := bootstrapMatcher(b)
	b.Run("bootstrap/service-account", func(b *testing.B) {
		run(b, boot, "GET /api/v1/namespaces/shop/pods/web", appSA, "service-accounts")
	})
	b.Run("bootstrap/user", func(b *testing.B) {
		run(b, boot, "GET /api/v1/namespaces/default/pods/web", alice, "global-default")
	})
	b.Run("bootstrap/kubelet", func(b *testing.B) {
		run(b, boot, "PATCH /api/v1/nodes/n1/status", kubelet, "system-node-high")
	})
	// Every request a new flow: the flow-hash cache always misses, so this
	// is the cost of SHA-256 plus one cache entry.
	b.Run("bootstrap/new-flow-each-request", func(b *testing.B) {
		reqs := make([]*request.Attributes, 1<<16)
		for i := range reqs {
			reqs[i] = attrs(b, "GET /api/v1/namespaces/default/pods/web", fmt.Sprintf("user-%d|%s", i, authn))
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			boot.Classify(reqs[i%len(reqs)])
			i++
		}
	})
	tenants := Compile(thousandSchemas(false))
	b.Run("1000-schemas/own-groups", func(b *testing.B) {
		run(b, tenants, "GET /apis/apps/v1/namespaces/tenant-999/deployments/web",
			"carol|tenant-999,system:authenticated", "tenant-0999")
	})
	shared := Compile(thousandSchemas(true))
	b.Run("1000-schemas/shared-group-last", func(b *testing.B) {
		run(b, shared, "GET /apis/apps/v1/namespaces/tenant-999/deployments/web",
			"carol|system:authenticated", "tenant-0999")
	})
}

func BenchmarkCompile(b *testing.B) {
	schemas, levels := thousandSchemas(false)
	b.ReportAllocs()
	for b.Loop() {
		Compile(schemas, levels)
	}
}
