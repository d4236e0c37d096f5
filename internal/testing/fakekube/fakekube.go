package fakekube

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

// Options configures a Server.
type Options struct {
	// Tokens maps the bearer tokens the server accepts to user names. A
	// request with another token is answered 401.
	Tokens map[string]string
	// Refused are users answered 403 on every path but /version.
	Refused []string
	// Impersonators are users who may act as another user with
	// Impersonate-User.
	Impersonators []string
	// AnonymousDisabled answers 401 to requests without credentials, as
	// --anonymous-auth=false does; otherwise an anonymous caller may read
	// /version only, as kube-apiserver's default roles allow.
	AnonymousDisabled bool
}

// Request is one request the server answered.
type Request struct {
	Method, Path, Accept, IfNoneMatch string
	// Authorization and ImpersonateUser are the request's headers.
	Authorization, ImpersonateUser string
	// User is who the request was served as ("" when refused with 401).
	User   string
	Status int
}

// GitVersion is the version the server reports.
const GitVersion = "v1.37.2"

// ServerAddress is the address every group's serverAddressByClientCIDRs
// names.
const ServerAddress = "10.0.0.1:6443"

// Server is the stand-in. It is safe for concurrent use.
type Server struct {
	o Options

	mu       sync.Mutex
	requests []Request
	// crdVersions are the versions of the custom resource group, which
	// AddCRDVersion changes to change the documents.
	crdVersions []string
	docs        *documents
}

// New returns a Server.
func New(o Options) *Server {
	s := &Server{o: o, crdVersions: []string{"v1"}}
	s.docs = build(s.crdVersions)
	return s
}

// AddCRDVersion adds a version to the custom resource group
// stable.example.com, which changes /apis (both forms, and the aggregated
// ETag) and the OpenAPI 3 index.
func (s *Server) AddCRDVersion(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.crdVersions = append(s.crdVersions, v)
	s.docs = build(s.crdVersions)
}

// Requests returns the requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// RequestsTo returns the requests answered for path.
func (s *Server) RequestsTo(path string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// tagged is an encoded document and its quoted ETag.
type tagged struct {
	body []byte
	etag string
}

func tag(v any) tagged {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return tagged{body: body, etag: fmt.Sprintf(`"%X"`, sha512.Sum512(body))}
}

// documents are the server's answers, built from the groups.
type documents struct {
	version                  tagged
	apiVersions              tagged
	coreAggregated           tagged
	groupList                tagged
	aggregated               tagged
	groups                   map[string]tagged // /apis/<group>
	resourceLists            map[string]tagged // "api/v1", "apis/<group>/<version>"
	openAPIIndex             tagged
	openAPIDocs              map[string]tagged // by index key
	openAPIV2, openAPIV2Prot []byte
}

// resource is one resource of a group version.
type resource struct {
	plural, singular, kind string
	namespaced             bool
	verbs                  []string
	status                 bool
}

type groupVersion struct {
	version   string
	resources []resource
}

type group struct {
	name     string
	versions []groupVersion
}

var (
	allVerbs    = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	statusVerbs = []string{"get", "patch", "update"}
	createOnly  = []string{"create"}
)

// groups are the server's groups in kube-apiserver's order (by group
// priority: apps, authorization, storage, flowcontrol, then custom
// resources), the core group first.
func groups(crdVersions []string) []group {
	crd := group{name: "stable.example.com"}
	for i := len(crdVersions) - 1; i >= 0; i-- {
		crd.versions = append(crd.versions, groupVersion{crdVersions[i], []resource{{"crontabs", "crontab", "CronTab", true, allVerbs, false}}})
	}
	return []group{
		{"", []groupVersion{{"v1", []resource{
			{"configmaps", "configmap", "ConfigMap", true, allVerbs, false},
			{"namespaces", "namespace", "Namespace", false, []string{"create", "delete", "get", "list", "patch", "update", "watch"}, true},
			{"pods", "pod", "Pod", true, allVerbs, true},
		}}}},
		{"apps", []groupVersion{{"v1", []resource{
			{"deployments", "deployment", "Deployment", true, allVerbs, true},
		}}}},
		{"authorization.k8s.io", []groupVersion{{"v1", []resource{
			{"localsubjectaccessreviews", "localsubjectaccessreview", "LocalSubjectAccessReview", true, createOnly, false},
			{"selfsubjectaccessreviews", "selfsubjectaccessreview", "SelfSubjectAccessReview", false, createOnly, false},
			{"selfsubjectrulesreviews", "selfsubjectrulesreview", "SelfSubjectRulesReview", false, createOnly, false},
			{"subjectaccessreviews", "subjectaccessreview", "SubjectAccessReview", false, createOnly, false},
		}}}},
		{"storage.k8s.io", []groupVersion{{"v1", []resource{
			{"storageclasses", "storageclass", "StorageClass", false, allVerbs, false},
		}}}},
		{"flowcontrol.apiserver.k8s.io", []groupVersion{{"v1", []resource{
			{"flowschemas", "flowschema", "FlowSchema", false, allVerbs, true},
			{"prioritylevelconfigurations", "prioritylevelconfiguration", "PriorityLevelConfiguration", false, allVerbs, true},
		}}}},
		crd,
	}
}

func build(crdVersions []string) *documents {
	d := &documents{groups: map[string]tagged{}, resourceLists: map[string]tagged{}, openAPIDocs: map[string]tagged{}}
	d.version = tag(version.Info{
		Major: "1", Minor: "37", GitVersion: GitVersion, GitCommit: "0123456789abcdef0123456789abcdef01234567",
		GitTreeState: "clean", BuildDate: "2026-01-01T00:00:00Z", GoVersion: "go1.26.8", Compiler: "gc", Platform: "linux/amd64",
	})
	servers := []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: ServerAddress}}
	d.apiVersions = tag(metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}, ServerAddressByClientCIDRs: servers})
	list := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	core := apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}}
	agg := core
	index := map[string]map[string]string{}
	for _, g := range groups(crdVersions) {
		ag := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g.name}}
		lg := metav1.APIGroup{Name: g.name, ServerAddressByClientCIDRs: servers}
		for _, v := range g.versions {
			gv := v.version
			key := "api/v1"
			if g.name != "" {
				gv = g.name + "/" + v.version
				key = "apis/" + gv
				lg.Versions = append(lg.Versions, metav1.GroupVersionForDiscovery{GroupVersion: gv, Version: v.version})
			}
			rl := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
			av := apidiscoveryv2.APIVersionDiscovery{Version: v.version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
			for _, r := range v.resources {
				rl.APIResources = append(rl.APIResources, metav1.APIResource{Name: r.plural, SingularName: r.singular, Namespaced: r.namespaced, Kind: r.kind, Verbs: r.verbs})
				gvk := &metav1.GroupVersionKind{Group: g.name, Version: v.version, Kind: r.kind}
				scope := apidiscoveryv2.ScopeCluster
				if r.namespaced {
					scope = apidiscoveryv2.ScopeNamespace
				}
				ar := apidiscoveryv2.APIResourceDiscovery{Resource: r.plural, ResponseKind: gvk, Scope: scope, SingularResource: r.singular, Verbs: r.verbs}
				if r.status {
					rl.APIResources = append(rl.APIResources, metav1.APIResource{Name: r.plural + "/status", Namespaced: r.namespaced, Kind: r.kind, Verbs: statusVerbs})
					ar.Subresources = []apidiscoveryv2.APISubresourceDiscovery{{Subresource: "status", ResponseKind: gvk, Verbs: statusVerbs}}
				}
				av.Resources = append(av.Resources, ar)
			}
			ag.Versions = append(ag.Versions, av)
			d.resourceLists[key] = tag(rl)
			doc := tag(openAPIV3Doc(g.name, v.version))
			d.openAPIDocs[key] = doc
			index[key] = map[string]string{"serverRelativeURL": "/openapi/v3/" + key + "?hash=" + strings.Trim(doc.etag, `"`)}
		}
		// The index also has an entry for each group's own endpoint, and
		// for /api and /apis, as kube-apiserver's has.
		groupKey := "api"
		if g.name != "" {
			groupKey = "apis/" + g.name
		}
		gdoc := tag(openAPIV3Doc(g.name, ""))
		d.openAPIDocs[groupKey] = gdoc
		index[groupKey] = map[string]string{"serverRelativeURL": "/openapi/v3/" + groupKey + "?hash=" + strings.Trim(gdoc.etag, `"`)}
		if g.name == "" {
			core.Items = append(core.Items, ag)
			continue
		}
		lg.PreferredVersion = lg.Versions[0]
		list.Groups = append(list.Groups, lg)
		agg.Items = append(agg.Items, ag)
		one := lg
		one.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		one.ServerAddressByClientCIDRs = nil
		d.groups[g.name] = tag(one)
	}
	d.groupList = tag(list)
	d.coreAggregated = tag(core)
	d.aggregated = tag(agg)
	apis := tag(openAPIV3Doc("", "apis"))
	d.openAPIDocs["apis"] = apis
	index["apis"] = map[string]string{"serverRelativeURL": "/openapi/v3/apis?hash=" + strings.Trim(apis.etag, `"`)}
	d.openAPIIndex = tag(map[string]any{"paths": index})
	v2 := map[string]any{
		"swagger": "2.0",
		"info":    map[string]string{"title": "Kubernetes", "version": GitVersion},
		"paths":   map[string]any{},
		"definitions": map[string]any{
			"io.k8s.api.flowcontrol.v1.FlowSchema": map[string]any{"description": "the upstream's FlowSchema", "type": "object"},
		},
	}
	d.openAPIV2 = tag(v2).body
	pd, err := openapi_v2.ParseDocument(d.openAPIV2)
	if err != nil {
		panic(err)
	}
	if d.openAPIV2Prot, err = proto.Marshal(pd); err != nil {
		panic(err)
	}
	return d
}

// UpstreamTitle is the info.title of the server's OpenAPI 3 documents,
// which tells them from apf's.
const UpstreamTitle = "Kubernetes (stand-in)"

// openAPIV3Doc is a small OpenAPI 3 document of a group version.
func openAPIV3Doc(group, version string) map[string]any {
	return map[string]any{
		"openapi":    "3.0.0",
		"info":       map[string]string{"title": UpstreamTitle, "version": GitVersion},
		"paths":      map[string]any{},
		"components": map[string]any{"schemas": map[string]any{}},
		"x-group":    group + "/" + version,
	}
}

// authenticate returns the request's user, or "" when it does not
// authenticate.
func (s *Server) authenticate(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		if s.o.AnonymousDisabled {
			return ""
		}
		return "system:anonymous"
	}
	token, ok := strings.CutPrefix(auth, "Bearer ")
	user := s.o.Tokens[token]
	if !ok || user == "" {
		return ""
	}
	if as := r.Header.Get("Impersonate-User"); as != "" {
		if !slices.Contains(s.o.Impersonators, user) {
			return "!" + user // refused below
		}
		return as
	}
	return user
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	d := s.docs
	s.mu.Unlock()
	rec := Request{
		Method: r.Method, Path: r.URL.Path, Accept: r.Header.Get("Accept"), IfNoneMatch: r.Header.Get("If-None-Match"),
		Authorization: r.Header.Get("Authorization"), ImpersonateUser: r.Header.Get("Impersonate-User"),
	}
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		rec.Status = sw.status
		s.mu.Lock()
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
	}()
	w = sw
	rec.User = s.authenticate(r)
	path := r.URL.Path
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}
	switch {
	case rec.User == "":
		writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
		return
	case strings.HasPrefix(rec.User, "!"):
		writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden,
			fmt.Sprintf("users %q is forbidden: User %q cannot impersonate resource \"users\" in API group \"\" at the cluster scope", rec.ImpersonateUser, rec.User[1:]))
		return
	case path != "/version" && (rec.User == "system:anonymous" || slices.Contains(s.o.Refused, rec.User)):
		writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, fmt.Sprintf("forbidden: User %q cannot get path %q", rec.User, r.URL.Path))
		return
	}
	switch {
	case path == "/version":
		writeDoc(w, r, d.version, "application/json", false)
	case path == "/api":
		s.serveDiscovery(w, r, d.apiVersions, d.coreAggregated)
	case path == "/apis":
		s.serveDiscovery(w, r, d.groupList, d.aggregated)
	case path == "/openapi/v3":
		// kube-openapi: JSON whatever is asked, with an ETag.
		writeDoc(w, r, d.openAPIIndex, "application/json", true)
	case path == "/openapi/v2":
		if strings.Contains(r.Header.Get("Accept"), "protobuf") {
			writeDoc(w, r, tagged{body: d.openAPIV2Prot}, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf", false)
			return
		}
		writeDoc(w, r, tagged{body: d.openAPIV2}, "application/json", false)
	case strings.HasPrefix(path, "/openapi/v3/"):
		doc, ok := d.openAPIDocs[strings.TrimPrefix(path, "/openapi/v3/")]
		if !ok {
			writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
			return
		}
		if h := r.URL.Query().Get("hash"); h != "" && `"`+h+`"` != doc.etag {
			http.Redirect(w, r, path+"?hash="+strings.Trim(doc.etag, `"`), http.StatusMovedPermanently)
			return
		}
		writeDoc(w, r, doc, "application/json", true)
	case path == "/api/v1":
		writeDoc(w, r, d.resourceLists["api/v1"], "application/json", false)
	case strings.HasPrefix(path, "/apis/"):
		rest := strings.TrimPrefix(path, "/apis/")
		if doc, ok := d.groups[rest]; ok {
			writeDoc(w, r, doc, "application/json", false)
			return
		}
		if doc, ok := d.resourceLists["apis/"+rest]; ok {
			writeDoc(w, r, doc, "application/json", false)
			return
		}
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
	default:
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
	}
}

// serveDiscovery answers /api or /apis in the form the Accept header
// asks for: aggregated v2 (with its ETag and 304) when any clause asks
// for it, the legacy document for plain JSON or no header, 406 otherwise.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request, legacy, aggregated tagged) {
	accept := r.Header.Get("Accept")
	if strings.Contains(accept, "g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList") {
		w.Header().Set("Vary", "Accept")
		w.Header().Set("Cache-Control", "public")
		writeDoc(w, r, aggregated, "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", true)
		return
	}
	if accept == "" {
		writeDoc(w, r, legacy, "application/json", false)
		return
	}
	for _, c := range strings.Split(accept, ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(c), ";")
		if mt == "application/json" || mt == "application/*" || mt == "*/*" {
			writeDoc(w, r, legacy, "application/json", false)
			return
		}
	}
	writeStatus(w, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
		"only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf")
}

// writeDoc writes a document; with etag, the ETag header and a 304 when
// If-None-Match names it.
func writeDoc(w http.ResponseWriter, r *http.Request, d tagged, contentType string, etag bool) {
	w.Header().Set("Audit-Id", "fakekube-audit-id")
	if etag {
		w.Header().Set("Etag", d.etag)
		if r.Header.Get("If-None-Match") == d.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(d.body)
	}
}

// writeStatus writes a Status answer as kube-apiserver does.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: msg, Reason: reason, Code: int32(code),
	}
	if code == http.StatusForbidden {
		st.Details = &metav1.StatusDetails{}
	}
	w.Header().Set("Audit-Id", "fakekube-audit-id")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(&st)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}
