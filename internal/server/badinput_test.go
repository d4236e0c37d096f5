package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apfproject/apf/internal/api/flowapi"
)

// statusBody is the part of a meta/v1 Status the bad-input tests read.
type statusBody struct {
	Kind    string `json:"kind"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Code    int    `json:"code"`
	Details struct {
		Causes []struct {
			Field   string `json:"field"`
			Message string `json:"message"`
		} `json:"causes"`
	} `json:"details"`
}

// sendRaw sends one request with arbitrary headers (names and values
// alternating) and a body that is streamed without a Content-Length when
// chunked is set.
func (s *e2eServer) sendRaw(method, path string, body []byte, chunked bool, hdr ...string) (int, http.Header, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
		if chunked {
			rd = io.MultiReader(rd) // hides the length from net/http
		}
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, data
}

const (
	fsV1Path = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
	plV1Path = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations"
)

// badFS is a FlowSchema body in v1 with the given name and extra spec
// fields (a JSON fragment, "" for none).
func badFS(name, extraSpec string) string {
	if extraSpec != "" {
		extraSpec = "," + extraSpec
	}
	return fmt.Sprintf(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":%q},
"spec":{"priorityLevelConfiguration":{"name":"global-default"},"matchingPrecedence":5000,
"rules":[{"subjects":[{"kind":"User","user":{"name":"x"}}],"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/x"]}]}]%s}}`, name, extraSpec)
}

// copyBomb is a JSON patch of n copy operations, each doubling the spec.
func copyBomb(n int) []byte {
	ops := make([]string, n)
	for i := range ops {
		ops[i] = fmt.Sprintf(`{"op":"copy","from":"/spec","path":"/spec/x%d"}`, i)
	}
	return []byte("[" + strings.Join(ops, ",") + "]")
}

// manyOps is a JSON patch of n harmless test operations.
func manyOps(n int) []byte {
	return []byte("[" + strings.TrimSuffix(strings.Repeat(`{"op":"test","path":"/kind","value":"FlowSchema"},`, n), ",") + "]")
}

// TestBadInputThroughServer drives malformed, oversized, mistyped and
// invalid requests through the whole chain of `apf serve` (TLS,
// authentication, APF, authorization, flowapi, etcd) as an administrator,
// and checks that each is refused with the API server's status code and
// a Status body: never a 500, never a dropped connection.
func TestBadInputThroughServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	opts := DefaultOptions()
	opts.DataDir = filepath.Join(t.TempDir(), "data")
	srv := startServer(t, opts)
	defer srv.stop()

	auth := "Bearer " + adminToken
	json_ := "application/json"
	big := []byte(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"big","annotations":{"a":"` +
		strings.Repeat("x", flowapi.DefaultMaxBodyBytes) + `"}}}`)

	type tc struct {
		name      string
		method    string
		path      string
		ct        string
		body      []byte
		chunked   bool
		want      int
		inMessage string // expected in the Status message
		cause     string // expected among the Status causes' fields
		warning   string // expected in a Warning header (no Status then)
	}
	cases := []tc{
		{name: "oversized body with length", method: "POST", path: fsV1Path, ct: json_, body: big, want: http.StatusRequestEntityTooLarge, inMessage: "limit is 3145728"},
		{name: "oversized body chunked", method: "POST", path: fsV1Path, ct: json_, body: big, chunked: true, want: http.StatusRequestEntityTooLarge, inMessage: "limit is 3145728"},
		{name: "oversized patch", method: "PATCH", path: fsV1Path + "/global-default", ct: "application/merge-patch+json", body: big, want: http.StatusRequestEntityTooLarge},
		{name: "truncated JSON", method: "POST", path: fsV1Path, ct: json_, body: []byte(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":`), want: http.StatusBadRequest},
		{name: "JSON array", method: "POST", path: fsV1Path, ct: json_, body: []byte(`[1,2,3]`), want: http.StatusBadRequest},
		{name: "binary garbage", method: "POST", path: fsV1Path, ct: json_, body: []byte("\x00\xff\xfe{{"), want: http.StatusBadRequest},
		{name: "malformed YAML", method: "POST", path: fsV1Path, ct: "application/yaml", body: []byte("apiVersion: [\nkind: FlowSchema\n  metadata: {"), want: http.StatusBadRequest},
		{name: "empty body", method: "POST", path: fsV1Path, ct: json_, body: []byte{}, want: http.StatusBadRequest},
		{name: "unknown field strict", method: "POST", path: fsV1Path + "?fieldValidation=Strict", ct: json_, body: []byte(badFS("strict", `"colour":"red"`)), want: http.StatusBadRequest, inMessage: "colour"},
		{name: "duplicate field strict YAML", method: "POST", path: fsV1Path + "?fieldValidation=Strict", ct: "application/yaml",
			body: []byte("apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: dup}\nmetadata: {name: dup2}\nspec: {priorityLevelConfiguration: {name: global-default}}\n"), want: http.StatusBadRequest, inMessage: "metadata"},
		{name: "unknown field warn", method: "POST", path: fsV1Path + "?fieldValidation=Warn", ct: json_, body: []byte(badFS("warned", `"colour":"red"`)), want: http.StatusCreated, warning: "colour"},
		{name: "bad fieldValidation", method: "POST", path: fsV1Path + "?fieldValidation=Loose", ct: json_, body: []byte(badFS("loose", "")), want: http.StatusUnprocessableEntity,
			inMessage: `CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loose"`, cause: "fieldValidation"},
		{name: "wrong kind", method: "POST", path: fsV1Path, ct: json_, body: []byte(strings.Replace(badFS("kind", ""), `"kind":"FlowSchema"`, `"kind":"PriorityLevelConfiguration"`, 1)), want: http.StatusBadRequest},
		{name: "wrong apiVersion", method: "POST", path: fsV1Path, ct: json_, body: []byte(strings.Replace(badFS("ver", ""), "flowcontrol.apiserver.k8s.io/v1", "apps/v1", 1)), want: http.StatusBadRequest},
		{name: "name differs from URL", method: "PUT", path: fsV1Path + "/other", ct: json_, body: []byte(badFS("mismatch", "")), want: http.StatusBadRequest},
		{name: "text/plain", method: "POST", path: fsV1Path, ct: "text/plain", body: []byte(badFS("plain", "")), want: http.StatusUnsupportedMediaType},
		{name: "protobuf envelope without an object", method: "POST", path: fsV1Path, ct: "application/vnd.kubernetes.protobuf", body: []byte("k8s\x00"), want: http.StatusBadRequest},
		{name: "unparsable content type", method: "POST", path: fsV1Path, ct: "application/json; ===", body: []byte(badFS("ct", "")), want: http.StatusUnsupportedMediaType},
		{name: "patch with JSON content type", method: "PATCH", path: fsV1Path + "/global-default", ct: json_, body: []byte(`{}`), want: http.StatusUnsupportedMediaType},
		{name: "server-side apply without a field manager", method: "PATCH", path: fsV1Path + "/global-default", ct: "application/apply-patch+yaml", body: []byte(`{}`), want: http.StatusUnprocessableEntity},
		{name: "JSON patch not a list", method: "PATCH", path: fsV1Path + "/global-default", ct: "application/json-patch+json", body: []byte(`{"op":"add"}`), want: http.StatusBadRequest},
		{name: "JSON patch that does not apply", method: "PATCH", path: fsV1Path + "/global-default", ct: "application/json-patch+json", body: []byte(`[{"op":"remove","path":"/spec/nothing/here"}]`), want: http.StatusUnprocessableEntity},
		{name: "JSON patch test without value", method: "PATCH", path: fsV1Path + "/global-default", ct: "application/json-patch+json", body: []byte(`[{"op":"test","path":""}]`), want: http.StatusUnprocessableEntity},
		{name: "JSON patch doubling by copies", method: "PATCH", path: fsV1Path + "/global-default", ct: "application/json-patch+json", body: copyBomb(40), want: http.StatusUnprocessableEntity},
		{name: "JSON patch with too many operations", method: "PATCH", path: fsV1Path + "/global-default", ct: "application/json-patch+json", body: manyOps(10001), want: http.StatusRequestEntityTooLarge},
		{name: "merge patch not JSON", method: "PATCH", path: fsV1Path + "/global-default", ct: "application/merge-patch+json", body: []byte(`{`), want: http.StatusBadRequest},
		{name: "strategic patch breaking the type", method: "PATCH", path: fsV1Path + "/global-default", ct: "application/strategic-merge-patch+json", body: []byte(`{"spec":{"matchingPrecedence":"high"}}`), want: http.StatusUnprocessableEntity},
		{name: "invalid precedence", method: "POST", path: fsV1Path, ct: json_, body: []byte(strings.Replace(badFS("prec", ""), "5000", "20000", 1)), want: http.StatusUnprocessableEntity, cause: "spec.matchingPrecedence"},
		{name: "invalid name", method: "POST", path: fsV1Path, ct: json_, body: []byte(badFS("Not_A_Name", "")), want: http.StatusUnprocessableEntity, cause: "metadata.name"},
		{name: "invalid priority level", method: "POST", path: plV1Path, ct: json_,
			body: []byte(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"pl"},"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":-3,"limitResponse":{"type":"Queue","queuing":{"queues":0,"handSize":9}}}}}`),
			want: http.StatusUnprocessableEntity, cause: "spec.limited.nominalConcurrencyShares"},
		{name: "mandatory object changed", method: "PATCH", path: fsV1Path + "/exempt", ct: "application/merge-patch+json", body: []byte(`{"spec":{"priorityLevelConfiguration":{"name":"global-default"}}}`), want: http.StatusUnprocessableEntity},
		{name: "bad label selector", method: "GET", path: fsV1Path + "?labelSelector=%3D%3D%3D", want: http.StatusBadRequest},
		{name: "unsupported field selector", method: "GET", path: fsV1Path + "?fieldSelector=spec.x%3D1", want: http.StatusBadRequest},
		{name: "bad watch timeout", method: "GET", path: fsV1Path + "?watch=true&timeoutSeconds=-1", want: http.StatusBadRequest},
		{name: "bad dryRun", method: "POST", path: fsV1Path + "?dryRun=Some", ct: json_, body: []byte(badFS("dry", "")), want: http.StatusUnprocessableEntity, cause: "dryRun"},
		{name: "fieldManager too long on create", method: "POST", path: fsV1Path + "?fieldManager=" + strings.Repeat("m", 129), ct: json_, body: []byte(badFS("fm-long", "")),
			want: http.StatusUnprocessableEntity, inMessage: `CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes`, cause: "fieldManager"},
		{name: "fieldManager unprintable on update", method: "PUT", path: fsV1Path + "/fm-ctrl?fieldManager=a%01b", ct: json_, body: []byte(badFS("fm-ctrl", "")),
			want: http.StatusUnprocessableEntity, inMessage: `UpdateOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value: "a\x01b": invalid character U+0001 (at position 1)`, cause: "fieldManager"},
		{name: "fieldManager too long on patch", method: "PATCH", path: fsV1Path + "/global-default?fieldManager=" + strings.Repeat("m", 129), ct: "application/merge-patch+json", body: []byte(`{}`),
			want: http.StatusUnprocessableEntity, inMessage: `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Too long`, cause: "fieldManager"},
		{name: "malformed continue token", method: "GET", path: fsV1Path + "?limit=10&continue=not-a-token!", want: http.StatusBadRequest,
			inMessage: "invalid continue token: continue key is not valid: illegal base64 data at input byte 11"},
		{name: "continue token of another version", method: "GET", path: fsV1Path + "?continue=eyJ2IjoibWV0YS5rOHMuaW8vdjIiLCJydiI6NSwic3RhcnQiOiJhIn0", want: http.StatusBadRequest,
			inMessage: "invalid continue token: continue key is not valid: server does not recognize this encoded version meta.k8s.io/v2"},
		{name: "resourceVersionMatch without resourceVersion", method: "GET", path: fsV1Path + "?resourceVersionMatch=Exact", want: http.StatusUnprocessableEntity,
			inMessage: `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided`, cause: "resourceVersionMatch"},
		{name: "resourceVersionMatch on a watch", method: "GET", path: fsV1Path + "?watch=1&resourceVersionMatch=NotOlderThan&resourceVersion=1", want: http.StatusUnprocessableEntity,
			inMessage: "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided", cause: "resourceVersionMatch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, hdr, body := srv.sendRaw(c.method, c.path, c.body, c.chunked, "Authorization", auth, "Content-Type", c.ct)
			if code >= 500 {
				t.Fatalf("server error %d: %s", code, body)
			}
			if code != c.want {
				t.Fatalf("status %d, want %d: %.300s", code, c.want, body)
			}
			if c.warning != "" {
				if w := strings.Join(hdr.Values("Warning"), "; "); !strings.Contains(w, c.warning) || !strings.HasPrefix(w, "299 ") {
					t.Errorf("Warning header %q does not name %q", w, c.warning)
				}
				return
			}
			var st statusBody
			if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" || st.Status != "Failure" || st.Code != code {
				t.Fatalf("answer is not a Failure Status with code %d (%v): %.300s", code, err, body)
			}
			if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Status served as %q", ct)
			}
			if c.inMessage != "" && !strings.Contains(st.Message, c.inMessage) {
				t.Errorf("message %q does not mention %q", st.Message, c.inMessage)
			}
			if c.cause != "" {
				var fields []string
				for _, k := range st.Details.Causes {
					fields = append(fields, k.Field)
				}
				found := false
				for _, f := range fields {
					found = found || f == c.cause
				}
				if !found {
					t.Errorf("causes %v do not name %s: %s", fields, c.cause, body)
				}
			}
		})
	}

	// The server is still healthy and has stored none of the refused
	// objects.
	code, _, body := srv.do("GET", fsV1Path, adminToken, nil)
	if code != http.StatusOK {
		t.Fatalf("list after bad input: %d %s", code, body)
	}
	for _, name := range []string{"big", "strict", "dup", "kind", "ver", "mismatch", "plain", "prec", "Not_A_Name", "dry", "loose", "fm-long", "fm-ctrl"} {
		if strings.Contains(string(body), `"name":"`+name+`"`) {
			t.Errorf("refused object %q was stored", name)
		}
	}
	if !strings.Contains(string(body), `"name":"warned"`) {
		t.Errorf("the object created under fieldValidation=Warn is missing")
	}
}
