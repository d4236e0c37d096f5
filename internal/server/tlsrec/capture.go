package tlsrec

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net"
	"slices"
)

// Capture is a connection under tls.Server during its handshake (see the
// package documentation). Its reads never go past the end of a TLS
// record; once the handshake is over, Take or Release ends what it does
// beyond passing reads and writes through.
type Capture struct {
	net.Conn
	done bool
	// The record being read: its header's bytes not returned yet, and
	// how much of its body is left.
	head []byte
	hbuf [headerLen]byte
	left int
	// From the key log: the application traffic secrets.
	keys                       keyLog
	clientSecret, serverSecret []byte
	// written is what the server wrote once its application secret was
	// known (whole records: crypto/tls writes nothing else), up to
	// maxWritten; overflow says it wrote more.
	written  []byte
	overflow bool
}

// maxWritten bounds what a Capture keeps of the server's writes after its
// application secret is known: crypto/tls writes its whole first flight
// then (its hello, certificate chain and Finished), and its session
// tickets after. A chain too long for it leaves the connection with
// crypto/tls.
const maxWritten = 64 << 10

// NewCapture returns c under a Capture.
func NewCapture(c net.Conn) *Capture {
	cp := &Capture{Conn: c}
	cp.keys.c = cp
	return cp
}

// Read reads from the connection, up to the end of the current record
// while the handshake runs.
func (c *Capture) Read(p []byte) (int, error) {
	if c.done || len(p) == 0 {
		return c.Conn.Read(p)
	}
	if len(c.head) > 0 {
		n := copy(p, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	if c.left == 0 {
		if _, err := io.ReadFull(c.Conn, c.hbuf[:]); err != nil {
			return 0, err
		}
		c.left = int(binary.BigEndian.Uint16(c.hbuf[3:5]))
		c.head = c.hbuf[:]
		return c.Read(p)
	}
	n, err := c.Conn.Read(p[:min(len(p), c.left)])
	c.left -= n
	return n, err
}

// Write writes to the connection, keeping what follows the application
// secret while the handshake runs.
func (c *Capture) Write(p []byte) (int, error) {
	if !c.done && c.serverSecret != nil && !c.overflow {
		if len(c.written)+len(p) > maxWritten {
			c.overflow = true
		} else {
			c.written = append(c.written, p...)
		}
	}
	return c.Conn.Write(p)
}

// CloseWrite half-closes the connection when it can.
func (c *Capture) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Release ends the capture: the connection stays crypto/tls's, and its
// reads and writes pass through from now on.
func (c *Capture) Release() {
	c.done = true
	c.written, c.clientSecret, c.serverSecret = nil, nil, nil
}

// keyLog is a Capture's key log writer: it keeps the two application
// traffic secrets of its connection's lines (NSS's format, one a Write).
type keyLog struct{ c *Capture }

func (k *keyLog) Write(line []byte) (int, error) {
	f := bytes.Fields(line)
	if len(f) != 3 || k.c.done {
		return len(line), nil
	}
	var dst *[]byte
	switch string(f[0]) {
	case "CLIENT_TRAFFIC_SECRET_0":
		dst = &k.c.clientSecret
	case "SERVER_TRAFFIC_SECRET_0":
		dst = &k.c.serverSecret
	default:
		return len(line), nil
	}
	secret := make([]byte, hex.DecodedLen(len(f[2])))
	if _, err := hex.Decode(secret, f[2]); err == nil {
		*dst = secret
	}
	return len(line), nil
}

// Listen returns ln whose connections come under a Capture.
func Listen(ln net.Listener) net.Listener { return captureListener{ln} }

type captureListener struct{ net.Listener }

func (l captureListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return NewCapture(c), nil
}

// Config returns a copy of base under which each connection in a Capture
// whose client offers TLS 1.3 and not HTTP/2 (which base prefers, if it
// offers it) gets a configuration of its own, its Capture the key log
// writer. base's own GetConfigForClient is asked first.
func Config(base *tls.Config) *tls.Config {
	cfg := base.Clone()
	prev := base.GetConfigForClient
	h2 := slices.Contains(base.NextProtos, "h2")
	cfg.GetConfigForClient = func(hi *tls.ClientHelloInfo) (*tls.Config, error) {
		own := (*tls.Config)(nil)
		if prev != nil {
			c, err := prev(hi)
			if err != nil {
				return nil, err
			}
			own = c
		}
		cp, ok := hi.Conn.(*Capture)
		if !ok || !slices.Contains(hi.SupportedVersions, tls.VersionTLS13) || h2 && slices.Contains(hi.SupportedProtos, "h2") {
			if ok {
				// Not one to carry on: its reads pass through from now.
				cp.Release()
			}
			return own, nil
		}
		if own == nil {
			own = base
		}
		c := own.Clone()
		c.GetConfigForClient = nil
		c.KeyLogWriter = &cp.keys
		return c, nil
	}
	return cfg
}

// Take returns the Protector that carries tc on from where its handshake
// left it, and releases tc's Capture either way. It says false when tc is
// not one to carry on: not under a Capture, not TLS 1.3, no key log lines
// captured, or a cipher suite this package does not know. tc's own reads
// and writes must not be used after a true.
func Take(tc *tls.Conn) (*Protector, bool) {
	c, ok := tc.NetConn().(*Capture)
	if !ok {
		return nil, false
	}
	defer c.Release()
	st := tc.ConnectionState()
	s := suiteOf(st.CipherSuite)
	if !st.HandshakeComplete || st.Version != tls.VersionTLS13 || s == nil || c.clientSecret == nil || c.serverSecret == nil ||
		c.overflow || len(c.head) > 0 || c.left > 0 {
		return nil, false
	}
	// The records of application data the server sent already (session
	// tickets) are those that open under its application key; the others
	// (its Finished) are under the handshake's.
	h, err := newHalf(s, c.serverSecret)
	if err != nil {
		return nil, false
	}
	sent := uint64(0)
	for w := c.written; len(w) >= headerLen; {
		n := headerLen + int(binary.BigEndian.Uint16(w[3:5]))
		if len(w) < n {
			return nil, false
		}
		if w[0] == typeData {
			h.seq = sent
			if _, _, err := h.open(w[:n]); err == nil {
				sent++
			}
		}
		w = w[n:]
	}
	p, err := NewProtector(st.CipherSuite, c.clientSecret, c.serverSecret, 0, sent)
	if err != nil {
		return nil, false
	}
	return p, true
}
