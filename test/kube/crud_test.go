package kube

import (
	"fmt"
	"net/http"
	"testing"
)

// Objects in bodies: every test object is labelled kube-test=yes.

func fsObject(name, spec string) string {
	return fmt.Sprintf(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":%q,"labels":{"kube-test":"yes"}},"spec":%s}`, name, spec)
}

func plObject(name, spec string) string {
	return fmt.Sprintf(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":%q,"labels":{"kube-test":"yes"}},"spec":%s}`, name, spec)
}

// withMeta is obj's JSON with extra metadata members (a JSON fragment
// without braces) added after the name.
func withMeta(obj, extra string) string {
	const at = `"metadata":{`
	for i := 0; i+len(at) <= len(obj); i++ {
		if obj[i:i+len(at)] == at {
			return obj[:i+len(at)] + extra + "," + obj[i+len(at):]
		}
	}
	panic("no metadata in " + obj)
}

// Specs used by several cases.
const (
	plQueueSpec   = `{"type":"Limited","limited":{"nominalConcurrencyShares":10,"lendablePercent":20,"borrowingLimitPercent":50,"limitResponse":{"type":"Queue","queuing":{"queues":64,"handSize":6,"queueLengthLimit":50}}}}`
	plRejectSpec  = `{"type":"Limited","limited":{"nominalConcurrencyShares":5,"limitResponse":{"type":"Reject"}}}`
	fsFullSpec    = `{"priorityLevelConfiguration":{"name":"kt-level"},"matchingPrecedence":500,"distinguisherMethod":{"type":"ByUser"},"rules":[{"subjects":[{"kind":"User","user":{"name":"alice"}},{"kind":"Group","group":{"name":"devs"}},{"kind":"ServiceAccount","serviceAccount":{"namespace":"kube-system","name":"builder"}}],"resourceRules":[{"verbs":["get","list","watch"],"apiGroups":["","apps"],"resources":["pods","deployments"],"clusterScope":true,"namespaces":["*"]}],"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/healthz","/metrics/*"]}]}]}`
	fsMinimalSpec = `{"priorityLevelConfiguration":{"name":"kt-level"}}`
)

func create(base, obj string) request { return request{method: http.MethodPost, path: base, body: obj} }

func get(path string) request { return request{method: http.MethodGet, path: path} }

func TestCreateShapes(t *testing.T) {
	level := create(levels, plObject("kt-level", plQueueSpec))
	fsShapes := []struct{ name, obj string }{
		{"full", fsObject("kt-fs-full", fsFullSpec)},
		{"minimal (precedence defaulted, no rules)", fsObject("kt-fs-minimal", fsMinimalSpec)},
		{"by namespace", fsObject("kt-fs-ns", `{"priorityLevelConfiguration":{"name":"kt-level"},"matchingPrecedence":9000,"distinguisherMethod":{"type":"ByNamespace"},"rules":[{"subjects":[{"kind":"Group","group":{"name":"system:authenticated"}}],"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"namespaces":["default","kube-system"]}]}]}`)},
		{"service account wildcard, cluster scope without namespaces", fsObject("kt-fs-sa", `{"priorityLevelConfiguration":{"name":"kt-level"},"matchingPrecedence":10000,"rules":[{"subjects":[{"kind":"ServiceAccount","serviceAccount":{"namespace":"ci","name":"*"}}],"resourceRules":[{"verbs":["create","delete","deletecollection","patch","update","proxy"],"apiGroups":["batch"],"resources":["jobs","cronjobs/status"],"clusterScope":true}]}]}`)},
		{"dangling (no such level)", fsObject("kt-fs-dangling", `{"priorityLevelConfiguration":{"name":"kt-missing"},"matchingPrecedence":2}`)},
		{"nonResource wildcards", fsObject("kt-fs-urls", `{"priorityLevelConfiguration":{"name":"kt-level"},"rules":[{"subjects":[{"kind":"User","user":{"name":"*"}}],"nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}]},{"subjects":[{"kind":"Group","group":{"name":"system:unauthenticated"}}],"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/","/version","/apis/*"]}]}]}`)},
		{"generateName", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"generateName":"kt-gen-","labels":{"kube-test":"yes"}},"spec":` + fsMinimalSpec + `}`},
		{"annotations and labels", withMeta(fsObject("kt-fs-meta", fsMinimalSpec), `"annotations":{"example.com/owner":"team-a","apf.kubernetes.io/autoupdate-spec":"false"}`)},
		{"status sent is dropped", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"kt-fs-status","labels":{"kube-test":"yes"}},"spec":` + fsMinimalSpec + `,"status":{"conditions":[{"type":"Dangling","status":"True","reason":"Mine","message":"set by the client"}]}}`},
		{"server-owned metadata sent is replaced", withMeta(fsObject("kt-fs-owned", fsMinimalSpec), `"uid":"11111111-2222-3333-4444-555555555555","generation":7,"creationTimestamp":"2001-01-01T00:00:00Z"`)},
	}
	plShapes := []struct{ name, obj string }{
		{"queue with lending and borrowing", plObject("kt-pl-queue", plQueueSpec)},
		{"reject", plObject("kt-pl-reject", plRejectSpec)},
		{"queuing defaulted", plObject("kt-pl-qdefaults", `{"type":"Limited","limited":{"limitResponse":{"type":"Queue","queuing":{}}}}`)},
		{"shares defaulted", plObject("kt-pl-minimal", `{"type":"Limited","limited":{"limitResponse":{"type":"Reject"}}}`)},
		{"zero shares", plObject("kt-pl-zero", `{"type":"Limited","limited":{"nominalConcurrencyShares":0,"limitResponse":{"type":"Reject"}}}`)},
		{"borrowing above 100", plObject("kt-pl-borrow", `{"type":"Limited","limited":{"nominalConcurrencyShares":3,"lendablePercent":100,"borrowingLimitPercent":300,"limitResponse":{"type":"Queue","queuing":{"queues":1,"handSize":1,"queueLengthLimit":1}}}}`)},
		{"large deck", plObject("kt-pl-deck", `{"type":"Limited","limited":{"limitResponse":{"type":"Queue","queuing":{"queues":10000000,"handSize":2,"queueLengthLimit":1000}}}}`)},
	}
	var cases []diffCase
	for _, sh := range fsShapes {
		cases = append(cases, diffCase{
			name:  "flowschema/" + sh.name,
			setup: []request{level},
			steps: []step{
				{"create", create(flowschemas, sh.obj), http.StatusCreated},
				{"list by label", get(flowschemas + "?labelSelector=kube-test%3Dyes"), http.StatusOK},
			},
		})
	}
	for _, sh := range plShapes {
		cases = append(cases, diffCase{
			name: "prioritylevel/" + sh.name,
			steps: []step{
				{"create", create(levels, sh.obj), http.StatusCreated},
				{"list by label", get(levels + "?labelSelector=kube-test%3Dyes"), http.StatusOK},
			},
		})
	}
	// Reading a created object back, by name, as a Table and in a list.
	cases = append(cases, diffCase{
		name:  "read back",
		setup: []request{level, create(flowschemas, fsObject("kt-fs-full", fsFullSpec))},
		steps: []step{
			{"get flowschema", get(flowschemas + "/kt-fs-full"), http.StatusOK},
			{"get level", get(levels + "/kt-level"), http.StatusOK},
			{"get flowschema status", get(flowschemas + "/kt-fs-full/status"), http.StatusOK},
			{"get level status", get(levels + "/kt-level/status"), http.StatusOK},
			{"get as Table", request{method: http.MethodGet, path: flowschemas + "/kt-fs-full", accept: tableAccept}, http.StatusOK},
			{"list as Table", request{method: http.MethodGet, path: levels + "?labelSelector=kube-test%3Dyes", accept: tableAccept}, http.StatusOK},
			{"list by field selector", get(flowschemas + "?fieldSelector=metadata.name%3Dkt-fs-full"), http.StatusOK},
			{"get as bob", request{method: http.MethodGet, path: flowschemas + "/kt-fs-full", token: readerToken}, http.StatusOK},
			{"list as bob", request{method: http.MethodGet, path: levels + "?labelSelector=kube-test%3Dyes", token: readerToken}, http.StatusOK},
		},
	})
	runCases(t, cases)
}

// tableAccept is what kubectl get asks for.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

const (
	jsonPatch      = "application/json-patch+json"
	mergePatch     = "application/merge-patch+json"
	strategicPatch = "application/strategic-merge-patch+json"
	applyPatch     = "application/apply-patch+yaml"
)

func patch(path, contentType, body string) request {
	return request{method: http.MethodPatch, path: path, contentType: contentType, body: body}
}

func put(path, body string) request { return request{method: http.MethodPut, path: path, body: body} }

func del(path string) request { return request{method: http.MethodDelete, path: path} }

func TestFlowSchemaLifecycle(t *testing.T) {
	fs := flowschemas + "/kt-fs"
	fullWith := func(extraMeta, spec string) string {
		return withMeta(fsObject("kt-fs", spec), extraMeta)
	}
	const (
		spec600   = `{"priorityLevelConfiguration":{"name":"kt-level"},"matchingPrecedence":600,"distinguisherMethod":{"type":"ByUser"},"rules":[{"subjects":[{"kind":"User","user":{"name":"alice"}}],"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/healthz"]}]}]}`
		specByNS  = `{"priorityLevelConfiguration":{"name":"kt-level"},"matchingPrecedence":600,"distinguisherMethod":{"type":"ByNamespace"},"rules":[{"subjects":[{"kind":"User","user":{"name":"alice"}}],"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/healthz"]}]}]}`
		condition = `{"type":"Example","status":"True","lastTransitionTime":"2024-01-02T03:04:05Z","reason":"Testing","message":"written by the test"}`
	)
	runCases(t, []diffCase{{
		name: "flowschema",
		setup: []request{
			create(levels, plObject("kt-level", plQueueSpec)),
			create(levels, plObject("kt-other", plRejectSpec)),
			create(flowschemas, fsObject("kt-fs", fsFullSpec)),
		},
		steps: []step{
			{"update with resourceVersion", put(fs, fullWith(`"resourceVersion":"$RV(flowschemas/kt-fs)"`, spec600)), http.StatusOK},
			{"update without resourceVersion", put(fs, fsObject("kt-fs", specByNS)), http.StatusOK},
			{"update that changes nothing", put(fs, fsObject("kt-fs", specByNS)), http.StatusOK},
			{"update of labels only (generation kept)", put(fs, withMeta(fsObject("kt-fs", specByNS), `"annotations":{"note":"x"}`)), http.StatusOK},
			{"dry-run update", put(fs+"?dryRun=All", fsObject("kt-fs", spec600)), http.StatusOK},
			{"get after dry-run update", get(fs), http.StatusOK},
			{"json patch", patch(fs, jsonPatch, `[{"op":"replace","path":"/spec/matchingPrecedence","value":700},{"op":"add","path":"/metadata/labels/extra","value":"1"}]`), http.StatusOK},
			{"json patch with a failing test", patch(fs, jsonPatch, `[{"op":"test","path":"/spec/matchingPrecedence","value":1}]`), http.StatusUnprocessableEntity},
			{"json patch of a missing path", patch(fs, jsonPatch, `[{"op":"replace","path":"/spec/nothing/here","value":1}]`), http.StatusUnprocessableEntity},
			{"merge patch", patch(fs, mergePatch, `{"spec":{"distinguisherMethod":null,"priorityLevelConfiguration":{"name":"kt-other"}}}`), http.StatusOK},
			{"merge patch with resourceVersion", patch(fs, mergePatch, `{"metadata":{"resourceVersion":"$RV(flowschemas/kt-fs)"},"spec":{"matchingPrecedence":800}}`), http.StatusOK},
			{"merge patch with stale resourceVersion", patch(fs, mergePatch, `{"metadata":{"resourceVersion":"1"},"spec":{"matchingPrecedence":801}}`), http.StatusConflict},
			{"strategic merge patch", patch(fs, strategicPatch, `{"spec":{"rules":[{"subjects":[{"kind":"Group","group":{"name":"ops"}}],"resourceRules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"],"namespaces":["*"]}]}]}}`), http.StatusOK},
			{"strategic merge patch that deletes a label", patch(fs, strategicPatch, `{"metadata":{"labels":{"extra":null}}}`), http.StatusOK},
			{"dry-run patch", patch(fs+"?dryRun=All", mergePatch, `{"spec":{"matchingPrecedence":42}}`), http.StatusOK},
			{"patch into an invalid object", patch(fs, mergePatch, `{"spec":{"matchingPrecedence":-5}}`), http.StatusUnprocessableEntity},
			{"status update", put(fs+"/status", statusBody("kt-fs", "FlowSchema", condition)), http.StatusOK},
			{"status update ignores spec", put(fs+"/status", fsObject("kt-fs", spec600)), http.StatusOK},
			{"status merge patch", patch(fs+"/status", mergePatch, `{"status":{"conditions":[`+condition+`,{"type":"Second","status":"False"}]}}`), http.StatusOK},
			{"status json patch", patch(fs+"/status", jsonPatch, `[{"op":"remove","path":"/status/conditions/1"}]`), http.StatusOK},
			{"status with duplicate types", patch(fs+"/status", mergePatch, `{"status":{"conditions":[{"type":"Same","status":"True"},{"type":"Same","status":"False"}]}}`), http.StatusUnprocessableEntity},
			{"status with an empty type", patch(fs+"/status", mergePatch, `{"status":{"conditions":[{"type":"","status":"True"}]}}`), http.StatusUnprocessableEntity},
			{"patch of spec through status", patch(fs+"/status", mergePatch, `{"spec":{"matchingPrecedence":999}}`), http.StatusOK},
			{"get", get(fs), http.StatusOK},
			{"dry-run delete", del(fs + "?dryRun=All"), http.StatusOK},
			{"delete with a wrong uid", request{method: http.MethodDelete, path: fs, body: `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"00000000-0000-0000-0000-000000000000"}}`}, http.StatusConflict},
			{"delete with a stale resourceVersion", request{method: http.MethodDelete, path: fs, body: `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"resourceVersion":"1"}}`}, http.StatusConflict},
			{"delete with matching preconditions", request{method: http.MethodDelete, path: fs, body: `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"$UID(flowschemas/kt-fs)","resourceVersion":"$RV(flowschemas/kt-fs)"}}`}, http.StatusOK},
			{"get after delete", get(fs), http.StatusNotFound},
			{"delete again", del(fs), http.StatusNotFound},
		},
	}, {
		name:  "create dry-run",
		setup: []request{create(levels, plObject("kt-level", plQueueSpec))},
		steps: []step{
			{"create", create(flowschemas+"?dryRun=All", fsObject("kt-fs", fsFullSpec)), http.StatusCreated},
			{"get", get(fs), http.StatusNotFound},
			{"create level", create(levels+"?dryRun=All", plObject("kt-pl", plRejectSpec)), http.StatusCreated},
			{"get level", get(levels + "/kt-pl"), http.StatusNotFound},
		},
	}, {
		name: "level deleted under a flowschema",
		setup: []request{
			create(levels, plObject("kt-level", plQueueSpec)),
			create(flowschemas, fsObject("kt-fs", fsMinimalSpec)),
		},
		steps: []step{
			{"delete the level", del(levels + "/kt-level"), http.StatusOK},
			{"flowschema dangles", get(fs), http.StatusOK},
			{"level back", create(levels, plObject("kt-level", plRejectSpec)), http.StatusCreated},
			{"flowschema found", get(fs), http.StatusOK},
		},
	}})
}

// statusBody is an object of kind named name with only a status holding
// the conditions (JSON objects, comma-separated).
func statusBody(name, kind, conditions string) string {
	return fmt.Sprintf(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":%q,"metadata":{"name":%q,"resourceVersion":"$RV(%s/%s)"},"status":{"conditions":[%s]}}`,
		kind, name, map[string]string{"FlowSchema": "flowschemas", "PriorityLevelConfiguration": "prioritylevelconfigurations"}[kind], name, conditions)
}

func TestPriorityLevelLifecycle(t *testing.T) {
	pl := levels + "/kt-pl"
	runCases(t, []diffCase{{
		name:  "prioritylevel",
		setup: []request{create(levels, plObject("kt-pl", plQueueSpec))},
		steps: []step{
			{"get", get(pl), http.StatusOK},
			{"update with resourceVersion", put(pl, withMeta(plObject("kt-pl", plRejectSpec), `"resourceVersion":"$RV(prioritylevelconfigurations/kt-pl)"`)), http.StatusOK},
			{"update with a stale resourceVersion", put(pl, withMeta(plObject("kt-pl", plQueueSpec), `"resourceVersion":"1"`)), http.StatusConflict},
			{"update without resourceVersion", put(pl, plObject("kt-pl", plQueueSpec)), http.StatusOK},
			{"json patch", patch(pl, jsonPatch, `[{"op":"replace","path":"/spec/limited/limitResponse/queuing/handSize","value":8}]`), http.StatusOK},
			{"merge patch", patch(pl, mergePatch, `{"spec":{"limited":{"lendablePercent":null,"borrowingLimitPercent":200}}}`), http.StatusOK},
			{"merge patch to Reject leaving queuing", patch(pl, mergePatch, `{"spec":{"limited":{"limitResponse":{"type":"Reject"}}}}`), http.StatusUnprocessableEntity},
			{"merge patch to Reject", patch(pl, mergePatch, `{"spec":{"limited":{"limitResponse":{"type":"Reject","queuing":null}}}}`), http.StatusOK},
			{"strategic merge patch", patch(pl, strategicPatch, `{"spec":{"limited":{"nominalConcurrencyShares":0,"limitResponse":{"type":"Queue","queuing":{"queues":128}}}}}`), http.StatusOK},
			{"dry-run patch", patch(pl+"?dryRun=All", strategicPatch, `{"spec":{"limited":{"nominalConcurrencyShares":99}}}`), http.StatusOK},
			{"status update", put(pl+"/status", statusBody("kt-pl", "PriorityLevelConfiguration", `{"type":"Example","status":"True","reason":"Testing","message":"m"}`)), http.StatusOK},
			{"status merge patch", patch(pl+"/status", mergePatch, `{"status":{"conditions":null}}`), http.StatusOK},
			{"status with duplicate types", patch(pl+"/status", mergePatch, `{"status":{"conditions":[{"type":"Same","status":"True"},{"type":"Same","status":"False"}]}}`), http.StatusUnprocessableEntity},
			{"get", get(pl), http.StatusOK},
			{"delete", del(pl), http.StatusOK},
			{"get after delete", get(pl), http.StatusNotFound},
		},
	}})
}
