package flowapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apfproject/apf/config"
)

// FuzzWriteMetadata writes objects whose metadata is anything: the
// fuzzed bytes are the value of "metadata" in a create, an update of the
// stored object, a merge or strategic merge patch, or a JSON patch that
// replaces it, of either kind in any version. Whatever the metadata
// (names, generateName, resourceVersion, uid, labels, annotations,
// finalizers, owner references, managed fields, times, generation, and
// values of the wrong type), the answer is the object or a Status with a
// client-error code: never a panic, and never a server error, not even
// where kube-apiserver answers a 500 (a resourceVersion that is no
// uint64, or one on create).
func FuzzWriteMetadata(f *testing.F) {
	for _, meta := range []string{
		`{"name":"a"}`,
		`{"name":"a","resourceVersion":"not-a-number"}`,
		`{"name":"a","resourceVersion":"9223372036854775808"}`,
		`{"name":"a","resourceVersion":"18446744073709551616"}`,
		`{"name":"a","resourceVersion":"-1"}`,
		`{"name":"a","uid":"x","generation":-5,"creationTimestamp":"2020-01-01T00:00:00Z","deletionTimestamp":"2020-01-01T00:00:00Z","deletionGracePeriodSeconds":-1}`,
		`{"generateName":"Bad_"}`,
		`{"name":"a","generateName":"a/b%"}`,
		`{"name":"a","uid":"x","resourceVersion":"x"}`,
		`{"name":"a","resourceVersion":"0"}`,
		`{"generateName":"a-","namespace":"default"}`,
		`{"name":"a","labels":{"bad key":"v","k":"bad value!"},"annotations":{"":"x"}}`,
		`{"name":"a","finalizers":["a","a","x/y/z"],"ownerReferences":[{"apiVersion":"","kind":"","name":"","uid":""}]}`,
		`{"name":"a","managedFields":[{"manager":"m","operation":"Bogus","fieldsType":"FieldsV2","fieldsV1":{"f:x":{}}}]}`,
		`{"name":"a","managedFields":[{}]}`,
		`{"name":"a","managedFields":[{"manager":"m","operation":"Apply","apiVersion":"flowcontrol.apiserver.k8s.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:rules":{}}}}]}`,
		`{"name":5}`,
		`{"name":"a","creationTimestamp":"x"}`,
		`{"name":"a","labels":null,"selfLink":"/x"}`,
		`5`,
		`null`,
		`[]`,
	} {
		for _, sel := range []uint8{0, 1, 2, 3, 4, 8 + 1} {
			f.Add([]byte(meta), sel)
		}
	}
	f.Fuzz(func(t *testing.T, meta []byte, sel uint8) {
		if !json.Valid(meta) {
			t.Skip() // a malformed body is FuzzCreateBody's and FuzzPatch's
		}
		h, done := fuzzHandler(t)
		defer done()
		res, kind, name, spec := "flowschemas", config.KindFlowSchema, "a",
			`{"priorityLevelConfiguration":{"name":"global-default"},"matchingPrecedence":100}`
		if sel&8 != 0 {
			res, kind, name, spec = "prioritylevelconfigurations", config.KindPriorityLevel, "p",
				`{"type":"Limited","limited":{"limitResponse":{"type":"Reject"}}}`
		}
		v := config.Versions[int(sel>>4)%len(config.Versions)]
		object := `{"apiVersion":"` + v.APIVersion() + `","kind":"` + kind + `","metadata":` + string(meta) + `,"spec":` + spec + `}`
		method, path, ct, body := "", base+string(v)+"/"+res, mediaJSON, object
		switch sel & 7 % 5 {
		case 0:
			method = "POST"
		case 1:
			method, path = "PUT", path+"/"+name
		case 2:
			method, path, ct, body = "PATCH", path+"/"+name, mediaMerge, `{"metadata":`+string(meta)+`}`
		case 3:
			method, path, ct, body = "PATCH", path+"/"+name, mediaSMP, `{"metadata":`+string(meta)+`}`
		case 4:
			method, path, ct, body = "PATCH", path+"/"+name, mediaJSONPatch, `[{"op":"replace","path":"/metadata","value":`+string(meta)+`}]`
		}
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", ct)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusCreated:
			var obj map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &obj); err != nil || obj["kind"] != kind {
				t.Fatalf("%s %s: %d with %v: %s", method, path, rec.Code, err, rec.Body)
			}
		case http.StatusBadRequest, http.StatusConflict, http.StatusUnprocessableEntity, http.StatusNotFound:
			checkStatusBody(t, rec)
		default:
			t.Fatalf("%s %s (%s) %s: status %d: %s", method, path, ct, body, rec.Code, rec.Body)
		}
	})
}
