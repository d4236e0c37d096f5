package kube

import (
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestBadPatches sends patches and writes whose metadata or directives are
// wrong in the ways a careless or hostile client gets them wrong: each
// answer must be the kube-apiserver's. Where the kube-apiserver answers a
// malformed strategic merge directive or resourceVersion with a 500 (the
// merge library's or the storage's own error, passed on with no reason),
// apf answers the same 500, and the case says so by the code it expects.
//
// One such patch is not here: a $setElementOrder list of numbers for
// spec.rules makes the kube-apiserver's merge library panic, and the
// kube-apiserver resets the stream instead of answering; apf answers 400
// (flowapi's TestPatchKindAndVersion).
func TestBadPatches(t *testing.T) {
	fs := flowschemas + "/kt-fs"
	pl := levels + "/kt-level"
	withRV := func(rv string) string {
		return withMeta(fsObject("kt-fs", fsFullSpec), `"resourceVersion":"`+rv+`"`)
	}
	runCases(t, []diffCase{{
		name: "bad patches",
		setup: []request{
			create(levels, plObject("kt-level", plQueueSpec)),
			create(flowschemas, fsObject("kt-fs", fsFullSpec)),
		},
		steps: []step{
			// Strategic merge directives the merge library refuses with
			// an error of its own.
			{"setElementOrder that is a number", patch(fs, strategicPatch, `{"spec":{"$setElementOrder/rules":1}}`), http.StatusInternalServerError},
			{"setElementOrder that is a number, top level", patch(fs, strategicPatch, `{"$setElementOrder/spec":1}`), http.StatusInternalServerError},
			{"setElementOrder that is an object", patch(fs, strategicPatch, `{"spec":{"$setElementOrder/rules":{"a":1}}}`), http.StatusInternalServerError},
			{"setElementOrder of labels", patch(fs, strategicPatch, `{"metadata":{"$setElementOrder/labels":7}}`), http.StatusInternalServerError},
			{"setElementOrder of conditions", patch(fs, strategicPatch, `{"status":{"$setElementOrder/conditions":["x"]}}`), http.StatusInternalServerError},
			{"setElementOrder of subjects", patch(fs, strategicPatch, `{"spec":{"rules":[{"$setElementOrder/subjects":[1]}]}}`), http.StatusUnprocessableEntity},
			{"deleteFromPrimitiveList of objects", patch(fs, strategicPatch, `{"spec":{"$deleteFromPrimitiveList/rules":[{}]}}`), http.StatusInternalServerError},
			{"deleteFromPrimitiveList of strings from objects", patch(fs, strategicPatch, `{"spec":{"$deleteFromPrimitiveList/rules":["x"]}}`), http.StatusInternalServerError},
			{"deleteFromPrimitiveList of managedFields", patch(fs, strategicPatch, `{"metadata":{"$deleteFromPrimitiveList/managedFields":[1]}}`), http.StatusInternalServerError},
			{"deleteFromPrimitiveList of conditions", patch(fs+"/status", strategicPatch, `{"status":{"$deleteFromPrimitiveList/conditions":["x"]}}`), http.StatusInternalServerError},
			{"deleteFromPrimitiveList that is a number", patch(fs, strategicPatch, `{"spec":{"$deleteFromPrimitiveList/rules":5}}`), http.StatusOK},
			{"retainKeys that is a number", patch(fs, strategicPatch, `{"spec":{"$retainKeys":5}}`), http.StatusBadRequest},
			{"patch delete of everything", patch(fs, strategicPatch, `{"$patch":"delete"}`), http.StatusBadRequest},
			// resourceVersions that are no revision.
			{"update with resourceVersion not-a-number", put(fs, withRV("not-a-number")), http.StatusInternalServerError},
			{"update with resourceVersion -1", put(fs, withRV("-1")), http.StatusInternalServerError},
			{"update with resourceVersion 2^63", put(fs, withRV("9223372036854775808")), http.StatusConflict},
			{"update with resourceVersion 2^64", put(fs, withRV("18446744073709551616")), http.StatusInternalServerError},
			{"merge patch of resourceVersion not-a-number", patch(fs, mergePatch, `{"metadata":{"resourceVersion":"not-a-number"}}`), http.StatusInternalServerError},
			{"merge patch of resourceVersion 2^63", patch(fs, mergePatch, `{"metadata":{"resourceVersion":"9223372036854775808"}}`), http.StatusConflict},
			{"merge patch of resourceVersion 2^64", patch(fs, mergePatch, `{"metadata":{"resourceVersion":"18446744073709551616"}}`), http.StatusInternalServerError},
			// What the patched object says it is.
			{"merge patch to another kind", patch(fs, mergePatch, `{"kind":"PriorityLevelConfiguration"}`), http.StatusUnprocessableEntity},
			{"merge patch to an unknown kind", patch(fs, mergePatch, `{"kind":"Foo"}`), http.StatusUnprocessableEntity},
			{"merge patch to a list kind", patch(fs, mergePatch, `{"kind":"FlowSchemaList"}`), http.StatusUnprocessableEntity},
			{"merge patch to an empty kind", patch(fs, mergePatch, `{"kind":""}`), http.StatusOK},
			{"merge patch removing the kind", patch(fs, mergePatch, `{"kind":null}`), http.StatusOK},
			{"merge patch of a kind that is a number", patch(fs, mergePatch, `{"kind":5}`), http.StatusUnprocessableEntity},
			{"merge patch to another group", patch(fs, mergePatch, `{"apiVersion":"foo/v1"}`), http.StatusUnprocessableEntity},
			{"merge patch to the core group", patch(fs, mergePatch, `{"apiVersion":"v1"}`), http.StatusUnprocessableEntity},
			{"merge patch to an unknown version", patch(fs, mergePatch, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v9"}`), http.StatusUnprocessableEntity},
			{"merge patch to a removed version", patch(fs, mergePatch, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1alpha1"}`), http.StatusUnprocessableEntity},
			{"merge patch to a group without version", patch(fs, mergePatch, `{"apiVersion":"flowcontrol.apiserver.k8s.io"}`), http.StatusUnprocessableEntity},
			{"merge patch to a malformed apiVersion", patch(fs, mergePatch, `{"apiVersion":"a/b/c"}`), http.StatusUnprocessableEntity},
			{"merge patch of an apiVersion that is a number", patch(fs, mergePatch, `{"apiVersion":5}`), http.StatusUnprocessableEntity},
			{"merge patch to another kind in another version", patch(fs, mergePatch, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1beta3","kind":"PriorityLevelConfiguration"}`), http.StatusUnprocessableEntity},
			{"merge patch to a version not served (v1beta3)", patch(fs, mergePatch, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1beta3"}`), http.StatusOK},
			{"merge patch to a version not served (v1beta1)", patch(fs, mergePatch, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1beta1"}`), http.StatusOK},
			{"merge patch of the level in v1beta2's words", patch(pl, mergePatch, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1beta2","spec":{"limited":{"assuredConcurrencyShares":7}}}`), http.StatusOK},
			{"merge patch of the level in v1beta3's words", patch(pl, mergePatch, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1beta3","spec":{"limited":{"nominalConcurrencyShares":0}}}`), http.StatusOK},
			{"merge patch of the level to another kind", patch(pl, mergePatch, `{"kind":"FlowSchema"}`), http.StatusUnprocessableEntity},
			{"merge patch of the status to another kind", patch(fs+"/status", mergePatch, `{"kind":"PriorityLevelConfiguration"}`), http.StatusUnprocessableEntity},
			{"json patch to another kind", patch(fs, jsonPatch, `[{"op":"replace","path":"/kind","value":"PriorityLevelConfiguration"}]`), http.StatusUnprocessableEntity},
			{"json patch to another group", patch(fs, jsonPatch, `[{"op":"replace","path":"/apiVersion","value":"foo/v1"}]`), http.StatusUnprocessableEntity},
			{"json patch removing the kind", patch(fs, jsonPatch, `[{"op":"remove","path":"/kind"}]`), http.StatusOK},
			{"strategic merge patch of kind and apiVersion", patch(fs, strategicPatch, `{"kind":"PriorityLevelConfiguration","apiVersion":"foo/v1"}`), http.StatusOK},
			{"update to an unknown kind", put(fs, strings.Replace(fsObject("kt-fs", fsFullSpec), `"kind":"FlowSchema"`, `"kind":"Foo"`, 1)), http.StatusBadRequest},
			{"create with a malformed apiVersion", create(flowschemas, strings.Replace(fsObject("kt-x", fsMinimalSpec), `"flowcontrol.apiserver.k8s.io/v1"`, `"a/b/c"`, 1)), http.StatusBadRequest},
			// Metadata of the wrong type or format.
			{"merge patch of metadata that is a number", patch(fs, mergePatch, `{"metadata":5}`), http.StatusUnprocessableEntity},
			{"merge patch of a malformed creationTimestamp", patch(fs, mergePatch, `{"metadata":{"creationTimestamp":"x"}}`), http.StatusUnprocessableEntity},
			{"merge patch of managedFields with an unknown operation", patch(fs, mergePatch, `{"metadata":{"managedFields":[{"manager":"m","operation":"Bogus","fieldsType":"FieldsV1","fieldsV1":{}}]}}`), http.StatusOK},
		},
	}})
}

// TestManyErrors creates and updates a FlowSchema of empty rules, each
// wrong twice, on both servers. The kube-apiserver lists every error,
// building its message in time that grows with the square of their
// number; apf lists the first config.MaxErrors (100) and a last cause
// saying the list is truncated. Its first causes and its message up to
// that cause must be the kube-apiserver's.
//
// With 1,000 rules (2,000 errors) the kube-apiserver answers in about a
// second. With KUBE_TEST_SLOW=1, 20,000 rules (58 KiB) too: the
// kube-apiserver does not answer that in its 34 s, and says so with a 504.
func TestManyErrors(t *testing.T) {
	e := testEnv(t)
	t.Cleanup(func() { e.cleanup(t) })
	rules := func(n int) string {
		return `{"priorityLevelConfiguration":{"name":"global-default"},"matchingPrecedence":500,"rules":[` + strings.TrimSuffix(strings.Repeat("{},", n), ",") + `]}`
	}
	for _, s := range []*server{e.kube, e.apf} {
		if a := s.mustSend(t, create(flowschemas, fsObject("kt-many-upd", fsMinimalSpec))); a.code != http.StatusCreated {
			t.Fatalf("%s: %d %s", s.name, a.code, a.raw)
		}
	}
	type status struct {
		Code    int    `json:"code"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
		Details struct {
			Causes []map[string]any `json:"causes"`
		} `json:"details"`
	}
	const maxErrors, tail = 100, ", too many errors, the list is truncated]"
	send := func(t *testing.T, s *server, r request) (status, time.Duration) {
		start := time.Now()
		a, err := s.sendWithin(r, 3*time.Minute)
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		var st status
		if err := json.Unmarshal(a.raw, &st); err != nil {
			t.Fatalf("%s: %d %.300s", s.name, a.code, a.raw)
		}
		t.Logf("%s: %d %s after %v: answer of %d bytes, message of %d, %d causes", s.name, a.code, st.Reason, took.Round(time.Millisecond), len(a.raw), len(st.Message), len(st.Details.Causes))
		return st, took
	}
	for _, c := range []struct {
		name string
		req  func(n int) request
	}{
		{"create", func(n int) request { return create(flowschemas, fsObject("kt-many", rules(n))) }},
		{"update", func(n int) request {
			return put(flowschemas+"/kt-many-upd", fsObject("kt-many-upd", rules(n)))
		}},
	} {
		for _, n := range []int{1000, 20000} {
			t.Run(c.name+"/"+strconv.Itoa(n)+" rules", func(t *testing.T) {
				if n > 1000 && os.Getenv("KUBE_TEST_SLOW") == "" {
					t.Skip("KUBE_TEST_SLOW=1 sends it (the kube-apiserver takes 34 s)")
				}
				apf, apfTook := send(t, e.apf, c.req(n))
				if apf.Code != http.StatusUnprocessableEntity || len(apf.Details.Causes) != maxErrors+1 || !strings.HasSuffix(apf.Message, tail) {
					t.Fatalf("apf: %d, %d causes, message ending %q", apf.Code, len(apf.Details.Causes), apf.Message[max(0, len(apf.Message)-100):])
				}
				kube, kubeTook := send(t, e.kube, c.req(n))
				if kube.Code == http.StatusGatewayTimeout {
					t.Logf("the kube-apiserver gave up: %s", kube.Message)
					return
				}
				if kube.Code != http.StatusUnprocessableEntity || len(kube.Details.Causes) != 2*n {
					t.Fatalf("kube: %d, %d causes", kube.Code, len(kube.Details.Causes))
				}
				if d := cmp.Diff(kube.Details.Causes[:maxErrors], apf.Details.Causes[:maxErrors]); d != "" {
					t.Errorf("the first causes differ (-kube +apf):\n%s", d)
				}
				if last := apf.Details.Causes[maxErrors]; !cmp.Equal(last, map[string]any{"message": "too many errors, the list is truncated"}) {
					t.Errorf("apf's last cause: %v", last)
				}
				if prefix := strings.TrimSuffix(apf.Message, tail); !strings.HasPrefix(kube.Message, prefix+", ") {
					t.Errorf("apf's message is not the start of kube's:\napf:  %.300s…\nkube: %.300s…", prefix, kube.Message)
				}
				if apfTook > kubeTook {
					t.Logf("apf took longer than the kube-apiserver (%v, %v)", apfTook, kubeTook)
				}
			})
		}
	}
}
