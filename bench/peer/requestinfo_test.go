package peer

import (
	"errors"
	"fmt"
	"testing"

	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/apfproject/apf/request"
)

// requestInfoCase is one request to resolve. want, when set, is the answer
// docs/spec/requests.md#request-info-examples writes out, checked against
// upstream and ours alike; every case is also compared field by field between
// the two.
type requestInfoCase struct {
	method, path, query string
	want                *request.Info
}

func res(verb, group, version, ns, resource, sub, name string) *request.Info {
	return &request.Info{IsResourceRequest: true, Verb: verb, APIGroup: group, APIVersion: version,
		Namespace: ns, Resource: resource, Subresource: sub, Name: name}
}

func nonRes(verb string) *request.Info { return &request.Info{Verb: verb} }

var requestInfoCases = []requestInfoCase{
	// The example table of docs/spec/requests.md#request-info-examples.
	{"GET", "/api/v1/pods", "", res("list", "", "v1", "", "pods", "", "")},
	{"GET", "/api/v1/namespaces/default/pods", "watch=true", res("watch", "", "v1", "default", "pods", "", "")},
	{"GET", "/api/v1/watch/namespaces/default/pods/foo", "", res("watch", "", "v1", "default", "pods", "", "foo")},
	{"DELETE", "/api/v1/namespaces/default/pods", "", res("deletecollection", "", "v1", "default", "pods", "", "")},
	{"PUT", "/api/v1/namespaces/default/pods/foo/status", "", res("update", "", "v1", "default", "pods", "status", "foo")},
	{"PATCH", "/api/v1/nodes/n1/status", "", res("patch", "", "v1", "", "nodes", "status", "n1")},
	{"GET", "/api/v1/namespaces/default", "", res("get", "", "v1", "default", "namespaces", "", "default")},
	{"PUT", "/api/v1/namespaces/default/finalize", "", res("update", "", "v1", "default", "namespaces", "finalize", "default")},
	{"GET", "/api/v1/namespaces/default/configmaps/a/b/c", "", res("get", "", "v1", "default", "configmaps", "b", "a")},
	{"GET", "/api/v1/proxy/namespaces/default/pods/foo/bar", "", res("proxy", "", "v1", "default", "pods", "", "foo")},
	{"GET", "/apis/apps/v1/namespaces/default/deployments/foo/scale", "", res("get", "apps", "v1", "default", "deployments", "scale", "foo")},
	{"GET", "/api/v1/pods", "fieldSelector=metadata.name%3Dfoo", res("list", "", "v1", "", "pods", "", "foo")},
	{"HEAD", "/api/v1/pods", "", res("list", "", "v1", "", "pods", "", "")},
	{"OPTIONS", "/api/v1/pods", "", res("", "", "v1", "", "pods", "", "")},
	{"GET", "/apis/apps/v1", "", nonRes("get")},
	{"GET", "/api/v1", "", nonRes("get")},
	{"GET", "/healthz", "", nonRes("get")},
	{"POST", "/healthz/etcd", "", nonRes("post")},

	// Short and odd paths.
	{"GET", "/", "", nil},
	{"GET", "", "", nil},
	{"GET", "/api", "", nil},
	{"GET", "/api/", "", nil},
	{"GET", "/apis", "", nil},
	{"GET", "/apis/apps", "", nil},
	{"GET", "/apis/apps/v1/", "", nil},
	{"GET", "/APIS/apps/v1/deployments", "", nil},
	{"GET", "//api//v1//pods", "", nil},
	{"GET", "/api/v1/namespaces//pods", "", nil},
	{"GET", "/api/v1/pods/", "", nil},
	{"GET", "/api/v1/namespaces/default/pods/", "", nil},
	{"GET", "/api/v1/namespaces/", "", nil},
	{"GET", "/api/v1/namespaces", "", nil},
	{"GET", "/openapi/v2", "", nil},
	{"GET", "/version", "", nil},
	{"GET", "/healthz", "verbose", nil},
	{"GET", "/debug/pprof/profile", "seconds=30", nil},
	{"GET", "/debug/pprof", "", nil},
	{"GET", "/debug/pprof/", "", nil},

	// The verb-in-path form, including its error case.
	{"GET", "/api/v1/watch", "", nil},
	{"GET", "/api/v1/proxy", "", nil},
	{"GET", "/apis/apps/v1/watch", "", nil},
	{"GET", "/api/v1/watch/", "", nil},
	{"GET", "/api/v1/watch/pods", "", nil},
	{"GET", "/api/v1/watch/namespaces/default", "", nil},
	{"GET", "/api/v1/watch/namespaces/default/pods", "watch=false&labelSelector=a%3Db", nil},
	{"GET", "/api/v1/proxy/nodes/n1", "", nil},
	{"GET", "/api/v1/proxy/nodes/n1:10250/metrics", "", nil},
	{"POST", "/api/v1/proxy/namespaces/default/services/s/x/y", "", nil},

	// Watch query forms.
	{"GET", "/api/v1/pods", "watch=1", nil},
	{"GET", "/api/v1/pods", "watch=true", nil},
	{"GET", "/api/v1/pods", "watch=false", nil},
	{"GET", "/api/v1/pods", "watch=0", nil},
	{"GET", "/api/v1/pods", "watch=yes", nil},
	{"GET", "/api/v1/pods", "watch=", nil},
	{"GET", "/api/v1/pods", "watch", nil},
	{"GET", "/api/v1/pods", "watch=FALSE", nil},
	{"GET", "/api/v1/pods", "watch=False", nil},
	{"GET", "/api/v1/pods", "watch=true&watch=false", nil},
	{"GET", "/api/v1/pods", "watch=false&watch=true", nil},
	{"HEAD", "/api/v1/pods", "watch=true", nil},
	{"GET", "/api/v1/nodes", "watch=true&resourceVersion=10", nil},
	{"GET", "/api/v1/namespaces/default/pods/foo", "watch=true", nil},

	// Selectors, valid and not.
	{"GET", "/api/v1/pods", "fieldSelector=metadata.name%3Dfoo&watch=1", nil},
	{"GET", "/api/v1/pods", "fieldSelector=metadata.name%3D%3Dfoo", nil},
	{"GET", "/api/v1/pods", "fieldSelector=metadata.name!%3Dfoo", nil},
	{"GET", "/api/v1/pods", "fieldSelector=metadata.name%3D..", nil},
	{"GET", "/api/v1/pods", "fieldSelector=metadata.name%3D.", nil},
	{"GET", "/api/v1/pods", "fieldSelector=metadata.name%3Da%2Fb", nil},
	{"GET", "/api/v1/pods", "fieldSelector=metadata.name%3Dfoo%2525", nil},
	{"GET", "/api/v1/pods", "fieldSelector=metadata.name%3D", nil},
	{"GET", "/api/v1/pods", "fieldSelector=metadata.name%3Dfoo,metadata.namespace%3Dbar", nil},
	{"GET", "/api/v1/pods", "fieldSelector=metadata.name%3Dfoo&fieldSelector=metadata.name%3Dbar", nil},
	{"GET", "/api/v1/pods", "fieldSelector=spec.nodeName%3Dn1&watch=1", nil},
	{"GET", "/api/v1/pods", "fieldSelector=foo", nil},
	{"GET", "/api/v1/pods", "fieldSelector=foo&watch=true", nil},
	{"GET", "/api/v1/namespaces/default/pods", "labelSelector=app%3Dfoo,tier!%3Dx", nil},
	{"GET", "/api/v1/pods", "labelSelector=a%20in%20(&watch=1", nil},
	{"GET", "/api/v1/pods", "labelSelector=!!!&watch=0", nil},
	{"GET", "/api/v1/pods", "labelSelector=%3D%3D%3D", nil},
	{"GET", "/api/v1/pods", "limit=abc&watch=true", nil},
	{"GET", "/api/v1/pods", "limit=abc", nil},
	{"GET", "/api/v1/pods", "watch=true&%zz", nil},
	{"GET", "/api/v1/namespaces/default/pods", "timeout=10s&limit=500&continue=abc", nil},
	{"DELETE", "/api/v1/namespaces/default/pods", "labelSelector=a%3Db&fieldSelector=status.phase%3DFailed", nil},
	{"DELETE", "/api/v1/namespaces/default/pods", "fieldSelector=metadata.name%3Dfoo", nil},
	{"POST", "/api/v1/namespaces/default/pods", "labelSelector=a%3Db", nil},

	// Methods and verbs.
	{"DELETE", "/api/v1/namespaces/default/pods/foo", "", nil},
	{"DELETE", "/api/v1/namespaces/default", "", nil},
	{"POST", "/api/v1/namespaces/default/pods", "", nil},
	{"POST", "/api/v1/namespaces", "", nil},
	{"CONNECT", "/api/v1/namespaces/foo/pods/bar/portforward", "", nil},
	{"OPTIONS", "/apis/apps/v1/deployments", "", nil},
	{"TRACE", "/api/v1/pods", "", nil},
	{"get", "/api/v1/pods", "", nil},
	{"Post", "/healthz", "", nil},
	{"WATCH", "/foo", "", nil},
	{"PROXY", "/foo", "", nil},
	{"PATCH", "/apis/apps/v1/namespaces/default/deployments/foo/status", "", nil},

	// Namespaces and subresources.
	{"GET", "/api/v1/namespaces/foo/status", "", nil},
	{"PUT", "/api/v1/namespaces/foo/status", "", nil},
	{"GET", "/api/v1/namespaces/foo/finalize/extra", "", nil},
	{"GET", "/api/v1/namespaces/foo/pods/bar/log", "follow=true", nil},
	{"POST", "/api/v1/namespaces/foo/pods/bar/exec", "command=ls&stdout=true", nil},
	{"POST", "/api/v1/namespaces/foo/pods/bar/attach", "", nil},
	{"GET", "/api/v1/namespaces/foo/pods/bar/proxy/some/path", "", nil},
	{"GET", "/api/v1/namespaces/foo/services/bar:http/proxy/x", "", nil},
	{"GET", "/api/v1/nodes/n1/proxy/metrics", "", nil},
	{"GET", "/api/v1/namespaces/default/pods/foo/ephemeralcontainers", "", nil},
	{"GET", "/apis/apps/v1/deployments", "", nil},
	{"GET", "/apis/apps/v1/namespaces/ns/deployments/d/scale/extra/segments", "", nil},
	{"GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler", "", nil},
	{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", "", nil},
	{"GET", "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/exempt/status", "", nil},
	{"GET", "/api/v1/namespaces/kube-system/serviceaccounts/default/token", "", nil},
}

// TestRequestInfo compares request.Parse and Info.IsLongRunning with
// upstream's RequestInfoFactory and kube-apiserver's long-running rule.
func TestRequestInfo(t *testing.T) {
	if n := len(requestInfoCases); n < 60 {
		t.Fatalf("only %d request-info cases; want at least 60", n)
	}
	for _, c := range requestInfoCases {
		in := fmt.Sprintf("%s %q ?%q", c.method, c.path, c.query)
		upInfo, upErr := UpstreamRequestInfo(c.method, c.path, c.query)
		up := fromUpstreamInfo(upInfo)
		ours, ourErr := request.Parse(c.method, c.path, c.query)

		if (ourErr != nil) != (upErr != nil) {
			t.Errorf("%s: error: ours %v, upstream %v", in, ourErr, upErr)
		}
		if ourErr != nil && !errors.Is(ourErr, request.ErrNoResource) {
			t.Errorf("%s: ours returned %v, which does not wrap ErrNoResource", in, ourErr)
		}
		// Upstream's RequestInfo has no list options or timeout: request's
		// own tests hold those against the API server's codec.
		cmp := ours
		cmp.List, cmp.Timeout = request.ListOptions{}, 0
		if cmp != up {
			t.Errorf("%s:\n  ours     %+v\n  upstream %+v", in, cmp, up)
		}
		if c.want != nil {
			want := *c.want
			if got := exampleColumns(up); got != want {
				t.Errorf("%s: upstream disagrees with the example table:\n  upstream %+v\n  table    %+v", in, got, want)
			}
			if got := exampleColumns(ours); got != want {
				t.Errorf("%s: ours disagrees with the example table:\n  ours  %+v\n  table %+v", in, got, want)
			}
		}
		if got, want := ours.IsLongRunning(), UpstreamIsLongRunning(c.method, c.path, c.query, upInfo); got != want {
			t.Errorf("%s: IsLongRunning: ours %v, upstream %v", in, got, want)
		}
	}
}

// exampleColumns keeps the fields the example table of
// docs/spec/requests.md#request-info-examples lists (plus the version, which
// is plain from the path).
func exampleColumns(i request.Info) request.Info {
	return request.Info{IsResourceRequest: i.IsResourceRequest, Verb: i.Verb, APIGroup: i.APIGroup,
		APIVersion: i.APIVersion, Namespace: i.Namespace, Resource: i.Resource, Subresource: i.Subresource, Name: i.Name}
}

// fromUpstreamInfo copies the fields both RequestInfos share. Upstream's
// Parts is an implementation detail with no counterpart.
func fromUpstreamInfo(ri *apirequest.RequestInfo) request.Info {
	return request.Info{
		IsResourceRequest: ri.IsResourceRequest,
		Path:              ri.Path,
		Verb:              ri.Verb,
		APIPrefix:         ri.APIPrefix,
		APIGroup:          ri.APIGroup,
		APIVersion:        ri.APIVersion,
		Namespace:         ri.Namespace,
		Resource:          ri.Resource,
		Subresource:       ri.Subresource,
		Name:              ri.Name,
		FieldSelector:     ri.FieldSelector,
		LabelSelector:     ri.LabelSelector,
	}
}
