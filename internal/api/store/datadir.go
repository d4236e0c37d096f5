package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"go.etcd.io/etcd/server/v3/etcdserver/api/snap"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.uber.org/zap"
)

// The parts of a data directory: etcd's own files under member/, and the
// directory apf keeps to itself for the member's sockets and its lock.
const (
	runDirName     = "run"
	lockFileName   = "lock"
	clientSockName = "client.sock"
	peerSockName   = "peer.sock"
	memberDirName  = "member"
	// maxSocketPath is the longest socket path used in place: the kernel
	// limits it (108 bytes on Linux, 104 on the BSDs and macOS, both
	// counting a terminating NUL), so longer ones go to a private
	// temporary directory instead.
	maxSocketPath = 100
	// boltLockTimeout bounds the wait for the database's file lock, held
	// by any process that has it open for writing.
	boltLockTimeout = 2 * time.Second
)

// CorruptError reports a data directory whose etcd files cannot be used.
// StartEmbedded returns it, without starting etcd, when the database or
// the write-ahead log fails its checks.
type CorruptError struct {
	// Dir is the data directory.
	Dir string
	// Part names what is damaged, relative to Dir where it is a file.
	Part string
	// Reason says what is wrong with it.
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("data directory %s cannot be used: %s is corrupt or inconsistent (%s); "+
		"restore the store from a backup (etcdutl snapshot restore SNAPSHOT-FILE --data-dir NEW-DIR, then use NEW-DIR as the data directory) "+
		"or move %s away to start afresh with an empty store, losing the objects it held",
		e.Dir, e.Part, e.Reason, e.Dir)
}

// privateDir makes sure dir exists as a directory of this user's that no
// one else may enter, creating it if need be. A symbolic link or another
// user's directory is refused rather than followed or changed.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Getuid() {
		return fmt.Errorf("%s belongs to user %d, not to this process's user %d", dir, uid, os.Getuid())
	}
	if fi.Mode().Perm() != 0o700 {
		return os.Chmod(dir, 0o700)
	}
	return nil
}

// lockDataDir takes the data directory's lock, held until the member
// stops: a second process on the same directory would otherwise replace
// the first one's sockets before etcd's own locks stopped it.
func lockDataDir(dir, runDir string) (*fileutil.LockedFile, error) {
	l, err := fileutil.TryLockFile(filepath.Join(runDir, lockFileName), os.O_WRONLY|os.O_CREATE, 0o600)
	if errors.Is(err, fileutil.ErrLocked) {
		return nil, fmt.Errorf("data directory %s is in use by another process", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("locking data directory %s: %w", dir, err)
	}
	return l, nil
}

// checkDataDir examines etcd's files in dir before etcd opens them. etcd
// and bbolt meet a damaged database or log with a panic, some of them in
// goroutines of their own that no caller can recover from, or with a
// member that never becomes ready; the checks turn each of those into a
// CorruptError. They read, and change nothing.
func checkDataDir(dir string) error {
	member := filepath.Join(dir, memberDirName)
	dbPath := filepath.Join(member, "snap", "db")
	walDir := filepath.Join(member, "wal")
	applied, err := checkBackend(dir, dbPath)
	if err != nil {
		return err
	}
	return checkWAL(dir, walDir, filepath.Join(member, "snap"), applied)
}

// checkBackend opens etcd's bolt database read-only and walks all of it,
// returning the index of the last log entry applied to it (0 when there
// is no database: etcd makes a new one and replays its log into it).
func checkBackend(dir, path string) (applied uint64, err error) {
	const part = "database " + memberDirName + "/snap/db"
	// bbolt reads a damaged file with panics (assertions on page
	// headers, faults on pages past the end of the mapping).
	defer recoverCorrupt(dir, part, &err)
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("data directory %s: %w", dir, err)
	}
	if fi.Size() == 0 {
		return 0, nil
	}
	// A page number pointing past the end of the file makes bbolt read
	// memory that the mapping does not back: the fault becomes a panic,
	// recovered above.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: boltLockTimeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return 0, fmt.Errorf("data directory %s is in use by another process: %s is locked", dir, path)
	}
	if err != nil {
		return 0, &CorruptError{Dir: dir, Part: part, Reason: err.Error()}
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		if tx.Size() > fi.Size() {
			return fmt.Errorf("the file is %d bytes long but its pages span %d: it was truncated", fi.Size(), tx.Size())
		}
		// Reading every key reaches every branch and leaf page in this
		// goroutine, where a fault is recoverable; only then does bbolt's
		// own check, in a goroutine of its own, compare them with the
		// free list.
		if err := tx.ForEach(func(_ []byte, b *bolt.Bucket) error { return walkBucket(b) }); err != nil {
			return err
		}
		for err := range tx.Check() {
			return err
		}
		if b := tx.Bucket(schema.Meta.Name()); b != nil {
			if v := b.Get(schema.MetaConsistentIndexKeyName); len(v) == 8 {
				applied = binary.BigEndian.Uint64(v)
			}
		}
		return nil
	})
	if err != nil {
		return 0, &CorruptError{Dir: dir, Part: part, Reason: err.Error()}
	}
	return applied, nil
}

// recoverCorrupt turns a panic of the code reading part into a
// CorruptError.
func recoverCorrupt(dir, part string, err *error) {
	if r := recover(); r != nil {
		*err = &CorruptError{Dir: dir, Part: part, Reason: fmt.Sprint(r)}
	}
}

func walkBucket(b *bolt.Bucket) error {
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			if nested := b.Bucket(k); nested != nil {
				return walkBucket(nested)
			}
		}
		return nil
	})
}

// checkWAL reads etcd's write-ahead log the way etcd does when it
// restarts (from the latest snapshot it records, tolerating a torn last
// record, which etcd repairs), and checks that it reaches at least as far
// as the database: a member whose log ends before the last entry its
// database applied never becomes ready.
func checkWAL(dir, walDir, snapDir string, applied uint64) (err error) {
	const part = "write-ahead log " + memberDirName + "/wal"
	// etcd decodes a record that passed its checksum without checking
	// it further, with a panic should it be garbage all the same.
	defer recoverCorrupt(dir, part, &err)
	corrupt := func(format string, args ...any) error {
		return &CorruptError{Dir: dir, Part: part, Reason: fmt.Sprintf(format, args...)}
	}
	if !wal.Exist(walDir) {
		if applied > 0 {
			return corrupt("it is missing, but the database holds entries up to %d", applied)
		}
		return nil
	}
	lg := zap.NewNop()
	snaps, err := wal.ValidSnapshotEntries(lg, walDir)
	if err != nil {
		return corrupt("%v", err)
	}
	start := &walpb.Snapshot{}
	if len(snaps) > 0 {
		start = snaps[len(snaps)-1]
	}
	w, err := wal.OpenForRead(lg, walDir, start)
	if err != nil {
		return corrupt("%v", err)
	}
	_, _, ents, err := w.ReadAll()
	_ = w.Close()
	if err != nil {
		return corrupt("%v", err)
	}
	last := start.GetIndex()
	if n := len(ents); n > 0 {
		last = ents[n-1].GetIndex()
	}
	if applied > last {
		return corrupt("it ends at entry %d, but the database holds entries up to %d", last, applied)
	}
	if idx := start.GetIndex(); idx > applied {
		// The database is older than the log's snapshot: etcd replaces it
		// with the snapshot's copy, which must be there.
		if _, err := snap.New(lg, snapDir).DBFilePath(idx); err != nil {
			return &CorruptError{Dir: dir, Part: "database " + memberDirName + "/snap/db", Reason: fmt.Sprintf(
				"it is missing, empty or older than the log's snapshot at entry %d, whose copy %s/snap/%016x.snap.db is missing too",
				idx, memberDirName, idx)}
		}
	}
	return nil
}
