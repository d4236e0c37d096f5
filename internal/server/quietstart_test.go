package server

import (
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFirstStartLogsNoDangling: a first start on an empty store creates the
// mandatory and suggested objects without a single transient "dangling"
// report, even at debug level (the producer creates every level before the
// schemas that name them), while a FlowSchema that really names a missing
// level is still reported, at debug level as kube-apiserver reports it
// (below its default verbosity; the FlowSchema's Dangling condition is what
// tells its users).
func TestFirstStartLogsNoDangling(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	logs := &lockedBuffer{}
	opts := DefaultOptions()
	opts.DataDir = filepath.Join(t.TempDir(), "data")
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := startServer(t, opts) // ready: every bootstrap object is in the store

	// The controller digests changes in order: once it has reported this
	// schema, it has digested everything the first start wrote.
	body := []byte(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema",
		"metadata":{"name":"names-a-missing-level"},
		"spec":{"priorityLevelConfiguration":{"name":"no-such-level"},"matchingPrecedence":500}}`)
	if code, _, out := s.do(http.MethodPost, "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", adminToken, body); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), `FlowSchema \"names-a-missing-level\": dangling`) {
		if time.Now().After(deadline) {
			t.Fatalf("the dangling FlowSchema was not reported within 30 s:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}

	var reports int
	for _, line := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(line, "dangling:") {
			continue
		}
		if !strings.Contains(line, `FlowSchema \"names-a-missing-level\": dangling: priority level \"no-such-level\"`) {
			t.Errorf("a start on an empty store logged a dangling FlowSchema:\n%s", line)
			continue
		}
		if !strings.Contains(line, "level=DEBUG") {
			t.Errorf("a dangling FlowSchema is reported above debug level:\n%s", line)
		}
		reports++
	}
	if reports == 0 {
		t.Errorf("the dangling FlowSchema was not reported:\n%s", logs)
	}
}
