package discovery

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/apfproject/apf/config"
	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"github.com/munnerz/goautoneg"
	"google.golang.org/protobuf/proto"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta1 "k8s.io/api/flowcontrol/v1beta1"
	flowcontrolv1beta2 "k8s.io/api/flowcontrol/v1beta2"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The media types of the OpenAPI documents' protobuf forms, for version
// 2 and version 3: clients ask for either spelling (the one with "@" is the
// older), and get the one with ".".
const (
	v2ProtobufOld = "com.github.proto-openapi.spec.v2@v1.0+protobuf"
	v2Protobuf    = "com.github.proto-openapi.spec.v2.v1.0+protobuf"
	v3ProtobufOld = "com.github.proto-openapi.spec.v3@v1.0+protobuf"
	v3Protobuf    = "com.github.proto-openapi.spec.v3.v1.0+protobuf"
)

// documents holds every encoded document, built once.
type documents struct {
	err              error
	aggregated       taggedDoc
	aggregatedLegacy taggedDoc
	// aggregatedFlowcontrol is the flowcontrol group's entry of the
	// aggregated document, as the gateway puts it into an upstream's.
	aggregatedFlowcontrol []byte
	v2                    taggedDoc
	v3Root                taggedDoc
	v3                    map[config.Version]taggedDoc
	// v3Paths are the flowcontrol group's entries of the OpenAPI 3
	// index, as the gateway puts them into an upstream's index.
	v3Paths map[string]v3Path
}

// versionTypes are the Go types of version v's objects and lists. v1alpha1
// has no Go types of its own any more; its schema is v1beta1's.
func versionTypes(v config.Version) map[string]reflect.Type {
	var objs []any
	switch v {
	case config.V1:
		objs = []any{flowcontrolv1.FlowSchema{}, flowcontrolv1.FlowSchemaList{}, flowcontrolv1.PriorityLevelConfiguration{}, flowcontrolv1.PriorityLevelConfigurationList{}}
	case config.V1Beta3:
		objs = []any{flowcontrolv1beta3.FlowSchema{}, flowcontrolv1beta3.FlowSchemaList{}, flowcontrolv1beta3.PriorityLevelConfiguration{}, flowcontrolv1beta3.PriorityLevelConfigurationList{}}
	case config.V1Beta2:
		objs = []any{flowcontrolv1beta2.FlowSchema{}, flowcontrolv1beta2.FlowSchemaList{}, flowcontrolv1beta2.PriorityLevelConfiguration{}, flowcontrolv1beta2.PriorityLevelConfigurationList{}}
	case config.V1Beta1, config.V1Alpha1:
		objs = []any{flowcontrolv1beta1.FlowSchema{}, flowcontrolv1beta1.FlowSchemaList{}, flowcontrolv1beta1.PriorityLevelConfiguration{}, flowcontrolv1beta1.PriorityLevelConfigurationList{}}
	}
	kinds := []string{config.KindFlowSchema, config.KindFlowSchemaList, config.KindPriorityLevel, config.KindPriorityLevelList}
	out := map[string]reflect.Type{}
	for i, o := range objs {
		out[kinds[i]] = reflect.TypeOf(o)
	}
	return out
}

// addVersion adds the definitions of version v to d and returns the
// definition names by kind, including the meta types the paths use.
func addVersion(d *definitions, v config.Version) map[string]string {
	if v == config.V1Alpha1 {
		// Served under its own name, so that a document listing both
		// v1alpha1 and v1beta1 keeps one kind per definition.
		d.rename = func(name string) string {
			return strings.Replace(name, ".flowcontrol.v1beta1.", ".flowcontrol.v1alpha1.", 1)
		}
		defer func() { d.rename = nil }()
	}
	names := map[string]string{}
	for kind, t := range versionTypes(v) {
		names[kind] = d.addKind(t, config.Group, string(v), kind)
	}
	if !v.HasExemptSection() {
		// v1beta1's Go types gained spec.exempt after v1alpha1 was last
		// served; v1alpha1 never had it.
		spec := d.ref(reflect.TypeOf(flowcontrolv1beta1.PriorityLevelConfigurationSpec{}))
		if props, ok := d.defs[spec]["properties"].(schema); ok {
			delete(props, "exempt")
		}
		delete(d.defs, d.ref(reflect.TypeOf(flowcontrolv1beta1.ExemptPriorityLevelConfiguration{})))
	}
	names["DeleteOptions"] = d.addKind(reflect.TypeOf(metav1.DeleteOptions{}), config.Group, string(v), "DeleteOptions")
	names["WatchEvent"] = d.addKind(reflect.TypeOf(metav1.WatchEvent{}), config.Group, string(v), "WatchEvent")
	names["Status"] = d.addKind(reflect.TypeOf(metav1.Status{}), "", "v1", "Status")
	names["Patch"] = d.ref(reflect.TypeOf(metav1.Patch{}))
	names["APIResourceList"] = d.ref(reflect.TypeOf(metav1.APIResourceList{}))
	return names
}

// build encodes every document. It runs once per Handler; a failure (which
// would be a bug: the inputs are fixed Go types) is kept and reported by
// every request that needs the document.
func (h *Handler) build() {
	docs := &documents{v3: map[config.Version]taggedDoc{}}
	h.docs = docs
	var err error
	if docs.aggregated, err = tag(h.aggregatedGroups()); err != nil {
		docs.err = err
		return
	}
	fc := h.aggregatedFlowcontrol()
	if docs.aggregatedFlowcontrol, err = json.Marshal(&fc); err != nil {
		docs.err = err
		return
	}
	if docs.aggregatedLegacy, err = tag(aggregatedLegacyGroups()); err != nil {
		docs.err = err
		return
	}
	if docs.v2, err = tag(h.openAPIV2()); err != nil {
		docs.err = err
		return
	}
	if docs.v2.pb, err = v2ProtoBinary(docs.v2.body); err != nil {
		docs.err = err
		return
	}
	docs.v3Paths = map[string]v3Path{}
	for _, v := range h.versions {
		doc, err := tag(h.openAPIV3(v))
		if err == nil {
			doc.pb, err = v3ProtoBinary(doc.body)
		}
		if err != nil {
			docs.err = err
			return
		}
		docs.v3[v] = doc
		docs.v3Paths["apis/"+config.Group+"/"+string(v)] = v3Path{ServerRelativeURL: v3GroupPath + string(v) + "?hash=" + doc.hash}
	}
	if docs.v3Root, err = tag(v3Index{Paths: docs.v3Paths}); err != nil {
		docs.err = err
	}
}

// v3Index is the OpenAPI 3 index (/openapi/v3): one entry per group
// version, keyed "apis/<group>/<version>" ("api/v1" for the core group).
type v3Index struct {
	Paths map[string]v3Path `json:"paths"`
}

// v3Path is one entry of the index: where the document is, with its hash.
type v3Path struct {
	ServerRelativeURL string `json:"serverRelativeURL"`
}

// info is the OpenAPI info object.
func (h *Handler) openAPIInfo() schema {
	return schema{"title": "Kubernetes", "version": strings.SplitN(h.info.GitVersion, "-", 2)[0]}
}

var bearerToken = schema{"BearerToken": schema{
	"type": "apiKey", "name": "authorization", "in": "header",
	"description": "Bearer token authentication",
}}

// openAPIV2 is the Swagger 2.0 document of every served version.
func (h *Handler) openAPIV2() schema {
	d := newDefinitions("#/definitions/")
	paths := schema{}
	for _, v := range h.versions {
		names := addVersion(d, v)
		for _, item := range groupVersionPaths(v, names) {
			p := schema{}
			if len(item.params) > 0 {
				p["parameters"] = v2Params(item.params)
			}
			for _, op := range item.ops {
				p[op.method] = v2Operation(d, v, op)
			}
			paths[item.path] = p
		}
	}
	return schema{
		"swagger":             "2.0",
		"info":                h.openAPIInfo(),
		"paths":               paths,
		"definitions":         d.defs,
		"securityDefinitions": bearerToken,
		"security":            []schema{{"BearerToken": []string{}}},
	}
}

func v2Params(ps []param) []schema {
	out := make([]schema, 0, len(ps))
	for _, p := range ps {
		s := schema{"name": p.name, "in": p.in, "type": p.typ, "description": p.doc, "uniqueItems": true}
		if p.required {
			s["required"] = true
		}
		out = append(out, s)
	}
	return out
}

func v2Operation(d *definitions, v config.Version, op operation) schema {
	s := schema{
		"description": op.doc,
		"operationId": op.id,
		"tags":        []string{tagOf(v)},
		"schemes":     []string{"https"},
		"produces":    op.produces,
		"consumes":    anyMediaType,
	}
	params := v2Params(op.params)
	if op.body != "" {
		params = append(params, schema{"name": "body", "in": "body", "required": true, "schema": d.refSchema(op.body)})
		s["consumes"] = op.bodyTypes
	}
	if len(params) > 0 {
		s["parameters"] = params
	}
	responses := schema{"401": schema{"description": "Unauthorized"}}
	for code, def := range op.responses {
		responses[code] = schema{"description": http.StatusText(atoi(code)), "schema": d.refSchema(def)}
	}
	s["responses"] = responses
	operationExtensions(s, v, op)
	return s
}

func operationExtensions(s schema, v config.Version, op operation) {
	if op.action != "" {
		s["x-kubernetes-action"] = op.action
	}
	if op.kind != "" {
		s["x-kubernetes-group-version-kind"] = gvk{config.Group, string(v), op.kind}
	}
}

// openAPIV3 is the OpenAPI 3.0 document of version v.
func (h *Handler) openAPIV3(v config.Version) schema {
	d := newDefinitions("#/components/schemas/")
	names := addVersion(d, v)
	paths := schema{}
	for _, item := range groupVersionPaths(v, names) {
		p := schema{}
		if len(item.params) > 0 {
			p["parameters"] = v3Params(item.params)
		}
		for _, op := range item.ops {
			p[op.method] = v3Operation(d, v, op)
		}
		paths[item.path] = p
	}
	return schema{
		"openapi": "3.0.0",
		"info":    h.openAPIInfo(),
		"paths":   paths,
		"components": schema{
			"schemas":         d.defs,
			"securitySchemes": bearerToken,
		},
		"security": []schema{{"BearerToken": []string{}}},
	}
}

func v3Params(ps []param) []schema {
	out := make([]schema, 0, len(ps))
	for _, p := range ps {
		s := schema{"name": p.name, "in": p.in, "description": p.doc, "schema": schema{"type": p.typ, "uniqueItems": true}}
		if p.required {
			s["required"] = true
		}
		out = append(out, s)
	}
	return out
}

func v3Operation(d *definitions, v config.Version, op operation) schema {
	s := schema{
		"description": op.doc,
		"operationId": op.id,
		"tags":        []string{tagOf(v)},
	}
	if len(op.params) > 0 {
		s["parameters"] = v3Params(op.params)
	}
	if op.body != "" {
		content := schema{}
		for _, mt := range op.bodyTypes {
			content[mt] = schema{"schema": d.refSchema(op.body)}
		}
		s["requestBody"] = schema{"content": content, "required": true}
	}
	responses := schema{"401": schema{"description": "Unauthorized"}}
	for code, def := range op.responses {
		content := schema{}
		for _, mt := range op.produces {
			content[mt] = schema{"schema": d.refSchema(def)}
		}
		responses[code] = schema{"description": http.StatusText(atoi(code)), "content": content}
	}
	s["responses"] = responses
	operationExtensions(s, v, op)
	return s
}

func atoi(code string) int {
	n := 0
	_, _ = fmt.Sscan(code, &n)
	return n
}

// v2ProtoBinary and v3ProtoBinary encode an OpenAPI document, given as
// JSON, in its protobuf form.
func v2ProtoBinary(doc []byte) ([]byte, error) {
	d, err := openapi_v2.ParseDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("OpenAPI v2 protobuf: %w", err)
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(d)
}

func v3ProtoBinary(doc []byte) ([]byte, error) {
	d, err := openapi_v3.ParseDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("OpenAPI v3 protobuf: %w", err)
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(d)
}

// serveOpenAPI writes an OpenAPI document, as JSON or in its protobuf form
// (old and new are the two spellings of the protobuf media type) as the
// Accept header asks: its clauses from the most to the least preferred
// (equal ones in the order given), JSON first where one clause admits
// both. Nothing acceptable is a bare 406, as
// kube-apiserver answers. It follows kube-apiserver's caching contract:
// the ETag is the quoted hash of the JSON form, for either form; a request
// whose hash parameter names the current document may be cached for a
// year; one naming an old document is redirected to the current one;
// If-None-Match with the current ETag gets 304.
func (h *Handler) serveOpenAPI(w http.ResponseWriter, r *http.Request, doc taggedDoc, old, pb string) {
	w.Header().Add("Vary", "Accept")
	body, contentType := negotiateOpenAPI(r.Header.Get("Accept"), doc, old, pb)
	if body == nil {
		w.WriteHeader(http.StatusNotAcceptable)
		return
	}
	if hash := r.URL.Query().Get("hash"); hash != "" && strings.HasPrefix(r.URL.Path, openAPIV3) {
		if hash != doc.hash {
			u := *r.URL
			q := u.Query()
			q.Set("hash", doc.hash)
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.String(), http.StatusMovedPermanently)
			return
		}
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
	}
	w.Header().Set("Etag", doc.etag)
	w.Header().Set("Content-Type", contentType)
	if inm := r.Header.Get("If-None-Match"); inm != "" && inm == doc.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeBody(w, r, body)
}

// negotiateOpenAPI picks the form of doc an Accept header asks for, and
// its content type; nil if it accepts none. An absent header accepts
// anything; a clause with q=0 refuses its type.
func negotiateOpenAPI(accept string, doc taggedDoc, old, pb string) ([]byte, string) {
	if strings.TrimSpace(accept) == "" {
		accept = "*/*"
	}
	for _, c := range goautoneg.ParseAccept(accept) {
		if c.Q == 0 || (c.Type != "application" && c.Type != "*") {
			continue
		}
		switch c.SubType {
		case "json", "*":
			return doc.body, "application/json"
		case old, pb:
			return doc.pb, "application/" + pb
		}
	}
	return nil, ""
}
