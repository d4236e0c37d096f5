package kube

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// continueToken encodes a list continue parameter as the API server
// does: unpadded base64url of the JSON given.
func continueToken(json string) string {
	return url.QueryEscape(base64.RawURLEncoding.EncodeToString([]byte(json)))
}

func TestQueryOptions(t *testing.T) {
	fs := flowschemas + "/kt-fs"
	longManager := strings.Repeat("m", 129)
	unknownField := fsObject("kt-strict", `{"priorityLevelConfiguration":{"name":"kt-level"},"bogus":1}`)
	duplicateField := `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"kt-dup","labels":{"kube-test":"yes"}},"spec":{"matchingPrecedence":10,"matchingPrecedence":20,"priorityLevelConfiguration":{"name":"kt-level"}}}`
	runCases(t, []diffCase{{
		name: "options",
		setup: []request{
			create(levels, plObject("kt-level", plQueueSpec)),
			create(flowschemas, fsObject("kt-fs", fsMinimalSpec)),
		},
		steps: []step{
			// Write options.
			{"create with a fieldManager over 128 characters", create(flowschemas+"?fieldManager="+longManager, fsObject("kt-x", fsMinimalSpec)), http.StatusUnprocessableEntity},
			{"update with a fieldManager over 128 characters", put(fs+"?fieldManager="+longManager, fsObject("kt-fs", fsMinimalSpec)), http.StatusUnprocessableEntity},
			{"patch with a fieldManager over 128 characters", patch(fs+"?fieldManager="+longManager, mergePatch, `{}`), http.StatusUnprocessableEntity},
			{"create with an unprintable fieldManager", create(flowschemas+"?fieldManager=a%01b", fsObject("kt-x", fsMinimalSpec)), http.StatusUnprocessableEntity},
			{"create with fieldManager of 128 characters", create(flowschemas+"?fieldManager="+longManager[:128], fsObject("kt-manager", fsMinimalSpec)), http.StatusCreated},
			{"create with dryRun other than All", create(flowschemas+"?dryRun=Everything", fsObject("kt-x", fsMinimalSpec)), http.StatusUnprocessableEntity},
			{"update with dryRun other than All", put(fs+"?dryRun=Some", fsObject("kt-fs", fsMinimalSpec)), http.StatusUnprocessableEntity},
			{"delete with dryRun other than All", del(fs + "?dryRun=x"), http.StatusUnprocessableEntity},
			{"patch with force (not apply)", patch(fs+"?force=true", mergePatch, `{}`), http.StatusUnprocessableEntity},
			{"patch with a malformed force", patch(fs+"?force=maybe", mergePatch, `{}`), 0},
			{"delete with an unknown propagationPolicy", del(flowschemas + "/kt-missing?propagationPolicy=Sideways"), http.StatusUnprocessableEntity},
			{"delete with orphanDependents and propagationPolicy", del(flowschemas + "/kt-missing?orphanDependents=true&propagationPolicy=Foreground"), http.StatusUnprocessableEntity},
			{"delete with a negative grace period", del(fs + "?gracePeriodSeconds=-1&dryRun=All"), 0},
			// Field validation.
			{"Strict with an unknown field", create(flowschemas+"?fieldValidation=Strict", unknownField), http.StatusBadRequest},
			{"Strict with a duplicate field", create(flowschemas+"?fieldValidation=Strict", duplicateField), http.StatusBadRequest},
			{"Strict patch with an unknown field", patch(fs+"?fieldValidation=Strict", mergePatch, `{"spec":{"bogus":1}}`), http.StatusUnprocessableEntity},
			{"Strict strategic patch with an unknown field", patch(fs+"?fieldValidation=Strict", strategicPatch, `{"spec":{"bogus":1}}`), http.StatusUnprocessableEntity},
			{"Strict json patch adding an unknown field", patch(fs+"?fieldValidation=Strict", jsonPatch, `[{"op":"add","path":"/spec/bogus","value":1}]`), http.StatusUnprocessableEntity},
			{"Strict update with an unknown field", put(fs+"?fieldValidation=Strict", fsObject("kt-fs", `{"priorityLevelConfiguration":{"name":"kt-level"},"bogus":1}`)), http.StatusBadRequest},
			{"unknown fieldValidation", create(flowschemas+"?fieldValidation=Loose", fsObject("kt-x", fsMinimalSpec)), 0},
			{"Warn with an unknown field (default)", create(flowschemas, unknownField), http.StatusCreated},
			{"Warn with a duplicate field", create(flowschemas+"?fieldValidation=Warn", duplicateField), http.StatusCreated},
			{"Warn patch with an unknown field", patch(fs, mergePatch, `{"spec":{"bogus":1},"extra":2}`), http.StatusOK},
			{"Ignore with an unknown field", create(flowschemas+"?fieldValidation=Ignore", strings.Replace(unknownField, "kt-strict", "kt-ignored", 1)), http.StatusCreated},
			// List options.
			{"continue not base64", get(flowschemas + "?continue=%25%25%25"), http.StatusBadRequest},
			{"continue not JSON", get(flowschemas + "?continue=" + continueToken("not json")), http.StatusBadRequest},
			{"continue a JSON string", get(flowschemas + "?continue=" + continueToken(`"x"`)), http.StatusBadRequest},
			{"continue of another version", get(flowschemas + "?continue=" + continueToken(`{"v":"meta.k8s.io/v2","rv":5,"start":"a"}`)), http.StatusBadRequest},
			{"continue without revision", get(flowschemas + "?continue=" + continueToken(`{"v":"meta.k8s.io/v1","start":"a"}`)), http.StatusBadRequest},
			{"continue without start", get(flowschemas + "?continue=" + continueToken(`{"v":"meta.k8s.io/v1","rv":5}`)), http.StatusBadRequest},
			{"continue climbing out", get(flowschemas + "?continue=" + continueToken(`{"v":"meta.k8s.io/v1","rv":5,"start":"../secrets/x"}`)), http.StatusBadRequest},
			{"continue with resourceVersion", get(flowschemas + "?resourceVersion=5&continue=" + continueToken(`{"v":"meta.k8s.io/v1","rv":5,"start":"kt-"}`)), http.StatusBadRequest},
			{"continue with resourceVersionMatch", get(flowschemas + "?resourceVersionMatch=NotOlderThan&continue=" + continueToken(`{"v":"meta.k8s.io/v1","rv":5,"start":"kt-"}`)), http.StatusUnprocessableEntity},
			{"continue from revision 1", get(flowschemas + "?labelSelector=kube-test%3Dyes&continue=" + continueToken(`{"v":"meta.k8s.io/v1","rv":1,"start":"kt-\u0000"}`)), 0},
			{"resourceVersionMatch=Exact without resourceVersion", get(flowschemas + "?resourceVersionMatch=Exact"), http.StatusUnprocessableEntity},
			{"resourceVersionMatch=NotOlderThan without resourceVersion", get(levels + "?resourceVersionMatch=NotOlderThan"), http.StatusUnprocessableEntity},
			{"unknown resourceVersionMatch", get(flowschemas + "?resourceVersionMatch=Newest&resourceVersion=1"), http.StatusUnprocessableEntity},
			{"unparsable resourceVersion", get(flowschemas + "?resourceVersion=abc"), 0},
			{"resourceVersion ahead of the store", get(flowschemas + "?resourceVersion=999999999&resourceVersionMatch=NotOlderThan"), http.StatusGatewayTimeout},
			{"limit not a number", get(flowschemas + "?limit=ten"), http.StatusBadRequest},
			{"timeoutSeconds not a number", get(flowschemas + "?timeoutSeconds=soon"), http.StatusBadRequest},
			{"malformed label selector", get(flowschemas + "?labelSelector=a+in+%28"), http.StatusBadRequest},
			{"unsupported field selector", get(flowschemas + "?fieldSelector=spec.matchingPrecedence%3D1"), http.StatusBadRequest},
			{"namespace field selector", get(flowschemas + "?fieldSelector=metadata.namespace%3Ddefault&labelSelector=kube-test%3Dyes"), http.StatusOK},
			{"sendInitialEvents on a list", get(flowschemas + "?sendInitialEvents=true"), http.StatusUnprocessableEntity},
			{"watch with sendInitialEvents and no resourceVersionMatch", get(flowschemas + "?watch=1&sendInitialEvents=true"), http.StatusUnprocessableEntity},
			{"get with a field selector for another name", get(fs + "?fieldSelector=metadata.name%3Dother"), 0},
			{"get with a resourceVersion", get(fs + "?resourceVersion=0"), http.StatusOK},
		},
	}})
}
