package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ManifestFiles lists the manifest files of the directory dir (names that
// IsManifestFile accepts), in the order they are read and layered: the
// entries of each directory sorted by name, a subdirectory's files where
// its name sorts. Without recursive only dir's own files are listed, as
// kubectl -f reads a directory, and skipped names the subdirectories left
// out; with it, subdirectories are read too (kubectl's -R).
//
// Entries whose names begin with "." are left out at every level. Besides
// hidden files and directories (.git, an editor's .#lock links), that is
// how a directory where Kubernetes mounts a ConfigMap or a Secret is read
// once: the kubelet writes each version of the data into a hidden
// directory ..2006_01_02_15_04_05.NNN, points the link ..data at it, and
// makes each key a link through ..data, which it swaps atomically on an
// update. The keys are what is read; the hidden copies are not.
//
// Links are followed to files (a mounted key is one) but not to
// directories, so no link can make a loop or read a tree twice, and a link
// to nothing is left out; dir
// itself may be a link (git-sync's checkout is one), and the paths listed
// start with dir as given, so that messages name the files where the user
// put them. Only regular files are listed: a pipe or a device named like a
// manifest would block its reader. An entry that cannot be read is reported in err, joined with
// the others, and the rest are still listed.
func ManifestFiles(dir string, recursive bool) (files, skipped []string, err error) {
	var errs []error
	var walk func(d string)
	walk = func(d string) {
		entries, err := os.ReadDir(d)
		if err != nil {
			errs = append(errs, err)
			return
		}
		// os.ReadDir sorts by name.
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") {
				continue
			}
			p := filepath.Join(d, name)
			if e.IsDir() {
				if recursive {
					walk(p)
				} else {
					skipped = append(skipped, p)
				}
				continue
			}
			if !IsManifestFile(name) {
				continue
			}
			mode := e.Type()
			if mode&os.ModeSymlink != 0 {
				fi, err := os.Stat(p)
				switch {
				case errors.Is(err, os.ErrNotExist):
					// A link to nothing holds no manifest. In a mounted
					// ConfigMap it is a key just removed: the kubelet
					// deletes its link right after swapping ..data.
					continue
				case err != nil:
					errs = append(errs, err)
					continue
				}
				mode = fi.Mode().Type()
			}
			// Only regular files: a link to a directory is not
			// followed, and a pipe or a device would block the reader.
			if mode.IsRegular() {
				files = append(files, p)
			}
		}
	}
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return nil, nil, err
	case !fi.IsDir():
		return nil, nil, fmt.Errorf("%s: not a directory", dir)
	}
	walk(dir)
	return slices.Clip(files), skipped, errors.Join(errs...)
}
