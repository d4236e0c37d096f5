package kube

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// The rules of config/validate_flowschema.go, validate_prioritylevel.go
// and validate_mandatory.go, and the object semantics of
// internal/api/registry, each provoked on both servers: the 422 (or 409, 404,
// 400) must be the same, message and causes included.

// fsRule is a FlowSchema spec with one rule (a JSON object).
func fsRule(rule string) string {
	return `{"priorityLevelConfiguration":{"name":"global-default"},"matchingPrecedence":500,"rules":[` + rule + `]}`
}

// subjectRule is a rule with the given subject and a valid non-resource
// rule.
func subjectRule(subject string) string {
	return fsRule(`{"subjects":[` + subject + `],"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/x"]}]}`)
}

// resourceRule is a rule for user alice with the given resource rule.
func resourceRule(r string) string {
	return fsRule(`{"subjects":[{"kind":"User","user":{"name":"alice"}}],"resourceRules":[` + r + `]}`)
}

// urlRule is a rule for user alice with the given non-resource rule.
func urlRule(r string) string {
	return fsRule(`{"subjects":[{"kind":"User","user":{"name":"alice"}}],"nonResourceRules":[` + r + `]}`)
}

// queuing is a Limited level spec with a Queue response of the given
// queuing parameters.
func queuing(q string) string {
	return `{"type":"Limited","limited":{"nominalConcurrencyShares":5,"limitResponse":{"type":"Queue","queuing":` + q + `}}}`
}

func TestValidation(t *testing.T) {
	invalidFS := []struct{ name, spec string }{
		{"negative precedence", `{"priorityLevelConfiguration":{"name":"global-default"},"matchingPrecedence":-1}`},
		{"precedence over 10000", `{"priorityLevelConfiguration":{"name":"global-default"},"matchingPrecedence":10001}`},
		{"precedence 1 not exempt", `{"priorityLevelConfiguration":{"name":"global-default"},"matchingPrecedence":1}`},
		{"unknown distinguisher", `{"priorityLevelConfiguration":{"name":"global-default"},"distinguisherMethod":{"type":"ByGroup"}}`},
		{"empty distinguisher", `{"priorityLevelConfiguration":{"name":"global-default"},"distinguisherMethod":{}}`},
		{"no level", `{"matchingPrecedence":500}`},
		{"invalid level name", `{"priorityLevelConfiguration":{"name":"Not_A_Name"}}`},
		{"rule without subjects", fsRule(`{"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/x"]}]}`)},
		{"rule without rules", fsRule(`{"subjects":[{"kind":"User","user":{"name":"alice"}}]}`)},
		{"empty rule", fsRule(`{}`)},
		{"user kind without user", subjectRule(`{"kind":"User"}`)},
		{"user without name", subjectRule(`{"kind":"User","user":{}}`)},
		{"user kind with group and serviceAccount", subjectRule(`{"kind":"User","user":{"name":"a"},"group":{"name":"g"},"serviceAccount":{"namespace":"n","name":"s"}}`)},
		{"group kind without group", subjectRule(`{"kind":"Group"}`)},
		{"group without name", subjectRule(`{"kind":"Group","group":{}}`)},
		{"group kind with user", subjectRule(`{"kind":"Group","group":{"name":"g"},"user":{"name":"a"}}`)},
		{"serviceAccount kind without serviceAccount", subjectRule(`{"kind":"ServiceAccount"}`)},
		{"serviceAccount without name and namespace", subjectRule(`{"kind":"ServiceAccount","serviceAccount":{}}`)},
		{"serviceAccount invalid name and namespace", subjectRule(`{"kind":"ServiceAccount","serviceAccount":{"namespace":"Bad_NS","name":"Bad_Name"}}`)},
		{"serviceAccount wildcard namespace", subjectRule(`{"kind":"ServiceAccount","serviceAccount":{"namespace":"*","name":"*"}}`)},
		{"serviceAccount kind with user and group", subjectRule(`{"kind":"ServiceAccount","serviceAccount":{"namespace":"n","name":"s"},"user":{"name":"a"},"group":{"name":"g"}}`)},
		{"unknown subject kind", subjectRule(`{"kind":"Robot"}`)},
		{"empty subject kind", subjectRule(`{"user":{"name":"a"}}`)},
		{"resource rule without verbs", resourceRule(`{"apiGroups":["*"],"resources":["*"],"namespaces":["*"]}`)},
		{"resource rule wildcard verb and more", resourceRule(`{"verbs":["*","get"],"apiGroups":["*"],"resources":["*"],"namespaces":["*"]}`)},
		{"resource rule unsupported verbs", resourceRule(`{"verbs":["get","post","put"],"apiGroups":["*"],"resources":["*"],"namespaces":["*"]}`)},
		{"resource rule without apiGroups", resourceRule(`{"verbs":["get"],"resources":["*"],"namespaces":["*"]}`)},
		{"resource rule wildcard apiGroup and more", resourceRule(`{"verbs":["get"],"apiGroups":["*","apps"],"resources":["*"],"namespaces":["*"]}`)},
		{"resource rule without resources", resourceRule(`{"verbs":["get"],"apiGroups":["*"],"namespaces":["*"]}`)},
		{"resource rule wildcard resource and more", resourceRule(`{"verbs":["get"],"apiGroups":["*"],"resources":["pods","*"],"namespaces":["*"]}`)},
		{"resource rule without namespaces, not cluster scope", resourceRule(`{"verbs":["get"],"apiGroups":["*"],"resources":["*"]}`)},
		{"resource rule wildcard namespace and more", resourceRule(`{"verbs":["get"],"apiGroups":["*"],"resources":["*"],"namespaces":["default","*"]}`)},
		{"resource rule invalid namespaces", resourceRule(`{"verbs":["get"],"apiGroups":["*"],"resources":["*"],"namespaces":["ok","Not_OK","a.b"]}`)},
		{"resource rule everything wrong", resourceRule(`{}`)},
		{"non-resource rule without verbs", urlRule(`{"nonResourceURLs":["/x"]}`)},
		{"non-resource rule unsupported verb", urlRule(`{"verbs":["post"],"nonResourceURLs":["/x"]}`)},
		{"non-resource rule without URLs", urlRule(`{"verbs":["get"]}`)},
		{"non-resource rule wildcard URL and more", urlRule(`{"verbs":["get"],"nonResourceURLs":["*","/x"]}`)},
		{"non-resource rule empty URL", urlRule(`{"verbs":["get"],"nonResourceURLs":[""]}`)},
		{"non-resource rule relative URL", urlRule(`{"verbs":["get"],"nonResourceURLs":["healthz"]}`)},
		{"non-resource rule URL with a space", urlRule(`{"verbs":["get"],"nonResourceURLs":["/a b"]}`)},
		{"non-resource rule URL with a double slash", urlRule(`{"verbs":["get"],"nonResourceURLs":["/a//b"]}`)},
		{"non-resource rule inner wildcard", urlRule(`{"verbs":["get"],"nonResourceURLs":["/a/*/b"]}`)},
		{"non-resource rule glob", urlRule(`{"verbs":["get"],"nonResourceURLs":["/metrics*"]}`)},
		{"non-resource rule two wildcards", urlRule(`{"verbs":["get"],"nonResourceURLs":["/*/*"]}`)},
		{"errors in several rules", `{"priorityLevelConfiguration":{"name":""},"matchingPrecedence":20000,"distinguisherMethod":{"type":"X"},"rules":[{},{"subjects":[{"kind":"X"}],"resourceRules":[{}],"nonResourceRules":[{}]}]}`},
	}
	invalidPL := []struct{ name, spec string }{
		{"unknown type", `{"type":"Unlimited"}`},
		{"empty spec", `{}`},
		{"exempt type not named exempt", `{"type":"Exempt"}`},
		{"exempt type with limited", `{"type":"Exempt","limited":{"limitResponse":{"type":"Reject"}}}`},
		{"limited without limited", `{"type":"Limited"}`},
		{"limited with exempt", `{"type":"Limited","exempt":{},"limited":{"limitResponse":{"type":"Reject"}}}`},
		{"negative shares", `{"type":"Limited","limited":{"nominalConcurrencyShares":-1,"limitResponse":{"type":"Reject"}}}`},
		{"lendable over 100", `{"type":"Limited","limited":{"lendablePercent":101,"limitResponse":{"type":"Reject"}}}`},
		{"negative lendable", `{"type":"Limited","limited":{"lendablePercent":-1,"limitResponse":{"type":"Reject"}}}`},
		{"negative borrowing", `{"type":"Limited","limited":{"borrowingLimitPercent":-1,"limitResponse":{"type":"Reject"}}}`},
		{"no limit response type", `{"type":"Limited","limited":{}}`},
		{"unknown limit response", `{"type":"Limited","limited":{"limitResponse":{"type":"Drop"}}}`},
		{"reject with queuing", `{"type":"Limited","limited":{"limitResponse":{"type":"Reject","queuing":{"queues":1,"handSize":1,"queueLengthLimit":1}}}}`},
		{"queue without queuing", `{"type":"Limited","limited":{"limitResponse":{"type":"Queue"}}}`},
		{"negative queue length", queuing(`{"queueLengthLimit":-1}`)},
		{"negative queues", queuing(`{"queues":-1}`)},
		{"too many queues", queuing(`{"queues":10000001}`)},
		{"negative hand", queuing(`{"handSize":-3}`)},
		{"hand larger than queues", queuing(`{"queues":4,"handSize":5}`)},
		{"too much entropy", queuing(`{"queues":10000000,"handSize":10}`)},
		{"everything wrong in queuing", queuing(`{"queues":-1,"handSize":-1,"queueLengthLimit":-1}`)},
		{"exempt fields on a limited level", `{"type":"Limited","exempt":{"nominalConcurrencyShares":-1,"lendablePercent":200},"limited":{"limitResponse":{"type":"Reject"}}}`},
	}
	var creates []step
	for _, c := range invalidFS {
		creates = append(creates, step{"flowschema/" + c.name, create(flowschemas, fsObject("kt-bad", c.spec)), http.StatusUnprocessableEntity})
	}
	for _, c := range invalidPL {
		creates = append(creates, step{"prioritylevel/" + c.name, create(levels, plObject("kt-bad", c.spec)), http.StatusUnprocessableEntity})
	}
	long := "kt-" + strings.Repeat("a", 251)
	creates = append(creates,
		step{"flowschema/invalid name", create(flowschemas, fsObject("KT-Bad_Name", fsMinimalSpec)), http.StatusUnprocessableEntity},
		step{"flowschema/name too long", create(flowschemas, fsObject(long, fsMinimalSpec)), http.StatusUnprocessableEntity},
		step{"flowschema/no name", create(flowschemas, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"labels":{"kube-test":"yes"}},"spec":`+fsMinimalSpec+`}`), http.StatusUnprocessableEntity},
		step{"flowschema/invalid generateName", create(flowschemas, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"generateName":"KT_","labels":{"kube-test":"yes"}},"spec":`+fsMinimalSpec+`}`), http.StatusUnprocessableEntity},
		step{"flowschema/invalid label", create(flowschemas, withMeta(fsObject("kt-bad", fsMinimalSpec), `"annotations":{"no spaces allowed/x":"y"}`)), http.StatusUnprocessableEntity},
		step{"flowschema/namespace set", create(flowschemas, withMeta(fsObject("kt-bad", fsMinimalSpec), `"namespace":"default"`)), 0},
		step{"flowschema/resourceVersion set", create(flowschemas, withMeta(fsObject("kt-bad", fsMinimalSpec), `"resourceVersion":"5"`)), http.StatusInternalServerError},
		step{"prioritylevel/invalid name", create(levels, plObject("Bad.Name.", plRejectSpec)), http.StatusUnprocessableEntity},
		step{"prioritylevel/v1beta3 zero-shares annotation in v1", create(levels, withMeta(plObject("kt-bad", `{"type":"Limited","limited":{"nominalConcurrencyShares":0,"limitResponse":{"type":"Reject"}}}`), `"annotations":{"flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares":""}`)), 0},
	)
	runCases(t, []diffCase{{name: "create", steps: creates, apf: map[string]int{
		// The kube-apiserver's storage refuses a resourceVersion on
		// create with a 500 (TestBadPatches).
		"flowschema/resourceVersion set": http.StatusBadRequest,
	}}})
}

// TestMandatoryObjects tries to change the fixed specs of exempt and
// catch-all. Every write is a dry run, so that a server that wrongly
// accepts one is not left with a changed mandatory object.
func TestMandatoryObjects(t *testing.T) {
	const dry = "?dryRun=All"
	runCases(t, []diffCase{{
		name: "mandatory",
		steps: []step{
			{"flowschema exempt precedence", patch(flowschemas+"/exempt"+dry, mergePatch, `{"spec":{"matchingPrecedence":2}}`), http.StatusUnprocessableEntity},
			{"flowschema exempt distinguisher", patch(flowschemas+"/exempt"+dry, mergePatch, `{"spec":{"distinguisherMethod":{"type":"ByUser"}}}`), http.StatusUnprocessableEntity},
			{"flowschema exempt rules", patch(flowschemas+"/exempt"+dry, jsonPatch, `[{"op":"add","path":"/spec/rules/0/subjects/-","value":{"kind":"User","user":{"name":"eve"}}}]`), http.StatusUnprocessableEntity},
			{"flowschema catch-all level", patch(flowschemas+"/catch-all"+dry, mergePatch, `{"spec":{"priorityLevelConfiguration":{"name":"global-default"}}}`), http.StatusUnprocessableEntity},
			{"flowschema catch-all labels only", patch(flowschemas+"/catch-all"+dry, mergePatch, `{"metadata":{"labels":{"x":"y"}}}`), http.StatusOK},
			{"flowschema exempt annotation off", patch(flowschemas+"/exempt"+dry, mergePatch, `{"metadata":{"annotations":{"apf.kubernetes.io/autoupdate-spec":"false"}}}`), http.StatusOK},
			{"level exempt shares (allowed)", patch(levels+"/exempt"+dry, mergePatch, `{"spec":{"exempt":{"nominalConcurrencyShares":5,"lendablePercent":10}}}`), http.StatusOK},
			{"level exempt without exempt section", patch(levels+"/exempt"+dry, mergePatch, `{"spec":{"exempt":null}}`), 0},
			{"level exempt negative shares", patch(levels+"/exempt"+dry, mergePatch, `{"spec":{"exempt":{"nominalConcurrencyShares":-1}}}`), http.StatusUnprocessableEntity},
			{"level exempt lendable over 100", patch(levels+"/exempt"+dry, mergePatch, `{"spec":{"exempt":{"lendablePercent":101}}}`), http.StatusUnprocessableEntity},
			{"level exempt made limited", patch(levels+"/exempt"+dry, mergePatch, `{"spec":{"type":"Limited","exempt":null,"limited":{"limitResponse":{"type":"Reject"}}}}`), http.StatusUnprocessableEntity},
			{"level catch-all shares", patch(levels+"/catch-all"+dry, mergePatch, `{"spec":{"limited":{"nominalConcurrencyShares":6}}}`), http.StatusUnprocessableEntity},
			{"level catch-all queuing", patch(levels+"/catch-all"+dry, mergePatch, `{"spec":{"limited":{"limitResponse":{"type":"Queue","queuing":{"queues":8,"handSize":2,"queueLengthLimit":10}}}}}`), http.StatusUnprocessableEntity},
			// The fixed spec is checked before existence.
			{"create flowschema exempt", create(flowschemas+dry, fsObject("exempt", fsMinimalSpec)), http.StatusUnprocessableEntity},
			{"create level catch-all", create(levels+dry, plObject("catch-all", plRejectSpec)), http.StatusConflict},
			{"delete flowschema exempt", del(flowschemas + "/exempt" + dry), http.StatusOK},
			{"delete level catch-all", del(levels + "/catch-all" + dry), http.StatusOK},
		},
	}})
}

func TestRequestErrors(t *testing.T) {
	fs := flowschemas + "/kt-fs"
	runCases(t, []diffCase{{
		name: "errors",
		setup: []request{
			create(levels, plObject("kt-level", plQueueSpec)),
			create(flowschemas, fsObject("kt-fs", fsMinimalSpec)),
		},
		steps: []step{
			{"create existing", create(flowschemas, fsObject("kt-fs", fsMinimalSpec)), http.StatusConflict},
			{"create existing level", create(levels, plObject("kt-level", plRejectSpec)), http.StatusConflict},
			{"update with a stale resourceVersion", put(fs, withMeta(fsObject("kt-fs", fsFullSpec), `"resourceVersion":"1"`)), http.StatusConflict},
			{"update with an unparsable resourceVersion", put(fs, withMeta(fsObject("kt-fs", fsFullSpec), `"resourceVersion":"abc"`)), http.StatusInternalServerError},
			{"update with another uid", put(fs, withMeta(fsObject("kt-fs", fsFullSpec), `"uid":"00000000-0000-0000-0000-000000000000"`)), 0},
			{"update whose name differs from the path", put(fs, fsObject("kt-other", fsFullSpec)), http.StatusBadRequest},
			{"update without a name", put(fs, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{},"spec":`+fsMinimalSpec+`}`), 0},
			{"get missing", get(flowschemas + "/kt-missing"), http.StatusNotFound},
			{"get missing level", get(levels + "/kt-missing"), http.StatusNotFound},
			{"update missing", put(flowschemas+"/kt-missing", fsObject("kt-missing", fsMinimalSpec)), http.StatusNotFound},
			{"patch missing", patch(flowschemas+"/kt-missing", mergePatch, `{"spec":{"matchingPrecedence":3}}`), http.StatusNotFound},
			{"delete missing", del(flowschemas + "/kt-missing"), http.StatusNotFound},
			{"status of missing", get(flowschemas + "/kt-missing/status"), http.StatusNotFound},
			{"create of another kind", create(flowschemas, plObject("kt-x", plRejectSpec)), http.StatusBadRequest},
			{"create in another version", create(flowschemas, strings.Replace(fsObject("kt-x", fsMinimalSpec), "/v1\"", "/v1beta3\"", 1)), http.StatusBadRequest},
			{"create without apiVersion and kind", create(flowschemas, `{"metadata":{"name":"kt-x","labels":{"kube-test":"yes"}},"spec":`+fsMinimalSpec+`}`), 0},
			{"create of malformed JSON", create(flowschemas, `{"metadata":`), http.StatusBadRequest},
			{"create of a JSON array", create(flowschemas, `[1,2]`), http.StatusBadRequest},
			{"create with a wrongly typed field", create(flowschemas, fsObject("kt-x", `{"priorityLevelConfiguration":{"name":"kt-level"},"matchingPrecedence":"high"}`)), http.StatusBadRequest},
			{"create of YAML", request{method: http.MethodPost, path: flowschemas, contentType: "application/yaml", body: "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: kt-yaml\n  labels: {kube-test: \"yes\"}\nspec:\n  priorityLevelConfiguration: {name: kt-level}\n"}, http.StatusCreated},
			{"create as text/plain", request{method: http.MethodPost, path: flowschemas, contentType: "text/plain", body: "x"}, http.StatusUnsupportedMediaType},
			{"patch of an unsupported type", request{method: http.MethodPatch, path: fs, contentType: "text/plain", body: "x"}, http.StatusUnsupportedMediaType},
			{"malformed merge patch", patch(fs, mergePatch, `{"spec":`), http.StatusBadRequest},
			{"malformed json patch", patch(fs, jsonPatch, `{"op":"replace"}`), 0},
			{"strategic merge patch of a wrong type", patch(fs, strategicPatch, `{"spec":{"matchingPrecedence":"x"}}`), 0},
			{"merge patch of null", patch(fs, mergePatch, `null`), 0},
			{"strategic merge patch with a misplaced directive", patch(fs, strategicPatch, `{"spec":{"rules":[{"$patch":"replace"}]}}`), 0},
			{"json patch over the operation limit", patch(fs, jsonPatch, "["+strings.Repeat(`{"op":"test","path":"/kind","value":"FlowSchema"},`, 10000)+`{"op":"test","path":"/kind","value":"FlowSchema"}]`), http.StatusRequestEntityTooLarge},
			{"json patch with a failing operation", patch(fs, jsonPatch, `[{"op":"remove","path":"/spec/nothing"}]`), http.StatusUnprocessableEntity},
			{"create of an unknown kind", create(flowschemas, strings.Replace(fsObject("kt-x", fsMinimalSpec), `"kind":"FlowSchema"`, `"kind":"Widget"`, 1)), http.StatusBadRequest},
			{"create of a list", create(flowschemas, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchemaList","items":[]}`), http.StatusBadRequest},
			{"create of malformed YAML", request{method: http.MethodPost, path: flowschemas, contentType: "application/yaml", body: "a: ["}, http.StatusBadRequest},
			{"create of an empty body", create(flowschemas, ""), http.StatusBadRequest},
			{"create of a FlowSchema of 10,000 rules", create(flowschemas, fsObject("kt-huge", hugeSpec(10000))), http.StatusCreated},
			{"server-side apply with an unknown field", patch(flowschemas+"/kt-applied?fieldManager=kube-test", applyPatch, "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: kt-applied\nspec:\n  bogus: 1\n"), http.StatusInternalServerError},
			{"server-side apply of malformed YAML", patch(flowschemas+"/kt-applied?fieldManager=kube-test", applyPatch, "a: ["), http.StatusBadRequest},
			{"deletecollection (dry run) of the test objects", del(flowschemas + "?dryRun=All&labelSelector=kube-test%3Dyes"), http.StatusOK},
			{"post to a name", create(fs, fsObject("kt-fs", fsMinimalSpec)), http.StatusMethodNotAllowed},
			{"put to the collection", put(flowschemas, fsObject("kt-fs", fsMinimalSpec)), http.StatusMethodNotAllowed},
			{"delete the status", del(fs + "/status"), http.StatusMethodNotAllowed},
			{"post to the status", create(fs+"/status", fsObject("kt-fs", fsMinimalSpec)), http.StatusMethodNotAllowed},
			{"unknown subresource", get(fs + "/scale"), http.StatusNotFound},
			{"unknown resource", get("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemata"), http.StatusNotFound},
			{"version not served (v1beta3)", get("/apis/flowcontrol.apiserver.k8s.io/v1beta3/flowschemas"), http.StatusNotFound},
			{"version not served (v1alpha1)", get("/apis/flowcontrol.apiserver.k8s.io/v1alpha1/prioritylevelconfigurations"), http.StatusNotFound},
			{"deletecollection (dry run, nothing selected)", del(flowschemas + "?dryRun=All&labelSelector=kube-test%3Dnothing"), http.StatusOK},
			{"server-side apply", patch(flowschemas+"/kt-applied?fieldManager=kube-test", applyPatch, "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: kt-applied\n  labels: {kube-test: \"yes\"}\nspec:\n  priorityLevelConfiguration: {name: kt-level}\n  matchingPrecedence: 300\n"), http.StatusCreated},
			{"server-side apply again", patch(flowschemas+"/kt-applied?fieldManager=kube-test", applyPatch, "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: kt-applied\n  labels: {kube-test: \"yes\"}\nspec:\n  priorityLevelConfiguration: {name: kt-level}\n  matchingPrecedence: 301\n"), http.StatusOK},
			{"server-side apply without fieldManager", patch(flowschemas+"/kt-applied", applyPatch, "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: kt-applied\n"), http.StatusUnprocessableEntity},
			{"server-side apply conflict", patch(flowschemas+"/kt-fs?fieldManager=other", applyPatch, "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: kt-fs\nspec:\n  priorityLevelConfiguration: {name: global-default}\n"), http.StatusConflict},
			{"create as bob", request{method: http.MethodPost, path: flowschemas, body: fsObject("kt-bob", fsMinimalSpec), token: readerToken}, http.StatusForbidden},
			{"delete as bob", request{method: http.MethodDelete, path: fs, token: readerToken}, http.StatusForbidden},
			{"patch status as bob", request{method: http.MethodPatch, path: fs + "/status", contentType: mergePatch, body: `{}`, token: readerToken}, http.StatusForbidden},
			{"list anonymously", request{method: http.MethodGet, path: flowschemas, token: "-"}, http.StatusForbidden},
			{"get with a bad token", request{method: http.MethodGet, path: fs, token: "no-such-token"}, http.StatusUnauthorized},
		},
		// The kube-apiserver's 500s for bad input (TestBadPatches).
		apf: map[string]int{
			"update with an unparsable resourceVersion": http.StatusUnprocessableEntity,
			"server-side apply with an unknown field":   http.StatusBadRequest,
		},
	}})
}

// hugeSpec is a FlowSchema spec of n rules, each for its own user and
// namespace: 10,000 of them make a body of about 1.7 MB, over etcd's
// 1.5 MiB request limit and under the API's 3 MiB body limit.
func hugeSpec(n int) string {
	rules := make([]string, n)
	for i := range rules {
		rules[i] = fmt.Sprintf(`{"subjects":[{"kind":"User","user":{"name":"user-%d"}}],"resourceRules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"],"namespaces":["ns-%d"]}]}`, i, i)
	}
	return `{"priorityLevelConfiguration":{"name":"global-default"},"matchingPrecedence":5000,"rules":[` + strings.Join(rules, ",") + `]}`
}
