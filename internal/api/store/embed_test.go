package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Nothing but this process's user can reach the embedded member: it
// listens on no TCP port, only on unix sockets in a directory of mode
// 0700, and another user's process can neither connect to them nor use
// them through an etcd client. The member still serves this process.
func TestEmbeddedUnreachable(t *testing.T) {
	before := tcpListeners(t)
	// The data directory and its parents are open to everyone, as an
	// operator might leave them: only the member's own directory keeps
	// other users out.
	tmp := t.TempDir()
	for _, d := range []string{filepath.Dir(tmp), tmp} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(tmp, "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	emb, err := StartEmbedded(dir, EmbeddedOptions{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()

	// Every listener of the member is a unix socket in DATA-DIR/run.
	runDir := filepath.Join(dir, runDirName)
	var socks []string
	var addrs []net.Addr
	for _, l := range emb.etcd.Clients {
		addrs = append(addrs, l.Addr())
	}
	for _, p := range emb.etcd.Peers {
		addrs = append(addrs, p.Addr())
	}
	if len(addrs) != 2 {
		t.Errorf("member listens on %v, want a client and a peer socket", addrs)
	}
	for _, a := range addrs {
		if a.Network() != "unix" || filepath.Dir(a.String()) != runDir {
			t.Errorf("member listens on %s %s, want a unix socket in %s", a.Network(), a, runDir)
			continue
		}
		socks = append(socks, a.String())
	}
	// And the process gained no TCP listener.
	if before != nil {
		for inode, addr := range tcpListeners(t) {
			if _, ok := before[inode]; !ok {
				t.Errorf("a TCP listener on %s appeared with the embedded etcd", addr)
			}
		}
	}
	for _, ep := range emb.Endpoints() {
		if !strings.HasPrefix(ep, "unix:///") {
			t.Errorf("endpoint %q is not an absolute unix socket", ep)
		}
	}

	// Modes: the directory 0700 and the sockets 0600, all this user's.
	fi, err := os.Lstat(runDir)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: mode %v, want a directory of mode 0700", runDir, fi.Mode())
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Getuid() {
		t.Errorf("%s belongs to %d, not %d", runDir, uid, os.Getuid())
	}
	for _, s := range socks {
		fi, err := os.Lstat(s)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want a socket of mode 0600", s, fi.Mode())
		}
	}

	// This process uses it.
	s := emb.Store("")
	defer s.Close()
	mustCreate(t, s, fs, "own", "mine")

	// Another user's process cannot.
	if os.Getuid() != 0 || runtime.GOOS != "linux" {
		t.Logf("not root on Linux: the check as another user is skipped (modes checked above)")
		return
	}
	out := probeAsNobody(t, socks, emb.Endpoints()[0])
	for _, s := range socks {
		if !strings.Contains(out, "dial "+s+": denied") {
			t.Errorf("another user's connection to %s was not refused:\n%s", s, out)
		}
	}
	if !strings.Contains(out, "etcd put: failed") || !strings.Contains(out, "etcd get: failed") {
		t.Errorf("another user's etcd client was not refused:\n%s", out)
	}
	resp, err := emb.Client().Get(context.Background(), probeKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		t.Errorf("another user wrote %s", probeKey)
	}
}

const (
	probeEnv = "APF_STORE_PROBE"
	probeKey = "/registry/flowschemas/intruder"
)

// probeAsNobody runs TestEmbeddedProbe as user 65534 in a copy of the
// test binary that user may execute, and returns what it printed.
func probeAsNobody(t *testing.T, socks []string, endpoint string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	binDir, err := os.MkdirTemp("", "apf-probe-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(binDir)
	if err := os.Chmod(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(binDir, "probe.test")
	copyFile(t, self, bin, 0o755)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run=^TestEmbeddedProbe$", "-test.v")
	cmd.Dir = binDir
	cmd.Env = []string{probeEnv + "=" + strings.Join(append([]string{endpoint}, socks...), ","), "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe as another user: %v\n%s", err, out)
	}
	return string(out)
}

// TestEmbeddedProbe is the other user's side of TestEmbeddedUnreachable:
// it dials each socket and tries to write and read through an etcd
// client, and prints what happened.
func TestEmbeddedProbe(t *testing.T) {
	spec := os.Getenv(probeEnv)
	if spec == "" {
		t.Skip("run by TestEmbeddedUnreachable as another user")
	}
	parts := strings.Split(spec, ",")
	endpoint, socks := parts[0], parts[1:]
	fmt.Printf("probing as user %d\n", os.Getuid())
	for _, s := range socks {
		c, err := net.DialTimeout("unix", s, 3*time.Second)
		switch {
		case err == nil:
			c.Close()
			fmt.Printf("dial %s: connected\n", s)
		case errors.Is(err, syscall.EACCES):
			fmt.Printf("dial %s: denied\n", s)
		default:
			fmt.Printf("dial %s: %v\n", s, err)
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		fmt.Printf("etcd put: failed (%v)\netcd get: failed (%v)\n", err, err)
		return
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, probeKey, "x"); err != nil {
		fmt.Printf("etcd put: failed (%v)\n", err)
	} else {
		fmt.Println("etcd put: succeeded")
	}
	if _, err := cli.Get(ctx, probeKey); err != nil {
		fmt.Printf("etcd get: failed (%v)\n", err)
	} else {
		fmt.Println("etcd get: succeeded")
	}
}

// tcpListeners returns the TCP sockets this process listens on, by inode,
// or nil where /proc does not tell.
func tcpListeners(t *testing.T) map[string]string {
	t.Helper()
	if runtime.GOOS != "linux" {
		return nil
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Logf("no /proc: %v", err)
		return nil
	}
	mine := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	listening := map[string]string{}
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" {
				continue
			}
			if inode := fields[9]; mine[inode] {
				listening[inode] = fields[1]
			}
		}
		f.Close()
	}
	return listening
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// A second member on a data directory in use is refused before it can
// touch the first one's sockets, which go on serving.
func TestEmbeddedDirInUse(t *testing.T) {
	dir := t.TempDir()
	opts := EmbeddedOptions{Logger: quietLogger()}
	emb, err := StartEmbedded(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	if second, err := StartEmbedded(dir, opts); err == nil {
		second.Close()
		t.Fatal("a second member started on a data directory in use")
	} else if !strings.Contains(err.Error(), "in use by another process") {
		t.Errorf("second member: %v, want the directory in use", err)
	}
	s := emb.Store("")
	defer s.Close()
	mustCreate(t, s, fs, "still-served", "x")
}

// A data directory whose path is too long for a socket address keeps its
// sockets in a private temporary directory, removed when the member stops.
func TestEmbeddedLongDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", maxSocketPath))
	emb, err := StartEmbedded(dir, EmbeddedOptions{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	tmp := emb.tmpDir
	if tmp == "" || !strings.HasPrefix(emb.Endpoints()[0], "unix://"+tmp+"/") {
		t.Errorf("endpoint %s, want a socket in a temporary directory", emb.Endpoints()[0])
	}
	if fi, err := os.Stat(tmp); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("temporary socket directory %s: %v %v, want mode 0700", tmp, fi.Mode(), err)
	}
	s := emb.Store("")
	mustCreate(t, s, fs, "long", "x")
	s.Close()
	if err := emb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary socket directory left behind: %v", err)
	}
}

// Created tells a new store from a restarted one: true on a missing or
// emptied directory, false when the directory holds a store.
func TestEmbeddedCreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	opts := EmbeddedOptions{Logger: quietLogger()}
	start := func(what string, want bool) {
		t.Helper()
		emb, err := StartEmbedded(dir, opts)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if emb.Created() != want {
			t.Errorf("%s: Created() = %v, want %v", what, emb.Created(), want)
		}
		s := emb.Store("")
		_, _ = s.Create(context.Background(), fs, "marker", []byte("x"))
		s.Close()
		if err := emb.Close(); err != nil {
			t.Fatal(err)
		}
	}
	start("missing directory", true)
	start("restart", false)
	if err := os.RemoveAll(filepath.Join(dir, memberDirName)); err != nil {
		t.Fatal(err)
	}
	start("store removed", true)
	start("restart after that", false)
}
