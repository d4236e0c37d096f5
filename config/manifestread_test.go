package config

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// ManifestReader reads files within its limits and refuses the others
// before reading them: a sparse file of 1 GiB costs no more than a small
// one; a file that grows while it is read (/dev/zero: no size, no end) is
// cut at the limit and refused; the files read count towards the limit of
// them all, a refused one does not.
func TestManifestReader(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, size int64) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("kind: FlowSchema\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, size); err != nil {
			t.Fatal(err)
		}
		return p
	}
	r := &ManifestReader{MaxFileBytes: 100, MaxTotalBytes: 250}
	a := write("a.yaml", 100)
	if data, err := r.ReadFile(a); err != nil || len(data) != 100 || !strings.HasPrefix(string(data), "kind: FlowSchema\n") {
		t.Fatalf("a file at the limit: %d bytes, %v", len(data), err)
	}
	huge := write("huge.yaml", 1<<30)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := r.ReadFile(huge)
	runtime.ReadMemStats(&after)
	if err == nil || !errors.Is(err, ErrManifestTooLarge) ||
		err.Error() != huge+": too large: 1073741824 bytes, more than the 100 a manifest file may hold" {
		t.Fatalf("a file of 1 GiB: %v", err)
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<20 {
		t.Errorf("refusing a file of 1 GiB allocated %d bytes", grown)
	}
	if data, err := r.ReadFile(write("b.yaml", 100)); err != nil || len(data) != 100 {
		t.Fatalf("a second file: %d bytes, %v", len(data), err)
	}
	c := write("c.yaml", 60)
	if _, err := r.ReadFile(c); err == nil || !errors.Is(err, ErrManifestTooLarge) ||
		err.Error() != c+": too large: with its 60 bytes the manifest files read come to 260, more than the 250 they may hold together" {
		t.Fatalf("a file past the limit of them all: %v", err)
	}
	if data, err := r.ReadFile(write("d.yaml", 50)); err != nil || len(data) != 50 {
		t.Fatalf("a file that fits: %d bytes, %v", len(data), err)
	}
	// Without limits, everything is read.
	if data, err := (&ManifestReader{}).ReadFile(write("e.yaml", 5000)); err != nil || len(data) != 5000 {
		t.Fatalf("no limits: %d bytes, %v", len(data), err)
	}
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	r = &ManifestReader{MaxFileBytes: 1 << 20}
	if _, err := r.ReadFile("/dev/zero"); err == nil || err.Error() != "/dev/zero: too large: 1048577 bytes, more than the 1048576 a manifest file may hold" {
		t.Fatalf("a file without end: %v", err)
	}
}
