package config

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Limits on the manifests a server reads from a directory. Decoding
// takes memory in proportion to what is read (the decoded objects hold
// about three times their YAML, and the decoder allocates some seventy
// times it while it works, which the garbage collector takes back), so a
// server that polls a directory someone else writes must bound what it
// reads, as it bounds a request body.
const (
	// MaxManifestFileBytes is the largest manifest file read: 3 MiB, the
	// largest request body the API server (and apf's flowcontrol API)
	// takes, so that every object the API accepts fits in a file of its
	// own. A file that size holds some 7,000 FlowSchemas.
	MaxManifestFileBytes = 3 << 20
	// MaxManifestDirBytes bounds the manifest files of one directory
	// together: 12 MiB, four files at MaxManifestFileBytes, some 30,000
	// FlowSchemas, far more than any configuration kept by hand.
	MaxManifestDirBytes = 4 * MaxManifestFileBytes
)

// ErrManifestTooLarge is wrapped by the errors of ManifestReader for a
// file over a limit.
var ErrManifestTooLarge = errors.New("too large")

// ManifestReader reads manifest files within a limit on each file and one
// on all the files it reads. A file over either limit is refused before it
// is read: its size is taken from the open file, and what is read is
// bounded again by the limit, so that a file that grows while it is read
// is refused too, having cost no more than the limit. The zero value has
// no limits. A ManifestReader is not safe for concurrent use.
type ManifestReader struct {
	// MaxFileBytes bounds each file; 0 means no limit.
	MaxFileBytes int64
	// MaxTotalBytes bounds all the files read together; 0 means no limit.
	MaxTotalBytes int64

	total int64 // read so far
}

// ReadFile returns the contents of the file at path, or an error wrapping
// ErrManifestTooLarge (and naming the file, its size and the limit) when
// the file is over a limit.
func (r *ManifestReader) ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	if err := r.check(path, size); err != nil {
		return nil, err
	}
	limit := r.room()
	var src io.Reader = f
	if limit >= 0 {
		// One byte more than allowed tells a file that grew.
		src = io.LimitReader(f, limit+1)
	}
	buf, err := io.ReadAll(src)
	if err != nil {
		return nil, err
	}
	if err := r.check(path, int64(len(buf))); err != nil {
		return nil, err
	}
	r.total += int64(len(buf))
	return buf, nil
}

// check refuses a file of size bytes that would pass a limit.
func (r *ManifestReader) check(path string, size int64) error {
	if r.MaxFileBytes > 0 && size > r.MaxFileBytes {
		return fmt.Errorf("%s: %w: %d bytes, more than the %d a manifest file may hold", path, ErrManifestTooLarge, size, r.MaxFileBytes)
	}
	if r.MaxTotalBytes > 0 && r.total+size > r.MaxTotalBytes {
		return fmt.Errorf("%s: %w: with its %d bytes the manifest files read come to %d, more than the %d they may hold together",
			path, ErrManifestTooLarge, size, r.total+size, r.MaxTotalBytes)
	}
	return nil
}

// room is how much the next file may hold, or -1 without limits.
func (r *ManifestReader) room() int64 {
	limit := int64(-1)
	if r.MaxFileBytes > 0 {
		limit = r.MaxFileBytes
	}
	if r.MaxTotalBytes > 0 {
		left := max(r.MaxTotalBytes-r.total, 0)
		if limit < 0 || left < limit {
			limit = left
		}
	}
	return limit
}
