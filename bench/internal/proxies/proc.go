package proxies

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// Proc is a started process, in a process group of its own.
type Proc struct {
	Name string // what messages call it ("the proxy")
	Addr string // where it serves
	Log  string // file of its standard output and error

	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited, err set
	err  error
}

// FreeAddr returns a loopback address with a port free at the time of the
// call.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// live are the processes started and not yet stopped, which an interrupt
// stops.
var live = struct {
	sync.Mutex
	procs map[*Proc]struct{}
}{procs: map[*Proc]struct{}{}}

// Start starts cmd in a process group of its own, its output going to a
// new file at logPath; the process gets SIGTERM should the calling program
// die without stopping it. name and addr are what the caller calls it and
// where it will serve.
func Start(name string, cmd *exec.Cmd, addr, logPath string) (*Proc, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = lf, lf
	// A process group of its own, so that Stop reaches nginx's workers
	// too; and SIGTERM should this program die without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, err
	}
	p := &Proc{Name: name, Addr: addr, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); lf.Close(); close(p.done) }()
	live.Lock()
	live.procs[p] = struct{}{}
	live.Unlock()
	return p, nil
}

// Pid is the process's id, which is also its process group's.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Stop ends the process group, SIGTERM first, SIGKILL after 10 s, and
// waits for the process to exit.
func (p *Proc) Stop() {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	live.Lock()
	delete(live.procs, p)
	live.Unlock()
}

// StopOnSignal stops every process still running and exits when the
// program is interrupted or terminated, after cleanup; prog starts the
// message it prints.
func StopOnSignal(prog string, cleanup func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-ch
		live.Lock()
		procs := make([]*Proc, 0, len(live.procs))
		for p := range live.procs {
			procs = append(procs, p)
		}
		live.Unlock()
		for _, p := range procs {
			p.Stop()
		}
		cleanup()
		fmt.Fprintln(os.Stderr, prog+":", sig)
		os.Exit(1)
	}()
}

// Ready waits until probe succeeds, trying every 200 ms for at most
// timeout. It fails at once, with the end of the process's log, when the
// process exits; after timeout it fails with the probe's last error and
// the end of the log.
func (p *Proc) Ready(timeout time.Duration, probe func() error) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			out, _ := os.ReadFile(p.Log)
			return fmt.Errorf("%s exited (%v): %s", p.Name, p.err, Tail(string(out), 2000))
		default:
		}
		err := probe()
		if err == nil {
			return nil
		}
		last = err.Error()
		time.Sleep(200 * time.Millisecond)
	}
	out, _ := os.ReadFile(p.Log)
	return fmt.Errorf("not ready after %v (last: %s): %s", timeout, last, Tail(string(out), 2000))
}

// Get returns a probe for Ready: a GET of url with the Authorization
// header auth ("" for none), which passes when it is answered 200 and
// check (nil: none) accepts the answer. A transport error fails it with
// the error, another status with the status.
func Get(c *http.Client, url, auth string, check func(*http.Response) error) func() error {
	return func() error {
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			return err
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		if check != nil {
			return check(resp)
		}
		return nil
	}
}
