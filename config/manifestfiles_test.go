package config

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// configMapDir lays out dir as the kubelet mounts a ConfigMap with the
// keys given: each version's files in a hidden timestamped directory,
// ..data a link to it, each key a link through ..data.
func configMapDir(t *testing.T, dir string, keys ...string) {
	t.Helper()
	ts := filepath.Join(dir, "..2026_01_02_15_04_05.123456789")
	if err := os.MkdirAll(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := os.WriteFile(filepath.Join(ts, k), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..data", k), filepath.Join(dir, k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

func TestManifestFilesConfigMap(t *testing.T) {
	dir := t.TempDir()
	configMapDir(t, dir, "levels.yaml", "schemas.yaml", "README")
	for _, recursive := range []bool{false, true} {
		files, skipped, err := ManifestFiles(dir, recursive)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{filepath.Join(dir, "levels.yaml"), filepath.Join(dir, "schemas.yaml")}
		if !slices.Equal(files, want) {
			t.Errorf("recursive=%v: files %q, want %q (each key once, through its visible link)", recursive, files, want)
		}
		if len(skipped) != 0 {
			t.Errorf("recursive=%v: skipped %q: the hidden directories are not the user's subdirectories", recursive, skipped)
		}
	}
}

func TestManifestFilesTree(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"b.yaml", "a.json", "notes.txt", ".hidden.yaml", "sub/c.yml", "sub/deeper/d.yaml", ".git/e.yaml", "a-z/f.yaml"} {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A link to a directory, one to nothing and a pipe are not read.
	if err := os.Symlink("sub", filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("gone.yaml", filepath.Join(dir, "dangling.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	j := func(p ...string) string { return filepath.Join(append([]string{dir}, p...)...) }

	files, skipped, err := ManifestFiles(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{j("a.json"), j("b.yaml")}; !slices.Equal(files, want) {
		t.Errorf("files %q, want %q", files, want)
	}
	if want := []string{j("a-z"), j("sub")}; !slices.Equal(skipped, want) {
		t.Errorf("skipped %q, want %q", skipped, want)
	}

	files, skipped, err = ManifestFiles(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{j("a-z", "f.yaml"), j("a.json"), j("b.yaml"), j("sub", "c.yml"), j("sub", "deeper", "d.yaml")}; !slices.Equal(files, want) {
		t.Errorf("recursive: files %q, want %q", files, want)
	}
	if len(skipped) != 0 {
		t.Errorf("recursive: skipped %q", skipped)
	}

	// The directory itself may be a link, and the paths start with it.
	link := filepath.Join(t.TempDir(), "current")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	files, _, err = ManifestFiles(link, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(link, "a.json"), filepath.Join(link, "b.yaml")}; !slices.Equal(files, want) {
		t.Errorf("through a link: files %q, want %q", files, want)
	}

	if _, _, err := ManifestFiles(j("b.yaml"), false); err == nil {
		t.Error("a file taken for a directory")
	}
	if _, _, err := ManifestFiles(j("nowhere"), false); err == nil {
		t.Error("a missing directory listed")
	}
}
