package tlsrec

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os/exec"
	"testing"
)

// lines sends the lines r reads to a channel, closed at the end.
func lines(r io.Reader) <-chan string {
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		s := bufio.NewScanner(r)
		for s.Scan() {
			ch <- s.Text()
		}
	}()
	return ch
}

// await waits for the line want on ch, skipping the others.
func await(t *testing.T, ctx context.Context, ch <-chan string, want string) {
	t.Helper()
	for {
		select {
		case line, ok := <-ch:
			if !ok {
				t.Fatalf("no line %q before the end", want)
			}
			if line == want {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no line %q: %v", want, ctx.Err())
		}
	}
}

// TestInteropOpenSSL carries on connections of OpenSSL's s_client, one of
// each cipher suite (which crypto/tls's client does not let one choose),
// with KeyUpdates both sides ask for.
func TestInteropOpenSSL(t *testing.T) {
	bin, err := exec.LookPath("openssl")
	if err != nil || testing.Short() {
		t.Skip("no openssl, or -short")
	}
	cert := serverCert(t)
	cfg := Config(&tls.Config{Certificates: []tls.Certificate{cert}})
	for _, s := range suites {
		name := tls.CipherSuiteName(s.id)
		t.Run(name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "s_client", "-connect", ln.Addr().String(),
				"-servername", "localhost", "-tls1_3", "-ciphersuites", name, "-no_ign_eof")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdoutPipe, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			stderrPipe, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			stdout, stderr := lines(stdoutPipe), lines(stderrPipe)
			defer cmd.Wait()
			defer cancel() // kills s_client on a failure

			raw, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			dl, _ := ctx.Deadline()
			raw.SetDeadline(dl)
			srv := tls.Server(NewCapture(raw), cfg)
			if err := srv.Handshake(); err != nil {
				t.Fatal(err)
			}
			st := srv.ConnectionState()
			if st.CipherSuite != s.id {
				t.Fatalf("cipher suite %s", tls.CipherSuiteName(st.CipherSuite))
			}
			p := take(t, srv)
			c := NewConn(raw, p, nil, st)
			r := bufio.NewReader(c)
			// ping has s_client send a line, which the server answers.
			ping := func(i int) {
				t.Helper()
				fmt.Fprintf(stdin, "ping %d\n", i)
				if line, err := r.ReadString('\n'); err != nil || line != fmt.Sprintf("ping %d\n", i) {
					t.Fatalf("read %q, %v", line, err)
				}
				fmt.Fprintf(c, "pong %d\n", i)
				await(t, ctx, stdout, fmt.Sprintf("pong %d", i))
			}
			// command has s_client run a command (a line to itself),
			// waiting until it did so that the next line is read apart.
			command := func(cmd, done string) {
				t.Helper()
				fmt.Fprintf(stdin, "%s\n", cmd)
				await(t, ctx, stderr, done)
			}
			ping(0)
			// s_client's KeyUpdates, asking for one and not.
			for i, cmd := range []string{"K", "k", "K"} {
				in, out := p.in.secret, p.out.secret
				command(cmd, "KEYUPDATE")
				ping(1 + i)
				if bytes.Equal(p.in.secret, in) || bytes.Equal(p.out.secret, out) != (cmd == "k") {
					t.Fatalf("KeyUpdate %s: the keys did not move on as they should", cmd)
				}
			}
			// The server's, asking for one: s_client answers before its
			// next data.
			in := p.in.secret
			c.wmu.Lock()
			rec := p.out.seal(nil, typeHandshake, []byte{handshakeKeyUpdate, 0, 0, 1, 1})
			err = p.out.update()
			c.wmu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := raw.Write(rec); err != nil {
				t.Fatal(err)
			}
			ping(4)
			ping(5)
			if bytes.Equal(p.in.secret, in) {
				t.Fatal("s_client did not answer the server's KeyUpdate")
			}
			// At the end of its input s_client sends its close_notify.
			stdin.Close()
			if rest, err := io.ReadAll(r); len(rest) != 0 || err != nil {
				t.Fatalf("at the end read %q, %v", rest, err)
			}
			c.Close()
		})
	}
}
