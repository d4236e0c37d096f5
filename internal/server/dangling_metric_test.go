package server

import (
	"bytes"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestDanglingFlowSchemasMetric: /metrics carries apf_flowschemas_dangling,
// the number of FlowSchemas whose Dangling condition is True, which the
// dangling-FlowSchemas alert of deploy/observability watches. It is 0 on
// the bootstrap configuration, 1 once a FlowSchema names a level that does
// not exist, and 0 again when the level is created.
func TestDanglingFlowSchemasMetric(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	opts := DefaultOptions()
	opts.DataDir = filepath.Join(t.TempDir(), "data")
	srv := startServer(t, opts)
	defer srv.stop()

	gauge := regexp.MustCompile(`(?m)^apf_flowschemas_dangling ([0-9.e+]+)$`)
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		var last string
		for {
			code, _, body := srv.do(http.MethodGet, "/metrics", adminToken, nil)
			if code == http.StatusOK {
				if m := gauge.FindSubmatch(body); m != nil {
					last = string(m[1])
				} else {
					last = "absent"
				}
				if last == want {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("apf_flowschemas_dangling is %s after 30 s, want %s", last, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("0")

	fs := []byte(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"names-nothing"},
"spec":{"priorityLevelConfiguration":{"name":"not-yet"},"matchingPrecedence":600,
"rules":[{"subjects":[{"kind":"User","user":{"name":"carol"}}],"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/nothing"]}]}]}}`)
	if code, _, body := srv.do(http.MethodPost, fsV1Path, adminToken, fs); code != http.StatusCreated {
		t.Fatalf("creating the FlowSchema: %d %s", code, bytes.TrimSpace(body))
	}
	waitFor("1")

	pl := []byte(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"not-yet"},
"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":5,"limitResponse":{"type":"Reject"}}}}`)
	if code, _, body := srv.do(http.MethodPost, plV1Path, adminToken, pl); code != http.StatusCreated {
		t.Fatalf("creating the level: %d %s", code, bytes.TrimSpace(body))
	}
	waitFor("0")
}
