package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A damaged data directory is refused with a *CorruptError that names the
// directory, the damaged part and the way out, before etcd opens it
// (where it would panic, in goroutines no caller can recover from, or
// never become ready), and the check changes nothing in it.
func TestEmbeddedCorruptDataDir(t *testing.T) {
	opts := EmbeddedOptions{Logger: quietLogger()}
	// Two stores: one before etcd's first snapshot, whose log holds every
	// entry, and one after a snapshot, from which on the log starts.
	pristine := makeStore(t, opts, 3)
	snapOpts := opts
	snapOpts.snapshotCount = 20
	snapshotted := makeStore(t, snapOpts, 30)

	const (
		db  = "member/snap/db"
		log = "member/wal"
	)
	for _, tc := range []struct {
		name    string
		base    string
		corrupt func(t *testing.T, dir string)
		part    string // "" for a copy that must start
	}{
		{"intact copy", pristine, func(*testing.T, string) {}, ""},
		{"intact copy after a snapshot", snapshotted, func(*testing.T, string) {}, ""},
		// etcd replays the whole log into a new database.
		{"database: emptied before any snapshot", pristine, truncate(db, 0), ""},
		{"database: removed after a snapshot", snapshotted, func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, db)); err != nil {
				t.Fatal(err)
			}
		}, "database " + db},
		{"database: first 64 KiB garbage", pristine, garbage(db, 0, 64<<10), "database " + db},
		{"database: pages after the meta pages garbage", pristine, garbage(db, 8<<10, 56<<10), "database " + db},
		{"database: truncated to one page", pristine, truncate(db, 4096), "database " + db},
		{"database: truncated to three pages", pristine, truncate(db, 3*4096), "database " + db},
		{"log: emptied", pristine, truncate(log+"/*.wal", 0), "write-ahead log " + log},
		{"log: truncated to 100 bytes", pristine, truncate(log+"/*.wal", 100), "write-ahead log " + log},
		{"log: first 64 KiB garbage", pristine, garbage(log+"/*.wal", 0, 64<<10), "write-ahead log " + log},
		{"log: garbage in a record", pristine, func(t *testing.T, dir string) {
			// Halfway through the records, before the zeros etcd
			// preallocates.
			f := glob(t, dir, log+"/*.wal")[0]
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			used := int64(len(strings.TrimRight(string(b), "\x00")))
			garbage(log+"/*.wal", used/2, 16)(t, dir)
		}, "write-ahead log " + log},
		{"log: removed", pristine, func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, log)); err != nil {
				t.Fatal(err)
			}
		}, "write-ahead log " + log},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			copyTree(t, tc.base, dir)
			tc.corrupt(t, dir)
			before := treeSums(t, filepath.Join(dir, memberDirName))

			emb, err := StartEmbedded(dir, opts)
			if tc.part == "" {
				if err != nil {
					t.Fatal(err)
				}
				defer emb.Close()
				s := emb.Store("")
				defer s.Close()
				if _, err := s.Get(context.Background(), fs, "item-2"); err != nil {
					t.Fatalf("intact copy lost its items: %v", err)
				}
				return
			}
			if err == nil {
				emb.Close()
				t.Fatal("a damaged data directory started")
			}
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T), want a *CorruptError", err, err)
			}
			if ce.Dir != dir || ce.Part != tc.part {
				t.Errorf("CorruptError names %s in %s, want %s in %s", ce.Part, ce.Dir, tc.part, dir)
			}
			msg := err.Error()
			for _, want := range []string{dir, tc.part, "corrupt", "etcdutl snapshot restore", "move " + dir + " away"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q: %s", want, msg)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("message spans lines: %q", msg)
			}
			t.Logf("%s", ce.Reason)
			// Nothing was changed, and the directory is not left locked.
			if after := treeSums(t, filepath.Join(dir, memberDirName)); !equalSums(before, after) {
				t.Errorf("the check changed the data directory: %v, was %v", after, before)
			}
			if _, err := StartEmbedded(dir, opts); !errors.As(err, &ce) {
				t.Errorf("second attempt: %v, want the same *CorruptError", err)
			}
		})
	}
}

// A database another process has open for writing (an etcd started by
// hand on the directory, say) is reported as in use, not as corrupt.
func TestEmbeddedDatabaseLocked(t *testing.T) {
	opts := EmbeddedOptions{Logger: quietLogger()}
	dir := makeStore(t, opts, 1)
	db, err := bolt.Open(filepath.Join(dir, "member/snap/db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	emb, err := StartEmbedded(dir, opts)
	if err == nil {
		emb.Close()
		t.Fatal("started on a database open elsewhere")
	}
	var ce *CorruptError
	if errors.As(err, &ce) || !strings.Contains(err.Error(), "in use by another process") {
		t.Errorf("error %v, want the directory in use", err)
	}
}

// makeStore makes a store of n items in a new data directory and stops
// it.
func makeStore(t *testing.T, opts EmbeddedOptions, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pristine")
	emb, err := StartEmbedded(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	s := emb.Store("")
	for i := range n {
		mustCreate(t, s, fs, fmt.Sprintf("item-%d", i), strings.Repeat("x", 100))
	}
	s.Close()
	if err := emb.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// What the checks miss and makes etcd panic while it starts is reported
// as a *CorruptError too: here a database removed after a snapshot, with
// the checks skipped.
func TestEmbeddedStartPanicRecovered(t *testing.T) {
	opts := EmbeddedOptions{Logger: quietLogger(), snapshotCount: 20}
	dir := makeStore(t, opts, 30)
	if err := os.Remove(filepath.Join(dir, "member/snap/db")); err != nil {
		t.Fatal(err)
	}
	m := &Embedded{dir: dir, closing: new(atomic.Bool)}
	err := m.start(t.TempDir(), opts)
	if err == nil {
		m.Close()
		t.Fatal("etcd started without its database")
	}
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Dir != dir || !strings.Contains(ce.Reason, "etcd failed opening it") {
		t.Fatalf("error %v (%T), want a *CorruptError for %s", err, err, dir)
	}
	t.Logf("%s", ce.Reason)
}

// garbage overwrites n bytes at off of the files matching pattern (under
// the data directory) with random bytes.
func garbage(pattern string, off, n int64) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		t.Helper()
		junk := make([]byte, n)
		r := rand.New(rand.NewPCG(uint64(off), uint64(n)))
		for i := range junk {
			junk[i] = byte(r.Uint32())
		}
		for _, f := range glob(t, dir, pattern) {
			fh, err := os.OpenFile(f, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fh.WriteAt(junk, off); err != nil {
				t.Fatal(err)
			}
			if err := fh.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func truncate(pattern string, size int64) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		t.Helper()
		for _, f := range glob(t, dir, pattern) {
			if err := os.Truncate(f, size); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func glob(t *testing.T, dir, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no %s in %s (%v)", pattern, dir, err)
	}
	return files
}

// copyTree copies the regular files and directories under from to to.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o700)
		case d.Type().IsRegular():
			copyFile(t, path, dst, 0o600)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// treeSums returns the SHA-256 of every regular file under dir.
func treeSums(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	sums := map[string][32]byte{}
	_ = filepath.WalkDir(dir, func(path string, d iofs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		sums[path] = [32]byte(h.Sum(nil))
		return nil
	})
	return sums
}

func equalSums(a, b map[string][32]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
