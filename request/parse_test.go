package request

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

// parseCase is one row of the Parse tables: a request and the Info it must
// resolve to. want.Path is filled in from path.
type parseCase struct {
	method, path, query string
	want                Info
	wantErr             bool
}

// nonResource is the Info of a non-resource request with the given verb.
func nonResource(verb string) Info { return Info{Verb: verb} }

// core is the Info of a resource request in the core group ("/api/v1").
func core(verb, ns, resource, sub, name string) Info {
	return Info{IsResourceRequest: true, Verb: verb, APIPrefix: "api", APIVersion: "v1",
		Namespace: ns, Resource: resource, Subresource: sub, Name: name}
}

// grouped is the Info of a resource request under "/apis/<group>/<version>".
func grouped(verb, group, version, ns, resource, sub, name string) Info {
	return Info{IsResourceRequest: true, Verb: verb, APIPrefix: "apis", APIGroup: group, APIVersion: version,
		Namespace: ns, Resource: resource, Subresource: sub, Name: name}
}

// withSelectors adds the raw selectors Parse copies for collections.
func withSelectors(i Info, field, label string) Info {
	i.FieldSelector, i.LabelSelector = field, label
	return i
}

func runParseCases(t *testing.T, cases []parseCase) {
	t.Helper()
	for _, c := range cases {
		name := c.method + " " + c.path
		if c.query != "" {
			name += "?" + c.query
		}
		t.Run(name, func(t *testing.T) {
			want := c.want
			want.Path = c.path
			if !c.wantErr {
				want.List, want.Timeout = refQuery(t, want.Verb, c.query)
			}
			for _, fast := range []bool{true, false} {
				got, err := parse(c.method, c.path, c.query, fast)
				if (err != nil) != c.wantErr {
					t.Fatalf("fast=%v: error = %v, want error %v", fast, err, c.wantErr)
				}
				if got != want {
					t.Errorf("fast=%v:\n got %+v\nwant %+v", fast, got, want)
				}
			}
		})
	}
}

// TestParseSpecExamples is every row of the example table of
// docs/spec/requests.md#request-info-examples.
func TestParseSpecExamples(t *testing.T) {
	runParseCases(t, []parseCase{
		{method: "GET", path: "/api/v1/pods", want: core("list", "", "pods", "", "")},
		{method: "GET", path: "/api/v1/namespaces/default/pods", query: "watch=true", want: core("watch", "default", "pods", "", "")},
		{method: "GET", path: "/api/v1/watch/namespaces/default/pods/foo", want: core("watch", "default", "pods", "", "foo")},
		{method: "DELETE", path: "/api/v1/namespaces/default/pods", want: core("deletecollection", "default", "pods", "", "")},
		{method: "PUT", path: "/api/v1/namespaces/default/pods/foo/status", want: core("update", "default", "pods", "status", "foo")},
		{method: "PATCH", path: "/api/v1/nodes/n1/status", want: core("patch", "", "nodes", "status", "n1")},
		{method: "GET", path: "/api/v1/namespaces/default", want: core("get", "default", "namespaces", "", "default")},
		{method: "PUT", path: "/api/v1/namespaces/default/finalize", want: core("update", "default", "namespaces", "finalize", "default")},
		{method: "GET", path: "/api/v1/namespaces/default/configmaps/a/b/c", want: core("get", "default", "configmaps", "b", "a")},
		{method: "GET", path: "/api/v1/proxy/namespaces/default/pods/foo/bar", want: core("proxy", "default", "pods", "", "foo")},
		{method: "GET", path: "/apis/apps/v1/namespaces/default/deployments/foo/scale", want: grouped("get", "apps", "v1", "default", "deployments", "scale", "foo")},
		{method: "GET", path: "/api/v1/pods", query: "fieldSelector=metadata.name%3Dfoo", want: withSelectors(core("list", "", "pods", "", "foo"), "metadata.name=foo", "")},
		{method: "HEAD", path: "/api/v1/pods", want: core("list", "", "pods", "", "")},
		{method: "OPTIONS", path: "/api/v1/pods", want: core("", "", "pods", "", "")},
		// Upstream sets APIPrefix before it finds the path too short for a
		// group and a version, and leaves it set.
		{method: "GET", path: "/apis/apps/v1", want: Info{Verb: "get", APIPrefix: "apis"}},
		{method: "GET", path: "/api/v1", want: nonResource("get")},
		{method: "GET", path: "/healthz", want: nonResource("get")},
		{method: "POST", path: "/healthz/etcd", want: nonResource("post")},
	})
}

func TestParsePaths(t *testing.T) {
	runParseCases(t, []parseCase{
		// Too short, or not under an API prefix.
		{method: "GET", path: "", want: nonResource("get")},
		{method: "GET", path: "/", want: nonResource("get")},
		{method: "GET", path: "//", want: nonResource("get")},
		{method: "GET", path: "///", want: nonResource("get")},
		{method: "GET", path: "/api", want: nonResource("get")},
		{method: "GET", path: "/api/", want: nonResource("get")},
		{method: "GET", path: "/api/v1/", want: nonResource("get")},
		{method: "GET", path: "/apis", want: nonResource("get")},
		{method: "GET", path: "/apis/apps", want: nonResource("get")},
		{method: "GET", path: "/apis/apps/v1/", want: Info{Verb: "get", APIPrefix: "apis"}},
		{method: "GET", path: "/version", want: nonResource("get")},
		{method: "GET", path: "/openapi/v2", want: nonResource("get")},
		{method: "GET", path: "/openapi/v3/apis/apps/v1", want: nonResource("get")},
		{method: "GET", path: "/API/v1/pods", want: nonResource("get")},
		{method: "GET", path: "/apix/v1/pods", want: nonResource("get")},
		{method: "GET", path: "/foo/api/v1/pods", want: nonResource("get")},
		{method: "GET", path: "/debug/pprof/profile", query: "seconds=30", want: nonResource("get")},
		{method: "GET", path: "/metrics", query: "watch=1", want: nonResource("get")},
		{method: "DELETE", path: "/healthz", want: nonResource("delete")},
		{method: "PUT", path: "/x", want: nonResource("put")},

		// Trailing, leading and doubled slashes.
		{method: "GET", path: "/api/v1/pods/", want: core("list", "", "pods", "", "")},
		{method: "GET", path: "///api/v1/pods///", want: core("list", "", "pods", "", "")},
		{method: "GET", path: "api/v1/pods", want: core("list", "", "pods", "", "")},
		{method: "GET", path: "/api/v1/pods/foo/", want: core("get", "", "pods", "", "foo")},
		// Inner "//" is an empty segment, as in upstream: here the version.
		{method: "GET", path: "/api//pods", want: Info{IsResourceRequest: true, Verb: "list", APIPrefix: "api", Resource: "pods"}},
		{method: "GET", path: "/api/v1//foo", want: core("get", "", "", "", "foo")},
		// Dot segments are not cleaned here; the HTTP layer may.
		{method: "GET", path: "/api/v1/pods/.", want: core("get", "", "pods", "", ".")},
		{method: "GET", path: "/api/v1/pods/../x", want: core("get", "", "pods", "x", "..")},
		{method: "GET", path: "/api/v1/namespaces//pods", want: core("list", "", "pods", "", "")},
		// An empty name still makes a get a list, subresource or not.
		{method: "GET", path: "/api/v1/pods//status", want: core("list", "", "pods", "status", "")},

		// Namespaces.
		{method: "GET", path: "/api/v1/namespaces", want: core("list", "", "namespaces", "", "")},
		{method: "POST", path: "/api/v1/namespaces", want: core("create", "", "namespaces", "", "")},
		{method: "GET", path: "/api/v1/namespaces/ns", want: core("get", "ns", "namespaces", "", "ns")},
		{method: "DELETE", path: "/api/v1/namespaces/ns", want: core("delete", "ns", "namespaces", "", "ns")},
		{method: "GET", path: "/api/v1/namespaces/ns/status", want: core("get", "ns", "namespaces", "status", "ns")},
		{method: "PUT", path: "/api/v1/namespaces/ns/finalize/extra", want: core("update", "ns", "namespaces", "finalize", "ns")},
		{method: "GET", path: "/api/v1/namespaces/ns/pods", want: core("list", "ns", "pods", "", "")},
		{method: "GET", path: "/api/v1/namespaces/ns/pods/name", want: core("get", "ns", "pods", "", "name")},
		{method: "POST", path: "/api/v1/namespaces/ns/pods/name/exec", query: "command=ls&stdout=true", want: core("create", "ns", "pods", "exec", "name")},
		{method: "GET", path: "/api/v1/namespaces/ns/pods/name/log", want: core("get", "ns", "pods", "log", "name")},
		{method: "GET", path: "/api/v1/namespaces/ns/pods/name/proxy/some/path", want: core("get", "ns", "pods", "proxy", "name")},
		{method: "GET", path: "/api/v1/namespaces/ns/namespaces/x", want: core("get", "ns", "namespaces", "", "x")},
		// "namespaces" only counts right after the version (or path verb).
		{method: "GET", path: "/api/v1/pods/namespaces/ns", want: core("get", "", "pods", "ns", "namespaces")},
		{method: "GET", path: "/api/v1/nodes", want: core("list", "", "nodes", "", "")},

		// Groups.
		{method: "GET", path: "/apis/apps/v1/deployments", want: grouped("list", "apps", "v1", "", "deployments", "", "")},
		{method: "POST", path: "/apis/apps/v1/namespaces/default/deployments", want: grouped("create", "apps", "v1", "default", "deployments", "", "")},
		{method: "PUT", path: "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/exempt/status", want: grouped("update", "flowcontrol.apiserver.k8s.io", "v1", "", "flowschemas", "status", "exempt")},
		{method: "GET", path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler", want: grouped("get", "coordination.k8s.io", "v1", "kube-system", "leases", "", "kube-scheduler")},
		// "api" has no group even with enough segments for one.
		{method: "GET", path: "/api/apps/v1/deployments", want: Info{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "apps", Resource: "v1", Name: "deployments"}},
	})
}

func TestParseVerbs(t *testing.T) {
	runParseCases(t, []parseCase{
		{method: "POST", path: "/api/v1/namespaces/ns/pods", want: core("create", "ns", "pods", "", "")},
		{method: "PUT", path: "/api/v1/namespaces/ns/pods/p", want: core("update", "ns", "pods", "", "p")},
		// Update and patch without a name stay as they are.
		{method: "PUT", path: "/api/v1/pods", want: core("update", "", "pods", "", "")},
		{method: "PATCH", path: "/api/v1/pods", want: core("patch", "", "pods", "", "")},
		{method: "DELETE", path: "/api/v1/pods/p", want: core("delete", "", "pods", "", "p")},
		{method: "HEAD", path: "/api/v1/pods/p", want: core("get", "", "pods", "", "p")},
		{method: "HEAD", path: "/api/v1/pods", query: "watch=1", want: core("watch", "", "pods", "", "")},
		// Unknown methods give the empty verb on resources and their
		// lower-cased name elsewhere. The method is compared
		// case-sensitively, as upstream does.
		{method: "OPTIONS", path: "/api/v1/pods/p", want: core("", "", "pods", "", "p")},
		{method: "FOO", path: "/api/v1/pods", want: core("", "", "pods", "", "")},
		{method: "get", path: "/api/v1/pods", want: core("", "", "pods", "", "")},
		{method: "Delete", path: "/api/v1/pods", want: core("", "", "pods", "", "")},
		{method: "", path: "/api/v1/pods", want: core("", "", "pods", "", "")},
		{method: "FOO", path: "/healthz", want: nonResource("foo")},
		{method: "get", path: "/healthz", want: nonResource("get")},
		{method: "OPTIONS", path: "/", want: nonResource("options")},
		{method: "CONNECT", path: "/x", want: nonResource("connect")},
		{method: "TRACE", path: "/x", want: nonResource("trace")},
		{method: "WATCH", path: "/x", want: nonResource("watch")},
		{method: "", path: "/x", want: nonResource("")},
		{method: "MÉTHODE", path: "/x", want: nonResource("méthode")},

		// Verb in the path.
		{method: "GET", path: "/api/v1/watch/pods", want: core("watch", "", "pods", "", "")},
		{method: "GET", path: "/api/v1/watch/pods", query: "watch=false", want: core("watch", "", "pods", "", "")},
		{method: "DELETE", path: "/api/v1/watch/pods", want: core("watch", "", "pods", "", "")},
		{method: "GET", path: "/api/v1/watch/namespaces", want: core("watch", "", "namespaces", "", "")},
		{method: "GET", path: "/api/v1/watch/namespaces/ns", want: core("watch", "ns", "namespaces", "", "ns")},
		{method: "GET", path: "/api/v1/watch/namespaces/ns/pods", want: core("watch", "ns", "pods", "", "")},
		{method: "GET", path: "/api/v1/watch/pods/p/status", want: core("watch", "", "pods", "status", "p")},
		{method: "GET", path: "/apis/apps/v1/watch/deployments", want: grouped("watch", "apps", "v1", "", "deployments", "", "")},
		{method: "GET", path: "/api/v1/proxy/nodes", want: core("proxy", "", "nodes", "", "")},
		{method: "POST", path: "/api/v1/proxy/nodes/n1/some/path", want: core("proxy", "", "nodes", "", "n1")},
		{method: "GET", path: "/api/v1/proxy/namespaces/ns/services/svc:80/x/y", want: core("proxy", "ns", "services", "", "svc:80")},
		// Only the segment right after the version is a path verb.
		{method: "GET", path: "/api/v1/pods/watch", want: core("get", "", "pods", "", "watch")},
		{method: "GET", path: "/api/v1/watch/watch", want: core("watch", "", "watch", "", "")},
		{method: "GET", path: "/api/v1/proxy/proxy/a/b", want: core("proxy", "", "proxy", "", "a")},
		// "watch" as a resource name in the method form.
		{method: "GET", path: "/api/v1/namespaces/watch/pods", want: core("list", "watch", "pods", "", "")},
	})
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		method, path string
		partial      Info
	}{
		{"GET", "/api/v1/watch", Info{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1"}},
		{"GET", "/api/v1/watch/", Info{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1"}},
		{"POST", "/api/v1/proxy", Info{IsResourceRequest: true, Verb: "post", APIPrefix: "api", APIVersion: "v1"}},
		{"GET", "/apis/apps/v1/watch", Info{IsResourceRequest: true, Verb: "get", APIPrefix: "apis", APIGroup: "apps", APIVersion: "v1"}},
		{"FOO", "//apis/g/v/proxy//", Info{IsResourceRequest: true, Verb: "foo", APIPrefix: "apis", APIGroup: "g", APIVersion: "v"}},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			got, err := Parse(c.method, c.path, "watch=1")
			if !errors.Is(err, ErrNoResource) {
				t.Fatalf("error = %v, want one wrapping ErrNoResource", err)
			}
			var pe *pathError
			if !errors.As(err, &pe) || pe.Path != c.path {
				t.Fatalf("error %v is not a *PathError for %q", err, c.path)
			}
			if !strings.Contains(err.Error(), c.path) {
				t.Errorf("error %q does not name the path", err)
			}
			c.partial.Path = c.path
			if got != c.partial {
				t.Errorf("partial info\n got %+v\nwant %+v", got, c.partial)
			}
		})
	}
}

// TestParseConcurrent runs both query routes from many goroutines, for the
// race detector: the codec and its scheme are shared package state.
func TestParseConcurrent(t *testing.T) {
	queries := []string{"watch=1", "fieldSelector=metadata.name%3Dx", "limit=x&watch=1", "labelSelector=a+in+(b)"}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				q := queries[(g+i)%len(queries)]
				if _, err := Parse("GET", "/api/v1/namespaces/ns/pods", q); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
