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
// answer must be the kube-apiserver's. Where the kube-apiserver answers
// with a 500 (a malformed strategic merge directive, a resourceVersion
// that is no uint64 in a write, a resourceVersion on create, a
// configuration that does not fit the schema in an apply: the merge
// library's, its storage's or the field manager's own error, passed on
// with no reason), apf answers a 400 or a 422 in the same words, and the
// case says so by the code it expects of each (compareDeliberate).
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
	createWithRV := func(name, rv string) request {
		return create(flowschemas, withMeta(fsObject(name, fsMinimalSpec), `"resourceVersion":"`+rv+`"`))
	}
	const (
		bad     = http.StatusBadRequest
		invalid = http.StatusUnprocessableEntity
	)
	applied := func(path, meta, spec string) request {
		return patch(path+"?fieldManager=kube-test", applyPatch, "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: kt-fs\n"+meta+spec)
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
			{"setElementOrder of an unknown field", patch(fs, strategicPatch, `{"spec":{"$setElementOrder/bogus":[1]}}`), http.StatusInternalServerError},
			{"patch delete of an unknown field", patch(fs, strategicPatch, `{"spec":{"bogus":{"$patch":"delete"}}}`), http.StatusOK},
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
			{"update of the status with resourceVersion not-a-number", put(fs+"/status", withRV("not-a-number")), http.StatusInternalServerError},
			{"update of a missing object with resourceVersion not-a-number", put(flowschemas+"/kt-missing", withMeta(fsObject("kt-missing", fsMinimalSpec), `"resourceVersion":"x"`)), http.StatusNotFound},
			{"update with another uid and resourceVersion not-a-number", put(fs, withMeta(withRV("x"), `"uid":"x"`)), http.StatusConflict},
			{"update with another uid and a stale resourceVersion", put(fs, withMeta(withRV("1"), `"uid":"x"`)), http.StatusConflict},
			{"merge patch of resourceVersion not-a-number", patch(fs, mergePatch, `{"metadata":{"resourceVersion":"not-a-number"}}`), http.StatusInternalServerError},
			{"merge patch of resourceVersion 2^63", patch(fs, mergePatch, `{"metadata":{"resourceVersion":"9223372036854775808"}}`), http.StatusConflict},
			{"merge patch of resourceVersion 2^64", patch(fs, mergePatch, `{"metadata":{"resourceVersion":"18446744073709551616"}}`), http.StatusInternalServerError},
			{"json patch of resourceVersion x", patch(fs, jsonPatch, `[{"op":"replace","path":"/metadata/resourceVersion","value":"x"}]`), http.StatusInternalServerError},
			{"strategic merge patch of resourceVersion x", patch(fs, strategicPatch, `{"metadata":{"resourceVersion":"x"}}`), http.StatusInternalServerError},
			{"merge patch of the status with resourceVersion x", patch(fs+"/status", mergePatch, `{"metadata":{"resourceVersion":"x"}}`), http.StatusInternalServerError},
			{"merge patch of uid and resourceVersion x", patch(fs, mergePatch, `{"metadata":{"uid":"x","resourceVersion":"x"}}`), http.StatusInternalServerError},
			{"apply with resourceVersion x", applied(fs, "  resourceVersion: x\n", ""), http.StatusInternalServerError},
			{"apply of a missing object with resourceVersion x", patch(flowschemas+"/kt-gone?fieldManager=kube-test", applyPatch, "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: kt-gone\n  resourceVersion: x\n"), http.StatusInternalServerError},
			{"apply to the status of a missing object with resourceVersion x", patch(flowschemas+"/kt-gone/status?fieldManager=kube-test", applyPatch, "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: kt-gone\n  resourceVersion: x\n"), http.StatusNotFound},
			{"create with resourceVersion not-a-number", createWithRV("kt-rv-nan", "not-a-number"), http.StatusCreated},
			{"create with resourceVersion 0", createWithRV("kt-rv-zero", "0"), http.StatusCreated},
			{"create with resourceVersion -1", createWithRV("kt-rv-neg", "-1"), http.StatusCreated},
			{"create with resourceVersion 5", createWithRV("kt-rv-five", "5"), http.StatusInternalServerError},
			{"create with resourceVersion 5 of an existing name", createWithRV("kt-fs", "5"), http.StatusInternalServerError},
			{"create with resourceVersion 5, dry run", create(flowschemas+"?dryRun=All", withMeta(fsObject("kt-rv-dry", fsMinimalSpec), `"resourceVersion":"5"`)), http.StatusCreated},
			{"create with resourceVersion x, dry run", create(flowschemas+"?dryRun=All", withMeta(fsObject("kt-rv-dry", fsMinimalSpec), `"resourceVersion":"x"`)), http.StatusCreated},
			{"create of an invalid object with resourceVersion 5", create(flowschemas, withMeta(fsObject("kt-rv-bad", `{"matchingPrecedence":-1}`), `"resourceVersion":"5"`)), http.StatusUnprocessableEntity},
			// Metadata an update may not change, or must check.
			{"merge patch of the uid", patch(fs, mergePatch, `{"metadata":{"uid":"x"}}`), http.StatusUnprocessableEntity},
			{"json patch of the uid", patch(fs, jsonPatch, `[{"op":"replace","path":"/metadata/uid","value":"x"}]`), http.StatusUnprocessableEntity},
			{"strategic merge patch of the uid", patch(fs, strategicPatch, `{"metadata":{"uid":"x"}}`), http.StatusUnprocessableEntity},
			{"apply of the uid", applied(fs, "  uid: x\n", ""), http.StatusUnprocessableEntity},
			{"merge patch of the status's uid", patch(fs+"/status", mergePatch, `{"metadata":{"uid":"x"}}`), http.StatusOK},
			{"update of the status with another uid", put(fs+"/status", withMeta(fsObject("kt-fs", fsFullSpec), `"uid":"x"`)), http.StatusConflict},
			{"merge patch of an invalid generateName", patch(fs, mergePatch, `{"metadata":{"generateName":"Bad_"}}`), http.StatusUnprocessableEntity},
			{"merge patch of a generateName that is no path segment", patch(fs, mergePatch, `{"metadata":{"generateName":"a/b%"}}`), http.StatusUnprocessableEntity},
			{"merge patch of a generateName", patch(fs, mergePatch, `{"metadata":{"generateName":"good-"}}`), http.StatusOK},
			{"read after a generateName", get(fs), http.StatusOK},
			{"update with an invalid generateName", put(fs, withMeta(fsObject("kt-fs", fsFullSpec), `"generateName":"Bad_"`)), http.StatusUnprocessableEntity},
			{"update with another generateName", put(fs, withMeta(fsObject("kt-fs", fsFullSpec), `"generateName":"other-"`)), http.StatusOK},
			{"update without the generateName", put(fs, fsObject("kt-fs", fsFullSpec)), http.StatusOK},
			{"merge patch of a deletionTimestamp", patch(fs, mergePatch, `{"metadata":{"deletionTimestamp":"2020-01-01T00:00:00Z"}}`), http.StatusUnprocessableEntity},
			{"merge patch of a deletionGracePeriodSeconds", patch(fs, mergePatch, `{"metadata":{"deletionGracePeriodSeconds":30}}`), http.StatusUnprocessableEntity},
			{"merge patch of creationTimestamp and generation", patch(fs, mergePatch, `{"metadata":{"creationTimestamp":"2020-01-01T00:00:00Z","generation":-3}}`), http.StatusOK},
			{"merge patch of a namespace", patch(fs, mergePatch, `{"metadata":{"namespace":"default"}}`), http.StatusOK},
			{"merge patch of labels, uid and generateName", patch(fs, mergePatch, `{"metadata":{"uid":"x","generateName":"Bad_","labels":{"bad key":"v"}}}`), http.StatusUnprocessableEntity},
			{"update with bad annotations, finalizers and owner references", put(fs, withMeta(fsObject("kt-fs", fsFullSpec), `"annotations":{"bad key":"v"},"finalizers":["a/b/c"],"ownerReferences":[{"apiVersion":"","kind":"","name":"","uid":""}]`)), http.StatusUnprocessableEntity},
			{"merge patch of 40 owner references without apiVersion", patch(fs, mergePatch, `{"metadata":{"ownerReferences":[`+badOwners(40)+`]}}`), http.StatusUnprocessableEntity},
			{"merge patch of managed fields the field manager drops", patch(fs, mergePatch, `{"metadata":{"managedFields":[{"manager":"","operation":"Bogus","fieldsType":"X"}]}}`), http.StatusOK},
			{"merge patch of the status's labels and managed fields", patch(fs+"/status", mergePatch, `{"metadata":{"labels":{"bad key":"v"},"managedFields":[{"manager":"m","operation":"Bogus","fieldsType":"FieldsV1"}]}}`), http.StatusOK},
			// Applied configurations that do not fit the schema.
			{"apply with an unknown field", applied(fs, "", "spec:\n  bogus: 1\n"), http.StatusInternalServerError},
			{"apply with a wrongly typed field", applied(fs, "", "spec:\n  matchingPrecedence: x\n"), http.StatusInternalServerError},
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
		apf: map[string]int{
			"setElementOrder that is a number":                       bad,
			"setElementOrder that is a number, top level":            bad,
			"setElementOrder that is an object":                      bad,
			"setElementOrder of labels":                              bad,
			"setElementOrder of conditions":                          bad,
			"setElementOrder of an unknown field":                    bad,
			"deleteFromPrimitiveList of objects":                     bad,
			"deleteFromPrimitiveList of strings from objects":        bad,
			"deleteFromPrimitiveList of managedFields":               bad,
			"deleteFromPrimitiveList of conditions":                  bad,
			"update with resourceVersion not-a-number":               invalid,
			"update with resourceVersion -1":                         invalid,
			"update with resourceVersion 2^64":                       invalid,
			"update of the status with resourceVersion not-a-number": invalid,
			"merge patch of resourceVersion not-a-number":            invalid,
			"merge patch of resourceVersion 2^64":                    invalid,
			"json patch of resourceVersion x":                        invalid,
			"strategic merge patch of resourceVersion x":             invalid,
			"merge patch of the status with resourceVersion x":       invalid,
			"merge patch of uid and resourceVersion x":               invalid,
			"apply with resourceVersion x":                           invalid,
			"apply of a missing object with resourceVersion x":       invalid,
			"create with resourceVersion 5":                          bad,
			"create with resourceVersion 5 of an existing name":      bad,
			"apply with an unknown field":                            bad,
			"apply with a wrongly typed field":                       bad,
		},
	}})
}

// badOwners is n owner references without apiVersion, as JSON: n
// errors, each found three times by an update's validation (120 in all
// for 40: more than apf's bound of 100, which counts distinct errors).
func badOwners(n int) string {
	refs := make([]string, n)
	for i := range refs {
		refs[i] = `{"apiVersion":"","kind":"K","name":"n","uid":"u-` + strconv.Itoa(i) + `"}`
	}
	return strings.Join(refs, ",")
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
