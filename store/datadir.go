package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
)

// The directory apf keeps to itself in a data directory, beside etcd's
// own files: the member's sockets and the directory's lock.
const (
	runDirName     = "run"
	lockFileName   = "lock"
	clientSockName = "client.sock"
	peerSockName   = "peer.sock"
	// maxSocketPath is the longest socket path used in place: the kernel
	// limits it (108 bytes on Linux, 104 on the BSDs and macOS, both
	// counting a terminating NUL), so longer ones go to a private
	// temporary directory instead.
	maxSocketPath = 100
)

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
