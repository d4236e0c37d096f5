package tlsrec

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Conn is a connection a Protector carries on in the ordinary way, its
// reads and writes blocking: what an event loop hands over of a TLS
// connection it held, for a server of goroutines to go on with. Reads and
// writes may run at once, as net.Conn's contract allows.
type Conn struct {
	net.Conn
	state tls.ConnectionState

	rmu   sync.Mutex
	raw   []byte // read from the socket, not opened yet
	plain []byte // opened, not returned yet
	rerr  error
	rbuf  []byte

	// wmu guards the Protector's sealing side (a KeyUpdate the read side
	// opens moves it on) and the write buffer.
	wmu    sync.Mutex
	p      *Protector
	wbuf   []byte
	closed bool
}

// NewConn returns c carried on by p, raw the bytes read from c and not
// opened yet, state the handshake's.
func NewConn(c net.Conn, p *Protector, raw []byte, state tls.ConnectionState) *Conn {
	return &Conn{Conn: c, p: p, raw: append([]byte(nil), raw...), state: state}
}

// ConnectionState is the handshake's.
func (c *Conn) ConnectionState() tls.ConnectionState { return c.state }

// Read returns the application data the client sent; io.EOF once it sent
// its close_notify.
func (c *Conn) Read(b []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for len(c.plain) == 0 {
		if c.rerr != nil {
			return 0, c.rerr
		}
		if len(c.raw) > 0 {
			c.wmu.Lock()
			var used int
			var err error
			c.plain, used, err = c.p.Open(c.plain[:0], c.raw)
			if c.p.Pending() || err != nil {
				c.wbuf = c.p.Seal(c.wbuf[:0], nil)
				if err != nil {
					// Alert(nil) would be a close_notify.
					c.wbuf = c.p.Alert(c.wbuf, err)
				}
				_, _ = c.Conn.Write(c.wbuf)
			}
			c.wmu.Unlock()
			c.raw = append(c.raw[:0], c.raw[used:]...)
			if err != nil {
				if errors.Is(err, ErrCloseNotify) {
					err = io.EOF
				}
				c.rerr = err
			}
			if len(c.plain) > 0 || err != nil {
				continue
			}
		}
		if c.rbuf == nil {
			c.rbuf = make([]byte, 16<<10)
		}
		n, err := c.Conn.Read(c.rbuf)
		c.raw = append(c.raw, c.rbuf[:n]...)
		if err != nil {
			if errors.Is(err, io.EOF) && len(c.raw) > 0 {
				err = io.ErrUnexpectedEOF
			}
			if n == 0 {
				return 0, err
			}
		}
	}
	n := copy(b, c.plain)
	c.plain = c.plain[n:]
	return n, nil
}

// Write seals b in records of application data and writes them.
func (c *Conn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	c.wbuf = c.p.Seal(c.wbuf[:0], b)
	if _, err := c.Conn.Write(c.wbuf); err != nil {
		return 0, err
	}
	if cap(c.wbuf) > 64<<10 {
		c.wbuf = nil
	}
	return len(b), nil
}

// alertTimeout bounds the write of a close_notify at Close, as tls.Conn's
// Close bounds it.
const alertTimeout = 5 * time.Second

// closeNotify sends a close_notify once.
func (c *Conn) closeNotify() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	_ = c.Conn.SetWriteDeadline(time.Now().Add(alertTimeout))
	_, err := c.Conn.Write(c.p.Alert(nil, nil))
	return err
}

// Close sends a close_notify and closes the connection.
func (c *Conn) Close() error {
	_ = c.closeNotify()
	return c.Conn.Close()
}

// CloseWrite sends a close_notify and half-closes the connection when it
// can.
func (c *Conn) CloseWrite() error {
	if err := c.closeNotify(); err != nil {
		return err
	}
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// EndOfInput says that the client's close_notify was read already (by the
// loop that held the connection): reads return io.EOF once the data before
// it is read.
func (c *Conn) EndOfInput() {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.rerr = io.EOF
}
