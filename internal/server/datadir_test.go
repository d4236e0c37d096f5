package server

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const newStoreWarning = "initialised a new, empty one"

// Starting on a missing data directory, or on one whose store was
// removed, warns that a new, empty store was initialised there; a
// restart on the store does not.
func TestNewStoreWarning(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	dir := filepath.Join(t.TempDir(), "data")
	start := func(what string, wantWarning bool) {
		t.Helper()
		var log lockedBuffer
		opts := DefaultOptions()
		opts.DataDir = dir
		opts.Listen = "127.0.0.1:0"
		opts.InsecureHTTP = true
		opts.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))
		srv, err := New(context.Background(), opts)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := srv.Close(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var warning string
		for _, line := range strings.Split(log.String(), "\n") {
			if strings.Contains(line, newStoreWarning) {
				warning = line
			}
		}
		switch {
		case wantWarning && warning == "":
			t.Errorf("%s: no warning of a new store:\n%s", what, log.String())
		case wantWarning && (!strings.Contains(warning, "level=WARN") || !strings.Contains(warning, "dataDir="+dir)):
			t.Errorf("%s: the warning is not a WARN naming %s: %s", what, dir, warning)
		case !wantWarning && warning != "":
			t.Errorf("%s: warned of a new store: %s", what, warning)
		}
	}
	start("missing data directory", true)
	start("restart", false)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	start("data directory deleted", true)
	start("restart after that", false)
}
