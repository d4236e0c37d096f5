package flowapi

import (
	"context"
	"encoding/json"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/registry"
	"github.com/apfproject/apf/internal/api/store"
)

// fuzzPatchTypes are the patch media types a PATCH is fuzzed with: the
// three the group accepts, then server-side apply and a type no server
// knows, which must both be refused with 415.
var fuzzPatchTypes = []string{mediaJSONPatch, mediaMerge, mediaSMP, mediaApply, "text/plain"}

const fuzzPL = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration",
 "metadata":{"name":"p"},
 "spec":{"type":"Limited","limited":{"nominalConcurrencyShares":5,"limitResponse":{"type":"Queue","queuing":{"queues":16,"handSize":4,"queueLengthLimit":50}}}}}`

// fuzzHandler returns a handler over a fresh memory store holding one
// FlowSchema "a" and one PriorityLevelConfiguration "p".
func fuzzHandler(t *testing.T) (http.Handler, func()) {
	mem := store.NewMemory()
	h := New(registry.New(mem, registry.Options{}), Options{Versions: config.Versions})
	for _, seed := range []struct{ path, body string }{
		{fsPath, fsJSON("a", "x", 100)},
		{plPath, fuzzPL},
	} {
		body := seed.body
		req := httptest.NewRequest("POST", seed.path, strings.NewReader(body))
		req.Header.Set("Content-Type", mediaJSON)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			_ = mem.Close()
			t.Fatalf("seeding %s: %d %s", seed.path, rec.Code, rec.Body)
		}
	}
	return h, func() { _ = mem.Close() }
}

// checkStatusBody requires an error answer to be a meta/v1 Status whose
// code matches the HTTP status.
func checkStatusBody(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	var st struct {
		Kind string `json:"kind"`
		Code int    `json:"code"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Kind != "Status" || st.Code != rec.Code {
		t.Fatalf("status %d answered without a matching Status (%v): %s", rec.Code, err, rec.Body)
	}
}

// FuzzPatch sends arbitrary patches of every patch type to a stored
// FlowSchema or PriorityLevelConfiguration, in any served version and
// field validation mode. Whatever the patch, the answer is the patched
// (or, by an apply, created) object or a Status with a client-error code:
// never a panic, and never a server error, not even where kube-apiserver
// passes a library's or its storage's error on as a 500 (test/kube
// TestBadPatches).
func FuzzPatch(f *testing.F) {
	f.Add([]byte(`[{"op":"replace","path":"/spec/matchingPrecedence","value":200}]`), uint8(0))
	f.Add([]byte(`[{"op":"remove","path":"/spec/rules"}]`), uint8(0))
	f.Add([]byte(`[{"op":"add","path":"/metadata/labels/k","value":"v"},{"op":"test","path":"/kind","value":"FlowSchema"}]`), uint8(40))
	f.Add([]byte(`[{"op":"move","from":"/spec","path":"/status"}]`), uint8(0))
	f.Add([]byte(`[{"op":"copy","from":"/metadata/name","path":"/metadata/generateName"}]`), uint8(8))
	f.Add([]byte(`{"spec":{"matchingPrecedence":7}}`), uint8(1))
	f.Add([]byte(`{"spec":{"limited":{"nominalConcurrencyShares":null}}}`), uint8(9))
	f.Add([]byte(`{"metadata":{"name":"other"}}`), uint8(1))
	f.Add([]byte(`{"metadata":{"resourceVersion":"1"}}`), uint8(2))
	f.Add([]byte(`{"spec":{"rules":[{"$patch":"replace"}]}}`), uint8(2))
	f.Add([]byte(`{"spec":{"bogus":1}}`), uint8(2+32))
	f.Add([]byte(`{"$setElementOrder/rules":[]}`), uint8(2))
	f.Add([]byte(`{"kind":"PriorityLevelConfiguration"}`), uint8(1))
	f.Add([]byte(`{"apiVersion":"v1"}`), uint8(2+64))
	f.Add([]byte("apiVersion: x\n"), uint8(3))
	f.Add([]byte(`null`), uint8(1))
	f.Add([]byte(`[{"op":"test","path":""}]`), uint8(0))
	bomb := make([]string, 40)
	for i := range bomb {
		bomb[i] = `{"op":"copy","from":"/spec","path":"/spec/x` + strconv.Itoa(i) + `"}`
	}
	f.Add([]byte("["+strings.Join(bomb, ",")+"]"), uint8(0))
	f.Add([]byte(`[]`), uint8(2))
	f.Add([]byte("apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: a}\nspec: {matchingPrecedence: 9}\n"), uint8(3))
	f.Add([]byte(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1beta2","kind":"PriorityLevelConfiguration","metadata":{"name":"p"},"spec":{"limited":{"assuredConcurrencyShares":3}}}`), uint8(3+8+32))
	f.Add([]byte(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"a"},"status":{"conditions":[{"type":"x"},{"type":"x"}]}}`), uint8(3+128))
	// Malformed directives and metadata, each answered as kube-apiserver
	// answers it, or with a client error where it answers a 500 (test/kube
	// TestBadPatches).
	f.Add([]byte(`{"spec":{"$setElementOrder/rules":1}}`), uint8(2))
	f.Add([]byte(`{"spec":{"$setElementOrder/rules":[1,2]}}`), uint8(2))
	f.Add([]byte(`{"spec":{"rules":[{"$setElementOrder/subjects":[{}]}]}}`), uint8(2))
	f.Add([]byte(`{"spec":{"$deleteFromPrimitiveList/rules":[{}]}}`), uint8(2))
	f.Add([]byte(`{"spec":{"$deleteFromPrimitiveList/rules":["x"]}}`), uint8(2))
	f.Add([]byte(`{"metadata":{"$deleteFromPrimitiveList/managedFields":[1]}}`), uint8(2))
	f.Add([]byte(`{"spec":{"$retainKeys":[1]}}`), uint8(2+8))
	f.Add([]byte(`{"metadata":{"resourceVersion":"not-a-number"}}`), uint8(1))
	f.Add([]byte(`{"metadata":{"resourceVersion":"9223372036854775808"}}`), uint8(1))
	f.Add([]byte(`{"kind":"Foo"}`), uint8(1+8))
	f.Add([]byte(`{"apiVersion":"a/b/c"}`), uint8(1))
	f.Add([]byte(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1beta2","spec":{"limited":{"assuredConcurrencyShares":7}}}`), uint8(1+8))
	f.Add([]byte(`[{"op":"replace","path":"/kind","value":"PriorityLevelConfiguration"}]`), uint8(0))
	f.Add([]byte(`{"metadata":{"uid":"x","generateName":"Bad_","creationTimestamp":"x"}}`), uint8(1))
	f.Add([]byte(`{"spec":{"$setElementOrder/bogus":[1]}}`), uint8(2))
	f.Add([]byte(`{"metadata":{"uid":"x","resourceVersion":"-1","deletionTimestamp":"2020-01-01T00:00:00Z","deletionGracePeriodSeconds":3}}`), uint8(2))
	f.Add([]byte("apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: a, resourceVersion: x}\nspec: {bogus: 1}\n"), uint8(3))
	f.Add([]byte("apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: a, uid: x}\nspec: {matchingPrecedence: x}\n"), uint8(3+128))
	f.Fuzz(func(t *testing.T, patch []byte, sel uint8) {
		h, done := fuzzHandler(t)
		defer done()
		mt := fuzzPatchTypes[int(sel&7)%len(fuzzPatchTypes)]
		res, name := "flowschemas", "a"
		if sel&8 != 0 {
			res, name = "prioritylevelconfigurations", "p"
		}
		// Versions cycle on a different stride than the types, so that
		// every pair is reached.
		v := config.Versions[int(sel>>4)%len(config.Versions)]
		mode := []string{"", "Strict", "Warn", "Ignore"}[(sel>>5)&3]
		q := "?fieldValidation=" + mode
		if mt == mediaApply {
			q += "&fieldManager=fuzz"
			if sel&128 != 0 {
				q += "&force=true"
			}
		}
		req := httptest.NewRequest("PATCH", base+string(v)+"/"+res+"/"+name+q, strings.NewReader(string(patch)))
		req.Header.Set("Content-Type", mt)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusCreated:
			var obj map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &obj); err != nil {
				t.Fatalf("200 with a body that is not JSON: %v\n%s", err, rec.Body)
			}
			if obj["kind"] == "Status" {
				t.Fatalf("200 with a Status: %s", rec.Body)
			}
			if mt == mediaMerge {
				// A merge patch that names another kind, or a version
				// the server does not know, does not apply.
				var head map[string]any
				_ = json.Unmarshal(patch, &head)
				kind, _ := head["kind"].(string)
				apiVersion, _ := head["apiVersion"].(string)
				if v, err := config.ParseAPIVersion(apiVersion); (kind != "" && kind != obj["kind"]) || (apiVersion != "" && (err != nil || !v.Valid())) {
					t.Fatalf("%s %s accepted: %s", mt, patch, rec.Body)
				}
			}
		case http.StatusBadRequest, http.StatusConflict, http.StatusUnprocessableEntity,
			http.StatusUnsupportedMediaType, http.StatusNotFound:
			checkStatusBody(t, rec)
			if rec.Code == http.StatusUnsupportedMediaType && mt != "text/plain" {
				t.Fatalf("415 for an accepted patch type %s: %s", mt, rec.Body)
			}
		default:
			t.Fatalf("%s %s: status %d: %s", mt, req.URL, rec.Code, rec.Body)
		}
	})
}

// FuzzQueryParams sends arbitrary query strings to list and watch
// requests of either resource: selectors, includeObject, timeoutSeconds,
// resourceVersion, resourceVersionMatch, continue tokens, limit, watch
// flags. Parsing them never panics and never answers a server error; a
// parameter that does not parse is a 400 Status, a combination the API
// server refuses a 422. The one answer of the 5xx class is the API
// server's to a list at a revision ahead of the store: a 504 Timeout
// with the cause ResourceVersionTooLarge, which asks the client to retry
// (client-go's reflector relies on it), a state not yet reached rather
// than a request at fault. Watches run under a context that is already
// cancelled, so a watch that is accepted ends at once.
func FuzzQueryParams(f *testing.F) {
	for _, q := range []string{
		"labelSelector=team%3Dx",
		"labelSelector=team+in+(x,y),!gone",
		"labelSelector=%3D%3D%3D",
		"fieldSelector=metadata.name%3Da",
		"fieldSelector=spec.x%3D1",
		"fieldSelector=metadata.name!%3D",
		"includeObject=Object",
		"includeObject=Bogus",
		"limit=1&continue=abc",
		"resourceVersion=0&resourceVersionMatch=NotOlderThan",
		"watch=true&timeoutSeconds=1&allowWatchBookmarks=true",
		"watch=1&resourceVersion=999999",
		"watch=true&timeoutSeconds=-5",
		"watch=true&allowWatchBookmarks=maybe",
		"watch=yes",
		"%zz",
		"continue=!!!",
		"continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJhLy4uL2IifQ",
		"continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiYSJ9&resourceVersion=0",
		"continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6OTk5OTksInN0YXJ0IjoiYSJ9",
		"resourceVersionMatch=Exact",
		"resourceVersionMatch=Exact&resourceVersion=0",
		"resourceVersionMatch=Newest&resourceVersion=1&continue=x",
		"resourceVersion=-1",
		"resourceVersion=18446744073709551616",
		"limit=x",
		"sendInitialEvents=true",
		"watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan",
		"watch=&resourceVersionMatch=Exact&continue=x",
	} {
		f.Add(q, uint8(0))
		f.Add(q, uint8(1))
	}
	f.Fuzz(func(t *testing.T, query string, sel uint8) {
		h, done := fuzzHandler(t)
		defer done()
		res := "flowschemas"
		if sel&1 != 0 {
			res = "prioritylevelconfigurations"
		}
		v := config.Versions[int(sel>>1)%len(config.Versions)]
		req, err := http.NewRequest("GET", "http://x"+base+string(v)+"/"+res, nil)
		if err != nil {
			t.Skip()
		}
		req.URL.RawQuery = query
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req = req.WithContext(ctx)
		if sel&64 != 0 {
			req.Header.Set("Accept", tableJSON)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusCreated:
		case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusGone, http.StatusNotAcceptable,
			http.StatusRequestTimeout, http.StatusNotFound:
			checkStatusBody(t, rec)
		case http.StatusGatewayTimeout:
			checkStatusBody(t, rec)
			var st metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Reason != metav1.StatusReasonTimeout || st.Details == nil ||
				len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != metav1.CauseTypeResourceVersionTooLarge {
				t.Fatalf("GET %s: status %d: %s", req.URL, rec.Code, rec.Body)
			}
		default:
			t.Fatalf("GET %s: status %d: %s", req.URL, rec.Code, rec.Body)
		}
	})
}
