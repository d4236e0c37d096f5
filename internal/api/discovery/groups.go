package discovery

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/apistatus"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// aggregatedContentType is the media type of an aggregated discovery
// document (apidiscovery.k8s.io/v2 APIGroupDiscoveryList).
const aggregatedContentType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// The verbs kube-apiserver lists for a cluster-scoped resource with the
// full set of REST operations, and for its status subresource.
var (
	resourceVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	statusVerbs   = []string{"get", "patch", "update"}
)

// resource describes one of the two served resources.
type resource struct {
	plural, singular, kind string
}

var resources = []resource{
	{"flowschemas", "flowschema", config.KindFlowSchema},
	{"prioritylevelconfigurations", "prioritylevelconfiguration", config.KindPriorityLevel},
}

// The authorization.k8s.io group as this server lists it: version v1 with
// the two reviews a caller asks about itself (which apf answers from its
// own authorization table), each created and never stored, so with the
// create verb only and no storage version hash. kube-apiserver lists the
// group before flowcontrol.apiserver.k8s.io (its group priority is
// higher), and so does this server.
const (
	authorizationGroup   = "authorization.k8s.io"
	authorizationVersion = "v1"
)

var (
	reviewResources = []resource{
		{"selfsubjectaccessreviews", "selfsubjectaccessreview", "SelfSubjectAccessReview"},
		{"selfsubjectrulesreviews", "selfsubjectrulesreview", "SelfSubjectRulesReview"},
	}
	reviewVerbs = []string{"create"}
)

// serveLegacy answers /api. The server serves no core (legacy group)
// resource, but clients expect /api to exist and to name v1: client-go
// turns its answer into the core group and then asks /api/v1, which here
// lists no resources. That keeps kubectl's discovery complete and
// error-free, while an empty or missing /api would be reported by some
// client versions as a failed group.
func (h *Handler) serveLegacy(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Accept")
	switch negotiateDiscovery(r.Header.Get("Accept")).form {
	case formAggregated:
		h.serveAggregated(w, r, h.docs.aggregatedLegacy)
		return
	case formNone:
		writeNotAcceptable(w)
		return
	}
	host := r.Host
	if host == "" {
		host = "127.0.0.1"
	}
	writeJSON(w, r, &metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: host},
		},
	})
}

// serveGroups answers /apis in the format the client asks for.
func (h *Handler) serveGroups(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Accept")
	switch negotiateDiscovery(r.Header.Get("Accept")).form {
	case formAggregated:
		h.serveAggregated(w, r, h.docs.aggregated)
		return
	case formNone:
		writeNotAcceptable(w)
		return
	}
	writeJSON(w, r, &metav1.APIGroupList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
		Groups:   []metav1.APIGroup{authorizationAPIGroup(), h.apiGroup()},
	})
}

// writeNotAcceptable is kube-apiserver's answer to a discovery request
// whose Accept header admits nothing it can give.
func writeNotAcceptable(w http.ResponseWriter) {
	apistatus.Write(w, apistatus.New(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, notAcceptableMessage))
}

// serveAggregated writes a prebuilt aggregated document, honouring
// If-None-Match against its ETag.
func (h *Handler) serveAggregated(w http.ResponseWriter, r *http.Request, doc taggedDoc) {
	w.Header().Set("Content-Type", aggregatedContentType)
	w.Header().Set("Etag", doc.etag)
	w.Header().Set("Cache-Control", "public")
	if inm := r.Header.Get("If-None-Match"); inm != "" && inm == doc.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeBody(w, r, doc.body)
}

// apiGroup is the flowcontrol group as listed in /apis (without type meta).
func (h *Handler) apiGroup() metav1.APIGroup {
	g := metav1.APIGroup{Name: config.Group}
	for _, v := range h.versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: v.APIVersion(), Version: string(v)})
	}
	g.PreferredVersion = metav1.GroupVersionForDiscovery{GroupVersion: h.preferred.APIVersion(), Version: string(h.preferred)}
	return g
}

// authorizationAPIGroup is authorization.k8s.io as listed in /apis.
func authorizationAPIGroup() metav1.APIGroup {
	gv := metav1.GroupVersionForDiscovery{GroupVersion: authorizationGroup + "/" + authorizationVersion, Version: authorizationVersion}
	return metav1.APIGroup{Name: authorizationGroup, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}
}

// authorizationResourceList is the APIResourceList of
// authorization.k8s.io/v1: the two self reviews, cluster-scoped, create
// only.
func authorizationResourceList() *metav1.APIResourceList {
	l := &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: authorizationGroup + "/" + authorizationVersion,
	}
	for _, res := range reviewResources {
		l.APIResources = append(l.APIResources, metav1.APIResource{
			Name:         res.plural,
			SingularName: res.singular,
			Namespaced:   false,
			Kind:         res.kind,
			Verbs:        reviewVerbs,
		})
	}
	return l
}

// resourceList is the APIResourceList of version v: each resource and its
// status subresource, as kube-apiserver lists them.
func resourceList(v config.Version) *metav1.APIResourceList {
	l := &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: v.APIVersion(),
	}
	for _, res := range resources {
		l.APIResources = append(l.APIResources,
			metav1.APIResource{
				Name:               res.plural,
				SingularName:       res.singular,
				Namespaced:         false,
				Kind:               res.kind,
				Verbs:              resourceVerbs,
				StorageVersionHash: storageVersionHash(res.kind),
			},
			metav1.APIResource{
				Name:         res.plural + "/status",
				SingularName: "",
				Namespaced:   false,
				Kind:         res.kind,
				Verbs:        statusVerbs,
			})
	}
	return l
}

// aggregatedGroups is the aggregated discovery document of /apis:
// authorization.k8s.io, then the flowcontrol group.
func (h *Handler) aggregatedGroups() *apidiscoveryv2.APIGroupDiscoveryList {
	return &apidiscoveryv2.APIGroupDiscoveryList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"},
		Items:    []apidiscoveryv2.APIGroupDiscovery{aggregatedAuthorization(), h.aggregatedFlowcontrol()},
	}
}

// aggregatedAuthorization is authorization.k8s.io in aggregated form.
func aggregatedAuthorization() apidiscoveryv2.APIGroupDiscovery {
	vd := apidiscoveryv2.APIVersionDiscovery{Version: authorizationVersion, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
	for _, res := range reviewResources {
		vd.Resources = append(vd.Resources, apidiscoveryv2.APIResourceDiscovery{
			Resource:         res.plural,
			ResponseKind:     &metav1.GroupVersionKind{Group: authorizationGroup, Version: authorizationVersion, Kind: res.kind},
			Scope:            apidiscoveryv2.ScopeCluster,
			SingularResource: res.singular,
			Verbs:            reviewVerbs,
		})
	}
	return apidiscoveryv2.APIGroupDiscovery{
		ObjectMeta: metav1.ObjectMeta{Name: authorizationGroup},
		Versions:   []apidiscoveryv2.APIVersionDiscovery{vd},
	}
}

// aggregatedFlowcontrol is the flowcontrol group in aggregated form: its
// versions, preferred first, each with its resources and their status
// subresources.
func (h *Handler) aggregatedFlowcontrol() apidiscoveryv2.APIGroupDiscovery {
	group := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: config.Group}}
	for _, v := range h.versions {
		vd := apidiscoveryv2.APIVersionDiscovery{Version: string(v), Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
		for _, res := range resources {
			gvk := &metav1.GroupVersionKind{Group: config.Group, Version: string(v), Kind: res.kind}
			vd.Resources = append(vd.Resources, apidiscoveryv2.APIResourceDiscovery{
				Resource:         res.plural,
				ResponseKind:     gvk,
				Scope:            apidiscoveryv2.ScopeCluster,
				SingularResource: res.singular,
				Verbs:            resourceVerbs,
				Subresources: []apidiscoveryv2.APISubresourceDiscovery{{
					Subresource:  "status",
					ResponseKind: gvk,
					Verbs:        statusVerbs,
				}},
			})
		}
		group.Versions = append(group.Versions, vd)
	}
	return group
}

// aggregatedLegacyGroups is the aggregated answer of /api: the core group
// (empty name) with version v1 and no resources.
func aggregatedLegacyGroups() *apidiscoveryv2.APIGroupDiscoveryList {
	return &apidiscoveryv2.APIGroupDiscoveryList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"},
		Items: []apidiscoveryv2.APIGroupDiscovery{{
			Versions: []apidiscoveryv2.APIVersionDiscovery{{
				Version:   "v1",
				Resources: []apidiscoveryv2.APIResourceDiscovery{},
				Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
			}},
		}},
	}
}

// taggedDoc is an encoded document and its quoted ETag.
type taggedDoc struct {
	body []byte
	etag string
	hash string // unquoted
	// pb is the protobuf form of an OpenAPI document (gnostic's
	// encoding, as kube-openapi serves it), under the same ETag.
	pb []byte
}

// tagBytes tags an encoded document.
func tagBytes(body []byte) taggedDoc {
	hash := fmt.Sprintf("%X", sha512.Sum512(body))
	return taggedDoc{body: body, hash: hash, etag: `"` + hash + `"`}
}

// tag encodes v and computes its hash: the upper-case hex SHA-512 of the
// bytes, the form kube-apiserver uses in ETags and OpenAPI hash
// parameters.
func tag(v any) (taggedDoc, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return taggedDoc{}, err
	}
	return tagBytes(body), nil
}
