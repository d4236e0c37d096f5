package configdir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/internal/api/maintain"
	"github.com/apfproject/apf/internal/api/registry"
	"github.com/apfproject/apf/internal/api/store"
)

const level = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: batch
  labels: {team: data}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 5
    limitResponse:
      type: Queue
      queuing: {queues: 8, handSize: 2, queueLengthLimit: 10}
`

// schema is in v1beta3, as an older checkout may hold it.
const schema = `apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: FlowSchema
metadata:
  name: batch-jobs
spec:
  priorityLevelConfiguration: {name: batch}
  matchingPrecedence: 700
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects:
    - kind: Group
      group: {name: batch}
    nonResourceRules:
    - verbs: ["*"]
      nonResourceURLs: ["*"]
`

type env struct {
	t    *testing.T
	dir  string
	mem  *store.Memory
	reg  *registry.Registry
	s    *Syncer
	logs *syncBuffer
	// outcomes are what OnReload heard.
	mu       sync.Mutex
	outcomes []error
	// beforeRead, when set, is called by every reload before it reads.
	beforeRead func()
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func newEnv(t *testing.T, tick <-chan time.Time) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), mem: store.NewMemory(), logs: &syncBuffer{}}
	e.reg = registry.New(e.mem, registry.Options{})
	e.s = New(e.reg, Options{
		Dir:    e.dir,
		Tick:   tick,
		Logger: slog.New(slog.NewTextHandler(e.logs, nil)),
		OnReload: func(err error) {
			e.mu.Lock()
			e.outcomes = append(e.outcomes, err)
			e.mu.Unlock()
		},
		BeforeRead: func() {
			if e.beforeRead != nil {
				e.beforeRead()
			}
		},
	})
	t.Cleanup(func() { _ = e.mem.Close() })
	return e
}

func (e *env) write(name, content string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) remove(name string) {
	e.t.Helper()
	if err := os.Remove(filepath.Join(e.dir, name)); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) reload() error {
	e.t.Helper()
	return e.s.Reload(context.Background())
}

func (e *env) mustReload() {
	e.t.Helper()
	if err := e.reload(); err != nil {
		e.t.Fatalf("reload: %v", err)
	}
}

func (e *env) get(res store.Resource, name string) (config.Object, bool) {
	e.t.Helper()
	o, err := e.reg.Get(context.Background(), res, name)
	if apierrors.IsNotFound(err) {
		return config.Object{}, false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return o, true
}

func (e *env) revision() int64 {
	e.t.Helper()
	rev, err := e.mem.Revision(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return rev
}

func rvOf(t *testing.T, o config.Object) int64 {
	t.Helper()
	rv, err := strconv.ParseInt(o.FlowSchema.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return rv
}

func (e *env) lastOutcome() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.outcomes) == 0 {
		e.t.Fatal("OnReload never called")
	}
	return e.outcomes[len(e.outcomes)-1]
}

// The files are layered over the built-in objects and kept with the
// metadata a server owns: a uid that stays while the object does, a
// generation that counts spec changes, a resourceVersion that grows, and
// no write at all when nothing changed.
func TestReloadKeepsMetadata(t *testing.T) {
	e := newEnv(t, nil)
	e.write("level.yaml", level)
	e.write("schema.yaml", schema)
	e.mustReload()
	select {
	case <-e.s.Initialized():
	default:
		t.Fatal("not initialized after a good reload")
	}
	if st := e.s.Status(); !st.Loaded || st.Err != nil || st.Describe(e.dir) != "" {
		t.Fatalf("status %+v", st)
	}
	for _, fs := range bootstrap.FlowSchemas() {
		o, ok := e.get(store.ResourceFlowSchemas, fs.Name)
		if !ok {
			t.Fatalf("built-in FlowSchema %s missing", fs.Name)
		}
		if m := o.FlowSchema.ManagedFields; len(m) != 1 || m[0].Manager != maintain.ProducerFieldManager {
			t.Errorf("%s managed by %+v", fs.Name, m)
		}
	}
	fs, ok := e.get(store.ResourceFlowSchemas, "batch-jobs")
	if !ok {
		t.Fatal("batch-jobs not stored")
	}
	if m := fs.FlowSchema.ManagedFields; len(m) != 1 || m[0].Manager != FieldManager || m[0].APIVersion != "flowcontrol.apiserver.k8s.io/v1beta3" {
		t.Errorf("batch-jobs managed fields %+v: want %s, in the file's version", m, FieldManager)
	}
	uid, gen := fs.FlowSchema.UID, fs.FlowSchema.Generation
	if uid == "" || gen != 1 {
		t.Fatalf("uid %q generation %d", uid, gen)
	}

	// Nothing changed: nothing is written.
	rev := e.revision()
	e.write("schema.yaml", "# a comment\n"+schema)
	e.mustReload()
	if e.revision() != rev {
		t.Error("a reload that changed no object wrote")
	}

	// A label: same uid and generation, a new resourceVersion.
	e.write("schema.yaml", strings.Replace(schema, "name: batch-jobs", "name: batch-jobs\n  labels: {tier: low}", 1))
	e.mustReload()
	fs2, _ := e.get(store.ResourceFlowSchemas, "batch-jobs")
	if fs2.FlowSchema.UID != uid || fs2.FlowSchema.Generation != gen || fs2.FlowSchema.Labels["tier"] != "low" ||
		rvOf(t, fs2) <= rvOf(t, fs) {
		t.Errorf("after a label change: uid %s gen %d rv %s labels %v", fs2.FlowSchema.UID, fs2.FlowSchema.Generation, fs2.FlowSchema.ResourceVersion, fs2.FlowSchema.Labels)
	}

	// The spec: the generation grows.
	e.write("schema.yaml", strings.Replace(schema, "matchingPrecedence: 700", "matchingPrecedence: 650", 1))
	e.mustReload()
	fs3, _ := e.get(store.ResourceFlowSchemas, "batch-jobs")
	if fs3.FlowSchema.UID != uid || fs3.FlowSchema.Generation != gen+1 || fs3.FlowSchema.Spec.MatchingPrecedence != 650 {
		t.Errorf("after a spec change: uid %s gen %d precedence %d", fs3.FlowSchema.UID, fs3.FlowSchema.Generation, fs3.FlowSchema.Spec.MatchingPrecedence)
	}
	if len(fs3.FlowSchema.Labels) != 0 {
		t.Errorf("labels the file dropped kept: %v", fs3.FlowSchema.Labels)
	}

	// Gone from the files: deleted, the schema before its level; back: a
	// new object.
	e.remove("schema.yaml")
	e.remove("level.yaml")
	e.mustReload()
	if _, ok := e.get(store.ResourceFlowSchemas, "batch-jobs"); ok {
		t.Error("batch-jobs kept after its file went")
	}
	if _, ok := e.get(store.ResourcePriorityLevels, "batch"); ok {
		t.Error("batch kept after its file went")
	}
	e.write("level.yaml", level)
	e.write("schema.yaml", schema)
	e.mustReload()
	fs4, _ := e.get(store.ResourceFlowSchemas, "batch-jobs")
	if fs4.FlowSchema.UID == uid || fs4.FlowSchema.Generation != 1 {
		t.Errorf("re-created with uid %s generation %d", fs4.FlowSchema.UID, fs4.FlowSchema.Generation)
	}
	if !strings.Contains(e.logs.String(), "created=2") || !strings.Contains(e.logs.String(), "deleted=2") {
		t.Errorf("the log does not count the writes:\n%s", e.logs)
	}
}

// What a server owns is ignored when a file holds it, as the output of
// kubectl get -o yaml does; a file may replace a suggested object and
// retune the exempt level's shares.
func TestServerOwnedFieldsIgnored(t *testing.T) {
	e := newEnv(t, nil)
	e.write("saved.yaml", `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: global-default
  uid: 0d6e6b52-0000-4000-8000-000000000000
  resourceVersion: "12345"
  generation: 7
  creationTimestamp: "2020-01-01T00:00:00Z"
  managedFields:
  - manager: someone
    operation: Update
    apiVersion: flowcontrol.apiserver.k8s.io/v1
spec:
  priorityLevelConfiguration: {name: workload-low}
  matchingPrecedence: 9900
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects:
    - kind: Group
      group: {name: system:unauthenticated}
    nonResourceRules:
    - verbs: ["*"]
      nonResourceURLs: ["*"]
status:
  conditions:
  - type: Dangling
    status: "True"
    reason: NotFound
    message: stale
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: exempt}
spec:
  type: Exempt
  exempt: {nominalConcurrencyShares: 3}
`)
	e.mustReload()
	fs, _ := e.get(store.ResourceFlowSchemas, "global-default")
	m := fs.FlowSchema.ObjectMeta
	if m.UID == "0d6e6b52-0000-4000-8000-000000000000" || m.Generation != 1 || m.CreationTimestamp.Year() == 2020 ||
		len(m.ManagedFields) != 1 || m.ManagedFields[0].Manager != FieldManager || len(fs.FlowSchema.Status.Conditions) != 0 {
		t.Errorf("server-owned fields taken from the file: %+v status %+v", m, fs.FlowSchema.Status)
	}
	if fs.FlowSchema.Spec.PriorityLevelConfiguration.Name != "workload-low" {
		t.Errorf("the suggested global-default not replaced: %+v", fs.FlowSchema.Spec)
	}
	pl, _ := e.get(store.ResourcePriorityLevels, "exempt")
	if s := pl.PriorityLevel.Spec.Exempt.NominalConcurrencyShares; s == nil || *s != 3 {
		t.Errorf("exempt shares %v", s)
	}
}

// A change that does not decode, does not validate or defines an object
// twice is refused as a whole, at file:line: the registry keeps the last
// good configuration, the log and OnReload say so, and the repair is
// taken.
func TestRefusedWhole(t *testing.T) {
	e := newEnv(t, nil)
	e.write("level.yaml", level)
	e.write("schema.yaml", schema)
	e.mustReload()
	good, _ := e.get(store.ResourceFlowSchemas, "batch-jobs")
	rev := e.revision()

	for _, c := range []struct {
		name  string
		files map[string]string
		where string // file:line in the error
		why   string
	}{
		{"invalid YAML", map[string]string{"schema.yaml": schema + "  - kind: [\n"}, "schema.yaml:", "yaml"},
		{"invalid object", map[string]string{
			"schema.yaml": strings.Replace(schema, "matchingPrecedence: 700", "matchingPrecedence: 70000", 1),
			"new.yaml":    strings.Replace(level, "name: batch", "name: other", 1),
		}, "schema.yaml:7", "spec.matchingPrecedence"},
		{"duplicate", map[string]string{"copy.yaml": schema}, "defined again; first defined at ", "copy.yaml:1"},
		{"mandatory object changed", map[string]string{"catch-all.yaml": `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: catch-all}
spec:
  priorityLevelConfiguration: {name: batch}
  matchingPrecedence: 10000
`}, "catch-all.yaml:", "catch-all"},
	} {
		var written []string
		for name, content := range c.files {
			if _, err := os.Stat(filepath.Join(e.dir, name)); err != nil {
				written = append(written, name)
			}
			e.write(name, content)
		}
		err := e.reload()
		if err == nil || !strings.Contains(err.Error(), c.where) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: refusal %v\nwant %q and %q", c.name, err, c.where, c.why)
		}
		if e.revision() != rev {
			t.Errorf("%s: the registry was written", c.name)
		}
		if _, ok := e.get(store.ResourcePriorityLevels, "other"); ok {
			t.Errorf("%s: part of a refused change taken", c.name)
		}
		st := e.s.Status()
		if !st.Loaded || st.Err == nil || !strings.Contains(st.Describe(e.dir), "stays in force; the files as they are now were refused: ") ||
			strings.Contains(st.Describe(e.dir), "\n") {
			t.Errorf("%s: status %q", c.name, st.Describe(e.dir))
		}
		if e.lastOutcome() == nil {
			t.Errorf("%s: OnReload heard no failure", c.name)
		}
		logs := e.logs.String()
		if !strings.Contains(logs, "--config-dir: refused") || !strings.Contains(logs, c.where) ||
			!strings.Contains(logs, "the files were refused as a whole; the configuration loaded at ") {
			t.Errorf("%s: log:\n%s", c.name, logs)
		}
		// Repaired: taken again.
		for _, name := range written {
			e.remove(name)
		}
		e.write("schema.yaml", schema)
		e.mustReload()
		if st := e.s.Status(); st.Err != nil || e.lastOutcome() != nil {
			t.Errorf("%s: after the repair: %+v", c.name, st)
		}
		if fs, _ := e.get(store.ResourceFlowSchemas, "batch-jobs"); fs.FlowSchema.UID != good.FlowSchema.UID {
			t.Errorf("%s: the object was replaced", c.name)
		}
		rev = e.revision()
	}
}

// Files never valid: the registry holds the built-in objects (and is
// initialized with them), the status says nothing was loaded from the
// files until they are repaired.
func TestFirstLoadRefused(t *testing.T) {
	e := newEnv(t, nil)
	e.write("schema.yaml", "kind: [")
	if e.reload() == nil {
		t.Fatal("broken files taken")
	}
	if _, ok := e.get(store.ResourceFlowSchemas, "global-default"); !ok {
		t.Error("the built-in objects were not stored")
	}
	st := e.s.Status()
	if st.Loaded || !strings.HasPrefix(st.Describe(e.dir), "no configuration has been loaded from "+e.dir+": "+filepath.Join(e.dir, "schema.yaml")+":1") {
		t.Errorf("status %q", st.Describe(e.dir))
	}
	if !strings.Contains(e.logs.String(), "the built-in configuration stays in force until the files are valid") {
		t.Errorf("log:\n%s", e.logs)
	}
	select {
	case <-e.s.Initialized():
	default:
		t.Fatal("the built-in configuration stored, not initialized")
	}
	e.write("schema.yaml", schema)
	e.write("level.yaml", level)
	e.mustReload()
	if st := e.s.Status(); !st.Loaded || st.Err != nil {
		t.Errorf("after the repair: %+v", st)
	}
	if _, ok := e.get(store.ResourceFlowSchemas, "batch-jobs"); !ok {
		t.Error("the repaired files not taken")
	}
}

// Run follows the directory: a change is taken at the next poll, a poll
// that finds nothing new writes nothing, and a ConfigMap's ..data swap is
// a change.
func TestRunFollowsConfigMap(t *testing.T) {
	tick := make(chan time.Time)
	e := newEnv(t, tick)
	// A ConfigMap mount: ..data links to the current version's directory.
	version := 0
	publish := func(keys map[string]string) {
		version++
		ts := filepath.Join(e.dir, "..2026_01_02_15_04_05.00000000"+string(rune('0'+version)))
		if err := os.Mkdir(ts, 0o755); err != nil {
			t.Fatal(err)
		}
		for k, v := range keys {
			if err := os.WriteFile(filepath.Join(ts, k), []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(filepath.Join(e.dir, k)); errors.Is(err, os.ErrNotExist) {
				if err := os.Symlink(filepath.Join("..data", k), filepath.Join(e.dir, k)); err != nil {
					t.Fatal(err)
				}
			}
		}
		tmp := filepath.Join(e.dir, "..data_tmp")
		if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(e.dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	publish(map[string]string{"level.yaml": level, "schema.yaml": schema})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.s.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	<-e.s.Initialized()
	if _, ok := e.get(store.ResourceFlowSchemas, "batch-jobs"); !ok {
		t.Fatal("the mounted files not taken")
	}
	rev := e.revision()
	tick <- time.Time{}
	tick <- time.Time{} // the first poll is over once the second is taken
	if e.revision() != rev {
		t.Error("polls that found nothing new wrote")
	}

	publish(map[string]string{"level.yaml": level, "schema.yaml": strings.Replace(schema, "matchingPrecedence: 700", "matchingPrecedence: 600", 1)})
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case tick <- time.Time{}:
		case <-time.After(10 * time.Millisecond):
		}
		if fs, _ := e.get(store.ResourceFlowSchemas, "batch-jobs"); fs.FlowSchema.Spec.MatchingPrecedence == 600 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the swapped ConfigMap not taken within 10 s")
		}
	}
	if fs, _ := e.get(store.ResourceFlowSchemas, "batch-jobs"); fs.FlowSchema.Generation != 2 {
		t.Errorf("generation %d after one spec change", fs.FlowSchema.Generation)
	}
}

// Status does not wait for a reload in progress: it answers with what the
// last reload to end published, and with the new outcome once the reload
// ends.
func TestStatusDuringReload(t *testing.T) {
	e := newEnv(t, nil)
	e.write("level.yaml", level)
	e.write("schema.yaml", schema)
	e.mustReload()
	loaded := e.s.Status()

	entered, release := make(chan struct{}), make(chan struct{})
	e.beforeRead = func() {
		entered <- struct{}{}
		<-release
	}
	e.write("schema.yaml", "kind: [")
	reloaded := make(chan error, 1)
	go func() { reloaded <- e.reload() }()
	<-entered // the reload is under way, its lock taken
	got := make(chan Status, 1)
	go func() { got <- e.s.Status() }()
	select {
	case st := <-got:
		if st != loaded {
			t.Errorf("status during the reload %+v, want %+v", st, loaded)
		}
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("Status waited for the reload")
	}
	close(release)
	if err := <-reloaded; err == nil {
		t.Fatal("broken files taken")
	}
	if st := e.s.Status(); !st.Loaded || st.Err == nil || st.LoadedAt != loaded.LoadedAt {
		t.Errorf("status after the refusal %+v", st)
	}
}

// A manifest over config.MaxManifestFileBytes (a sparse file of 256 MiB)
// is refused like any bad file, without being read: the reload's
// allocations stay far below its size, the problem names the file and
// the limit, and the configuration in force stays. Files within the
// limit each but over config.MaxManifestDirBytes together are refused
// too, at the file that passes the limit.
func TestOversizedFilesRefused(t *testing.T) {
	e := newEnv(t, nil)
	e.write("level.yaml", level)
	e.write("schema.yaml", schema)
	e.mustReload()
	sparse := func(name string, size int64) string {
		p := e.write(name, "apiVersion: flowcontrol.apiserver.k8s.io/v1\n")
		if err := os.Truncate(p, size); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := sparse("big.yaml", 256<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := e.reload()
	runtime.ReadMemStats(&after)
	want := big + ": too large: 268435456 bytes, more than the 3145728 a manifest file may hold"
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, config.ErrManifestTooLarge) {
		t.Fatalf("reload: %v; want %q", err, want)
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 32<<20 {
		t.Errorf("refusing a 256 MiB file allocated %d MiB", grown>>20)
	}
	if st := e.s.Status(); !st.Loaded || !strings.Contains(st.Describe(e.dir), want) {
		t.Errorf("status %q", st.Describe(e.dir))
	}
	if !strings.Contains(e.logs.String(), `msg="--config-dir: refused" problem="`+want+`"`) {
		t.Errorf("log:\n%s", e.logs)
	}
	if _, ok := e.get(store.ResourceFlowSchemas, "batch-jobs"); !ok {
		t.Error("the configuration in force was dropped")
	}
	e.remove("big.yaml")

	// Four files at the limit, after the two small ones: the fourth
	// passes the limit of them all.
	for i := range 4 {
		sparse(fmt.Sprintf("z%d.yaml", i), config.MaxManifestFileBytes)
	}
	err = e.reload()
	want = fmt.Sprintf("%s: too large: with its 3145728 bytes the manifest files read come to %d, more than the 12582912 they may hold together",
		filepath.Join(e.dir, "z3.yaml"), len(level)+len(schema)+4*config.MaxManifestFileBytes)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("reload: %v; want %q", err, want)
	}
}
