package request

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary requests to Parse. Besides never panicking, the
// result must agree with a plain slice-based reading of the path (refPath),
// the in-place query route must agree with the codec route, the list options
// and the timeout must be what the API server's codec and url.URL.Query read
// (refQuery), and a list of invariants must hold.
func FuzzParse(f *testing.F) {
	for _, s := range [][3]string{
		{"GET", "/api/v1/pods", ""},
		{"GET", "/api/v1/namespaces/default/pods", "watch=true&resourceVersion=1"},
		{"GET", "/api/v1/watch/namespaces/default/pods/foo", ""},
		{"DELETE", "/api/v1/namespaces/default/pods", "labelSelector=a%3Db"},
		{"PUT", "/api/v1/namespaces/default/finalize", ""},
		{"GET", "/api/v1/proxy/namespaces/default/pods/foo/bar", ""},
		{"GET", "/apis/apps/v1/namespaces/default/deployments/foo/scale", ""},
		{"GET", "/api/v1/pods", "fieldSelector=metadata.name%3Dfoo&watch=1"},
		{"GET", "/api/v1/pods", "limit=x&watch=FALSE&labelSelector=%21"},
		{"POST", "/healthz/etcd", ""},
		{"GET", "/api/v1/watch", ""},
		{"get", "//api//v1//", "watch;=1"},
		{"GET", "/api/v1/pods", "limit=500&continue=c&resourceVersion=0&resourceVersionMatch=NotOlderThan&timeout=30s"},
		{"GET", "/api/v1/pods", "watch=1&sendInitialEvents=true&resourceVersion=&timeoutSeconds=x&limit=5"},
		{"GET", "/api/v1/namespaces/ns/pods/p", "tim%65out=1m&limit=5"},
		{"LIST", "/metrics", "limit=1&labelSelector=a"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, method, path, query string) {
		info, err := Parse(method, path, query)

		again, err2 := Parse(method, path, query)
		if again != info || (err == nil) != (err2 == nil) {
			t.Fatalf("not deterministic: %+v, %v then %+v, %v", info, err, again, err2)
		}
		slow, errSlow := parse(method, path, query, false)
		if slow != info || (err == nil) != (errSlow == nil) {
			t.Fatalf("query fast path disagrees with the codec:\nfast %+v, %v\ncodec %+v, %v", info, err, slow, errSlow)
		}
		if info.Path != path {
			t.Fatalf("Path = %q, want the input %q", info.Path, path)
		}
		if err == nil {
			list, timeout := refQuery(t, info.Verb, query)
			if info.List != list {
				t.Fatalf("List disagrees with the codec:\n got %+v\nwant %+v", info.List, list)
			}
			if info.Timeout != timeout {
				t.Fatalf("Timeout = %v, the query says %v", info.Timeout, timeout)
			}
		}

		ref := refPath(method, path)
		if (err != nil) != ref.err {
			t.Fatalf("error = %v, reference says error %v", err, ref.err)
		}
		if err != nil {
			var pe *pathError
			if !errors.Is(err, ErrNoResource) || !errors.As(err, &pe) || pe.Path != path || !info.IsResourceRequest {
				t.Fatalf("bad error %v with %+v", err, info)
			}
			return
		}
		got := [...]string{info.APIPrefix, info.APIGroup, info.APIVersion, info.Namespace, info.Resource, info.Subresource}
		want := [...]string{ref.prefix, ref.group, ref.version, ref.namespace, ref.resource, ref.subresource}
		if info.IsResourceRequest != ref.resourceRequest || got != want {
			t.Fatalf("path fields %v (resource %v), reference %v (resource %v)", got, info.IsResourceRequest, want, ref.resourceRequest)
		}
		if ref.name != "" && info.Name != ref.name {
			t.Fatalf("Name = %q, reference %q", info.Name, ref.name)
		}
		// A path segment may be "." or "..", but a name taken from a
		// field selector must be one a path could have carried.
		if strings.Contains(info.Name, "/") {
			t.Fatalf("Name %q holds a slash", info.Name)
		}
		if ref.name == "" && info.Name != "" && !isPathSegmentName(info.Name) {
			t.Fatalf("field selector gave Name %q, which no path segment could be", info.Name)
		}

		if !info.IsResourceRequest {
			if info.Verb != strings.ToLower(method) {
				t.Fatalf("non-resource verb %q, want lower-cased %q", info.Verb, method)
			}
			rest := Info{APIPrefix: info.APIPrefix, Path: info.Path, Verb: info.Verb, List: info.List, Timeout: info.Timeout}
			if info != rest || (info.APIPrefix != "" && info.APIPrefix != "apis") {
				t.Fatalf("non-resource request with resource fields: %+v", info)
			}
			return
		}

		if info.APIPrefix != "api" && info.APIPrefix != "apis" {
			t.Fatalf("resource request with prefix %q", info.APIPrefix)
		}
		if info.APIVersion == "" && !strings.Contains(strings.Trim(path, "/"), "//") {
			t.Fatalf("empty version without an empty segment in %q", path)
		}
		switch info.Verb {
		case "", VerbGet, VerbCreate, VerbUpdate, VerbPatch, VerbDelete, VerbProxy:
			if info.Verb == VerbGet && info.Name == "" {
				t.Fatalf("get without a name: %+v", info)
			}
		case VerbList, VerbWatch, VerbDeleteCollection:
		default:
			t.Fatalf("unknown verb %q", info.Verb)
		}
		if info.Verb == VerbDeleteCollection && info.Name != "" {
			t.Fatalf("deletecollection with a name: %+v", info)
		}
		if info.Verb == VerbProxy && info.Subresource != "" {
			t.Fatalf("proxy with a subresource: %+v", info)
		}
		collection := info.Verb == VerbList || info.Verb == VerbWatch || info.Verb == VerbDeleteCollection
		if (info.FieldSelector != "" || info.LabelSelector != "") && (!collection || ref.verbInPath) {
			t.Fatalf("selectors on a %q request: %+v", info.Verb, info)
		}

		if info.IsWatch() && !info.IsLongRunning() {
			t.Fatalf("a watch that is not long-running: %+v", info)
		}
		if Generic.IsLongRunning(&info) && !KubeAPIServer.IsLongRunning(&info) {
			t.Fatalf("generic rule is not a subset of kube-apiserver's: %+v", info)
		}
	})
}

// refResult is what refPath reads from a path.
type refResult struct {
	resourceRequest, verbInPath, err                               bool
	prefix, group, version, namespace, resource, subresource, name string
}

// refPath is a deliberately naive reading of the path rules of
// docs/spec/requests.md#request-info, with strings.Split and slices, to check
// the in-place walk against. It leaves out the query.
func refPath(method, path string) refResult {
	var r refResult
	var parts []string
	if trimmed := strings.Trim(path, "/"); trimmed != "" {
		parts = strings.Split(trimmed, "/")
	}
	if len(parts) < 3 || (parts[0] != "api" && parts[0] != "apis") {
		return r
	}
	r.prefix, parts = parts[0], parts[1:]
	if r.prefix == "apis" {
		if len(parts) < 3 {
			return r
		}
		r.group, parts = parts[0], parts[1:]
	}
	r.resourceRequest = true
	r.version, parts = parts[0], parts[1:]
	verb := methodVerb(method)
	if parts[0] == "watch" || parts[0] == "proxy" {
		if len(parts) == 1 {
			r.err = true
			return r
		}
		verb, parts, r.verbInPath = parts[0], parts[1:], true
	}
	if parts[0] == "namespaces" && len(parts) >= 2 {
		r.namespace = parts[1]
		if len(parts) >= 3 && parts[2] != "status" && parts[2] != "finalize" {
			parts = parts[2:]
		}
	}
	r.resource = parts[0]
	if len(parts) >= 2 {
		r.name = parts[1]
	}
	if len(parts) >= 3 && verb != "proxy" {
		r.subresource = parts[2]
	}
	return r
}
