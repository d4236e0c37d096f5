//go:build !unix

package store

import "os"

// fileOwner reports no owner where files have no user id.
func fileOwner(os.FileInfo) (int, bool) { return 0, false }
