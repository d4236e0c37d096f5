//go:build linux

package top

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"
)

// openPTY opens a pseudo-terminal of 24 lines of 80 columns: the master
// side the test reads and types on, the slave side apf top runs on.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	ioctl := func(f *os.File, req uintptr, arg unsafe.Pointer) {
		t.Helper()
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(arg)); errno != 0 {
			t.Fatalf("ioctl %#x: %v", req, errno)
		}
	}
	var unlock int32
	ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock))
	var n uint32
	ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n))
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	ws := struct{ rows, cols, x, y uint16 }{24, 80, 0, 0}
	ioctl(slave, syscall.TIOCSWINSZ, unsafe.Pointer(&ws))
	return master, slave
}

func termios(t *testing.T, f *os.File) syscall.Termios {
	t.Helper()
	var tio syscall.Termios
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&tio))); errno != 0 {
		t.Fatal(errno)
	}
	return tio
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var escapes = regexp.MustCompile(`\x1b\[[?0-9;]*[a-zA-Z]`)

// On a terminal the view takes the alternate screen, redraws in place
// within the terminal's 80 columns and 24 lines, and ends on q or on
// Ctrl-C (a byte, in raw mode) with the terminal as it was.
func TestTerminalViewEndsOnQAndCtrlC(t *testing.T) {
	metrics := readFile(t, "testdata", "metrics-after.txt")
	for _, key := range []string{"q", "\x03"} {
		t.Run(fmt.Sprintf("%q", key), func(t *testing.T) {
			srv := httptest.NewTLSServer(&fakeServer{metrics: metrics})
			defer srv.Close()
			master, slave := openPTY(t)
			before := termios(t, slave)
			var screen syncBuffer
			go func() {
				buf := make([]byte, 4096)
				for {
					n, err := master.Read(buf)
					_, _ = screen.Write(buf[:n])
					if err != nil {
						return
					}
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan error, 1)
			opts := Options{Kubeconfig: writeKubeconfig(t, srv.URL, srv), Context: "fake", Interval: 50 * time.Millisecond, Flows: DefaultFlows}
			go func() { done <- Run(ctx, opts, slave, slave) }()

			deadline := time.Now().Add(30 * time.Second)
			for strings.Count(screen.String(), home) < 3 || !strings.Contains(screen.String(), "rates over") {
				if time.Now().After(deadline) {
					t.Fatalf("no second frame after 30 s:\n%q", screen.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			if _, err := master.Write([]byte(key)); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the view did not end on the key")
			}
			if after := termios(t, slave); after != before {
				t.Errorf("the terminal was not restored: %+v, was %+v", after, before)
			}
			deadline = time.Now().Add(30 * time.Second)
			for !strings.HasSuffix(screen.String(), leaveAltScreen) {
				if time.Now().After(deadline) {
					t.Fatalf("the alternate screen was not left:\n%q", screen.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			out := screen.String()
			if !strings.HasPrefix(out, enterAltScreen) {
				t.Errorf("the view did not take the alternate screen: %q", out[:min(len(out), 40)])
			}
			frames := strings.Split(strings.TrimSuffix(strings.TrimPrefix(out, enterAltScreen), leaveAltScreen), home)
			for _, f := range frames[1:] {
				lines := strings.Split(f, "\r\n")
				if len(lines) > 24 {
					t.Errorf("a frame of %d lines on 24", len(lines))
				}
				for _, l := range lines {
					if n := utf8.RuneCountInString(escapes.ReplaceAllString(l, "")); n > 80 {
						t.Errorf("a line of %d columns on 80: %q", n, l)
					}
				}
			}
		})
	}
}
