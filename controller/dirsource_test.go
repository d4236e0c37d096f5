package controller

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apfproject/apf/config"
)

const dirLevel = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: %s}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10
    limitResponse: {type: Reject}
`

func level1(name string) string { return strings.Replace(dirLevel, "%s", name, 1) }

// polls runs n polls of d's Watch and reports whether they called
// changed.
func polls(t *testing.T, d *DirSource, n int) bool {
	t.Helper()
	var changed atomic.Bool
	w := watch(t, d, func() { changed.Store(true) })
	for range n {
		w.poll()
	}
	w.stop()
	return changed.Load()
}

// watcher runs d's Watch one poll at a time.
type watcher struct {
	tick   chan time.Time
	polled chan struct{}
	stop   func()
}

func watch(t *testing.T, d *DirSource, changed func()) *watcher {
	t.Helper()
	w := &watcher{tick: make(chan time.Time), polled: make(chan struct{})}
	d.Tick = w.tick
	d.afterPoll = func() { w.polled <- struct{}{} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Watch(ctx, changed)
	}()
	w.stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(w.stop)
	return w
}

// poll runs one poll and waits for its end.
func (w *watcher) poll() {
	w.tick <- time.Time{}
	<-w.polled
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func names(objs []config.Object) string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Name())
	}
	return strings.Join(out, ",")
}

// A change that leaves the file's name, size and modification time as
// they were is seen: the digest is of the contents.
func TestDirSourceDigestSeesContent(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "a.yaml")
	writeFile(t, f, level1("aaaa"))
	d := NewDirSource(dir, time.Hour)
	objs, err := d.Objects()
	if err != nil || names(objs) != "aaaa" {
		t.Fatalf("%s, %v", names(objs), err)
	}
	if polls(t, d, 3) {
		t.Fatal("a change reported for a directory that did not change")
	}
	fi, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, f, level1("bbbb"))
	if err := os.Chtimes(f, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if !polls(t, d, 2) {
		t.Fatal("a change of contents alone not reported")
	}
	if objs, err = d.Objects(); err != nil || names(objs) != "bbbb" {
		t.Fatalf("%s, %v", names(objs), err)
	}
	if polls(t, d, 3) {
		t.Fatal("a change reported again after it was read")
	}
}

// swapConfigMap writes a new version of a mounted ConfigMap's data as the
// kubelet does: a new hidden directory, links for new keys, then ..data
// replaced in one rename, then the links of removed keys deleted.
func swapConfigMap(t *testing.T, dir, version string, keys map[string]string) {
	t.Helper()
	ts := "..2026_01_02_15_04_05." + version
	for k, v := range keys {
		writeFile(t, filepath.Join(dir, ts, k), v)
		link := filepath.Join(dir, k)
		if _, err := os.Lstat(link); errors.Is(err, os.ErrNotExist) {
			if err := os.Symlink(filepath.Join("..data", k), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// A mounted ConfigMap is read once per key, and the swap of its ..data
// link is a change.
func TestDirSourceConfigMapSwap(t *testing.T) {
	dir := t.TempDir()
	swapConfigMap(t, dir, "1", map[string]string{"a.yaml": level1("one"), "b.yaml": level1("two")})
	d := &DirSource{Dir: dir, Recursive: true}
	objs, err := d.Objects()
	if err != nil || names(objs) != "one,two" {
		t.Fatalf("%s, %v", names(objs), err)
	}
	// The new version removes b.yaml: its link points at nothing until
	// the kubelet removes it, and it is not an error meanwhile.
	swapConfigMap(t, dir, "2", map[string]string{"a.yaml": level1("three")})
	if !polls(t, d, 2) {
		t.Fatal("the swap of ..data not reported")
	}
	if objs, err = d.Objects(); err != nil || names(objs) != "three" {
		t.Fatalf("after the swap: %s, %v", names(objs), err)
	}
}

// A change is reported once it has stayed for a poll: a file emptied
// before its new contents are written is not taken for the
// configuration.
func TestDirSourceWaitsForChangesToSettle(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "a.yaml")
	writeFile(t, f, level1("old"))
	d := NewDirSource(dir, time.Hour)
	if _, err := d.Objects(); err != nil {
		t.Fatal(err)
	}
	var changes atomic.Int32
	w := watch(t, d, func() { changes.Add(1) })
	writeFile(t, f, "")
	w.poll() // sees the emptied file
	writeFile(t, f, level1("new"))
	w.poll() // sees the new contents
	if changes.Load() != 0 {
		t.Fatal("a change reported before it settled")
	}
	w.poll() // the same again: settled
	if changes.Load() != 1 {
		t.Fatal("the settled change not reported")
	}
	if objs, err := d.Objects(); err != nil || names(objs) != "new" {
		t.Fatalf("%s, %v", names(objs), err)
	}
	w.poll()
	w.poll()
	if changes.Load() != 1 {
		t.Fatal("a change reported twice")
	}
}

// A change is reported once to a reader slower than two polls, whether it
// is slow to begin reading or to finish: the polls between the report and
// the end of a read begun after it do not report the change again, and
// the next change is reported once that read is over. A read that had
// begun before the report does not count as reading the change.
func TestDirSourceReportsOnceToASlowReader(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "a.yaml")
	writeFile(t, f, level1("first"))
	entered, release := make(chan struct{}), make(chan struct{})
	var hold atomic.Bool
	d := &DirSource{Dir: dir}
	d.Read = func() ([]config.Object, error) {
		if hold.Load() {
			entered <- struct{}{}
			<-release
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		return config.Decode(data, f)
	}
	if _, err := d.Objects(); err != nil {
		t.Fatal(err)
	}
	var changes atomic.Int32
	w := watch(t, d, func() { changes.Add(1) })
	// read runs Objects with Read held until the returned func is called,
	// which waits for Objects to end.
	read := func() (finish func() string) {
		hold.Store(true)
		got := make(chan string, 1)
		go func() {
			objs, err := d.Objects()
			if err != nil {
				t.Error(err)
			}
			got <- names(objs)
		}()
		<-entered
		return func() string {
			hold.Store(false)
			release <- struct{}{}
			return <-got
		}
	}

	writeFile(t, f, level1("second"))
	w.poll()
	w.poll()
	if changes.Load() != 1 {
		t.Fatalf("%d changes reported, want 1", changes.Load())
	}
	// Slow to begin: no read yet.
	w.poll()
	w.poll()
	w.poll()
	// Slow to finish: the read is held while the directory is polled.
	finish := read()
	w.poll()
	w.poll()
	w.poll()
	if got := finish(); got != "second" {
		t.Fatalf("read %s, want second", got)
	}
	w.poll()
	w.poll()
	w.poll()
	if n := changes.Load(); n != 1 {
		t.Fatalf("the change reported %d times to a slow reader", n)
	}

	// A read begun before a report does not count as reading it.
	writeFile(t, f, level1("third"))
	finish = read() // reads third, begun before the report
	w.poll()
	w.poll() // reported
	if got := finish(); got != "third" {
		t.Fatalf("read %s, want third", got)
	}
	if changes.Load() != 2 {
		t.Fatalf("%d changes reported, want 2", changes.Load())
	}
	writeFile(t, f, level1("fourth"))
	w.poll()
	w.poll()
	w.poll()
	if changes.Load() != 2 {
		t.Fatal("a change reported before the report of the one before was read")
	}
	if objs, err := d.Objects(); err != nil || names(objs) != "fourth" {
		t.Fatalf("%s, %v", names(objs), err)
	}
	w.poll()
	w.poll()
	if n := changes.Load(); n != 2 {
		t.Fatalf("%d changes reported, want 2: a change read is not reported again", n)
	}
	// The next change is reported.
	writeFile(t, f, level1("fifth"))
	w.poll()
	w.poll()
	if changes.Load() != 3 {
		t.Fatal("the next change not reported")
	}
}

// A file over MaxFileBytes is refused by Objects without being read, and
// the polls do not read it either: a change of its size is reported, one
// of its contents that keeps it over the limit is not (the directory is
// refused either way). So are files over MaxTotalBytes together. Reading
// and polling a directory with a sparse file of 1 GiB allocates little.
func TestDirSourceOversized(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), level1("small"))
	big := filepath.Join(dir, "big.yaml")
	grow := func(size int64) {
		t.Helper()
		if err := os.Truncate(big, size); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, big, level1("big"))
	grow(1 << 30)
	d := NewDirSource(dir, time.Hour)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := d.Objects()
	changed := polls(t, d, 3)
	runtime.ReadMemStats(&after)
	if err == nil || !errors.Is(err, config.ErrManifestTooLarge) || !strings.Contains(err.Error(), big+": too large: 1073741824 bytes") {
		t.Fatalf("a file of 1 GiB: %v", err)
	}
	if changed {
		t.Fatal("an unchanged directory reported")
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 8<<20 {
		t.Errorf("reading and polling a directory with a file of 1 GiB allocated %d MiB", grown>>20)
	}
	// The same size, other contents: still refused, not reported.
	f, err := os.OpenFile(big, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("kind: FlowSchema"), 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if polls(t, d, 3) {
		t.Fatal("a change within an oversized file reported")
	}
	grow(1<<30 + 1)
	if !polls(t, d, 2) {
		t.Fatal("a change of an oversized file's size not reported")
	}
	if _, err := d.Objects(); err == nil {
		t.Fatal("an oversized file read")
	}
	// Within each limit, over the limit of them all.
	grow(1000)
	d.MaxFileBytes, d.MaxTotalBytes = 1000, 1000
	if !polls(t, d, 2) {
		t.Fatal("the file's new size not reported")
	}
	if _, err := d.Objects(); err == nil || !strings.Contains(err.Error(), "more than the 1000 they may hold together") {
		t.Fatalf("files over the limit of them all: %v", err)
	}
	// Without limits, the file is read.
	d.MaxFileBytes, d.MaxTotalBytes = -1, -1
	if _, err := d.Objects(); err == nil || errors.Is(err, config.ErrManifestTooLarge) {
		t.Fatalf("without limits: %v", err)
	}
}

// An error is reported once, not at every poll, and its repair is a
// change.
func TestDirSourceLastingError(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "a.yaml")
	writeFile(t, f, "kind: [")
	d := NewDirSource(dir, time.Hour)
	if _, err := d.Objects(); err == nil || !strings.Contains(err.Error(), f) {
		t.Fatalf("broken file read: %v", err)
	}
	if polls(t, d, 3) {
		t.Fatal("the same broken file reported as a change")
	}
	writeFile(t, f, level1("fixed"))
	if !polls(t, d, 2) {
		t.Fatal("the repair not reported")
	}
	if objs, err := d.Objects(); err != nil || names(objs) != "fixed" {
		t.Fatalf("%s, %v", names(objs), err)
	}
	// A directory that goes away is an error too, once.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if !polls(t, d, 2) {
		t.Fatal("the directory's removal not reported")
	}
	if _, err := d.Objects(); err == nil {
		t.Fatal("a missing directory read")
	}
	if polls(t, d, 3) {
		t.Fatal("the missing directory reported again")
	}
}

// With Read, DirSource watches and Read reads; a directory that changes
// while it is read is read again.
func TestDirSourceReadAgainWhenChanged(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "a.yaml")
	writeFile(t, f, level1("first"))
	reads := 0
	d := &DirSource{Dir: dir}
	d.Read = func() ([]config.Object, error) {
		reads++
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if reads == 1 {
			// The file changes while it is read.
			writeFile(t, f, level1("second"))
		}
		return config.Decode(data, f)
	}
	objs, err := d.Objects()
	if err != nil || names(objs) != "second" || reads != 2 {
		t.Fatalf("%s after %d reads, %v; want second after 2", names(objs), reads, err)
	}
	if polls(t, d, 3) {
		t.Fatal("the read's digest not recorded")
	}
}

// OnReload hears every reading of the source: the first in New and each
// Reload, with the error ConfigError then returns.
func TestOnReload(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "a.yaml")
	writeFile(t, f, level1("good"))
	var got []error
	c, err := New(Config{Source: NewDirSource(dir, time.Hour), OnReload: func(err error) { got = append(got, err) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != nil {
		t.Fatalf("after New: %v", got)
	}
	// A file that does not decode.
	writeFile(t, f, "kind: [")
	if c.reload() == nil {
		t.Fatal("broken file accepted")
	}
	// An object that does not validate: decoded, but not usable.
	writeFile(t, f, strings.Replace(level1("bad"), "nominalConcurrencyShares: 10", "nominalConcurrencyShares: -1", 1))
	if err := c.reload(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f, level1("good"))
	if err := c.reload(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[1] == nil || got[2] == nil || got[3] != nil {
		t.Fatalf("outcomes %v: want nil, a decoding error, a validation error, nil", got)
	}
	if !strings.Contains(got[2].Error(), "nominalConcurrencyShares") {
		t.Errorf("validation outcome: %v", got[2])
	}
}
