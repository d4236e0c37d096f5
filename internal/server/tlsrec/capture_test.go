package tlsrec

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"github.com/apfproject/apf/internal/testing/testpki"
)

// fakeConn is a connection that reads from r and writes to w.
type fakeConn struct {
	net.Conn // nil: a test uses Read and Write alone
	r        io.Reader
	w        bytes.Buffer
}

func (c *fakeConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *fakeConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// recordStream is a stream of records of all sizes, their bodies random
// (a Capture does not look into them), and the offsets their ends are at.
func recordStream(t testing.TB) (stream []byte, ends []int) {
	for i, n := range []int{0, 1, 4, 5, 300, 0, maxPlain, maxCipher, 65535, 7} {
		stream = append(stream, byte(22+i%2), 3, 3, byte(n>>8), byte(n))
		stream = append(stream, randomBytes(t, n)...)
		ends = append(ends, len(stream))
	}
	return stream, ends
}

func TestCaptureReadsStopAtRecords(t *testing.T) {
	stream, ends := recordStream(t)
	for _, r := range []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"whole reads", func(r io.Reader) io.Reader { return r }},
		{"one byte reads", iotest.OneByteReader},
		{"half reads", iotest.HalfReader},
	} {
		for _, size := range []int{1, 2, 3, 5, 6, 100, 1<<16 + 10} {
			t.Run(fmt.Sprintf("%s/%d", r.name, size), func(t *testing.T) {
				c := NewCapture(&fakeConn{r: r.wrap(bytes.NewReader(stream))})
				buf := make([]byte, size)
				for off := 0; off < len(stream); {
					n, err := c.Read(buf)
					if err != nil || n == 0 {
						t.Fatalf("at %d: %d, %v", off, n, err)
					}
					if !bytes.Equal(buf[:n], stream[off:off+n]) {
						t.Fatalf("at %d: %d bytes not the stream's", off, n)
					}
					for _, e := range ends {
						if off < e && e < off+n {
							t.Fatalf("a read of [%d, %d) crosses the end of a record at %d", off, off+n, e)
						}
					}
					off += n
				}
				if n, err := c.Read(buf); n != 0 || err != io.EOF {
					t.Fatalf("at the end: %d, %v", n, err)
				}
			})
		}
	}
}

func TestCaptureReleasedPassesReadsThrough(t *testing.T) {
	stream, _ := recordStream(t)
	c := NewCapture(&fakeConn{r: bytes.NewReader(stream)})
	c.Release()
	buf := make([]byte, len(stream)+1)
	if n, err := c.Read(buf); n != len(stream) || err != nil {
		t.Fatalf("a released Capture read %d of %d bytes at once, %v", n, len(stream), err)
	}
}

// keyLogLine is a line of crypto/tls's key log.
func keyLogLine(label string, secret []byte) []byte {
	return fmt.Appendf(nil, "%s %x %x\n", label, bytes.Repeat([]byte{7}, 32), secret)
}

func TestCaptureKeyLog(t *testing.T) {
	c := NewCapture(&fakeConn{})
	cs, ss := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 48)
	for _, line := range [][]byte{
		keyLogLine("CLIENT_HANDSHAKE_TRAFFIC_SECRET", ss),
		keyLogLine("SERVER_HANDSHAKE_TRAFFIC_SECRET", ss),
		keyLogLine("EXPORTER_SECRET", ss),
		[]byte("CLIENT_TRAFFIC_SECRET_0 0707\n"),
		[]byte("SERVER_TRAFFIC_SECRET_0 07 zz\n"),
		keyLogLine("CLIENT_TRAFFIC_SECRET_0", cs),
	} {
		if n, err := c.keys.Write(line); n != len(line) || err != nil {
			t.Fatalf("key log write: %d of %d, %v", n, len(line), err)
		}
	}
	if !bytes.Equal(c.clientSecret, cs) || c.serverSecret != nil {
		t.Fatalf("secrets %x and %x; want the client's alone", c.clientSecret, c.serverSecret)
	}
	c.keys.Write(keyLogLine("SERVER_TRAFFIC_SECRET_0", ss))
	if !bytes.Equal(c.serverSecret, ss) {
		t.Fatalf("server secret %x", c.serverSecret)
	}
	c.Release()
	c.keys.Write(keyLogLine("SERVER_TRAFFIC_SECRET_0", ss))
	if c.clientSecret != nil || c.serverSecret != nil {
		t.Fatal("a released Capture keeps secrets")
	}
}

func TestCaptureKeepsWritesAfterServerSecret(t *testing.T) {
	fc := &fakeConn{}
	c := NewCapture(fc)
	c.Write([]byte("before "))
	c.keys.Write(keyLogLine("CLIENT_TRAFFIC_SECRET_0", make([]byte, 32)))
	c.Write([]byte("between "))
	c.keys.Write(keyLogLine("SERVER_TRAFFIC_SECRET_0", make([]byte, 32)))
	c.Write([]byte("after"))
	if string(c.written) != "after" {
		t.Fatalf("kept %q, want what followed the server's secret", c.written)
	}
	if fc.w.String() != "before between after" {
		t.Fatalf("wrote %q", fc.w.String())
	}
	// Up to maxWritten in all, then no more.
	c.Write(make([]byte, maxWritten-len("after")))
	if c.overflow || len(c.written) != maxWritten {
		t.Fatalf("overflow %v with %d bytes kept", c.overflow, len(c.written))
	}
	c.Write([]byte("x"))
	if !c.overflow || len(c.written) != maxWritten {
		t.Fatalf("overflow %v with %d bytes kept", c.overflow, len(c.written))
	}
	c.Release()
	c.Write([]byte("released"))
	if c.written != nil || !bytes.HasSuffix(fc.w.Bytes(), []byte("xreleased")) {
		t.Fatalf("kept %q after Release", c.written)
	}
}

func TestCaptureCloseWrite(t *testing.T) {
	cc, sc := tcpPair(t)
	c := NewCapture(sc)
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if n, err := cc.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("the peer read %d, %v after CloseWrite", n, err)
	}
	// The connection is still open the other way.
	cc.Write([]byte("x"))
	c.Release()
	if b, err := io.ReadAll(io.LimitReader(c, 1)); err != nil || string(b) != "x" {
		t.Fatalf("read %q, %v", b, err)
	}
	// Under a connection that cannot half-close, nothing happens.
	if err := NewCapture(&fakeConn{}).CloseWrite(); err != nil {
		t.Fatal(err)
	}
}

func TestListen(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := Listen(tcp)
	defer ln.Close()
	cert := serverCert(t)
	cfg := Config(&tls.Config{Certificates: []tls.Certificate{cert}})
	errc := make(chan error, 1)
	go func() {
		c, err := tls.Dial("tcp", ln.Addr().String(), clientConfig(cert))
		if err == nil {
			_, err = c.Write([]byte("hello"))
			c.Close()
		}
		errc <- err
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cp, ok := c.(*Capture)
	if !ok {
		t.Fatalf("Accept returned a %T", c)
	}
	srv := tls.Server(cp, cfg)
	if err := srv.Handshake(); err != nil {
		t.Fatal(err)
	}
	p := take(t, srv)
	if b, err := io.ReadAll(NewConn(cp.Conn, p, nil, srv.ConnectionState())); err != nil || string(b) != "hello" {
		t.Fatalf("read %q, %v", b, err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestConfigLeavesBase(t *testing.T) {
	cert := serverCert(t)
	base := &tls.Config{Certificates: []tls.Certificate{cert}}
	cfg := Config(base)
	if cfg == base || cfg.GetConfigForClient == nil {
		t.Fatal("Config did not make a configuration of its own")
	}
	_, srv, _ := handshake(t, cfg, clientConfig(cert), true)
	take(t, srv)
	if base.GetConfigForClient != nil || base.KeyLogWriter != nil || cfg.KeyLogWriter != nil {
		t.Fatal("Config or a connection changed the configuration it was given")
	}
}

// TestConfigAsksBaseFirst: base's own GetConfigForClient chooses the
// configuration a connection is captured under.
func TestConfigAsksBaseFirst(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	cert := ca.Issue(t, "localhost", nil, x509.ExtKeyUsageServerAuth)
	other := ca.Issue(t, "localhost", nil, x509.ExtKeyUsageServerAuth)
	var calls atomic.Int32
	base := &tls.Config{
		Certificates: []tls.Certificate{cert},
		GetConfigForClient: func(hi *tls.ClientHelloInfo) (*tls.Config, error) {
			calls.Add(1)
			switch hi.ServerName {
			case "other":
				return &tls.Config{Certificates: []tls.Certificate{other}}, nil
			case "refused":
				return nil, errors.New("refused")
			}
			return nil, nil
		},
	}
	cfg := Config(base)
	for _, c := range []struct {
		name string
		want tls.Certificate
	}{{"localhost", cert}, {"other", other}} {
		ccfg := clientConfig(c.want)
		ccfg.ServerName = c.name
		cli, srv, raw := handshake(t, cfg, ccfg, true)
		exchange(t, cli, NewConn(raw, take(t, srv), nil, srv.ConnectionState()), 3, sizes)
	}
	if calls.Load() != 2 {
		t.Fatalf("base's GetConfigForClient called %d times, want 2", calls.Load())
	}
	// Its error fails the handshake.
	cc, sc := tcpPair(t)
	ccfg := clientConfig(cert)
	ccfg.ServerName = "refused"
	go tls.Client(cc, ccfg).Handshake()
	if err := tls.Server(NewCapture(sc), cfg).Handshake(); err == nil || calls.Load() != 3 {
		t.Fatalf("handshake: %v after %d calls", err, calls.Load())
	}
}

// checkRefused checks that Take refuses srv, and that srv and cli go on
// with crypto/tls as they would have without it.
func checkRefused(t *testing.T, cli, srv *tls.Conn) {
	t.Helper()
	if p, ok := Take(srv); ok || p != nil {
		t.Fatal("Take carried on a connection it should have left to crypto/tls")
	}
	for range 3 {
		roundTrip(t, cli, srv)
	}
	exchange(t, cli, srv, 10, sizes)
}

func TestTakeRefuses(t *testing.T) {
	cert := serverCert(t)
	large := cert
	// A certificate chain over maxWritten, so that more is written after
	// the server's secret than a Capture keeps: the client looks at the
	// leaf alone.
	large.Certificate = slices.Clone(cert.Certificate)
	for len(bytes.Join(large.Certificate, nil)) <= maxWritten {
		large.Certificate = append(large.Certificate, cert.Certificate[0])
	}
	for _, c := range []struct {
		name    string
		server  func(*tls.Config)
		client  func(*tls.Config)
		config  bool // the server's configuration from Config
		capture bool // the server's socket under a Capture
		check   func(*testing.T, tls.ConnectionState)
	}{
		{name: "TLS 1.2 client", config: true, capture: true,
			client: func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 },
			check: func(t *testing.T, st tls.ConnectionState) {
				if st.Version != tls.VersionTLS12 {
					t.Fatalf("version %#x", st.Version)
				}
			}},
		{name: "TLS 1.2 server", config: true, capture: true,
			server: func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 }},
		{name: "HTTP/2", config: true, capture: true,
			server: func(c *tls.Config) { c.NextProtos = []string{"h2", "http/1.1"} },
			client: func(c *tls.Config) { c.NextProtos = []string{"h2", "http/1.1"} },
			check: func(t *testing.T, st tls.ConnectionState) {
				if st.NegotiatedProtocol != "h2" {
					t.Fatalf("protocol %q", st.NegotiatedProtocol)
				}
			}},
		{name: "not under a Capture", config: true, capture: false},
		{name: "no key log", config: false, capture: true},
		{name: "large certificate chain", config: true, capture: true,
			server: func(c *tls.Config) { c.Certificates = []tls.Certificate{large} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			scfg := &tls.Config{Certificates: []tls.Certificate{cert}}
			if c.server != nil {
				c.server(scfg)
			}
			if c.config {
				scfg = Config(scfg)
			}
			ccfg := clientConfig(cert)
			if c.client != nil {
				c.client(ccfg)
			}
			cli, srv, _ := handshake(t, scfg, ccfg, c.capture)
			if c.check != nil {
				c.check(t, srv.ConnectionState())
			}
			checkRefused(t, cli, srv)
			if cp, ok := srv.NetConn().(*Capture); ok && c.name == "large certificate chain" && !cp.overflow {
				t.Fatal("the Capture did not overflow: the test does not test what it says")
			}
		})
	}
}

func TestTakeBeforeHandshake(t *testing.T) {
	cert := serverCert(t)
	cc, sc := tcpPair(t)
	srv := tls.Server(NewCapture(sc), Config(&tls.Config{Certificates: []tls.Certificate{cert}}))
	if _, ok := Take(srv); ok {
		t.Fatal("Take carried on a connection before its handshake")
	}
	cli := tls.Client(cc, clientConfig(cert))
	errc := make(chan error, 1)
	go func() { errc <- cli.Handshake() }()
	if err := srv.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	checkRefused(t, cli, srv)
}

func TestTakeALPN(t *testing.T) {
	cert := serverCert(t)
	for _, c := range []struct {
		server, client []string
		want           string
	}{
		{[]string{"h2", "http/1.1"}, []string{"http/1.1"}, "http/1.1"},
		{[]string{"http/1.1"}, []string{"h2", "http/1.1"}, "http/1.1"},
		{nil, []string{"h2"}, ""},
	} {
		cfg := Config(&tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: c.server})
		ccfg := clientConfig(cert)
		ccfg.NextProtos = c.client
		cli, srv, raw := handshake(t, cfg, ccfg, true)
		if got := srv.ConnectionState().NegotiatedProtocol; got != c.want {
			t.Fatalf("server %q, client %q: negotiated %q", c.server, c.client, got)
		}
		exchange(t, cli, NewConn(raw, take(t, srv), nil, srv.ConnectionState()), 3, sizes)
	}
}

// TestTakeSessionTickets: the tickets the server sends in its handshake
// took the first sequence numbers of its application data, which Take
// counts; a connection that resumes is carried on as well.
func TestTakeSessionTickets(t *testing.T) {
	cert := serverCert(t)
	cfg := Config(&tls.Config{Certificates: []tls.Certificate{cert}})
	// A client with no session cache asks for no tickets
	// (psk_key_exchange_modes), and gets none.
	cli, srv, raw := handshake(t, cfg, clientConfig(cert), true)
	p := take(t, srv)
	if p.out.seq != 0 {
		t.Fatalf("write sequence %d with no tickets sent", p.out.seq)
	}
	exchange(t, cli, NewConn(raw, p, nil, srv.ConnectionState()), 3, sizes)

	cache := tls.NewLRUClientSessionCache(4)
	for _, resume := range []bool{false, true, true} {
		ccfg := clientConfig(cert)
		ccfg.ClientSessionCache = cache
		cli, srv, raw := handshake(t, cfg, ccfg, true)
		if srv.ConnectionState().DidResume != resume || cli.ConnectionState().DidResume != resume {
			t.Fatalf("resumed %v (client %v), want %v", srv.ConnectionState().DidResume, cli.ConnectionState().DidResume, resume)
		}
		p := take(t, srv)
		if p.out.seq == 0 {
			t.Fatal("the session tickets sent are not counted")
		}
		// The client takes the tickets, then data under the following
		// sequence numbers.
		exchange(t, cli, NewConn(raw, p, nil, srv.ConnectionState()), 10, sizes)
	}
}

// TestTakeClientCertificate: a server that asks for a client certificate
// sends its tickets after the client's Finished.
func TestTakeClientCertificate(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	cert := ca.Issue(t, "localhost", nil, x509.ExtKeyUsageServerAuth)
	client := ca.Issue(t, "client", nil, x509.ExtKeyUsageClientAuth)
	cfg := Config(&tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAnyClientCert})
	ccfg := clientConfig(cert)
	ccfg.Certificates = []tls.Certificate{client}
	ccfg.ClientSessionCache = tls.NewLRUClientSessionCache(1)
	cli, srv, raw := handshake(t, cfg, ccfg, true)
	st := srv.ConnectionState()
	if len(st.PeerCertificates) == 0 || !st.PeerCertificates[0].Equal(client.Leaf) {
		t.Fatal("the client's certificate is not the server's peer's")
	}
	p := take(t, srv)
	if p.out.seq == 0 {
		t.Fatal("the session tickets sent are not counted")
	}
	exchange(t, cli, NewConn(raw, p, nil, st), 10, sizes)
}

// TestTakeHelloRetryRequest: the client's key share is not the one the
// server wants; the handshake takes a second ClientHello.
func TestTakeHelloRetryRequest(t *testing.T) {
	cert := serverCert(t)
	cfg := Config(&tls.Config{Certificates: []tls.Certificate{cert}, CurvePreferences: []tls.CurveID{tls.CurveP256}})
	ccfg := clientConfig(cert)
	ccfg.CurvePreferences = []tls.CurveID{tls.X25519, tls.CurveP256}
	cli, srv, raw := handshake(t, cfg, ccfg, true)
	if id := srv.ConnectionState().CurveID; id != tls.CurveP256 {
		t.Fatalf("curve %v", id)
	}
	exchange(t, cli, NewConn(raw, take(t, srv), nil, srv.ConnectionState()), 10, sizes)
}

// gateConn holds the server's reads after it wrote its flight until gate
// is closed: the client's Finished and what it sends next are then in
// the socket together when the server reads the Finished.
type gateConn struct {
	net.Conn
	gate  chan struct{}
	wrote bool
}

func (g *gateConn) Read(p []byte) (int, error) {
	if g.wrote {
		<-g.gate
	}
	return g.Conn.Read(p)
}

func (g *gateConn) Write(p []byte) (int, error) {
	g.wrote = true
	return g.Conn.Write(p)
}

// TestTakeClientDataAfterFinished: what the client sends right after its
// Finished stays in the socket, where the carried on connection reads it,
// not in crypto/tls's buffer.
func TestTakeClientDataAfterFinished(t *testing.T) {
	cert := serverCert(t)
	cfg := Config(&tls.Config{Certificates: []tls.Certificate{cert}})
	for _, tickets := range []bool{false, true} {
		t.Run(fmt.Sprintf("tickets=%v", tickets), func(t *testing.T) {
			cc, sc := tcpPair(t)
			ccfg := clientConfig(cert)
			if tickets {
				ccfg.ClientSessionCache = tls.NewLRUClientSessionCache(1)
			}
			first := message(0, 3*maxPlain+5)
			cli := tls.Client(cc, ccfg)
			gate := make(chan struct{})
			errc := make(chan error, 1)
			go func() {
				defer close(gate)
				err := cli.Handshake()
				if err == nil {
					_, err = cli.Write(first)
				}
				errc <- err
			}()
			srv := tls.Server(NewCapture(&gateConn{Conn: sc, gate: gate}), cfg)
			if err := srv.Handshake(); err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			c := NewConn(sc, take(t, srv), nil, srv.ConnectionState())
			got := make([]byte, len(first))
			if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, first) {
				t.Fatalf("read %d bytes, %v; the client's first data is lost", len(got), err)
			}
			exchange(t, cli, c, 5, sizes)
		})
	}
}
