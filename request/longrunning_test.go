package request

import "testing"

func TestLongRunning(t *testing.T) {
	cases := []struct {
		method, path, query string
		kube, generic       bool
	}{
		{"GET", "/api/v1/namespaces/ns/pods", "watch=1", true, true},
		{"GET", "/api/v1/watch/pods", "", true, true},
		{"GET", "/api/v1/namespaces/ns/pods", "", false, false},
		{"GET", "/api/v1/namespaces/ns/pods/p", "", false, false},
		{"GET", "/api/v1/proxy/nodes/n1/stats", "", true, false},
		{"POST", "/api/v1/namespaces/ns/pods/p/exec", "", true, false},
		{"GET", "/api/v1/namespaces/ns/pods/p/exec", "", true, false},
		{"POST", "/api/v1/namespaces/ns/pods/p/attach", "", true, false},
		{"POST", "/api/v1/namespaces/ns/pods/p/portforward", "", true, false},
		{"GET", "/api/v1/namespaces/ns/pods/p/log", "follow=true", true, false},
		{"GET", "/api/v1/namespaces/ns/services/s/proxy/x", "", true, false},
		{"GET", "/api/v1/nodes/n1/proxy", "", true, false},
		{"PUT", "/api/v1/namespaces/ns/pods/p/status", "", false, false},
		{"GET", "/apis/apps/v1/namespaces/ns/deployments/d/scale", "", false, false},
		// A subresource-like path segment of a non-resource request
		// does not count.
		{"GET", "/logs/exec", "", false, false},
		// Profiles, for every server built on k8s.io/apiserver.
		{"GET", "/debug/pprof/profile", "seconds=30", true, true},
		{"GET", "/debug/pprof/", "", true, true},
		{"GET", "/debug/pprof", "", false, false},
		{"GET", "/debug/flags/v", "", false, false},
		// The verb counts whatever the kind of request.
		{"WATCH", "/x", "", true, true},
		{"PROXY", "/x", "", true, false},
		// Path verbs on an otherwise odd resource.
		{"DELETE", "/api/v1/watch/pods", "", true, true},
		{"GET", "/healthz", "", false, false},
	}
	for _, c := range cases {
		info, err := Parse(c.method, c.path, c.query)
		if err != nil {
			t.Fatalf("Parse(%s %s): %v", c.method, c.path, err)
		}
		if got := info.IsLongRunning(); got != c.kube {
			t.Errorf("%s %s?%s: IsLongRunning = %v, want %v", c.method, c.path, c.query, got, c.kube)
		}
		if got := KubeAPIServer.IsLongRunning(&info); got != c.kube {
			t.Errorf("%s %s?%s: KubeAPIServer = %v, want %v", c.method, c.path, c.query, got, c.kube)
		}
		if got := Generic.IsLongRunning(&info); got != c.generic {
			t.Errorf("%s %s?%s: Generic = %v, want %v", c.method, c.path, c.query, got, c.generic)
		}
		if got, want := info.IsWatch(), info.Verb == "watch"; got != want {
			t.Errorf("%s %s?%s: IsWatch = %v, want %v", c.method, c.path, c.query, got, want)
		}
		// In front of a service, nothing; a plain call is neither
		// long-running nor a watch, unless its route says so.
		if Service.IsLongRunning(&info) {
			t.Errorf("%s %s?%s: Service = true, want false", c.method, c.path, c.query)
		}
		a := Attributes{Info: info, Route: Route{Plain: true}}
		if a.IsWatch() || a.IsLongRunning(KubeAPIServer) {
			t.Errorf("%s %s?%s: a plain call is a watch (%v) or long-running (%v)", c.method, c.path, c.query, a.IsWatch(), a.IsLongRunning(KubeAPIServer))
		}
		a.Route.LongRunning = true
		if !a.IsLongRunning(Service) {
			t.Errorf("%s %s?%s: a plain call a route made long-running is not", c.method, c.path, c.query)
		}
		a.Route = Route{}
		if a.IsWatch() != info.IsWatch() || a.IsLongRunning(KubeAPIServer) != c.kube {
			t.Errorf("%s %s?%s: without a route, the attributes do not follow the info", c.method, c.path, c.query)
		}
	}
}

// TestLongRunningResourceFields checks the rule on Info values that Parse
// cannot produce, so that it keeps to upstream's conditions exactly.
func TestLongRunningResourceFields(t *testing.T) {
	cases := []struct {
		info          Info
		kube, generic bool
	}{
		// The subresource counts only for resource requests, and the
		// pprof prefix only for non-resource ones.
		{Info{Subresource: "exec"}, false, false},
		{Info{IsResourceRequest: true, Path: "/debug/pprof/x"}, false, false},
		{Info{IsResourceRequest: true, Verb: "proxy"}, true, false},
		{Info{IsResourceRequest: true, Subresource: "Exec"}, false, false},
		{Info{}, false, false},
	}
	for _, c := range cases {
		if got := c.info.IsLongRunning(); got != c.kube {
			t.Errorf("%+v: IsLongRunning = %v, want %v", c.info, got, c.kube)
		}
		if got := Generic.IsLongRunning(&c.info); got != c.generic {
			t.Errorf("%+v: Generic = %v, want %v", c.info, got, c.generic)
		}
	}
}

func TestLongRunningPolicyString(t *testing.T) {
	for p, want := range map[LongRunningPolicy]string{
		KubeAPIServer: "kube-apiserver", Generic: "generic", 7: "LongRunningPolicy(7)",
	} {
		if got := p.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", p, got, want)
		}
	}
	var zero LongRunningPolicy
	if zero != KubeAPIServer {
		t.Errorf("zero policy is %v, want kube-apiserver", zero)
	}
	// Unknown values behave as Generic.
	exec := Info{IsResourceRequest: true, Verb: "create", Subresource: "exec"}
	if LongRunningPolicy(7).IsLongRunning(&exec) {
		t.Error("unknown policy treats exec as long-running")
	}
}
