package debugmux

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/apfproject/apf/apfdebug"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/engine"
	"github.com/apfproject/apf/internal/debug/console"
	"github.com/apfproject/apf/request"
)

// tight is a level that rejects, for user elephant.
const tight = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: tight, uid: pl-uid}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 100
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: tight, uid: fs-uid}
spec:
  priorityLevelConfiguration: {name: tight}
  matchingPrecedence: 100
  rules:
  - subjects: [{kind: User, user: {name: elephant}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`

// small is a queuing level of 8 queues, hands of 2 and one request per
// queue, for user elephant, one flow per user.
const small = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: small, uid: pl-small}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 100
    limitResponse:
      type: Queue
      queuing: {queues: 8, handSize: 2, queueLengthLimit: 1}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: elephants, uid: fs-elephants}
spec:
  priorityLevelConfiguration: {name: small}
  matchingPrecedence: 300
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: elephant}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`

func newController(t *testing.T, manifest string) *controller.Controller {
	t.Helper()
	objs, err := config.Decode([]byte(manifest), "apf.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Config{ServerConcurrencyLimit: 4, Source: controller.StaticSource(objs)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustParse(t *testing.T, method, path, query string) request.Info {
	t.Helper()
	info, err := request.Parse(method, path, query)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// serve mounts Handler as apf serve does and returns the server.
func serve(t *testing.T, c *controller.Controller) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle(apfdebug.PathPrefix, Handler(c, nil))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// The dumps are served at their paths, as upstream writes them.
func TestHandlerServesDumps(t *testing.T) {
	srv := serve(t, newController(t, tight))
	resp, err := http.Get(srv.URL + apfdebug.PathPriorityLevels)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := strings.Split(string(body), "\n")
	if !strings.HasPrefix(lines[0], "PriorityLevelName, ActiveQueues,") || !strings.HasPrefix(lines[1], "catch-all,") {
		t.Fatalf("body:\n%s", body)
	}
	// Without a shadow configuration, its path is no dump.
	resp, err = http.Get(srv.URL + ShadowPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET %s without a shadow: %d", ShadowPath, resp.StatusCode)
	}
}

// The console is served next to the dumps: the page, and the state with
// the controller's levels.
func TestHandlerServesConsole(t *testing.T) {
	srv := serve(t, newController(t, tight))
	for _, c := range []struct{ path, want string }{
		{console.PathPrefix, `<title>APF console</title>`},
		{strings.TrimSuffix(console.PathPrefix, "/"), `<title>APF console</title>`}, // redirected
		{console.PathState + "?level=tight", `"name":"tight"`},
		{apfdebug.PathPriorityLevels, "PriorityLevelName"},
	} {
		resp, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), c.want) {
			t.Errorf("GET %s: %d\n%s", c.path, resp.StatusCode, body)
		}
	}
	resp, err := http.Get(srv.URL + console.PathState + "?level=tight")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st console.State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Selected == nil || st.Selected.Name != "tight" || len(st.Levels) < 3 || st.Shadow != nil {
		t.Errorf("state: %d levels, selected %+v, shadow %+v", len(st.Levels), st.Selected, st.Shadow)
	}
}

// The endpoint classifies a described request as Controller.Explain does,
// and says what is wrong with a bad description.
func TestExplainHandler(t *testing.T) {
	c := newController(t, small)
	h := Handler(c, nil) // which serves explainHandler at ExplainPath
	get := func(target string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
		return w
	}
	w := get(ExplainPath + "?user=elephant&group=zoo&verb=list&path=/api/v1/namespaces/ns/pods&output=json")
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("json: %d %s %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	var got engine.Explanation
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	a := &request.Attributes{Info: mustParse(t, "GET", "/api/v1/namespaces/ns/pods", ""),
		User: request.User{Name: "elephant", Groups: []string{"zoo", "system:authenticated"}}}
	want := c.Explain(a)
	if got.FlowSchema.Name != "elephants" || got.FlowSchema != want.FlowSchema || !slices.Equal(got.User.Groups, want.User.Groups) ||
		got.Flow == nil || !slices.Equal(got.Flow.Hand, want.Flow.Hand) || got.Request != want.Request {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	w = get(ExplainPath + "?verb=get&path=/api/v1/pods")
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") ||
		!strings.Contains(w.Body.String(), "system:anonymous") {
		t.Errorf("text: %d %s", w.Code, w.Body)
	}
	for target, msg := range map[string]string{
		"":                               "describe the request with verb and path",
		"?verb=get":                      "describe the request",
		"?verb=get&path=/x&users=bob":    `unknown parameter "users"`,
		"?verb=get&path=/x&verb=put":     `parameter "verb" is given 2 times`,
		"?verb=fetch&path=/x":            `unknown verb "fetch"`,
		"?verb=get&path=x":               "must start with /",
		"?verb=get&path=/x&output=wide":  `output "wide"`,
		"?verb=list&path=/version":       "not a resource path",
		"?group=devs&verb=get&path=/api": "need --as",
		"?verb=get&path=/x&%zz":          "the query",
		"?a=1&verb=get&path=/x":          `unknown parameter "a"`,
	} {
		w := get(ExplainPath + target)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), msg) {
			t.Errorf("%q: %d %q, want 400 saying %q", target, w.Code, w.Body, msg)
		}
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", ExplainPath+"?verb=get&path=/x", nil))
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", w.Code)
	}
}
