package flowapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/registry"
	"github.com/apfproject/apf/internal/api/store"
)

// FuzzCreateBody sends arbitrary bodies to the create path of either
// resource in any version, as JSON or YAML, under any field validation
// mode. Whatever the body, the answer is a Status or a created object,
// never a panic, and never a server error, not even for a resourceVersion
// on create, which the API server's storage answers with a 500.
func FuzzCreateBody(f *testing.F) {
	f.Add([]byte(fsJSON("a", "x", 10)), uint8(0))
	f.Add([]byte(fsJSON("b", "x", 10)), uint8(7))
	f.Add([]byte(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1beta1","kind":"PriorityLevelConfiguration","metadata":{"name":"p"},"spec":{"type":"Limited","limited":{"assuredConcurrencyShares":5,"limitResponse":{"type":"Reject"}}}}`), uint8(1))
	f.Add([]byte("apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: y1\nspec: {}\n"), uint8(2))
	f.Add([]byte(`{"metadata":{"name":"x","resourceVersion":"3"}}`), uint8(3))
	f.Add([]byte(`{"spec":{"exempt":{"lendablePercent":-1}},"metadata":{"name":"e"}}`), uint8(5))
	f.Add([]byte(`[]`), uint8(4))
	f.Fuzz(func(t *testing.T, body []byte, sel uint8) {
		mem := store.NewMemory()
		defer mem.Close()
		h := New(registry.New(mem, registry.Options{}), Options{Versions: config.Versions})
		v := config.Versions[int(sel)%len(config.Versions)]
		res := "flowschemas"
		if sel&8 != 0 {
			res = "prioritylevelconfigurations"
		}
		ct := "application/json"
		if sel&16 != 0 {
			ct = "application/yaml"
		}
		mode := []string{"", "Strict", "Warn", "Ignore"}[(sel>>5)&3]
		req := httptest.NewRequest("POST", base+string(v)+"/"+res+"?fieldValidation="+mode, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", ct)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusCreated, http.StatusBadRequest, http.StatusConflict, http.StatusUnprocessableEntity:
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	})
}
