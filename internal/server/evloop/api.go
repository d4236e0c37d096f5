package evloop

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Gate decides what becomes of each request a loop reads. Serve runs on
// the loop's goroutine and must not block: it ends with one of x's
// deciding calls (Reply, Forward, Wait, HandOver).
type Gate interface {
	Serve(x *Exchange)
}

// Relay reads one upstream answer as it arrives and says what the client
// gets. Its methods run on the loop.
type Relay interface {
	// Answer is given the upstream's bytes not consumed yet (eof: the
	// upstream closed its side after them). It returns how many it
	// consumed, out with what the client is to be sent appended, and
	// whether the answer is over: Done (the upstream connection may carry
	// another request) or DoneClose (it may not). An error before
	// anything reached the client makes Failed answer; after, the client
	// connection is closed.
	Answer(in []byte, eof bool, out []byte) (consumed int, _ []byte, _ State, _ error)
	// Failed is told that the exchange with the upstream failed before
	// anything of its answer reached the client: err (one of the errors
	// below, or the system call's), reached (the request had a
	// connection, kept idle or made: a byte of it may have gone), stale
	// (the connection had been kept idle, and it ended before a byte of
	// the answer came: the upstream most likely closed it meanwhile). It
	// returns the next step: another attempt, or the answer for the
	// client.
	Failed(err error, reached, stale bool) Next
	// Ended is called once, when the exchange is over: err nil when the
	// answer was handed to the client's socket whole; else why not: the
	// upstream's failure that cut it, ErrClientGone, an ErrClientWrite,
	// Abort's reason, http.ErrServerClosed.
	Ended(err error)
}

// State is where an answer stands after Relay.Answer.
type State int

const (
	// More: the answer goes on.
	More State = iota
	// Done: the answer is over and the upstream connection is reusable.
	Done
	// DoneClose: the answer is over; the upstream connection is not to be
	// used again.
	DoneClose
)

// Next is what Relay.Failed decides: Request sent to Addr (a new
// attempt; Fresh: on a new connection, none kept idle), or Answer written
// to the client (closing the connection after it with Close).
type Next struct {
	Addr    string
	Request []byte
	Fresh   bool
	Answer  []byte
	Close   bool
}

// The failures of an exchange with an upstream that are the loop's own.
var (
	// ErrConnect: the connection could not be made.
	ErrConnect = errors.New("evloop: could not connect to the upstream")
	// ErrConnectTimeout: nor within DialTimeout.
	ErrConnectTimeout = errors.New("evloop: timed out connecting to the upstream")
	// ErrHeaderTimeout: the answer's head did not come within
	// ResponseHeaderTimeout of the request's end.
	ErrHeaderTimeout = errors.New("evloop: timed out waiting for the upstream's answer")
	// ErrUpstreamClosed: the upstream closed the connection before the
	// answer's end.
	ErrUpstreamClosed = errors.New("evloop: the upstream closed the connection")
	// ErrClientGone: the client closed its side while its request ran.
	ErrClientGone = errors.New("evloop: the client went away")
	// ErrClientWrite wraps a failed read or write of the client's
	// connection.
	ErrClientWrite = errors.New("evloop: the client's connection failed")
)

// Server serves HTTP/1.1 on event loops (see the package
// documentation). Its zero value is not usable: Gate and HandOver are
// required.
type Server struct {
	// Gate decides every request.
	Gate Gate
	// HandOver serves a connection the loop gives up, c's first reads
	// returning what the loop had read from it. It runs on a goroutine of
	// its own.
	HandOver func(c net.Conn)
	// BaseContext is the parent of every connection's context (the one
	// Exchange.Context returns): cancelling it ends what waits under it.
	BaseContext context.Context
	// Workers is the number of loops; 0 means GOMAXPROCS.
	Workers int
	// MaxHeaderBytes bounds a request's head, as net/http's field of the
	// name; a longer head is handed over (and refused there).
	MaxHeaderBytes int
	// MaxBody is the largest request body a loop reads itself (64 KiB
	// when 0); a longer one is handed over.
	MaxBody int
	// ReadHeaderTimeout and IdleTimeout are net/http.Server's fields of
	// the same names.
	ReadHeaderTimeout, IdleTimeout time.Duration
	// The upstream connections: DialTimeout bounds a connect (none when
	// 0), ResponseHeaderTimeout the wait for an answer's head once the
	// request is written (none when 0); UpstreamIdleTimeout closes a
	// connection idle that long, and at most MaxIdlePerHost are kept
	// idle to one address (none when 0).
	DialTimeout, ResponseHeaderTimeout, UpstreamIdleTimeout time.Duration
	MaxIdlePerHost                                          int
	// Logf reports what goes wrong with the loops themselves.
	Logf func(format string, args ...any)

	impl
}

func (s *Server) maxHeaderBytes() int {
	if s.MaxHeaderBytes > 0 {
		return s.MaxHeaderBytes
	}
	return http.DefaultMaxHeaderBytes
}

func (s *Server) maxBody() int {
	if s.MaxBody > 0 {
		return s.MaxBody
	}
	return 64 << 10
}

func (s *Server) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}
