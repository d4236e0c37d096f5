package discovery

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/apistatus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

// DefaultGitVersion is the gitVersion /version reports when Options.Info
// does not name one: the Kubernetes release whose API this server mirrors,
// marked as ours.
const DefaultGitVersion = "v1.37.2-apf"

// Options configures a Handler. The zero value serves the default versions.
type Options struct {
	// Versions are the served versions of flowcontrol.apiserver.k8s.io.
	// Empty means config.DefaultServedVersions. Unknown versions are ignored; duplicates
	// are served once.
	Versions []config.Version
	// Preferred is the version discovery recommends; empty means v1, or the
	// newest served version when v1 is not served. A preferred version
	// that is not served is replaced the same way.
	Preferred config.Version
	// Info is the answer of /version. Empty fields are filled in:
	// gitVersion DefaultGitVersion (and major/minor from it), the Go
	// version, compiler and platform of this binary.
	Info version.Info
}

// Handler serves the discovery, OpenAPI and version endpoints. It is safe
// for concurrent use; every document is built once, on first use.
type Handler struct {
	versions  []config.Version // served, most preferred first
	preferred config.Version
	info      version.Info

	once sync.Once
	docs *documents
}

// New returns a Handler for opts.
func New(opts Options) *Handler {
	h := &Handler{info: opts.Info}
	want := opts.Versions
	if len(want) == 0 {
		want = config.DefaultServedVersions
	}
	seen := map[config.Version]bool{}
	// Served versions are listed in the order kube-apiserver lists them:
	// the preferred version first, then the rest from newest to oldest.
	for i := len(config.Versions) - 1; i >= 0; i-- {
		v := config.Versions[i]
		for _, w := range want {
			if w == v && !seen[v] {
				seen[v] = true
				h.versions = append(h.versions, v)
			}
		}
	}
	if len(h.versions) == 0 {
		h.versions = append(h.versions, config.DefaultServedVersions...)
		for _, v := range config.DefaultServedVersions {
			seen[v] = true
		}
	}
	h.preferred = opts.Preferred
	if !seen[h.preferred] {
		h.preferred = h.versions[0]
	}
	for i, v := range h.versions {
		if v == h.preferred {
			copy(h.versions[1:i+1], h.versions[:i])
			h.versions[0] = v
		}
	}
	fillInfo(&h.info)
	return h
}

// Versions returns the served versions, the preferred one first.
func (h *Handler) Versions() []config.Version {
	return append([]config.Version(nil), h.versions...)
}

func fillInfo(info *version.Info) {
	if info.GitVersion == "" {
		info.GitVersion = DefaultGitVersion
	}
	if info.Major == "" && info.Minor == "" {
		// "v1.37.2-apf" → major "1", minor "37".
		parts := strings.SplitN(strings.TrimPrefix(info.GitVersion, "v"), ".", 3)
		if len(parts) >= 2 {
			info.Major, info.Minor = parts[0], parts[1]
		}
	}
	if info.GitTreeState == "" {
		info.GitTreeState = "clean"
	}
	if info.BuildDate == "" {
		info.BuildDate = "1970-01-01T00:00:00Z"
	}
	if info.GoVersion == "" {
		info.GoVersion = runtime.Version()
	}
	if info.Compiler == "" {
		info.Compiler = runtime.Compiler
	}
	if info.Platform == "" {
		info.Platform = runtime.GOOS + "/" + runtime.GOARCH
	}
}

// The paths this handler answers.
const (
	groupPrefix         = "/apis/" + config.Group
	authorizationPrefix = "/apis/" + authorizationGroup
	openAPIV2           = "/openapi/v2"
	openAPIV3           = "/openapi/v3"
	v3GroupPath         = openAPIV3 + groupPrefix + "/"
)

// Handles reports whether path is one this Handler answers: /api, /api/v1,
// /apis, /apis/flowcontrol.apiserver.k8s.io and its versions' resource
// lists, /apis/authorization.k8s.io and its version's, /openapi/v2,
// /openapi/v3 and the flowcontrol group's OpenAPI 3 documents, and
// /version. A trailing slash is accepted. Resource paths below a version
// (/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas,
// /apis/authorization.k8s.io/v1/selfsubjectaccessreviews) are not ours.
func (h *Handler) Handles(path string) bool {
	switch route(path) {
	case routeNone:
		return false
	}
	return true
}

type routeKind int

const (
	routeNone routeKind = iota
	routeLegacy
	routeLegacyV1
	routeGroups
	routeGroup
	routeGroupVersion
	routeOpenAPIV2
	routeOpenAPIV3
	routeOpenAPIV3Group
	routeVersion
	routeAuthorizationGroup
	routeAuthorizationVersion
)

// Discovery says whether path is one the Gateway answers or merges itself
// (discovery, OpenAPI, version), rather than one it proxies as it is.
func Discovery(path string) bool { return route(path) != routeNone }

// route classifies a request path. For routeGroupVersion and
// routeOpenAPIV3Group the version is the last path segment.
func route(path string) routeKind {
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}
	switch path {
	case "/api":
		return routeLegacy
	case "/api/v1":
		return routeLegacyV1
	case "/apis":
		return routeGroups
	case groupPrefix:
		return routeGroup
	case openAPIV2:
		return routeOpenAPIV2
	case openAPIV3:
		return routeOpenAPIV3
	case "/version":
		return routeVersion
	case authorizationPrefix:
		return routeAuthorizationGroup
	}
	if v, ok := strings.CutPrefix(path, groupPrefix+"/"); ok && v != "" && !strings.Contains(v, "/") {
		return routeGroupVersion
	}
	if v, ok := strings.CutPrefix(path, v3GroupPath); ok && v != "" && !strings.Contains(v, "/") {
		return routeOpenAPIV3Group
	}
	if v, ok := strings.CutPrefix(path, authorizationPrefix+"/"); ok && v != "" && !strings.Contains(v, "/") {
		return routeAuthorizationVersion
	}
	return routeNone
}

// ServeHTTP answers the paths Handles accepts, with GET or HEAD.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind := route(r.URL.Path)
	if kind == routeNone {
		apistatus.Write(w, apistatus.New(http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("the server could not find the requested resource %q", r.URL.Path)))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		apistatus.Write(w, apistatus.New(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, fmt.Sprintf("%s is not supported on %s", r.Method, r.URL.Path)))
		return
	}
	h.once.Do(h.build)
	if h.docs.err != nil && kind != routeVersion && kind != routeGroup && kind != routeGroupVersion && kind != routeLegacyV1 &&
		kind != routeAuthorizationGroup && kind != routeAuthorizationVersion {
		apistatus.Write(w, apistatus.New(http.StatusInternalServerError, metav1.StatusReasonInternalError, "building discovery documents: "+h.docs.err.Error()))
		return
	}
	last := r.URL.Path[strings.LastIndex(strings.TrimSuffix(r.URL.Path, "/"), "/")+1:]
	last = strings.TrimSuffix(last, "/")
	switch kind {
	case routeLegacy:
		h.serveLegacy(w, r)
	case routeLegacyV1:
		writeJSON(w, r, &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "v1",
			APIResources: []metav1.APIResource{},
		})
	case routeGroups:
		h.serveGroups(w, r)
	case routeGroup:
		g := h.apiGroup()
		g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		writeJSON(w, r, &g)
	case routeGroupVersion:
		v, ok := h.served(last)
		if !ok {
			apistatus.Write(w, apistatus.New(http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("version %q of %s is not served", last, config.Group)))
			return
		}
		writeJSON(w, r, resourceList(v))
	case routeOpenAPIV2:
		h.serveOpenAPI(w, r, h.docs.v2, v2ProtobufOld, v2Protobuf)
	case routeOpenAPIV3:
		// The index is JSON whatever the request accepts, with an ETag
		// that If-None-Match is checked against, as kube-apiserver
		// serves it.
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Etag", h.docs.v3Root.etag)
		if r.Header.Get("If-None-Match") == h.docs.v3Root.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		writeBody(w, r, h.docs.v3Root.body)
	case routeOpenAPIV3Group:
		v, ok := h.served(last)
		if !ok {
			apistatus.Write(w, apistatus.New(http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("no OpenAPI document for version %q of %s", last, config.Group)))
			return
		}
		h.serveOpenAPI(w, r, h.docs.v3[v], v3ProtobufOld, v3Protobuf)
	case routeVersion:
		writeJSON(w, r, &h.info)
	case routeAuthorizationGroup:
		g := authorizationAPIGroup()
		g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		writeJSON(w, r, &g)
	case routeAuthorizationVersion:
		if last != authorizationVersion {
			apistatus.Write(w, apistatus.New(http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("version %q of %s is not served", last, authorizationGroup)))
			return
		}
		writeJSON(w, r, authorizationResourceList())
	}
}

func (h *Handler) served(v string) (config.Version, bool) {
	for _, s := range h.versions {
		if string(s) == v {
			return s, true
		}
	}
	return "", false
}

// writeJSON encodes v as the whole response.
func writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		apistatus.Write(w, apistatus.New(http.StatusInternalServerError, metav1.StatusReasonInternalError, "encoding response: "+err.Error()))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	writeBody(w, r, body)
}

// writeBody writes a complete body; HEAD gets the headers only.
func writeBody(w http.ResponseWriter, r *http.Request, body []byte) {
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// storageVersionHash is the discovery hint that changes when the storage
// version of a resource changes: the standard base64 of the first eight
// bytes of the SHA-256 of "group/version/kind" of the storage version.
// Every flowcontrol version is stored as v1.
func storageVersionHash(kind string) string {
	sum := sha256.Sum256([]byte(config.Group + "/" + string(config.V1) + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}
