package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// runMainEnv makes the test binary run the command line it is given, as
// the apf binary would, so that tests can start `apf serve` as a real
// process: a panic in any goroutine ends it exactly as it ends apf.
const runMainEnv = "APF_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
	}
	// The tests of what the commands say run at a width at which nothing
	// wraps; width_test.go's set $COLUMNS to the width they check.
	_ = os.Setenv("COLUMNS", strconv.Itoa(testColumns))
	os.Exit(m.Run())
}

// testColumns is the terminal width the tests run at unless they say
// otherwise: wide enough for any line they look for.
const testColumns = 1000

// serveProc is `apf serve` running in a child process.
type serveProc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

func startServe(t *testing.T, args ...string) *serveProc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &serveProc{stderr: new(syncBuffer), done: make(chan struct{})}
	p.cmd = exec.Command(self, append([]string{"serve"}, args...)...)
	p.cmd.Env = append(os.Environ(), runMainEnv+"=1")
	p.cmd.Stdout = io.Discard
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait returns the exit status once the process ends, failing the test
// if it has not within limit.
func (p *serveProc) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("apf serve still running after %v; stderr:\n%s", limit, p.stderr)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// serveUntilReady starts apf serve on dataDir, waits until it serves,
// stops it with SIGTERM and returns its log.
func serveUntilReady(t *testing.T, dataDir string) string {
	t.Helper()
	p := startServe(t, "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--insecure-http")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for !strings.Contains(p.stderr.String(), "msg=serving") {
		select {
		case <-p.done:
			t.Fatalf("apf serve ended before serving; stderr:\n%s", p.stderr)
		case <-ctx.Done():
			t.Fatalf("apf serve not serving after a minute; stderr:\n%s", p.stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, time.Minute); code != 0 {
		t.Fatalf("apf serve exit %d after SIGTERM; stderr:\n%s", code, p.stderr)
	}
	return p.stderr.String()
}

// A damaged data directory stops `apf serve` with exit status 1 and one
// error line that names the directory, says what is wrong and what to
// do; no panic, no stack trace. Each damage here made apf panic (the
// database's, in a goroutine of etcd's) before the checks.
func TestServeCorruptDataDir(t *testing.T) {
	pristine := filepath.Join(t.TempDir(), "pristine")
	serveUntilReady(t, pristine)

	for _, tc := range []struct {
		name    string
		file    string
		corrupt func(f *os.File) error
	}{
		{"database: first 64 KiB garbage", "member/snap/db", func(f *os.File) error {
			_, err := f.WriteAt(bytes.Repeat([]byte("garbage!"), 8<<10), 0)
			return err
		}},
		{"log: emptied", "member/wal/*.wal", func(f *os.File) error { return f.Truncate(0) }},
		{"log: first 64 KiB garbage", "member/wal/*.wal", func(f *os.File) error {
			_, err := f.WriteAt(bytes.Repeat([]byte("garbage!"), 8<<10), 0)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			copyTree(t, pristine, dir)
			files, err := filepath.Glob(filepath.Join(dir, tc.file))
			if err != nil || len(files) == 0 {
				t.Fatalf("no %s: %v", tc.file, err)
			}
			for _, name := range files {
				f, err := os.OpenFile(name, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if err := tc.corrupt(f); err != nil {
					t.Fatal(err)
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
			}

			p := startServe(t, "--data-dir", dir, "--listen", "127.0.0.1:0", "--insecure-http")
			code := p.wait(t, time.Minute)
			out := p.stderr.String()
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if strings.Contains(out, "panic:") || strings.Contains(out, "goroutine ") {
				t.Errorf("apf serve panicked:\n%s", out)
			}
			var errLines []string
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if strings.Contains(line, "level=ERROR") {
					errLines = append(errLines, line)
				}
			}
			if len(errLines) != 1 {
				t.Fatalf("%d error lines, want 1:\n%s", len(errLines), out)
			}
			for _, want := range []string{dir, "is corrupt", "etcdutl snapshot restore", "move " + dir + " away"} {
				if !strings.Contains(errLines[0], want) {
					t.Errorf("error line lacks %q:\n%s", want, errLines[0])
				}
			}
			t.Logf("%s", errLines[0])
		})
	}
}

// `apf serve` on a missing data directory warns that it initialised a new,
// empty store there; restarted on that store, it does not.
func TestServeWarnsOfNewStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	const warning = "initialised a new, empty one"
	out := serveUntilReady(t, dir)
	found := false
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, warning) {
			found = true
			if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "dataDir="+dir) {
				t.Errorf("the warning is not a WARN naming %s: %s", dir, line)
			}
		}
	}
	if !found {
		t.Errorf("first start: no warning of a new store:\n%s", out)
	}
	if out := serveUntilReady(t, dir); strings.Contains(out, warning) {
		t.Errorf("restart warned of a new store:\n%s", out)
	}
}

// copyTree copies the directories and regular files under from to to.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and readers in different
// goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
