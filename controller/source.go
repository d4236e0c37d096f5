package controller

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/apfproject/apf/config"
)

// Source delivers the configuration objects (FlowSchemas and
// PriorityLevelConfigurations) the controller enforces.
//
// Objects returns the complete current set. An error means the set could
// not be read (a manifest that does not decode, say); the controller then
// keeps the configuration it has and reports the error. Watch blocks until
// ctx ends, calling changed (which does not block) whenever Objects may
// have a new answer; it is run by Controller.Run in its own goroutine.
type Source interface {
	Objects() ([]config.Object, error)
	Watch(ctx context.Context, changed func())
}

// StaticSource is a fixed set of objects that never changes.
type StaticSource []config.Object

// Objects returns the set.
func (s StaticSource) Objects() ([]config.Object, error) { return s, nil }

// Watch waits for ctx to end: a static set never changes.
func (s StaticSource) Watch(ctx context.Context, _ func()) { <-ctx.Done() }

// DirSource reads the manifests of a directory and notices when they
// change, by polling.
//
// The files read are those config.ManifestFiles lists: the directory's own
// or, with Recursive, its subdirectories' too; hidden entries are left
// out, so that a directory where Kubernetes mounts a ConfigMap is read once
// per key. Each file is decoded with config.Decode and the objects of all
// are the answer, unless Read is set: Read then reads the directory in its
// own way (apf serve layers it over the built-in objects and validates it
// as a whole), and DirSource keeps the watching.
//
// Watching compares digests: every Interval, Watch reads the listed files
// and hashes their paths and contents (SHA-256), and calls changed when
// the digest differs from that of the files Objects last read and has
// stayed the same for one more poll. That wait lets the writes of one edit
// land together: a checkout or an editor rewrites files one at a time, and
// a poll between two of them would otherwise take a state nobody wrote, a
// file emptied before its new contents, say. Reading a
// configuration's few files is cheap, and a digest misses nothing: a
// ConfigMap update swaps a link, and a Git checkout rewrites files, and
// neither need leave a trace in names, sizes or modification times. There
// is no inotify, so it behaves the same on every platform and file system,
// network and mounted volumes included. A directory or file that cannot be
// read enters the digest with its error, so that a lasting error is
// reported once, not at every poll.
//
// Objects takes the files whole or not at all: any that cannot be read or
// decoded makes the answer an error, and the controller keeps the
// configuration it has, so a half-written edit never replaces a working
// configuration. What is read is bounded (MaxFileBytes, MaxTotalBytes): a
// file over the limits is refused like one that does not decode, before
// it is read, and the digest of a directory over them covers the names
// and sizes only, so that neither a poll nor a read costs more than the
// limits whatever the directory holds. The digest is taken before and
// after the read; when they differ, the directory changed while it was
// read (a link swapped half-way, a checkout in progress) and it is read
// again, up to three times. If it is still changing, the answer is kept
// and the digest from before the read is recorded, so that the next poll
// reads it again.
type DirSource struct {
	// Dir is the directory.
	Dir string
	// Recursive reads the subdirectories' files too.
	Recursive bool
	// Interval is the polling period; 0 means 5 s.
	Interval time.Duration
	// Tick, when set, replaces the timer: every receive is one poll. Tests
	// use it to poll on demand.
	Tick <-chan time.Time
	// Read, when set, reads the directory's configuration instead of
	// decoding each file on its own. It must read the files
	// config.ManifestFiles lists for Dir and Recursive, for the digest to
	// cover them.
	Read func() ([]config.Object, error)
	// MaxFileBytes bounds each manifest file and MaxTotalBytes all of
	// them together (config.ManifestReader); 0 means
	// config.MaxManifestFileBytes and config.MaxManifestDirBytes, a
	// negative value no limit. With Read, they bound the digest only, and
	// Read should refuse what they refuse.
	MaxFileBytes, MaxTotalBytes int64

	mu   sync.Mutex
	seen [sha256.Size]byte // digest of the files Objects last read
	// reported counts the changes Watch reported; taken is the count as
	// of the start of the last read to end. While taken < reported a
	// reported change has not been read yet, and seen is not yet its
	// digest.
	reported, taken uint64

	// afterPoll, when set, is called after each poll; tests wait on it.
	afterPoll func()
}

// DefaultDirInterval is DirSource's polling period when none is given.
const DefaultDirInterval = 5 * time.Second

// NewDirSource returns a DirSource polling dir (not its subdirectories)
// every interval.
func NewDirSource(dir string, interval time.Duration) *DirSource {
	return &DirSource{Dir: dir, Interval: interval}
}

// limits returns the limits in config.ManifestReader's terms (0: none).
func (d *DirSource) limits() (file, total int64) {
	limit := func(v, def int64) int64 {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	return limit(d.MaxFileBytes, config.MaxManifestFileBytes), limit(d.MaxTotalBytes, config.MaxManifestDirBytes)
}

// digest hashes the paths and contents of the files the directory holds
// now, and the errors met listing or reading them. The contents of a file
// over MaxFileBytes, or of every file when they come to more than
// MaxTotalBytes together, are left out: the files are refused whatever
// they hold while their sizes stay, so their names and sizes say all
// that matters, and the contents are never read.
func (d *DirSource) digest() [sha256.Size]byte {
	h := sha256.New()
	files, _, err := config.ManifestFiles(d.Dir, d.Recursive)
	if err != nil {
		fmt.Fprintf(h, "error\x00%s\x00", err)
	}
	fileMax, totalMax := d.limits()
	sizes := make([]int64, len(files))
	var total int64
	for i, f := range files {
		if fi, err := os.Stat(f); err == nil {
			sizes[i] = fi.Size()
			total += sizes[i]
		}
	}
	over := totalMax > 0 && total > totalMax
	for i, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", f, sizes[i])
		if over || (fileMax > 0 && sizes[i] > fileMax) {
			continue
		}
		if err := hashFile(h, f, fileMax); err != nil {
			fmt.Fprintf(h, "\x00error\x00%s\x00", err)
		}
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// hashFile writes the contents of the file at path to w, at most limit+1
// bytes of them (limit 0: all).
func hashFile(w io.Writer, path string, limit int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	var r io.Reader = f
	if limit > 0 {
		r = io.LimitReader(f, limit+1)
	}
	_, err = io.Copy(w, r)
	return err
}

// readAttempts bounds the reads of a directory that keeps changing while
// it is read.
const readAttempts = 3

// Objects reads the directory's configuration. Any file that cannot be
// listed, read or decoded makes the whole answer an error.
func (d *DirSource) Objects() ([]config.Object, error) {
	d.mu.Lock()
	asOf := d.reported // the changes this read takes in
	d.mu.Unlock()
	for attempt := 1; ; attempt++ {
		before := d.digest()
		objs, err := d.read()
		if attempt < readAttempts && d.digest() != before {
			continue
		}
		d.mu.Lock()
		d.seen = before
		d.taken = max(d.taken, asOf)
		d.mu.Unlock()
		return objs, err
	}
}

// read decodes every manifest file, or calls Read.
func (d *DirSource) read() ([]config.Object, error) {
	if d.Read != nil {
		return d.Read()
	}
	files, _, err := config.ManifestFiles(d.Dir, d.Recursive)
	if err != nil {
		return nil, fmt.Errorf("controller: reading manifests: %w", err)
	}
	fileMax, totalMax := d.limits()
	r := &config.ManifestReader{MaxFileBytes: fileMax, MaxTotalBytes: totalMax}
	var objs []config.Object
	var errs []error
	for _, name := range files {
		data, err := r.ReadFile(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		o, err := config.Decode(data, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		objs = append(objs, o...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return objs, nil
}

// Watch polls the directory until ctx ends and calls changed when the
// digest of its files differs from that of the files Objects last read,
// and has not changed since the poll before.
//
// Once it has called changed, Watch leaves the directory alone until a
// read begun after that call has ended: until then the digest Objects
// last recorded is not that of the change reported, and the polls would
// report it again. A reader slower than two polls (a large directory, a
// busy machine, a consumer that takes its time to call Objects) is thus
// told of each change once, and reads it once. The caller of Watch must
// call Objects after changed, as Controller.Run does.
func (d *DirSource) Watch(ctx context.Context, changed func()) {
	tick := d.Tick
	if tick == nil {
		iv := d.Interval
		if iv <= 0 {
			iv = DefaultDirInterval
		}
		t := time.NewTicker(iv)
		defer t.Stop()
		tick = t.C
	}
	var pending [sha256.Size]byte // a new digest, waiting to settle
	havePending := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		d.mu.Lock()
		waiting := d.taken < d.reported
		d.mu.Unlock()
		if waiting {
			// A change reported is not read yet: what has changed
			// since is compared with what that read takes in.
			havePending = false
			if d.afterPoll != nil {
				d.afterPoll()
			}
			continue
		}
		sum := d.digest()
		d.mu.Lock()
		differs := sum != d.seen
		d.mu.Unlock()
		switch {
		case !differs:
			havePending = false
		case havePending && sum == pending:
			havePending = false
			d.mu.Lock()
			d.reported++
			d.mu.Unlock()
			changed()
		default:
			pending, havePending = sum, true
		}
		if d.afterPoll != nil {
			d.afterPoll()
		}
	}
}
