package request

import "testing"

// BenchmarkParse measures the shapes of request that dominate an API
// server's traffic. The first four must not allocate; "watch/selector" and
// "list/invalid" take the codec route and show what it costs.
func BenchmarkParse(b *testing.B) {
	cases := []struct {
		name, method, path, query string
	}{
		{"get/named", "GET", "/api/v1/namespaces/kube-system/pods/coredns-5d78c9869d-abcde", ""},
		{"list/namespaced", "GET", "/apis/apps/v1/namespaces/default/deployments", "limit=500"},
		{"watch/query", "GET", "/api/v1/namespaces/default/pods", "allowWatchBookmarks=true&resourceVersion=123456&timeoutSeconds=540&watch=true"},
		{"nonresource", "GET", "/readyz", ""},
		{"update/status", "PUT", "/apis/apps/v1/namespaces/default/deployments/web/status", "fieldManager=kubectl"},
		{"watch/selector", "GET", "/api/v1/pods", "fieldSelector=spec.nodeName%3Dnode-1&resourceVersion=1&watch=true"},
		{"list/invalid", "GET", "/api/v1/pods", "limit=x&watch=1"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(c.method, c.path, c.query); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestParseAllocations pins the zero-allocation promise of Parse's doc
// comment, so that a change that breaks it fails a plain go test.
func TestParseAllocations(t *testing.T) {
	for _, c := range [][3]string{
		{"GET", "/api/v1/namespaces/kube-system/pods/coredns", ""},
		{"GET", "/api/v1/namespaces/default/pods", ""},
		{"GET", "/apis/apps/v1/namespaces/default/deployments", "limit=500&continue=abc"},
		{"GET", "/api/v1/pods", "allowWatchBookmarks=true&resourceVersion=1&timeoutSeconds=540&watch=true"},
		{"DELETE", "/api/v1/namespaces/ns/pods", "labelSelector=app=web"},
		{"PATCH", "/api/v1/nodes/n1/status", "fieldManager=kubelet"},
		{"GET", "/healthz/etcd", ""},
		{"OPTIONS", "/", ""},
		{"GET", "/api/v1/namespaces/kube-system/pods/coredns", "timeout=30s"},
		{"GET", "/api/v1/pods", "limit=500&resourceVersion=0&resourceVersionMatch=NotOlderThan&timeout=1m"},
		{"GET", "/api/v1/pods", "watch=1&sendInitialEvents=true&resourceVersion=&allowWatchBookmarks=true"},
		{"GET", "/api/v1/watch/namespaces/ns/pods/p", "resourceVersion=5"},
		{"POST", "/api/v1/namespaces/ns/pods", "fieldManager=kubectl&timeout=10s"},
	} {
		allocs := testing.AllocsPerRun(100, func() {
			_, _ = Parse(c[0], c[1], c[2])
		})
		if allocs != 0 {
			t.Errorf("Parse(%s %s?%s) allocates %v times, want 0", c[0], c[1], c[2], allocs)
		}
	}
}
