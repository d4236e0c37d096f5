package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// DirSource reads every *.yaml, *.yml and *.json file of a directory (not
// its subdirectories) as manifests, and notices changes by polling file
// names, sizes and modification times: no inotify, so it behaves the same
// on every platform and file system.
type DirSource struct {
	// Dir is the directory.
	Dir string
	// Interval is the polling period; 0 means 5 s.
	Interval time.Duration
	// Tick, when set, replaces the timer: every receive is one poll. Tests
	// use it to poll on demand.
	Tick <-chan time.Time

	mu   sync.Mutex
	seen string // fingerprint of the last listing handed out
}

// NewDirSource returns a DirSource polling dir every interval.
func NewDirSource(dir string, interval time.Duration) *DirSource {
	return &DirSource{Dir: dir, Interval: interval}
}

func (d *DirSource) files() ([]string, string, error) {
	entries, err := os.ReadDir(d.Dir)
	if err != nil {
		return nil, "", fmt.Errorf("controller: reading manifests: %w", err)
	}
	var names []string
	var fp strings.Builder
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if !config.IsManifestFile(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, "", fmt.Errorf("controller: reading manifests: %w", err)
		}
		names = append(names, filepath.Join(d.Dir, e.Name()))
		fmt.Fprintf(&fp, "%s\x00%d\x00%d\n", e.Name(), info.Size(), info.ModTime().UnixNano())
	}
	slices.Sort(names)
	return names, fp.String(), nil
}

// Objects decodes every manifest of the directory. Any file that cannot be
// read or decoded makes the whole answer an error, so that a half-written
// edit never replaces a working configuration.
func (d *DirSource) Objects() ([]config.Object, error) {
	names, fp, err := d.files()
	if err != nil {
		return nil, err
	}
	var objs []config.Object
	var errs []error
	for _, name := range names {
		data, err := os.ReadFile(name)
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
	d.mu.Lock()
	d.seen = fp
	d.mu.Unlock()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return objs, nil
}

// Watch polls the directory until ctx ends and calls changed when its
// listing differs from the one Objects last read. A listing that cannot be
// read counts as a change, so that the error is reported.
func (d *DirSource) Watch(ctx context.Context, changed func()) {
	tick := d.Tick
	if tick == nil {
		iv := d.Interval
		if iv <= 0 {
			iv = 5 * time.Second
		}
		t := time.NewTicker(iv)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		_, fp, err := d.files()
		d.mu.Lock()
		differs := err != nil || fp != d.seen
		d.mu.Unlock()
		if differs {
			changed()
		}
	}
}
