package flowapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/registry"
	"github.com/apfproject/apf/internal/api/store"
)

var now = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

const (
	base      = "/apis/flowcontrol.apiserver.k8s.io/"
	fsPath    = base + "v1/flowschemas"
	plPath    = base + "v1/prioritylevelconfigurations"
	tableJSON = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)

type env struct {
	t     *testing.T
	srv   *httptest.Server
	mem   *store.Memory
	reg   *registry.Registry
	clock time.Time
}

// newEnv serves every version, v1alpha1 included, over a memory store.
// The registry's clock stands still at now; the table's runs ahead so
// that ages are non-zero.
func newEnv(t *testing.T, versions ...config.Version) *env {
	t.Helper()
	if versions == nil {
		versions = config.Versions
	}
	e := &env{t: t, mem: store.NewMemory(), clock: now.Add(90 * time.Minute)}
	e.reg = registry.New(e.mem, registry.Options{Clock: func() time.Time { return now }})
	e.srv = httptest.NewServer(New(e.reg, Options{Versions: versions, Clock: func() time.Time { return e.clock }}))
	t.Cleanup(func() {
		e.srv.Close()
		_ = e.mem.Close()
	})
	return e
}

type resp struct {
	code   int
	header http.Header
	body   []byte
}

func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("response %d is not JSON: %v\n%s", r.code, err, r.body)
	}
	return m
}

// do sends a request; hdr alternates header names and values.
func (e *env) do(method, path, body string, hdr ...string) resp {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp{code: res.StatusCode, header: res.Header, body: data}
}

// must checks the status code.
func (e *env) must(r resp, code int) resp {
	e.t.Helper()
	if r.code != code {
		e.t.Fatalf("status %d, want %d: %s", r.code, code, r.body)
	}
	return r
}

// get walks a decoded JSON value along a dotted path ("spec.limited.x",
// numeric parts index arrays).
func get(v any, path string) any {
	for _, p := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			var i int
			if _, err := fmt.Sscan(p, &i); err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func pretty(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	_ = enc.Encode(v)
	return b.String()
}

const fsBody = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema",
 "metadata":{"name":"%s","labels":{"team":"%s"}},
 "spec":{"priorityLevelConfiguration":{"name":"global-default"},"matchingPrecedence":%d,
  "rules":[{"subjects":[{"kind":"Group","group":{"name":"system:authenticated"}}],
   "nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}]}]}}`

func fsJSON(name, team string, prec int) string { return fmt.Sprintf(fsBody, name, team, prec) }

const plV1Beta1 = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1beta1","kind":"PriorityLevelConfiguration",
 "metadata":{"name":"%s"},
 "spec":{"type":"Limited","limited":{"assuredConcurrencyShares":%d,"limitResponse":{"type":"Queue","queuing":{"queues":16}}}}}`
