package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/store"
)

// The tests of --config-dir run apf serve on 127.0.0.1 with its
// configuration in a directory, change the files while requests flow, and
// watch what the requests, the flowcontrol API, /readyz, /metrics and the
// log say.

const cdLevel = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: e2e-files
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 20
    limitResponse:
      type: Queue
      queuing: {queues: 16, handSize: 4, queueLengthLimit: 50}
`

// cdSchema is the FlowSchema e2e-devs, for bob's group devs, into level.
func cdSchema(level string, precedence int) string {
	return fmt.Sprintf(`apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: e2e-devs
spec:
  priorityLevelConfiguration: {name: %s}
  matchingPrecedence: %d
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects:
    - kind: Group
      group: {name: devs}
    resourceRules:
    - verbs: ["*"]
      apiGroups: ["*"]
      resources: ["*"]
      clusterScope: true
      namespaces: ["*"]
    nonResourceRules:
    - verbs: ["*"]
      nonResourceURLs: ["*"]
`, level, precedence)
}

// writeAtomically writes a file as careful tools do: a temporary file
// renamed over the old one.
func writeAtomically(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// cdLog collects a server's log.
type cdLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *cdLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *cdLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startFromFiles runs apf serve with --config-dir dir, polled every 20 ms.
func startFromFiles(t *testing.T, dir string, log *cdLog) *e2eServer {
	t.Helper()
	opts := DefaultOptions()
	opts.ConfigDir = dir
	opts.ConfigPollInterval = 20 * time.Millisecond
	opts.CertDir = t.TempDir()
	if log != nil {
		opts.Logger = slog.New(slog.NewTextHandler(log, nil))
	}
	return startServer(t, opts)
}

// flow sends bob's requests to a server, one after the other, until the
// test ends, and keeps what the last one was classified as.
type flow struct {
	sent, bad atomic.Int64
	firstBad  atomic.Value // string
	fs, pl    atomic.Value // string: the last answer's UIDs
	stop      func()
}

func startFlow(t *testing.T, s *e2eServer) *flow {
	t.Helper()
	f := &flow{}
	f.fs.Store("")
	f.pl.Store("")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			code, hdr, body := s.do(http.MethodGet, "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations", readerToken, nil)
			if ctx.Err() != nil {
				return
			}
			f.sent.Add(1)
			if code != http.StatusOK {
				if f.bad.Add(1) == 1 {
					f.firstBad.Store(fmt.Sprintf("%d %s", code, body))
				}
				continue
			}
			f.fs.Store(hdr.Get("X-Kubernetes-PF-FlowSchema-UID"))
			f.pl.Store(hdr.Get("X-Kubernetes-PF-PriorityLevel-UID"))
			time.Sleep(5 * time.Millisecond)
		}
	}()
	f.stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(f.stop)
	return f
}

// check fails the test if a request of the flow was not answered 200.
func (f *flow) check(t *testing.T) {
	t.Helper()
	if n := f.bad.Load(); n > 0 {
		t.Errorf("%d of %d requests failed while the files changed; the first: %v", n, f.sent.Load(), f.firstBad.Load())
	}
}

// classifiedAs reports whether the flow's requests go to the objects of
// these UIDs: they have been for the last request and stay so for the
// ones after it, checked a few times.
func (f *flow) goesTo(fsUID, plUID string) bool {
	for range 3 {
		if f.fs.Load() != fsUID || f.pl.Load() != plUID {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// cdObject is the metadata of an object as the flowcontrol API serves it.
type cdObject struct {
	Metadata struct {
		Name            string `json:"name"`
		UID             string `json:"uid"`
		Generation      int64  `json:"generation"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Spec struct {
		MatchingPrecedence         int `json:"matchingPrecedence"`
		PriorityLevelConfiguration struct {
			Name string `json:"name"`
		} `json:"priorityLevelConfiguration"`
	} `json:"spec"`
}

// object reads an object through the API; ok is false on 404.
func object(t *testing.T, s *e2eServer, resource, name string) (o cdObject, ok bool) {
	t.Helper()
	code, _, body := s.do(http.MethodGet, "/apis/flowcontrol.apiserver.k8s.io/v1/"+resource+"/"+name, adminToken, nil)
	switch code {
	case http.StatusNotFound:
		return o, false
	case http.StatusOK:
	default:
		t.Fatalf("GET %s/%s: %d %s", resource, name, code, body)
	}
	if err := json.Unmarshal(body, &o); err != nil {
		t.Fatal(err)
	}
	return o, true
}

// reloads reads the reload metrics from /metrics.
func reloads(t *testing.T, s *e2eServer) (failures, lastSuccess, failing float64) {
	t.Helper()
	code, _, body := s.do(http.MethodGet, "/metrics", adminToken, nil)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	found := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err == nil {
			found[name] = v
		}
	}
	for _, n := range []string{"apf_configuration_reload_failures_total", "apf_configuration_last_reload_success_timestamp_seconds", "apf_configuration_reload_error"} {
		if _, ok := found[n]; !ok {
			t.Fatalf("/metrics lacks %s", n)
		}
	}
	return found["apf_configuration_reload_failures_total"], found["apf_configuration_last_reload_success_timestamp_seconds"], found["apf_configuration_reload_error"]
}

// readyz returns /readyz?verbose's status and body.
func readyz(t *testing.T, s *e2eServer) (int, string) {
	t.Helper()
	code, _, body := s.do(http.MethodGet, "/readyz?verbose", "", nil)
	return code, string(body)
}

// The whole loop an operator lives, while requests flow: a FlowSchema
// added to the files classifies them, a change follows, a broken change
// is refused as a whole and says so everywhere while the last good
// configuration stays in force, its repair is taken, and a restart starts
// from the files alone.
func TestConfigDirWhileRequestsFlow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts apf serve")
	}
	dir := t.TempDir()
	writeAtomically(t, filepath.Join(dir, "level.yaml"), cdLevel)
	log := &cdLog{}
	srv := startFromFiles(t, dir, log)
	failures, firstSuccess, failing := reloads(t, srv)
	if failures != 0 || failing != 0 || firstSuccess < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Fatalf("after the first load: failures %v, error %v, last success %v", failures, failing, firstSuccess)
	}
	if code, body := readyz(t, srv); code != http.StatusOK || !strings.Contains(body, "[+]config-dir ok\n") {
		t.Fatalf("readyz %d:\n%s", code, body)
	}
	level, ok := object(t, srv, "prioritylevelconfigurations", "e2e-files")
	if !ok {
		t.Fatal("the level of the files is not served")
	}
	globalDefault, _ := object(t, srv, "flowschemas", "global-default")
	globalLevel, _ := object(t, srv, "prioritylevelconfigurations", "global-default")
	f := startFlow(t, srv)
	waitUntil(t, "bob's requests go to global-default", func() bool {
		return f.goesTo(globalDefault.Metadata.UID, globalLevel.Metadata.UID)
	})

	// Added: its FlowSchema classifies the requests.
	schema := filepath.Join(dir, "schema.yaml")
	writeAtomically(t, schema, cdSchema("e2e-files", 600))
	var devs cdObject
	waitUntil(t, "the new FlowSchema classifies bob's requests", func() bool {
		devs, ok = object(t, srv, "flowschemas", "e2e-devs")
		return ok && f.goesTo(devs.Metadata.UID, level.Metadata.UID)
	})
	if devs.Metadata.Generation != 1 {
		t.Errorf("new FlowSchema at generation %d", devs.Metadata.Generation)
	}

	// Changed: the generation grows, the uid stays, the requests follow.
	workloadLow, _ := object(t, srv, "prioritylevelconfigurations", "workload-low")
	writeAtomically(t, schema, cdSchema("workload-low", 650))
	waitUntil(t, "the changed FlowSchema sends bob's requests to workload-low", func() bool {
		return f.goesTo(devs.Metadata.UID, workloadLow.Metadata.UID)
	})
	changed, _ := object(t, srv, "flowschemas", "e2e-devs")
	if changed.Metadata.UID != devs.Metadata.UID || changed.Metadata.Generation != 2 || changed.Spec.MatchingPrecedence != 650 {
		t.Errorf("after the change: %+v", changed)
	}
	_, lastSuccess, _ := reloads(t, srv)

	// Broken three ways, one after the other: each is refused as a whole,
	// and the configuration of the last good files stays in force.
	good := cdSchema("workload-low", 650)
	for i, c := range []struct {
		name  string
		files map[string]string
		where string // in the log and in /readyz
	}{
		{"invalid YAML", map[string]string{"schema.yaml": good + "    - kind: [\n"}, "schema.yaml:22: yaml: line 22: "},
		{"invalid object", map[string]string{
			"schema.yaml": strings.Replace(good, "matchingPrecedence: 650", "matchingPrecedence: 20000", 1),
			// A valid object added with it is not taken either.
			"extra.yaml": strings.Replace(cdLevel, "name: e2e-files", "name: e2e-extra", 1),
		}, `schema.yaml:7: FlowSchema "e2e-devs": spec.matchingPrecedence: Invalid value: 20000: must not be greater than 10000`},
		{"duplicate", map[string]string{"schema.yaml": good, "copy.yaml": good}, `schema.yaml:1: FlowSchema "e2e-devs": defined again; first defined at ` + filepath.Join(dir, "copy.yaml") + ":1"},
	} {
		for name, content := range c.files {
			writeAtomically(t, filepath.Join(dir, name), content)
		}
		waitUntil(t, c.name+": the refusal counted", func() bool {
			n, _, _ := reloads(t, srv)
			return n == float64(i+1)
		})
		if _, last, failing := reloads(t, srv); failing != 1 || last != lastSuccess {
			t.Errorf("%s: reload error %v, last success %v (was %v)", c.name, failing, last, lastSuccess)
		}
		if !f.goesTo(devs.Metadata.UID, workloadLow.Metadata.UID) {
			t.Errorf("%s: the last good configuration is not in force", c.name)
		}
		if o, _ := object(t, srv, "flowschemas", "e2e-devs"); o.Metadata.ResourceVersion != changed.Metadata.ResourceVersion {
			t.Errorf("%s: e2e-devs was written: %+v", c.name, o)
		}
		if _, ok := object(t, srv, "prioritylevelconfigurations", "e2e-extra"); ok {
			t.Errorf("%s: part of a refused change taken", c.name)
		}
		// Still ready: a mistake in the files must not take the replica
		// out of its Service. The reason is on the check's line.
		code, body := readyz(t, srv)
		if code != http.StatusOK || !strings.Contains(body, "[+]config-dir ok: the configuration loaded at ") ||
			!strings.Contains(body, " stays in force; the files as they are now were refused: "+filepath.Join(dir, c.where)) {
			t.Errorf("%s: readyz %d:\n%s", c.name, code, body)
		}
		if logs := log.String(); !strings.Contains(logs, `msg="--config-dir: refused" problem="`+strings.ReplaceAll(filepath.Join(dir, c.where), `"`, `\"`)) ||
			!strings.Contains(logs, "the files were refused as a whole; the configuration loaded at ") {
			t.Errorf("%s: no log line names the problem at its line:\n%s", c.name, logs)
		}
	}

	// Repaired: taken again, the same objects as before.
	if err := os.Remove(filepath.Join(dir, "copy.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "extra.yaml")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the repaired files are taken", func() bool {
		_, _, failing := reloads(t, srv)
		return failing == 0
	})
	if n, last, _ := reloads(t, srv); n != 3 || last <= lastSuccess {
		t.Errorf("after the repair: %v failures, last success %v (before %v)", n, last, lastSuccess)
	}
	if code, body := readyz(t, srv); code != http.StatusOK || !strings.Contains(body, "[+]config-dir ok\n") {
		t.Errorf("readyz after the repair %d:\n%s", code, body)
	}
	if o, _ := object(t, srv, "flowschemas", "e2e-devs"); o.Metadata.UID != devs.Metadata.UID || o.Metadata.ResourceVersion != changed.Metadata.ResourceVersion {
		t.Errorf("the repair rewrote e2e-devs: %+v", o)
	}

	// Removed: the requests fall back on global-default.
	if err := os.Remove(schema); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "bob's requests go back to global-default", func() bool {
		return f.goesTo(globalDefault.Metadata.UID, globalLevel.Metadata.UID)
	})
	if _, ok := object(t, srv, "flowschemas", "e2e-devs"); ok {
		t.Error("e2e-devs still served after its file went")
	}
	f.stop()
	f.check(t)

	// A restart starts from the files alone.
	writeAtomically(t, schema, cdSchema("e2e-files", 600))
	srv.stop()
	srv = startFromFiles(t, dir, nil)
	again, ok := object(t, srv, "flowschemas", "e2e-devs")
	if !ok || again.Metadata.Generation != 1 || again.Spec.PriorityLevelConfiguration.Name != "e2e-files" {
		t.Fatalf("after a restart: %+v", again)
	}
	lvl, _ := object(t, srv, "prioritylevelconfigurations", "e2e-files")
	f = startFlow(t, srv)
	waitUntil(t, "after a restart the files' FlowSchema classifies bob's requests", func() bool {
		return f.goesTo(again.Metadata.UID, lvl.Metadata.UID)
	})
	f.stop()
	f.check(t)
}

// A ConfigMap is updated by swapping its ..data link: each version is
// taken as a whole, a key removed takes its objects with it, and nothing
// is read twice through the kubelet's hidden directories.
func TestConfigDirConfigMapSwap(t *testing.T) {
	if testing.Short() {
		t.Skip("starts apf serve")
	}
	dir := t.TempDir()
	version := 0
	publish := func(keys map[string]string) {
		t.Helper()
		version++
		ts := fmt.Sprintf("..2026_01_02_15_04_05.%09d", version)
		if err := os.Mkdir(filepath.Join(dir, ts), 0o755); err != nil {
			t.Fatal(err)
		}
		for k, v := range keys {
			if err := os.WriteFile(filepath.Join(dir, ts, k), []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(filepath.Join(dir, k)); errors.Is(err, os.ErrNotExist) {
				if err := os.Symlink(filepath.Join("..data", k), filepath.Join(dir, k)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.Symlink(ts, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
		// The kubelet then removes the links of keys that went, and the
		// old version's directory.
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if _, kept := keys[name]; !kept && !strings.HasPrefix(name, ".") {
				if err := os.Remove(filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
			}
			if strings.HasPrefix(name, "..2") && name != ts {
				if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	publish(map[string]string{"level.yaml": cdLevel, "schema.yaml": cdSchema("e2e-files", 600)})
	srv := startFromFiles(t, dir, nil)
	devs, ok := object(t, srv, "flowschemas", "e2e-devs")
	if !ok {
		t.Fatal("the ConfigMap's FlowSchema is not served")
	}
	level, _ := object(t, srv, "prioritylevelconfigurations", "e2e-files")
	f := startFlow(t, srv)
	waitUntil(t, "the ConfigMap's FlowSchema classifies bob's requests", func() bool {
		return f.goesTo(devs.Metadata.UID, level.Metadata.UID)
	})

	// Both keys change in one swap: the schema moves to workload-low and
	// the level it left goes.
	workloadLow, _ := object(t, srv, "prioritylevelconfigurations", "workload-low")
	publish(map[string]string{"schema.yaml": cdSchema("workload-low", 600)})
	waitUntil(t, "the swapped ConfigMap sends bob's requests to workload-low", func() bool {
		return f.goesTo(devs.Metadata.UID, workloadLow.Metadata.UID)
	})
	waitUntil(t, "the level of the removed key goes", func() bool {
		_, ok := object(t, srv, "prioritylevelconfigurations", "e2e-files")
		return !ok
	})
	if o, _ := object(t, srv, "flowschemas", "e2e-devs"); o.Metadata.UID != devs.Metadata.UID || o.Metadata.Generation != 2 {
		t.Errorf("after the swap: %+v", o)
	}
	// A watch from before the swap sees the change, as from etcd.
	code, _, body := srv.do(http.MethodGet, "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas?watch=true&timeoutSeconds=1&fieldSelector=metadata.name%3De2e-devs&resourceVersion="+
		devs.Metadata.ResourceVersion, adminToken, nil)
	if code != http.StatusOK || !strings.Contains(string(body), `{"type":"MODIFIED","object":{"kind":"FlowSchema"`) ||
		!strings.Contains(string(body), `"generation":2`) {
		t.Errorf("watch: %d %s", code, body)
	}
	if n, _, failing := reloads(t, srv); n != 0 || failing != 0 {
		t.Errorf("a swap counted as a failure: %v failures, error %v", n, failing)
	}
	f.stop()
	f.check(t)
}

// The flowcontrol API of a server configured from files is read-only:
// every write, through the API or kubectl's apply, edit, delete, patch and
// label, is refused with a 403 that says to change the files, and nothing
// changes; reads and kubectl get work as ever.
func TestConfigDirReadOnlyAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts apf serve and runs kubectl")
	}
	dir := t.TempDir()
	writeAtomically(t, filepath.Join(dir, "level.yaml"), cdLevel)
	writeAtomically(t, filepath.Join(dir, "schema.yaml"), cdSchema("e2e-files", 600))
	// A FlowSchema naming a level nobody defined: its Dangling condition
	// is kept in memory like the rest.
	writeAtomically(t, filepath.Join(dir, "dangling.yaml"), strings.Replace(strings.Replace(cdSchema("nowhere", 800), "name: e2e-devs", "name: e2e-dangling", 1), "name: devs", "name: nobody", 1))
	srv := startFromFiles(t, dir, nil)
	waitUntil(t, "e2e-dangling's Dangling condition is True", func() bool {
		code, _, body := srv.do(http.MethodGet, "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/e2e-dangling", adminToken, nil)
		return code == http.StatusOK && strings.Contains(string(body), `"type":"Dangling","status":"True"`)
	})
	before, _ := object(t, srv, "flowschemas", "e2e-devs")
	reason := readOnlyReason(dir)

	code, _, body := srv.do(http.MethodDelete, "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/e2e-devs", adminToken, nil)
	var st struct {
		Code    int    `json:"code"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(body, &st); err != nil || code != http.StatusForbidden || st.Code != 403 || st.Reason != "Forbidden" ||
		st.Message != `flowschemas.flowcontrol.apiserver.k8s.io "e2e-devs" is forbidden: `+reason {
		t.Errorf("DELETE: %d %s", code, body)
	}
	code, _, body = srv.do(http.MethodPost, "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations?dryRun=All", adminToken,
		[]byte(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"x"},"spec":{"type":"Limited","limited":{"limitResponse":{"type":"Reject"}}}}`))
	if code != http.StatusForbidden || !strings.Contains(string(body), "change the files instead") {
		t.Errorf("dry-run create: %d %s", code, body)
	}

	admin := newKubectl(t, srv, adminToken)
	out := admin.must("", "get", "flowschemas", "e2e-devs", "e2e-dangling")
	if rows := fields(out); len(rows) != 3 || rows[1][0] != "e2e-devs" || rows[1][1] != "e2e-files" || rows[1][5] != "False" ||
		rows[2][0] != "e2e-dangling" || rows[2][5] != "True" {
		t.Errorf("kubectl get:\n%s", out)
	}
	editor := filepath.Join(t.TempDir(), "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/matchingPrecedence: 600/matchingPrecedence: 601/' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBE_EDITOR", editor)
	applied := filepath.Join(t.TempDir(), "fs.yaml")
	if err := os.WriteFile(applied, []byte(cdSchema("workload-low", 600)), 0o644); err != nil {
		t.Fatal(err)
	}
	created := filepath.Join(t.TempDir(), "new.yaml")
	if err := os.WriteFile(created, []byte(strings.Replace(cdLevel, "name: e2e-files", "name: e2e-new", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"apply", "-f", applied},
		{"apply", "--server-side", "-f", applied},
		{"apply", "-f", created},
		{"create", "-f", created},
		{"edit", "flowschema", "e2e-devs"},
		{"delete", "flowschema", "e2e-devs"},
		{"delete", "prioritylevelconfigurations", "--all"},
		{"label", "flowschema", "e2e-devs", "team=x"},
		{"patch", "flowschema", "e2e-devs", "--type=merge", "-p", `{"spec":{"matchingPrecedence":700}}`},
		{"patch", "flowschema", "e2e-devs", "--subresource=status", "--type=merge", "-p", `{"status":{"conditions":[]}}`},
	} {
		out, ok := admin.run("", args...)
		// kubectl says "Error from server (Forbidden): ...", or for edit
		// "error: ... could not be patched: ...", then the Status.
		if ok || !strings.Contains(out, ` is forbidden: `+reason) {
			t.Errorf("kubectl %s: succeeded %v:\n%s", strings.Join(args, " "), ok, out)
		}
	}
	after, _ := object(t, srv, "flowschemas", "e2e-devs")
	if after.Metadata.ResourceVersion != before.Metadata.ResourceVersion {
		t.Errorf("e2e-devs changed: %+v, was %+v", after, before)
	}
	if _, ok := object(t, srv, "prioritylevelconfigurations", "e2e-new"); ok {
		t.Error("a level was created")
	}
}

// With etcd, the reload metrics follow the controller's digestion of the
// stored objects: an object it cannot use (here one written straight into
// etcd, past the API's validation) is a failure until it goes.
func TestReloadMetricsWithEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	opts := DefaultOptions()
	opts.DataDir = filepath.Join(t.TempDir(), "data")
	srv := startServer(t, opts)
	failures, first, failing := reloads(t, srv)
	if failures != 0 || failing != 0 || first < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Fatalf("at start: failures %v, error %v, last success %v", failures, failing, first)
	}
	// A change the controller digests and can use: a success.
	code, _, body := srv.do(http.MethodPost, "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations", adminToken,
		[]byte(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"e2e-ok"},"spec":{"type":"Limited","limited":{"limitResponse":{"type":"Reject"}}}}`))
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	waitUntil(t, "the change digested", func() bool {
		_, last, _ := reloads(t, srv)
		return last > first
	})
	// An object the controller cannot use.
	broken := []byte(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema",` +
		`"metadata":{"name":"e2e-broken","uid":"6c1ab0a4-56a4-4e55-9a49-4bd7c1a0c0de","generation":1},` +
		`"spec":{"priorityLevelConfiguration":{"name":"global-default"},"matchingPrecedence":20000}}`)
	ctx := context.Background()
	if _, err := srv.server.store.Create(ctx, store.ResourceFlowSchemas, "e2e-broken", broken); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the unusable object counted", func() bool {
		n, _, failing := reloads(t, srv)
		return n >= 1 && failing == 1
	})
	_, lastGood, _ := reloads(t, srv)
	if _, err := srv.server.store.Delete(ctx, store.ResourceFlowSchemas, "e2e-broken", 0); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the configuration usable again", func() bool {
		_, last, failing := reloads(t, srv)
		return failing == 0 && last > lastGood
	})
}

// Files that were never valid: the server holds and enforces the built-in
// objects, and is not ready, with the reason on the config-dir line of
// /readyz?verbose, until they are repaired.
func TestConfigDirNotReadyUntilLoaded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts apf serve")
	}
	dir := t.TempDir()
	broken := filepath.Join(dir, "schema.yaml")
	writeAtomically(t, broken, "kind: [\n")
	opts := DefaultOptions()
	opts.ConfigDir = dir
	opts.ConfigPollInterval = 20 * time.Millisecond
	opts.InsecureHTTP = true
	opts.Logger = slog.New(slog.DiscardHandler)
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(tokenFile), 0o600); err != nil {
		t.Fatal(err)
	}
	opts.Auth.TokenAuthFile = tokens
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Listen = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := New(ctx, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &e2eServer{t: t, url: "http://" + opts.Listen, server: srv, cancel: cancel, done: make(chan error, 1),
		client: &http.Client{Timeout: 30 * time.Second}}
	go func() { s.done <- srv.Run(ctx, ln, nil) }()
	t.Cleanup(s.stop)

	waitUntil(t, "/readyz answers", func() bool {
		code, _ := readyz(t, s)
		return code != 0
	})
	if code, body := readyz(t, s); code != http.StatusInternalServerError ||
		!strings.Contains(body, "[-]config-dir failed: no configuration has been loaded from "+dir+": "+broken+":1: yaml: ") ||
		!strings.Contains(body, "[+]poststarthook/priority-and-fairness-config-producer ok\n") {
		t.Fatalf("readyz %d:\n%s", code, body)
	}
	if _, ok := object(t, s, "flowschemas", "global-default"); !ok {
		t.Error("the built-in objects are not served")
	}
	if n, last, failing := reloads(t, s); n != 1 || last != 0 || failing != 1 {
		t.Errorf("metrics: %v failures, last success %v, error %v", n, last, failing)
	}
	writeAtomically(t, broken, cdSchema("workload-low", 600))
	waitUntil(t, "ready once the files are repaired", func() bool {
		code, _ := readyz(t, s)
		return code == http.StatusOK
	})
	if _, ok := object(t, s, "flowschemas", "e2e-devs"); !ok {
		t.Error("the repaired files are not served")
	}
}

// A check may show its failure's reason, and add a remark to its line
// when it passes; a reason or remark of several lines stays on the check's
// line. Other checks keep withholding theirs.
func TestHealthReasonAndRemark(t *testing.T) {
	var err error
	remark := ""
	h := &healthHandler{path: "/readyz", checks: []check{
		{name: "etcd", run: func(context.Context) error { return errors.New("secret") }},
		{name: "config-dir", showReason: true, run: func(context.Context) error { return err }, note: func() string { return remark }},
	}}
	get := func(target string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		return rec.Code, rec.Body.String()
	}
	err = errors.New("a.yaml:1: bad\nb.yaml:2: worse")
	if code, body := get("/readyz"); code != 500 || body != "[-]etcd failed: reason withheld\n[-]config-dir failed: a.yaml:1: bad; b.yaml:2: worse\nreadyz check failed\n" {
		t.Errorf("failing: %d %q", code, body)
	}
	err, remark = nil, "kept\nrefused"
	if code, body := get("/readyz?verbose&exclude=etcd"); code != 200 || body != "[+]etcd excluded: ok\n[+]config-dir ok: kept; refused\nreadyz check passed\n" {
		t.Errorf("passing with a remark: %d %q", code, body)
	}
	remark = ""
	if code, body := get("/readyz?verbose&exclude=etcd"); code != 200 || body != "[+]etcd excluded: ok\n[+]config-dir ok\nreadyz check passed\n" {
		t.Errorf("passing: %d %q", code, body)
	}
}

// The memory store of --config-dir keeps one period of history: what is
// older is compacted away, as the embedded etcd compacts its own.
func TestCompactMemory(t *testing.T) {
	mem := store.NewMemory()
	defer mem.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		compactMemory(ctx, mem, 10*time.Millisecond)
	}()
	defer func() {
		cancel()
		<-done
	}()
	first, err := mem.Create(ctx, store.ResourceFlowSchemas, "a", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Update(ctx, store.ResourceFlowSchemas, "a", []byte("2"), first); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the history before the update is compacted", func() bool {
		wctx, wcancel := context.WithCancel(ctx)
		defer wcancel()
		ev := <-mem.Watch(wctx, store.ResourceFlowSchemas, first-1)
		return errors.Is(ev.Err, store.ErrCompacted)
	})
}
