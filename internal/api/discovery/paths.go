package discovery

import (
	"strings"

	"github.com/apfproject/apf/config"
)

// param is one request parameter of an operation.
type param struct {
	name, in, typ string
	required      bool
	doc           string
}

// The parameters of the REST operations, by name. The names and types are
// the Kubernetes API's; kubectl looks for some of them (fieldValidation on
// PATCH, above all) to decide what the server supports.
var params = map[string]param{
	"name":                 {name: "name", in: "path", typ: "string", required: true, doc: "name of the object"},
	"pretty":               {name: "pretty", in: "query", typ: "string", doc: "'true' indents the output"},
	"allowWatchBookmarks":  {name: "allowWatchBookmarks", in: "query", typ: "boolean", doc: "asks for BOOKMARK events in a watch"},
	"continue":             {name: "continue", in: "query", typ: "string", doc: "the token from the previous page of a paginated list"},
	"fieldSelector":        {name: "fieldSelector", in: "query", typ: "string", doc: "restricts the objects by their fields"},
	"labelSelector":        {name: "labelSelector", in: "query", typ: "string", doc: "restricts the objects by their labels"},
	"limit":                {name: "limit", in: "query", typ: "integer", doc: "the maximum number of objects in one page of a list"},
	"resourceVersion":      {name: "resourceVersion", in: "query", typ: "string", doc: "the resource version the list or watch starts from"},
	"resourceVersionMatch": {name: "resourceVersionMatch", in: "query", typ: "string", doc: "how resourceVersion is applied to a list: Exact or NotOlderThan"},
	"sendInitialEvents":    {name: "sendInitialEvents", in: "query", typ: "boolean", doc: "starts a watch with the current state as synthetic ADDED events"},
	"timeoutSeconds":       {name: "timeoutSeconds", in: "query", typ: "integer", doc: "the duration limit of a list or watch call"},
	"watch":                {name: "watch", in: "query", typ: "boolean", doc: "turns a list into a watch of changes"},
	"dryRun":               {name: "dryRun", in: "query", typ: "string", doc: "'All' runs every stage of the request but persists nothing"},
	"fieldManager":         {name: "fieldManager", in: "query", typ: "string", doc: "the name of the actor making the change, for field ownership"},
	"fieldValidation":      {name: "fieldValidation", in: "query", typ: "string", doc: "what to do with unknown or duplicate fields in the body: Ignore, Warn or Strict"},
	"force":                {name: "force", in: "query", typ: "boolean", doc: "takes ownership of conflicting fields in an apply patch"},
	"gracePeriodSeconds":   {name: "gracePeriodSeconds", in: "query", typ: "integer", doc: "the delay before deletion, in seconds"},
	"ignoreStoreReadErrorWithClusterBreakingPotential": {name: "ignoreStoreReadErrorWithClusterBreakingPotential", in: "query", typ: "boolean", doc: "deletes an object that cannot be decoded from storage"},
	"orphanDependents":  {name: "orphanDependents", in: "query", typ: "boolean", doc: "deprecated: use propagationPolicy"},
	"propagationPolicy": {name: "propagationPolicy", in: "query", typ: "string", doc: "how dependents are garbage collected: Orphan, Background or Foreground"},
}

func paramList(names ...string) []param {
	out := make([]param, len(names))
	for i, n := range names {
		out[i] = params[n]
	}
	return out
}

var (
	listParams = []string{"allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
		"resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch"}
	writeParams            = []string{"dryRun", "fieldManager", "fieldValidation"}
	patchParams            = []string{"dryRun", "fieldManager", "fieldValidation", "force"}
	deleteParams           = []string{"dryRun", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential", "orphanDependents", "propagationPolicy"}
	deleteCollectionParams = []string{"continue", "dryRun", "fieldSelector", "gracePeriodSeconds",
		"ignoreStoreReadErrorWithClusterBreakingPotential", "labelSelector", "limit", "orphanDependents",
		"propagationPolicy", "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds"}
)

// The media types of request and response bodies.
var (
	patchTypes   = []string{"application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json"}
	objectTypes  = []string{"application/json", "application/yaml"}
	watchTypes   = []string{"application/json;stream=watch"}
	anyMediaType = []string{"*/*"}
)

// operation is one REST operation, independent of the OpenAPI version.
type operation struct {
	method    string // get, put, post, patch, delete
	id        string
	doc       string
	action    string // x-kubernetes-action
	kind      string // x-kubernetes-group-version-kind kind; "" for none
	params    []param
	body      string   // definition name of the request body; "" for none
	bodyTypes []string // its media types
	// responses maps status codes to definition names.
	responses map[string]string
	produces  []string
}

// pathItem is the operations on one path plus the parameters they share.
type pathItem struct {
	path   string
	params []param
	ops    []operation
}

// groupVersionPaths lists the REST paths of version v with the definition
// names in names: the resources list, each resource's collection, object,
// status and watch paths.
func groupVersionPaths(v config.Version, names map[string]string) []pathItem {
	base := "/apis/" + config.Group + "/" + string(v) + "/"
	// operationId pieces in the upstream style: flowcontrolApiserverV1Beta3.
	gv := "FlowcontrolApiserver" + upperVersion(v)
	items := []pathItem{{
		path: base,
		ops: []operation{{
			method: "get", id: "get" + gv + "APIResources", doc: "available resources",
			responses: map[string]string{"200": names["APIResourceList"]}, produces: objectTypes,
		}},
	}}
	for _, res := range resources {
		k := res.kind
		obj, list := names[k], names[k+"List"]
		items = append(items,
			pathItem{path: base + res.plural, params: paramList("pretty"), ops: []operation{
				{method: "get", id: "list" + gv + k, doc: "list or watch objects of kind " + k, action: "list", kind: k,
					params: paramList(listParams...), responses: map[string]string{"200": list}, produces: append(objectTypes, watchTypes...)},
				{method: "post", id: "create" + gv + k, doc: "create a " + k, action: "post", kind: k,
					params: paramList(writeParams...), body: obj, bodyTypes: anyMediaType,
					responses: map[string]string{"200": obj, "201": obj, "202": obj}, produces: objectTypes},
				{method: "delete", id: "delete" + gv + "Collection" + k, doc: "delete a collection of " + k, action: "deletecollection", kind: k,
					params: paramList(deleteCollectionParams...), body: names["DeleteOptions"], bodyTypes: anyMediaType,
					responses: map[string]string{"200": names["Status"]}, produces: objectTypes},
			}},
			pathItem{path: base + res.plural + "/{name}", params: paramList("name", "pretty"), ops: []operation{
				{method: "get", id: "read" + gv + k, doc: "read the specified " + k, action: "get", kind: k,
					responses: map[string]string{"200": obj}, produces: objectTypes},
				{method: "put", id: "replace" + gv + k, doc: "replace the specified " + k, action: "put", kind: k,
					params: paramList(writeParams...), body: obj, bodyTypes: anyMediaType,
					responses: map[string]string{"200": obj, "201": obj}, produces: objectTypes},
				{method: "patch", id: "patch" + gv + k, doc: "partially update the specified " + k, action: "patch", kind: k,
					params: paramList(patchParams...), body: names["Patch"], bodyTypes: patchTypes,
					responses: map[string]string{"200": obj, "201": obj}, produces: objectTypes},
				{method: "delete", id: "delete" + gv + k, doc: "delete a " + k, action: "delete", kind: k,
					params: paramList(deleteParams...), body: names["DeleteOptions"], bodyTypes: anyMediaType,
					responses: map[string]string{"200": names["Status"], "202": names["Status"]}, produces: objectTypes},
			}},
			pathItem{path: base + res.plural + "/{name}/status", params: paramList("name", "pretty"), ops: []operation{
				{method: "get", id: "read" + gv + k + "Status", doc: "read status of the specified " + k, action: "get", kind: k,
					responses: map[string]string{"200": obj}, produces: objectTypes},
				{method: "put", id: "replace" + gv + k + "Status", doc: "replace status of the specified " + k, action: "put", kind: k,
					params: paramList(writeParams...), body: obj, bodyTypes: anyMediaType,
					responses: map[string]string{"200": obj, "201": obj}, produces: objectTypes},
				{method: "patch", id: "patch" + gv + k + "Status", doc: "partially update status of the specified " + k, action: "patch", kind: k,
					params: paramList(patchParams...), body: names["Patch"], bodyTypes: patchTypes,
					responses: map[string]string{"200": obj, "201": obj}, produces: objectTypes},
			}},
			pathItem{path: base + "watch/" + res.plural, params: paramList(append(listParams, "pretty")...), ops: []operation{
				{method: "get", id: "watch" + gv + k + "List", doc: "deprecated: watch changes to a list of " + k + "; use the watch parameter of the list operation", action: "watchlist", kind: k,
					responses: map[string]string{"200": names["WatchEvent"]}, produces: append(objectTypes, watchTypes...)},
			}},
			pathItem{path: base + "watch/" + res.plural + "/{name}", params: paramList(append(append([]string{"name"}, listParams...), "pretty")...), ops: []operation{
				{method: "get", id: "watch" + gv + k, doc: "deprecated: watch changes to a " + k + "; use the watch parameter of the list operation with a field selector", action: "watch", kind: k,
					responses: map[string]string{"200": names["WatchEvent"]}, produces: append(objectTypes, watchTypes...)},
			}},
		)
	}
	return items
}

// upperVersion renders a version for operation ids: v1beta3 → V1beta3.
func upperVersion(v config.Version) string {
	s := string(v)
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// tagOf is the OpenAPI tag of version v's operations.
func tagOf(v config.Version) string { return "flowcontrolApiserver_" + string(v) }
