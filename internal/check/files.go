package check

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/apfproject/apf/config"
)

// Paths checks the manifests in the given files and directories.
// Directories are walked recursively for .yaml, .yml and .json files, in
// lexical order; a file named explicitly is read whatever its ending. A
// path that cannot be read is an error finding, not a failure of the
// check.
func Paths(paths []string, opts Options) *Report {
	var objs []config.Object
	var errs []error
	for _, file := range expand(paths, &errs) {
		data, err := os.ReadFile(file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		got, err := config.Decode(data, file)
		objs = append(objs, got...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return Inputs(objs, errs, opts)
}

func expand(paths []string, errs *[]error) []string {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			*errs = append(*errs, err)
			continue
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		found := 0
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				*errs = append(*errs, err)
				return nil
			}
			if !d.IsDir() && config.IsManifestFile(path) {
				files = append(files, path)
				found++
			}
			return nil
		})
		if err != nil {
			*errs = append(*errs, err)
		}
		if found == 0 {
			*errs = append(*errs, fmt.Errorf("%s: no .yaml, .yml or .json files", p))
		}
	}
	return files
}
