// Package testproc runs the servers of the repository's outside-in test
// modules (test/kube, test/observability, test/console) as child
// processes: apf serve, kube-apiserver, anything started from a binary.
// Each runs in a directory of its own with its output in a log file there,
// and is killed when the test process dies (Pdeathsig), so a test binary
// killed by its timeout leaves nothing behind. WaitReady waits for such a
// server to serve HTTPS under the CA it writes, and Do sends it a request
// with a bearer token.
//
// It is a module of its own, on the standard library alone, so that the
// test modules share it without depending on the product's module.
package testproc

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	return port, err
}

// Process is a running child process.
type Process struct {
	// LogPath is the file its standard output and error go to.
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start runs bin with args in dir (created), its output in dir/log, with
// HOME set to dir and KUBECONFIG empty so that nothing of the user's
// environment is read.
func Start(bin, dir string, args ...string) (*Process, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "HOME="+dir, "KUBECONFIG=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	p := &Process{LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		log.Close()
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM and kills the process when it has not ended within
// timeout; it returns once the process is gone.
func (p *Process) Stop(timeout time.Duration) {
	if done, _ := p.Exited(); done {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}
