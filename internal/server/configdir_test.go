package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/api/store"
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

// startFromFiles runs apf serve with --config-dir dir, polled every 20 ms;
// with, when given, changes the options first.
func startFromFiles(t *testing.T, dir string, log *cdLog, with ...func(*Options)) *e2eServer {
	t.Helper()
	opts := DefaultOptions()
	opts.ConfigDir = dir
	opts.ConfigPollInterval = 20 * time.Millisecond
	opts.CertDir = t.TempDir()
	if log != nil {
		opts.Logger = slog.New(slog.NewTextHandler(log, nil))
	}
	for _, f := range with {
		f(&opts)
	}
	return startServer(t, opts)
}

// cdFiles is a directory of manifests published as git-sync publishes a
// checkout: each version is written whole into a directory of its own,
// and then the link the server reads (dir) is renamed over to point at
// it, so that a change appears at once however many files it touches. The
// server may read the directory at any moment; it never sees half a
// change. (Files written one by one into the directory the server reads
// would be seen half-way whenever the writer is held up for two polls.)
type cdFiles struct {
	t       *testing.T
	root    string // holds the versions and the link
	dir     string // the link, which the server reads
	files   map[string]string
	version int
	// visible, when set, is called whenever what the server reads has
	// changed.
	visible func()
}

func newCDFiles(t *testing.T, files map[string]string) *cdFiles {
	t.Helper()
	root := t.TempDir()
	c := &cdFiles{t: t, root: root, dir: filepath.Join(root, "flowcontrol"), files: map[string]string{}}
	c.change(files)
	return c
}

// change publishes a new version: the files of the last one, with set's
// written over them and those named in remove left out.
func (c *cdFiles) change(set map[string]string, remove ...string) {
	c.t.Helper()
	c.changeWith(nil, set, remove...)
}

// changeWith is change, with prepare, when given, called with the new
// version's directory once its files are written, before it is published.
func (c *cdFiles) changeWith(prepare func(dir string), set map[string]string, remove ...string) {
	c.t.Helper()
	maps.Copy(c.files, set)
	for _, name := range remove {
		delete(c.files, name)
	}
	c.version++
	v := fmt.Sprintf("v%d", c.version)
	if err := os.Mkdir(filepath.Join(c.root, v), 0o755); err != nil {
		c.t.Fatal(err)
	}
	for name, content := range c.files {
		if err := os.WriteFile(filepath.Join(c.root, v, name), []byte(content), 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
	if prepare != nil {
		prepare(filepath.Join(c.root, v))
	}
	// Older versions stay: a reader that listed one may still open its
	// files.
	tmp := filepath.Join(c.root, ".flowcontrol-"+v)
	if err := os.Symlink(v, tmp); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Rename(tmp, c.dir); err != nil {
		c.t.Fatal(err)
	}
	if c.visible != nil {
		c.visible()
	}
}

// statusGate stands between the notices that the configuration changed
// and the server's Dangling writer (Options.statusWakeups): while it is
// held, the writer is not woken, and the status writes a change calls for
// wait.
type statusGate struct {
	lock chan struct{}
	done chan struct{}
}

func newStatusGate(t *testing.T) *statusGate {
	g := &statusGate{lock: make(chan struct{}, 1), done: make(chan struct{})}
	t.Cleanup(func() { close(g.done) })
	return g
}

// wakeups is the server's Options.statusWakeups.
func (g *statusGate) wakeups(in <-chan struct{}) <-chan struct{} {
	out := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-g.done:
				return
			case <-in:
			}
			select {
			case <-g.done:
				return
			case g.lock <- struct{}{}: // waits while held
			}
			<-g.lock
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}()
	return out
}

func (g *statusGate) hold()    { g.lock <- struct{}{} }
func (g *statusGate) release() { <-g.lock }

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
	Status struct {
		Conditions []struct {
			Type, Status, Message string
		} `json:"conditions"`
	} `json:"status"`
}

// dangling returns a FlowSchema's Dangling condition: its status and
// message.
func (o cdObject) dangling() (status, message string) {
	for _, c := range o.Status.Conditions {
		if c.Type == "Dangling" {
			return c.Status, c.Message
		}
	}
	return "", ""
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

// readyz returns /readyz?verbose's status and body, as the holder of
// token ("" for an anonymous caller) reads it.
func readyz(t *testing.T, s *e2eServer, token string) (int, string) {
	t.Helper()
	code, _, body := s.do(http.MethodGet, "/readyz?verbose", token, nil)
	return code, string(body)
}

// checkWithheld fails the test when a /readyz?verbose body read by a
// caller who may not read the dumps (anonymous, or an ordinary user)
// names anything of the files: their directory, a file, an object, a
// field.
func checkWithheld(t *testing.T, who, body string, secrets ...string) {
	t.Helper()
	for _, secret := range secrets {
		if strings.Contains(body, secret) {
			t.Errorf("%s reads %q in /readyz?verbose:\n%s", who, secret, body)
		}
	}
}

// The whole loop an operator lives, while requests flow: a FlowSchema
// added to the files classifies them, a change follows, a broken change
// is refused as a whole and says so everywhere while the last good
// configuration stays in force, its repair is taken, and a restart starts
// from the files alone.
//
// Each change is published at once (cdFiles), and the status writes a
// change calls for are held back until the requests follow it, the latest
// they can land: the objects' resourceVersions are read once those writes
// are in.
func TestConfigDirWhileRequestsFlow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts apf serve")
	}
	files := newCDFiles(t, map[string]string{"level.yaml": cdLevel})
	dir := files.dir
	log := &cdLog{}
	gate := newStatusGate(t)
	srv := startFromFiles(t, dir, log, func(o *Options) { o.statusWakeups = gate.wakeups })
	failures, firstSuccess, failing := reloads(t, srv)
	if failures != 0 || failing != 0 || firstSuccess < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Fatalf("after the first load: failures %v, error %v, last success %v", failures, failing, firstSuccess)
	}
	if code, body := readyz(t, srv, ""); code != http.StatusOK || !strings.Contains(body, "[+]config-dir ok\n") {
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
	files.change(map[string]string{"schema.yaml": cdSchema("e2e-files", 600)})
	var devs cdObject
	waitUntil(t, "the new FlowSchema classifies bob's requests", func() bool {
		devs, ok = object(t, srv, "flowschemas", "e2e-devs")
		return ok && f.goesTo(devs.Metadata.UID, level.Metadata.UID)
	})
	if devs.Metadata.Generation != 1 {
		t.Errorf("new FlowSchema at generation %d", devs.Metadata.Generation)
	}

	// Changed: the generation grows, the uid stays, the requests follow.
	// The Dangling condition names the level, so the change calls for a
	// status write, held back until the requests follow the change; the
	// resourceVersion the refusals below must keep is the one after it.
	workloadLow, _ := object(t, srv, "prioritylevelconfigurations", "workload-low")
	gate.hold()
	files.change(map[string]string{"schema.yaml": cdSchema("workload-low", 650)})
	waitUntil(t, "the changed FlowSchema sends bob's requests to workload-low", func() bool {
		return f.goesTo(devs.Metadata.UID, workloadLow.Metadata.UID)
	})
	gate.release()
	var changed cdObject
	waitUntil(t, "e2e-devs's Dangling condition names workload-low", func() bool {
		changed, _ = object(t, srv, "flowschemas", "e2e-devs")
		status, message := changed.dangling()
		return status == "False" && strings.Contains(message, `"workload-low"`)
	})
	if changed.Metadata.UID != devs.Metadata.UID || changed.Metadata.Generation != 2 || changed.Spec.MatchingPrecedence != 650 {
		t.Errorf("after the change: %+v", changed)
	}
	_, lastSuccess, _ := reloads(t, srv)

	// Broken three ways, one after the other: each is refused as a whole,
	// and the configuration of the last good files stays in force.
	good := cdSchema("workload-low", 650)
	for i, c := range []struct {
		name   string
		files  map[string]string
		where  string // in the log and in /readyz
		object string // named in the problem
	}{
		{"invalid YAML", map[string]string{"schema.yaml": good + "    - kind: [\n"}, "schema.yaml:22: yaml: line 22: ", "schema.yaml"},
		{"invalid object", map[string]string{
			"schema.yaml": strings.Replace(good, "matchingPrecedence: 650", "matchingPrecedence: 20000", 1),
			// A valid object added with it is not taken either.
			"extra.yaml": strings.Replace(cdLevel, "name: e2e-files", "name: e2e-extra", 1),
		}, `schema.yaml:7: FlowSchema "e2e-devs": spec.matchingPrecedence: Invalid value: 20000: must not be greater than 10000`, "e2e-devs"},
		{"duplicate", map[string]string{"schema.yaml": good, "copy.yaml": good}, `schema.yaml:1: FlowSchema "e2e-devs": defined again; first defined at ` + filepath.Join(dir, "copy.yaml") + ":1", "e2e-devs"},
	} {
		files.change(c.files)
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
		// out of its Service. The reason is on the check's line for a
		// caller who may read the dumps; withheld from the others.
		code, body := readyz(t, srv, adminToken)
		if code != http.StatusOK || !strings.Contains(body, "[+]config-dir ok: the configuration loaded at ") ||
			!strings.Contains(body, " stays in force; the files as they are now were refused: "+filepath.Join(dir, c.where)) {
			t.Errorf("%s: readyz as an admin %d:\n%s", c.name, code, body)
		}
		for _, who := range []struct{ name, token string }{{"anonymous", ""}, {"a reader", readerToken}} {
			code, body := readyz(t, srv, who.token)
			if code != http.StatusOK || !strings.Contains(body, "[+]config-dir ok: the configuration loaded at ") ||
				!strings.Contains(body, " stays in force; the files as they are now were refused: reason withheld\n") {
				t.Errorf("%s: readyz as %s %d:\n%s", c.name, who.name, code, body)
			}
			checkWithheld(t, who.name, body, dir, c.object, "matchingPrecedence", "yaml")
		}
		if logs := log.String(); !strings.Contains(logs, `msg="--config-dir: refused" problem="`+strings.ReplaceAll(filepath.Join(dir, c.where), `"`, `\"`)) ||
			!strings.Contains(logs, "the files were refused as a whole; the configuration loaded at ") {
			t.Errorf("%s: no log line names the problem at its line:\n%s", c.name, logs)
		}
	}

	// Repaired: taken again, the same objects as before.
	files.change(nil, "copy.yaml", "extra.yaml")
	waitUntil(t, "the repaired files are taken", func() bool {
		_, _, failing := reloads(t, srv)
		return failing == 0
	})
	if n, last, _ := reloads(t, srv); n != 3 || last <= lastSuccess {
		t.Errorf("after the repair: %v failures, last success %v (before %v)", n, last, lastSuccess)
	}
	if code, body := readyz(t, srv, adminToken); code != http.StatusOK || !strings.Contains(body, "[+]config-dir ok\n") {
		t.Errorf("readyz after the repair %d:\n%s", code, body)
	}
	if o, _ := object(t, srv, "flowschemas", "e2e-devs"); o.Metadata.UID != devs.Metadata.UID || o.Metadata.ResourceVersion != changed.Metadata.ResourceVersion {
		t.Errorf("the repair rewrote e2e-devs: %+v", o)
	}

	// Removed: the requests fall back on global-default.
	files.change(nil, "schema.yaml")
	waitUntil(t, "bob's requests go back to global-default", func() bool {
		return f.goesTo(globalDefault.Metadata.UID, globalLevel.Metadata.UID)
	})
	if _, ok := object(t, srv, "flowschemas", "e2e-devs"); ok {
		t.Error("e2e-devs still served after its file went")
	}
	f.stop()
	f.check(t)

	// A restart starts from the files alone.
	files.change(map[string]string{"schema.yaml": cdSchema("e2e-files", 600)})
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

// A change of several files is taken whole, or refused whole, however the
// server's reads fall: here the server is made to read the directory and
// finish a reload each time what it reads has changed (cdFiles.visible),
// so that a change whose files appeared one at a time would be taken in
// parts. Each change gives exactly one reload, and no part of a refused
// change is taken.
func TestConfigDirChangeTakenWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("starts apf serve")
	}
	files := newCDFiles(t, map[string]string{"level.yaml": cdLevel, "schema.yaml": cdSchema("e2e-files", 600)})
	log := &cdLog{}
	srv := startFromFiles(t, files.dir, log)
	// outcomes counts the reloads that ended, as the log says.
	outcomes := func() int {
		logs := log.String()
		return strings.Count(logs, `msg="--config-dir: configuration reloaded from the files"`) +
			strings.Count(logs, `msg="--config-dir: the files were refused as a whole;`)
	}
	files.visible = func() {
		t.Helper()
		before := outcomes()
		waitUntil(t, "the server reloads what it reads", func() bool { return outcomes() > before })
	}
	good := cdSchema("e2e-files", 600)
	extra := strings.Replace(cdLevel, "name: e2e-files", "name: e2e-extra", 1)
	for _, c := range []struct {
		name    string
		set     map[string]string
		remove  []string
		refused bool
		extra   bool // e2e-extra served after the change
	}{
		{name: "an invalid schema with a valid level", set: map[string]string{
			"schema.yaml": strings.Replace(good, "matchingPrecedence: 600", "matchingPrecedence: 20000", 1),
			"extra.yaml":  extra,
		}, refused: true},
		{name: "the schema repaired and a copy of it", set: map[string]string{"schema.yaml": good, "copy.yaml": good}, refused: true},
		{name: "the copy and the extra level removed", remove: []string{"copy.yaml", "extra.yaml"}},
		{name: "a new level and a schema moved to it", set: map[string]string{
			"extra.yaml":  extra,
			"schema.yaml": cdSchema("e2e-extra", 600),
		}, extra: true},
	} {
		failuresBefore, _, _ := reloads(t, srv)
		before := outcomes()
		files.change(c.set, c.remove...)
		if n := outcomes() - before; n != 1 {
			t.Errorf("%s: %d reloads, want 1:\n%s", c.name, n, log.String())
		}
		failures, _, failing := reloads(t, srv)
		if refused := failures > failuresBefore; refused != c.refused || (failing == 1) != c.refused {
			t.Errorf("%s: refused %v (%v failures, error %v), want %v", c.name, refused, failures-failuresBefore, failing, c.refused)
		}
		if _, ok := object(t, srv, "prioritylevelconfigurations", "e2e-extra"); ok != c.extra {
			t.Errorf("%s: e2e-extra served: %v, want %v", c.name, ok, c.extra)
		}
	}
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
	// Both conditions written, so that no status write changes e2e-devs
	// after before is read.
	var before cdObject
	waitUntil(t, "e2e-dangling's Dangling condition is True and e2e-devs's False", func() bool {
		dangling, _ := object(t, srv, "flowschemas", "e2e-dangling")
		before, _ = object(t, srv, "flowschemas", "e2e-devs")
		s1, _ := dangling.dangling()
		s2, _ := before.dangling()
		return s1 == "True" && s2 == "False"
	})
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
		code, _ := readyz(t, s, "")
		return code != 0
	})
	if code, body := readyz(t, s, adminToken); code != http.StatusInternalServerError ||
		!strings.Contains(body, "[-]config-dir failed: no configuration has been loaded from "+dir+": "+broken+":1: yaml: ") ||
		!strings.Contains(body, "[+]poststarthook/priority-and-fairness-config-producer ok\n") {
		t.Fatalf("readyz as an admin %d:\n%s", code, body)
	}
	// Anyone else reads that it failed, not why, as from kube-apiserver.
	for _, who := range []struct{ name, token string }{{"anonymous", ""}, {"a reader", readerToken}} {
		for _, target := range []string{"/readyz", "/readyz?verbose", "/readyz/config-dir", "/healthz?verbose"} {
			code, _, b := s.do(http.MethodGet, target, who.token, nil)
			body := string(b)
			if code != http.StatusInternalServerError || !strings.Contains(body, "[-]config-dir failed: reason withheld\n") {
				t.Errorf("%s as %s: %d:\n%s", target, who.name, code, body)
			}
			checkWithheld(t, who.name, body, dir, "yaml")
		}
	}
	if _, ok := object(t, s, "flowschemas", "global-default"); !ok {
		t.Error("the built-in objects are not served")
	}
	if n, last, failing := reloads(t, s); n != 1 || last != 0 || failing != 1 {
		t.Errorf("metrics: %v failures, last success %v, error %v", n, last, failing)
	}
	writeAtomically(t, broken, cdSchema("workload-low", 600))
	waitUntil(t, "ready once the files are repaired", func() bool {
		code, _ := readyz(t, s, "")
		return code == http.StatusOK
	})
	if _, ok := object(t, s, "flowschemas", "e2e-devs"); !ok {
		t.Error("the repaired files are not served")
	}
}

// A check may show its failure's reason, and add a remark to its line
// when it passes, to a caller allowed to read them; everyone else reads
// "reason withheld" and the withheld remark, and the failure's reason is
// logged. A reason or remark of several lines stays on the check's line.
// Other checks withhold theirs from everyone. Whether the caller may read
// them is asked only when there is something to show.
func TestHealthReasonAndRemark(t *testing.T) {
	var err error
	remark, withheld := "", ""
	log := &cdLog{}
	asked := 0
	h := &healthHandler{path: "/readyz",
		checks: []check{
			{name: "etcd", run: func(context.Context) error { return errors.New("secret") }},
			{name: "config-dir", showReason: true, run: func(context.Context) error { return err },
				note: func() (string, string) { return remark, withheld }},
		},
		reasonsAllowed: func(r *http.Request) bool {
			asked++
			return r.Header.Get("Authorization") == "admin"
		},
		log: slog.New(slog.NewTextHandler(log, nil)),
	}
	get := func(target, who string) (int, string) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req.Header.Set("Authorization", who)
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	err = errors.New("a.yaml:1: bad\nb.yaml:2: worse")
	if code, body := get("/readyz", "admin"); code != 500 || body != "[-]etcd failed: reason withheld\n[-]config-dir failed: a.yaml:1: bad; b.yaml:2: worse\nreadyz check failed\n" {
		t.Errorf("failing, as an admin: %d %q", code, body)
	}
	if code, body := get("/readyz?verbose", ""); code != 500 || body != "[-]etcd failed: reason withheld\n[-]config-dir failed: reason withheld\nreadyz check failed\n" {
		t.Errorf("failing, as anyone: %d %q", code, body)
	}
	if logs := log.String(); strings.Count(logs, `msg="readyz check failed" check=etcd reason=secret`) != 2 ||
		strings.Count(logs, `msg="readyz check failed" check=config-dir reason="a.yaml:1: bad\nb.yaml:2: worse"`) != 2 {
		t.Errorf("the reasons are not logged:\n%s", logs)
	}
	err, remark, withheld = nil, "kept\nrefused: a.yaml", "kept; refused: reason withheld"
	if code, body := get("/readyz?verbose&exclude=etcd", "admin"); code != 200 || body != "[+]etcd excluded: ok\n[+]config-dir ok: kept; refused: a.yaml\nreadyz check passed\n" {
		t.Errorf("passing with a remark, as an admin: %d %q", code, body)
	}
	if code, body := get("/readyz?verbose&exclude=etcd", ""); code != 200 || body != "[+]etcd excluded: ok\n[+]config-dir ok: kept; refused: reason withheld\nreadyz check passed\n" {
		t.Errorf("passing with a remark, as anyone: %d %q", code, body)
	}
	remark, withheld = "", ""
	asked = 0
	if code, body := get("/readyz?verbose&exclude=etcd", ""); code != 200 || body != "[+]etcd excluded: ok\n[+]config-dir ok\nreadyz check passed\n" {
		t.Errorf("passing: %d %q", code, body)
	}
	if asked != 0 {
		t.Errorf("the authorizer was asked %d times with nothing to show", asked)
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

// Readiness never waits on a reload: while one is held in progress (in
// Options.configDirBeforeRead, with the reload's lock taken), /readyz and
// /readyz/config-dir answer, from the state the last reload published. A
// manifest over the size limit (a sparse file of 256 MiB) is refused like
// any bad file, without being read: the log names it, the failure is
// counted, /readyz?verbose shows it to an admin and withholds it from
// anyone else, the last good configuration stays in force, and the
// process's heap does not grow by the file's size.
func TestConfigDirReadyzDuringReload(t *testing.T) {
	if testing.Short() {
		t.Skip("starts apf serve")
	}
	files := newCDFiles(t, map[string]string{"level.yaml": cdLevel, "schema.yaml": cdSchema("e2e-files", 600)})
	log := &cdLog{}
	var holding atomic.Bool
	entered, release := make(chan struct{}, 1), make(chan struct{})
	srv := startFromFiles(t, files.dir, log, func(o *Options) {
		o.configDirBeforeRead = func() {
			if holding.Load() {
				select {
				case entered <- struct{}{}:
				default:
				}
				<-release
			}
		}
	})
	released := false
	releaseOnce := func() {
		if !released {
			released = true
			holding.Store(false)
			close(release)
		}
	}
	t.Cleanup(releaseOnce)

	holding.Store(true)
	files.change(map[string]string{"schema.yaml": cdSchema("workload-low", 600)})
	select { // a reload is under way, and stays so until released
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no reload began within 30 s")
	}
	for _, target := range []string{"/readyz", "/readyz?verbose", "/readyz/config-dir", "/healthz"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.url+target, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.client.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("%s while a reload is under way: %v", target, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s while a reload is under way: %d %s", target, resp.StatusCode, body)
		}
	}
	releaseOnce()
	waitUntil(t, "the held reload ends", func() bool {
		o, _ := object(t, srv, "flowschemas", "e2e-devs")
		return o.Spec.PriorityLevelConfiguration.Name == "workload-low"
	})

	// An oversized manifest, beside the good files.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	files.changeWith(func(dir string) {
		big := filepath.Join(dir, "big.yaml")
		if err := os.WriteFile(big, []byte("apiVersion: flowcontrol.apiserver.k8s.io/v1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(big, 256<<20); err != nil {
			t.Fatal(err)
		}
	}, nil)
	waitUntil(t, "the oversized file refused", func() bool {
		n, _, failing := reloads(t, srv)
		return n == 1 && failing == 1
	})
	runtime.ReadMemStats(&after)
	problem := filepath.Join(files.dir, "big.yaml") + ": too large: 268435456 bytes, more than the 3145728 a manifest file may hold"
	if logs := log.String(); !strings.Contains(logs, `msg="--config-dir: refused" problem="`+problem+`"`) {
		t.Errorf("no log line names the oversized file:\n%s", logs)
	}
	if code, body := readyz(t, srv, adminToken); code != http.StatusOK || !strings.Contains(body, "the files as they are now were refused: "+problem+"\n") {
		t.Errorf("readyz as an admin %d:\n%s", code, body)
	}
	code, body := readyz(t, srv, "")
	if code != http.StatusOK || !strings.Contains(body, "the files as they are now were refused: reason withheld\n") {
		t.Errorf("readyz as anyone %d:\n%s", code, body)
	}
	checkWithheld(t, "anonymous", body, files.dir, "big.yaml", "too large")
	if o, _ := object(t, srv, "flowschemas", "e2e-devs"); o.Spec.PriorityLevelConfiguration.Name != "workload-low" {
		t.Errorf("the last good configuration is not in force: %+v", o)
	}
	// The heap obtained from the system never shrinks, so it shows a
	// peak however short: a file read whole would add its 256 MiB.
	if grown := int64(after.HeapSys) - int64(before.HeapSys); grown > 128<<20 {
		t.Errorf("the heap grew by %d MiB while a 256 MiB file was refused", grown>>20)
	}
}
