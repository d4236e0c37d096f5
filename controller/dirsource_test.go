package controller

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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

// pollOnce runs one poll of d's Watch and reports whether it called
// changed.
func pollOnce(t *testing.T, d *DirSource) bool {
	t.Helper()
	tick := make(chan time.Time)
	d.Tick = tick
	ctx, cancel := context.WithCancel(context.Background())
	var changed atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Watch(ctx, func() { changed.Store(true) })
	}()
	tick <- time.Time{}
	cancel()
	<-done
	return changed.Load()
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
	if pollOnce(t, d) {
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
	if !pollOnce(t, d) {
		t.Fatal("a change of contents alone not reported")
	}
	if objs, err = d.Objects(); err != nil || names(objs) != "bbbb" {
		t.Fatalf("%s, %v", names(objs), err)
	}
	if pollOnce(t, d) {
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
	if !pollOnce(t, d) {
		t.Fatal("the swap of ..data not reported")
	}
	if objs, err = d.Objects(); err != nil || names(objs) != "three" {
		t.Fatalf("after the swap: %s, %v", names(objs), err)
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
	if pollOnce(t, d) {
		t.Fatal("the same broken file reported as a change")
	}
	writeFile(t, f, level1("fixed"))
	if !pollOnce(t, d) {
		t.Fatal("the repair not reported")
	}
	if objs, err := d.Objects(); err != nil || names(objs) != "fixed" {
		t.Fatalf("%s, %v", names(objs), err)
	}
	// A directory that goes away is an error too, once.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if !pollOnce(t, d) {
		t.Fatal("the directory's removal not reported")
	}
	if _, err := d.Objects(); err == nil {
		t.Fatal("a missing directory read")
	}
	if pollOnce(t, d) {
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
	if pollOnce(t, d) {
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
	if c.Reload() == nil {
		t.Fatal("broken file accepted")
	}
	// An object that does not validate: decoded, but not usable.
	writeFile(t, f, strings.Replace(level1("bad"), "nominalConcurrencyShares: 10", "nominalConcurrencyShares: -1", 1))
	if err := c.Reload(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f, level1("good"))
	if err := c.Reload(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[1] == nil || got[2] == nil || got[3] != nil {
		t.Fatalf("outcomes %v: want nil, a decoding error, a validation error, nil", got)
	}
	if !strings.Contains(got[2].Error(), "nominalConcurrencyShares") {
		t.Errorf("validation outcome: %v", got[2])
	}
}
