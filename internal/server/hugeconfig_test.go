package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestHugeFlowSchemaThroughServer creates, through the API, one FlowSchema
// of 10,000 rules each naming its own user and namespace (1.5 MB of JSON,
// under the body limit): the shape that once took the process past 4 GiB
// and kept it growing. The server's heap must stay within 64 MiB of what it
// was, the schema must classify (its last rule names carol), and deleting
// it must give carol back to global-default.
func TestHugeFlowSchemaThroughServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	opts := DefaultOptions()
	opts.DataDir = filepath.Join(t.TempDir(), "data")
	srv := startServer(t, opts)
	defer srv.stop()

	const n = 10_000
	rules := make([]string, n)
	for i := range rules {
		user := fmt.Sprintf("u%d", i)
		if i == n-1 {
			user = "carol"
		}
		rules[i] = fmt.Sprintf(`{"subjects":[{"kind":"User","user":{"name":%q}}],"resourceRules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"],"namespaces":["n%d"]}]}`, user, i)
	}
	body := `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"huge"},` +
		`"spec":{"priorityLevelConfiguration":{"name":"global-default"},"matchingPrecedence":500,"rules":[` + strings.Join(rules, ",") + `]}}`

	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	code, _, data := srv.do(http.MethodPost, fsV1Path, adminToken, []byte(body))
	if code != http.StatusCreated {
		t.Fatalf("create: %d %.300s", code, data)
	}
	var created struct {
		Metadata struct{ UID string } `json:"metadata"`
	}
	if err := json.Unmarshal(data, &created); err != nil {
		t.Fatal(err)
	}
	schemaOf := func() string {
		_, h, _ := srv.do(http.MethodGet, fmt.Sprintf("/api/v1/namespaces/n%d/pods/p", n-1), carolToken, nil)
		return h.Get("X-Kubernetes-PF-FlowSchema-UID")
	}
	waitUntil(t, "carol classified by the new schema", func() bool { return schemaOf() == created.Metadata.UID })
	grown := int64(heap()) - int64(before)
	t.Logf("%d bytes of JSON; heap grew by %.1f MiB", len(body), float64(grown)/(1<<20))
	if grown > 64<<20 {
		t.Errorf("the heap grew by %.0f MiB for a %d-byte FlowSchema", float64(grown)/(1<<20), len(body))
	}

	if code, _, data := srv.do(http.MethodDelete, fsV1Path+"/huge", adminToken, nil); code != http.StatusOK {
		t.Fatalf("delete: %d %.300s", code, data)
	}
	waitUntil(t, "carol back in another schema", func() bool { uid := schemaOf(); return uid != "" && uid != created.Metadata.UID })
}

// waitUntil polls cond every 20 ms for up to 30 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
