package tlsrec

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/testing/testpki"
)

// testTimeout bounds every blocking socket operation of a test, so that a
// bug makes the test fail rather than hang.
const testTimeout = 30 * time.Second

// randomBytes returns n random bytes.
func randomBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// message is the i'th message of n bytes of a test: deterministic, so
// that both ends can make it, and different from one i to the next.
func message(i, n int) []byte {
	r := mrand.NewChaCha8([32]byte{byte(i), byte(i >> 8), byte(i >> 16)})
	b := make([]byte, n)
	_, _ = r.Read(b)
	return b
}

// answer is what a server answers to req: distinct from req so that an
// echo of the request would not pass.
func answer(req []byte) []byte {
	b := make([]byte, len(req))
	for i, c := range req {
		b[i] = ^c
	}
	return b
}

// mirror returns a server's Protector for suite id, with random traffic
// secrets, and its client's mirror image: what one seals the other opens.
func mirror(t testing.TB, id uint16) (srv, cli *Protector) {
	t.Helper()
	n := suiteOf(id).hash().Size()
	return pair(t, id, randomBytes(t, n), randomBytes(t, n))
}

// pair is the server's Protector of client secret cs and server secret ss
// and its mirror, the client's.
func pair(t testing.TB, id uint16, cs, ss []byte) (srv, cli *Protector) {
	t.Helper()
	srv, err := NewProtector(id, cs, ss, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	cli, err = NewProtector(id, ss, cs, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return srv, cli
}

// records splits b into its records, each with its header, failing the
// test if b is not whole records.
func records(t testing.TB, b []byte) [][]byte {
	t.Helper()
	var recs [][]byte
	for len(b) > 0 {
		if len(b) < headerLen {
			t.Fatalf("%d bytes after the last record", len(b))
		}
		n := headerLen + int(binary.BigEndian.Uint16(b[3:5]))
		if len(b) < n {
			t.Fatalf("a record of %d bytes cut at %d", n, len(b))
		}
		recs = append(recs, b[:n])
		b = b[n:]
	}
	return recs
}

// sealInner seals inner, a record's whole plaintext (its content, content
// type and padding), as h's next record: what half.seal cannot make.
func sealInner(h *half, inner []byte) []byte {
	n := len(inner) + h.aead.Overhead()
	hdr := []byte{typeData, 3, 3, byte(n >> 8), byte(n)}
	return h.aead.Seal(hdr, h.next(), inner, hdr)
}

// wantAlert fails the test unless err is an *AlertError of code, received
// from the peer or raised by this side as received says.
func wantAlert(t testing.TB, err error, code uint8, received bool) {
	t.Helper()
	var ae *AlertError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T), want an AlertError of code %d", err, err, code)
	}
	if ae.Code != code || ae.Received != received {
		t.Fatalf("alert %d received=%v (%v), want %d received=%v", ae.Code, ae.Received, err, code, received)
	}
}

// tcpPair returns both ends of a loopback TCP connection, closed when the
// test ends.
func tcpPair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The dial completes in the listener's backlog, before Accept.
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	deadline := time.Now().Add(testTimeout)
	_ = client.SetDeadline(deadline)
	_ = server.SetDeadline(deadline)
	return client, server
}

// serverCert is a server certificate for localhost.
func serverCert(t testing.TB) tls.Certificate {
	t.Helper()
	return testpki.NewCA(t, "ca").Issue(t, "localhost", nil, x509.ExtKeyUsageServerAuth)
}

// clientConfig is a client's configuration that accepts the server's
// certificate cert alone. testpki's certificates name their host in the
// common name only, which crypto/tls no longer verifies: the chain is not
// verified, the leaf is compared instead.
func clientConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{
		ServerName:         "localhost",
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !cs.PeerCertificates[0].Equal(cert.Leaf) {
				return errors.New("the server's certificate is not the one issued")
			}
			return nil
		},
	}
}

// handshake connects a crypto/tls client of configuration ccfg to a
// server of configuration scfg over loopback TCP, the server's socket
// under a Capture when capture says so. It returns the client and the
// server once both are done with the handshake, and the server's socket.
func handshake(t testing.TB, scfg, ccfg *tls.Config, capture bool) (cli, srv *tls.Conn, raw net.Conn) {
	t.Helper()
	cc, sc := tcpPair(t)
	var under net.Conn = sc
	if capture {
		under = NewCapture(sc)
	}
	cli, srv = handshakeOver(t, scfg, ccfg, cc, under)
	return cli, srv, sc
}

// handshakeOver is handshake over the client's socket cc and the
// server's under (wrapped as the test needs).
func handshakeOver(t testing.TB, scfg, ccfg *tls.Config, cc, under net.Conn) (cli, srv *tls.Conn) {
	t.Helper()
	cli, srv = tls.Client(cc, ccfg), tls.Server(under, scfg)
	errc := make(chan error, 1)
	go func() { errc <- cli.Handshake() }()
	if err := srv.Handshake(); err != nil {
		cc.Close() // so that the client's handshake returns
		<-errc
		t.Fatalf("server handshake: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	return cli, srv
}

// take is Take, failing the test if it refuses.
func take(t testing.TB, srv *tls.Conn) *Protector {
	t.Helper()
	p, ok := Take(srv)
	if !ok {
		t.Fatal("Take refused a TLS 1.3 connection under a Capture")
	}
	return p
}

// roundTrip checks that data flows both ways between a client and a
// server tls.Conn: what a connection crypto/tls goes on with does.
func roundTrip(t testing.TB, cli, srv *tls.Conn) {
	t.Helper()
	if _, err := srv.Write([]byte("from the server")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, len("from the server"))
	if _, err := io.ReadFull(cli, b); err != nil || string(b) != "from the server" {
		t.Fatalf("client read %q, %v", b, err)
	}
	if _, err := cli.Write([]byte("from the client")); err != nil {
		t.Fatal(err)
	}
	b = make([]byte, len("from the client"))
	if _, err := io.ReadFull(srv, b); err != nil || string(b) != "from the client" {
		t.Fatalf("server read %q, %v", b, err)
	}
}

// exchange runs rounds exchanges of a request from cli and its answer
// from srv, the i'th request of size(i) bytes, and fails the test unless
// each comes whole both ways.
func exchange(t testing.TB, cli, srv io.ReadWriter, rounds int, size func(int) int) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			for i := range rounds {
				req := message(i, size(i))
				if _, err := cli.Write(req); err != nil {
					return fmt.Errorf("client write %d: %w", i, err)
				}
				got := make([]byte, len(req))
				if _, err := io.ReadFull(cli, got); err != nil {
					return fmt.Errorf("client read %d: %w", i, err)
				}
				if !bytes.Equal(got, answer(req)) {
					return fmt.Errorf("client: answer %d is not the one sent", i)
				}
			}
			return nil
		}()
	}()
	for i := range rounds {
		req := make([]byte, size(i))
		if _, err := io.ReadFull(srv, req); err != nil {
			t.Fatalf("server read %d: %v", i, err)
		}
		if !bytes.Equal(req, message(i, size(i))) {
			t.Fatalf("server: request %d is not the one sent", i)
		}
		if _, err := srv.Write(answer(req)); err != nil {
			t.Fatalf("server write %d: %v", i, err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// sizes is the size of the i'th message of an exchange: small and large,
// at and about the size of a record.
func sizes(i int) int {
	switch i % 8 {
	case 0:
		return 1
	case 1:
		return maxPlain
	case 2:
		return maxPlain + 1
	case 3:
		return 3*maxPlain + 17
	}
	return 1 + (i*7919)%9000
}
