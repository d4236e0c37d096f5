//go:build !linux

package evloop

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/apfproject/apf/internal/server/tlsrec"
)

// Supported says whether this system has the loops (Linux: epoll).
const Supported = false

var errUnsupported = errors.New("evloop: event loops need Linux")

type impl struct{}

// Serve reports that this system has no loops.
func (s *Server) Serve(net.Listener) error { return errUnsupported }

// Start reports that this system has no loops.
func (s *Server) Start() error { return errUnsupported }

// Adopt takes nothing here.
func (s *Server) Adopt(net.Conn, *tlsrec.Protector, *tls.ConnectionState) bool { return false }

// Shutdown has nothing to stop here.
func (s *Server) Shutdown(context.Context) error { return nil }

// Counts is zero here.
func (s *Server) Counts() (gated, handedOver int64) { return 0, 0 }

// Close has nothing to close here.
func (s *Server) Close() error { return nil }

// loop is never made on this system; its methods are what Exchange calls.
type loop struct{}

type conn struct {
	ctx    context.Context
	out    []byte
	ux     *Exchange
	closed bool
}

func (*loop) write(*conn, []byte)             {}
func (*loop) forward(*Exchange, string, bool) {}
func (*loop) handOver(*conn)                  {}
func (*loop) post(func()) bool                { return false }
func (*loop) exchangeDue(*Exchange)           {}
func (*loop) closeWhy(*conn, error)           {}
func (*loop) exchangeDone(*conn)              {}
func (*loop) bind(*conn, time.Time)           {}
