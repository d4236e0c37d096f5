package tlsrec

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
)

// goClient makes a handshake between a crypto/tls client and a server
// under Config and a Capture, and returns the client, the server's
// tls.Conn and its socket.
func goClient(t testing.TB, tickets bool) (cli, srv *tls.Conn, raw net.Conn) {
	t.Helper()
	cert := serverCert(t)
	ccfg := clientConfig(cert)
	if tickets {
		ccfg.ClientSessionCache = tls.NewLRUClientSessionCache(1)
	}
	return handshake(t, Config(&tls.Config{Certificates: []tls.Certificate{cert}}), ccfg, true)
}

func TestInteropConn(t *testing.T) {
	for _, tickets := range []bool{false, true} {
		t.Run(fmt.Sprintf("tickets=%v", tickets), func(t *testing.T) {
			cli, srv, raw := goClient(t, tickets)
			st := srv.ConnectionState()
			t.Logf("cipher suite %s", tls.CipherSuiteName(st.CipherSuite))
			c := NewConn(raw, take(t, srv), nil, st)
			exchange(t, cli, c, 200, sizes)
		})
	}
}

// protected is a server's end of a connection carried on by a Protector
// alone: Seal's records written to the socket, what the socket reads
// given to Open (a byte at a time when oneByte says so).
type protected struct {
	c          net.Conn
	p          *Protector
	oneByte    bool
	raw, plain []byte
	buf        [32 << 10]byte
}

func (s *protected) Read(b []byte) (int, error) {
	for len(s.plain) == 0 {
		n, err := s.c.Read(s.buf[:])
		if n == 0 && err != nil {
			return 0, err
		}
		for chunk := s.buf[:n]; len(chunk) > 0; {
			step := len(chunk)
			if s.oneByte {
				step = 1
			}
			s.raw = append(s.raw, chunk[:step]...)
			chunk = chunk[step:]
			var used int
			s.plain, used, err = s.p.Open(s.plain, s.raw)
			if err != nil {
				return 0, err
			}
			s.raw = s.raw[used:]
		}
	}
	n := copy(b, s.plain)
	s.plain = s.plain[n:]
	return n, nil
}

func (s *protected) Write(b []byte) (int, error) {
	if _, err := s.c.Write(s.p.Seal(nil, b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

func TestInteropProtector(t *testing.T) {
	for _, oneByte := range []bool{false, true} {
		t.Run(fmt.Sprintf("oneByte=%v", oneByte), func(t *testing.T) {
			cli, srv, raw := goClient(t, true)
			rounds := 100
			if oneByte {
				rounds = 24
			}
			exchange(t, cli, &protected{c: raw, p: take(t, srv), oneByte: oneByte}, rounds, sizes)
		})
	}
}

// TestInteropKeyUpdate: the server asks a crypto/tls client for a
// KeyUpdate, which answers with its own.
func TestInteropKeyUpdate(t *testing.T) {
	cli, srv, raw := goClient(t, true)
	p := take(t, srv)
	s := &protected{c: raw, p: p}
	for gen := range 4 {
		in, out := p.in.secret, p.out.secret
		rec := p.out.seal(nil, typeHandshake, []byte{handshakeKeyUpdate, 0, 0, 1, 1})
		if err := p.out.update(); err != nil {
			t.Fatal(err)
		}
		req := message(gen, 100+gen)
		if _, err := raw.Write(p.Seal(rec, req)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(req))
		if _, err := io.ReadFull(cli, got); err != nil || !bytes.Equal(got, req) {
			t.Fatalf("generation %d: the client read %d bytes, %v", gen, len(got), err)
		}
		if _, err := cli.Write(answer(req)); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(s, got); err != nil || !bytes.Equal(got, answer(req)) {
			t.Fatalf("generation %d: the server read %d bytes, %v", gen, len(got), err)
		}
		if bytes.Equal(p.in.secret, in) || bytes.Equal(p.out.secret, out) || p.Pending() {
			t.Fatalf("generation %d: the keys did not both move on once", gen)
		}
	}
	exchange(t, cli, s, 10, sizes)
}

// peer is a client's end of a connection a Conn carries on, over a socket
// of its own and the mirror image of the Conn's Protector.
type peer struct {
	c          net.Conn
	p          *Protector
	raw, plain []byte
}

// peerConn returns a Conn over loopback TCP, carried on by a Protector of
// suite id, and its peer.
func peerConn(t testing.TB, id uint16) (*Conn, *peer) {
	t.Helper()
	cs, ss := tcpPair(t)
	srv, cli := mirror(t, id)
	st := tls.ConnectionState{Version: tls.VersionTLS13, CipherSuite: id, HandshakeComplete: true}
	return NewConn(ss, srv, nil, st), &peer{c: cs, p: cli}
}

func (pr *peer) send(t testing.TB, b []byte) {
	t.Helper()
	if _, err := pr.c.Write(b); err != nil {
		t.Fatal(err)
	}
}

// fill reads and opens what the Conn sends until done says so; it returns
// the first error.
func (pr *peer) fill(done func() bool) error {
	buf := make([]byte, 32<<10)
	for !done() {
		n, err := pr.c.Read(buf)
		pr.raw = append(pr.raw, buf[:n]...)
		var used int
		var oerr error
		pr.plain, used, oerr = pr.p.Open(pr.plain, pr.raw)
		pr.raw = pr.raw[used:]
		if oerr != nil {
			return oerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// read returns the next n bytes of data the Conn sent.
func (pr *peer) read(t testing.TB, n int) []byte {
	t.Helper()
	if err := pr.fill(func() bool { return len(pr.plain) >= n }); err != nil {
		t.Fatalf("the peer read %d bytes of %d: %v", len(pr.plain), n, err)
	}
	b := pr.plain[:n]
	pr.plain = pr.plain[n:]
	return b
}

// readErr reads what the Conn sends until an error, and returns it.
func (pr *peer) readErr() error {
	return pr.fill(func() bool { return false })
}

func readString(t testing.TB, c io.Reader, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read %q: %v", b, err)
	}
	return string(b)
}

func TestConnConnectionState(t *testing.T) {
	c, _ := peerConn(t, tls.TLS_AES_128_GCM_SHA256)
	if st := c.ConnectionState(); st.Version != tls.VersionTLS13 || st.CipherSuite != tls.TLS_AES_128_GCM_SHA256 || !st.HandshakeComplete {
		t.Fatalf("state %+v", st)
	}
}

// TestConnPendingRaw: the bytes read from the socket before the hand-over
// come first, whole records and the start of one.
func TestConnPendingRaw(t *testing.T) {
	cs, ss := tcpPair(t)
	srv, cli := mirror(t, tls.TLS_AES_128_GCM_SHA256)
	first := cli.Seal(nil, []byte("first,"))
	second := cli.Seal(nil, []byte("second,"))
	raw := append(first, second[:3]...)
	c := NewConn(ss, srv, raw, tls.ConnectionState{})
	clear(raw) // the caller's buffer is free once NewConn returns
	if _, err := cs.Write(cli.Seal(second[3:], []byte("third"))); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, c, len("first,second,third")); got != "first,second,third" {
		t.Fatalf("read %q", got)
	}
}

func TestConnSmallReads(t *testing.T) {
	c, pr := peerConn(t, tls.TLS_CHACHA20_POLY1305_SHA256)
	want := message(1, 40000)
	pr.send(t, pr.p.Seal(nil, want))
	var got []byte
	for buf := make([]byte, 7); len(got) < len(want); {
		n, err := c.Read(buf[:1+len(got)%7])
		if err != nil || n == 0 {
			t.Fatalf("after %d bytes: %d, %v", len(got), n, err)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("read bytes not the ones sent")
	}
}

// TestConnEmptyRecords: records with no data do not make Read return
// nothing.
func TestConnEmptyRecords(t *testing.T) {
	c, pr := peerConn(t, tls.TLS_AES_128_GCM_SHA256)
	pr.send(t, pr.p.out.seal(pr.p.out.seal(nil, typeData, nil), typeData, nil))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer c.Close() // on a failure, so that Read returns
	wg.Go(func() {
		if n, err := c.Read(make([]byte, 10)); n != 1 || err != nil {
			t.Errorf("Read: %d, %v", n, err)
		}
	})
	pr.send(t, pr.p.Seal(nil, []byte("x")))
	wg.Wait()
}

// TestConnKeyUpdate: a KeyUpdate that asks for one is answered, and the
// connection goes on both ways.
func TestConnKeyUpdate(t *testing.T) {
	c, pr := peerConn(t, tls.TLS_AES_256_GCM_SHA384)
	for gen := range 3 {
		pr.send(t, pr.p.Seal(clientKeyUpdate(t, pr.p, true), []byte("ping")))
		if got := readString(t, c, 4); got != "ping" {
			t.Fatalf("generation %d: read %q", gen, got)
		}
		if _, err := c.Write([]byte("pong")); err != nil {
			t.Fatal(err)
		}
		// The peer's Open takes the answer and moves its keys on.
		if got := pr.read(t, 4); string(got) != "pong" {
			t.Fatalf("generation %d: the peer read %q", gen, got)
		}
	}
}

// TestConnKeyUpdateAlone: the answer to a KeyUpdate leaves while Read
// waits for data, with no Write.
func TestConnKeyUpdateAlone(t *testing.T) {
	c, pr := peerConn(t, tls.TLS_AES_128_GCM_SHA256)
	done := make(chan string, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer c.Close() // on a failure, so that Read returns
	wg.Go(func() {
		b := make([]byte, 2)
		_, err := io.ReadFull(c, b)
		if err != nil {
			t.Error(err)
		}
		done <- string(b)
	})
	in := pr.p.in.secret
	pr.send(t, clientKeyUpdate(t, pr.p, true))
	if err := pr.fill(func() bool { return !bytes.Equal(pr.p.in.secret, in) }); err != nil {
		t.Fatalf("waiting for the answer: %v", err)
	}
	pr.send(t, pr.p.Seal(nil, []byte("go")))
	if got := <-done; got != "go" {
		t.Fatalf("read %q", got)
	}
}

// TestConnKeyUpdateConcurrent: KeyUpdates that ask for one, answered by
// reads while writes go on in another goroutine (run it under -race).
func TestConnKeyUpdateConcurrent(t *testing.T) {
	c, pr := peerConn(t, tls.TLS_AES_128_GCM_SHA256)
	const n = 100
	size := func(i int) int { return 1 + i*313%20000 }
	var wg sync.WaitGroup
	defer wg.Wait()
	defer c.Close() // on a failure, so that the goroutines return
	defer pr.c.Close()
	// The peer's sending half (its Protector's out half alone).
	wg.Go(func() {
		for i := range n {
			var b []byte
			if i%10 == 0 {
				var err error
				if b, err = keyUpdate(pr.p, true); err != nil {
					t.Error(err)
					return
				}
			}
			if _, err := pr.c.Write(pr.p.Seal(b, message(i, size(i)))); err != nil {
				t.Error(err)
				return
			}
		}
	})
	// The Conn's reading and writing sides.
	wg.Go(func() {
		for i := range n {
			b := make([]byte, size(i))
			if _, err := io.ReadFull(c, b); err != nil || !bytes.Equal(b, message(i, size(i))) {
				t.Errorf("Conn read %d: %v", i, err)
				return
			}
		}
	})
	wg.Go(func() {
		for i := range n {
			if _, err := c.Write(message(n+i, size(i))); err != nil {
				t.Errorf("Conn write %d: %v", i, err)
				return
			}
		}
	})
	// The peer's reading half (its in half alone: the answers ask for
	// no KeyUpdate).
	updates := 0
	for i := range n {
		in := pr.p.in.secret
		got := pr.read(t, size(i))
		if !bytes.Equal(got, message(n+i, size(i))) {
			t.Fatalf("the peer's read %d is not what was written", i)
		}
		if !bytes.Equal(pr.p.in.secret, in) {
			updates++
		}
	}
	wg.Wait()
	if updates == 0 {
		t.Fatal("no KeyUpdate was answered")
	}
	t.Logf("%d answers to %d requests", updates, n/10)
}

func TestConnReadCloseNotify(t *testing.T) {
	c, pr := peerConn(t, tls.TLS_AES_128_GCM_SHA256)
	pr.send(t, pr.p.Alert(pr.p.Seal(nil, []byte("last")), nil))
	if got := readString(t, c, 4); got != "last" {
		t.Fatalf("read %q", got)
	}
	for range 2 {
		if n, err := c.Read(make([]byte, 10)); n != 0 || err != io.EOF {
			t.Fatalf("Read after close_notify: %d, %v", n, err)
		}
	}
	// Nothing answered it: the first the peer gets is Close's.
	c.Close()
	if err := pr.readErr(); !errors.Is(err, ErrCloseNotify) {
		t.Fatalf("the peer read %v", err)
	}
}

func TestConnReadAlert(t *testing.T) {
	c, pr := peerConn(t, tls.TLS_AES_128_GCM_SHA256)
	pr.send(t, pr.p.out.seal(nil, typeAlert, []byte{2, 42}))
	for range 2 {
		_, err := c.Read(make([]byte, 10))
		wantAlert(t, err, 42, true)
	}
	c.Close()
	if err := pr.readErr(); !errors.Is(err, ErrCloseNotify) {
		t.Fatalf("the peer read %v", err)
	}
}

// TestConnReadBadRecord: a record that does not open ends the connection
// with the alert it calls for, after the data before it.
func TestConnReadBadRecord(t *testing.T) {
	c, pr := peerConn(t, tls.TLS_AES_128_GCM_SHA256)
	pr.send(t, pr.p.Seal(nil, []byte("ok")))
	bad := pr.p.Seal(nil, []byte("bad"))
	bad[len(bad)-1] ^= 1
	pr.send(t, bad)
	if got := readString(t, c, 2); got != "ok" {
		t.Fatalf("read %q", got)
	}
	for range 2 {
		_, err := c.Read(make([]byte, 10))
		wantAlert(t, err, alertBadRecordMAC, false)
	}
	wantAlert(t, pr.readErr(), alertBadRecordMAC, true)
}

func TestConnReadEOF(t *testing.T) {
	// At the end of a record, with no close_notify: as tls.Conn, io.EOF.
	c, pr := peerConn(t, tls.TLS_AES_128_GCM_SHA256)
	pr.send(t, pr.p.Seal(nil, []byte("a")))
	pr.c.(*net.TCPConn).CloseWrite()
	if b, err := io.ReadAll(c); string(b) != "a" || err != nil {
		t.Fatalf("read %q, %v", b, err)
	}
	// In a record: cut short.
	c, pr = peerConn(t, tls.TLS_AES_128_GCM_SHA256)
	first := pr.p.Seal(nil, []byte("a"))
	rec := pr.p.Seal(nil, []byte("abc"))
	pr.send(t, append(first, rec[:len(rec)-1]...))
	pr.c.(*net.TCPConn).CloseWrite()
	if b, err := io.ReadAll(c); string(b) != "a" || err != io.ErrUnexpectedEOF {
		t.Fatalf("read %q, %v", b, err)
	}
}

func TestConnClose(t *testing.T) {
	// A crypto/tls client reads what was written, then io.EOF.
	cli, srv, raw := goClient(t, true)
	c := NewConn(raw, take(t, srv), nil, srv.ConnectionState())
	if _, err := c.Write([]byte("bye")); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(cli); string(b) != "bye" || err != nil {
		t.Fatalf("the client read %q, %v", b, err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	// What ends the data is a close_notify, not only the socket's end.
	c, pr := peerConn(t, tls.TLS_AES_128_GCM_SHA256)
	c.Close()
	if err := pr.readErr(); !errors.Is(err, ErrCloseNotify) {
		t.Fatalf("the peer read %v", err)
	}
}

func TestConnCloseWrite(t *testing.T) {
	cli, srv, raw := goClient(t, true)
	c := NewConn(raw, take(t, srv), nil, srv.ConnectionState())
	if _, err := c.Write([]byte("bye")); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(cli); string(b) != "bye" || err != nil {
		t.Fatalf("the client read %q, %v", b, err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after CloseWrite: %v", err)
	}
	// The other way is still open.
	if _, err := cli.Write([]byte("late")); err != nil {
		t.Fatal(err)
	}
	cli.Close()
	if b, err := io.ReadAll(c); string(b) != "late" || err != nil {
		t.Fatalf("read %q, %v", b, err)
	}

	c, pr := peerConn(t, tls.TLS_AES_128_GCM_SHA256)
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if err := pr.readErr(); !errors.Is(err, ErrCloseNotify) {
		t.Fatalf("the peer read %v", err)
	}
	pr.send(t, pr.p.Seal(nil, []byte("late")))
	if got := readString(t, c, 4); got != "late" {
		t.Fatalf("read %q", got)
	}
}

// TestConnConcurrent reads and writes a Conn from two goroutines, a
// crypto/tls client echoing (run it under -race).
func TestConnConcurrent(t *testing.T) {
	cli, srv, raw := goClient(t, true)
	c := NewConn(raw, take(t, srv), nil, srv.ConnectionState())
	echo := make(chan error, 1)
	go func() {
		_, err := io.Copy(cli, cli)
		echo <- err
	}()
	const n = 100
	var want []byte
	for i := range n {
		want = append(want, message(i, sizes(i))...)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer c.Close() // on a failure, so that the goroutine returns
	wg.Go(func() {
		for i := range n {
			if _, err := c.Write(message(i, sizes(i))); err != nil {
				t.Errorf("write %d: %v", i, err)
				return
			}
		}
	})
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, %v; not the ones written", len(got), err)
	}
	wg.Wait()
	c.Close()
	if err := <-echo; err != nil {
		t.Fatalf("the client's echo: %v", err)
	}
}
