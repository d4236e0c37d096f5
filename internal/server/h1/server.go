// Package h1 serves HTTP/1.1 (and 1.0) connections to an http.Handler,
// as net/http's server does and at less cost a request: the handler sees
// the same requests, the client gets the same answers, byte for byte but
// the Date (TestMatchesNetHTTP, FuzzMatchesNetHTTP). Requests are read by
// net/http's own parser (http.ReadRequest), so what it refuses this
// server refuses, with net/http's answers.
//
// For a data path that reads and answers requests itself (the event
// loops), export.go gives the same parse and the same answers as
// functions over bytes. Those read the common request head and write the
// common answer head with code of their own (fastparse.go, fasthead.go),
// each a subset held to the general path by differential tests and
// fuzzers, and leave every other head to the general path.
//
// What it does not pay for: a goroutine started for every request to
// notice a client that goes away (here one starts only for a request
// still running after watchDelay, which is what a request waiting in an
// APF queue or for a slow upstream needs), a context's copy of the
// header at WriteHeader beside the one the answer needs, and the two
// layers of buffers net/http writes an answer through.
//
// With a TLSConfig it serves TLS too, the handshake first; HTTP/2 is not
// served here, but a connection that negotiates it is handed over to
// TLSNextProto (apf serve hands it to net/http's server).
package h1

import (
	"context"
	"crypto/tls"
	"errors"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Server serves HTTP/1.x connections. Its fields are net/http.Server's of
// the same names.
type Server struct {
	Handler           http.Handler
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	ErrorLog          *log.Logger
	BaseContext       func(net.Listener) context.Context
	ConnContext       func(ctx context.Context, c net.Conn) context.Context
	// DisableKeepAlives closes every connection after one request.
	DisableKeepAlives bool
	// TLSConfig, when set, serves TLS on the plain connections the
	// listener accepts.
	TLSConfig *tls.Config
	// TLSNextProto takes over the TLS connections that negotiate one of
	// its protocols by ALPN, as net/http.Server's field of the name does
	// (the handshake is done). Those that negotiate another protocol but
	// HTTP/1.x are closed.
	TLSNextProto map[string]func(*tls.Conn)
	// TakeTLS, when set, is offered each TLS connection whose handshake
	// chose HTTP/1.x, before a request is read: it returns true when it
	// took the connection over, which the server then forgets as it does
	// one TLSNextProto takes.
	TakeTLS func(*tls.Conn) bool

	inShutdown atomic.Bool
	mu         sync.Mutex
	listeners  map[*net.Listener]struct{}
	conns      map[*conn]struct{}
	// compat is the *http.Server handlers find under
	// http.ServerContextKey (the reverse proxy looks for one).
	compat *http.Server
}

func (s *Server) logf(format string, args ...any) {
	if s.ErrorLog != nil {
		s.ErrorLog.Printf(format, args...)
	} else {
		log.Printf(format, args...)
	}
}

func (s *Server) idleTimeout() time.Duration {
	if s.IdleTimeout != 0 {
		return s.IdleTimeout
	}
	return s.ReadHeaderTimeout
}

func (s *Server) keepAlives() bool { return !s.DisableKeepAlives && !s.inShutdown.Load() }

// Serve accepts connections on l and serves each on a goroutine of its
// own, until Shutdown or Close (http.ErrServerClosed) or an accept error.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.inShutdown.Load() {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	s.setUpLocked()
	s.listeners[&l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, &l)
		s.mu.Unlock()
	}()
	base := context.Background()
	if s.BaseContext != nil {
		if base = s.BaseContext(l); base == nil {
			panic("BaseContext returned a nil context")
		}
	}
	base = s.withServer(base)
	// Out of descriptors, or a connection aborted before it was
	// accepted: the server waits a little and goes on, as net/http does.
	var delay time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.inShutdown.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ECONNABORTED) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.logf("http: Accept error: %v; retrying in %v", err, delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		if s.TLSConfig != nil {
			nc = tls.Server(nc, s.TLSConfig)
		}
		c, ctx, ok := s.newConn(base, nc)
		if !ok {
			return http.ErrServerClosed
		}
		go c.serve(ctx)
	}
}

// setUpLocked makes the server's maps and compat, once; s.mu is held.
func (s *Server) setUpLocked() {
	if s.listeners == nil {
		s.listeners = make(map[*net.Listener]struct{})
		s.conns = make(map[*conn]struct{})
		s.compat = &http.Server{Handler: s.Handler, ReadHeaderTimeout: s.ReadHeaderTimeout, IdleTimeout: s.IdleTimeout, MaxHeaderBytes: s.MaxHeaderBytes, ErrorLog: s.ErrorLog}
	}
}

// withServer is base with what every connection's context carries from
// the server (http.ServerContextKey).
func (s *Server) withServer(base context.Context) context.Context {
	return context.WithValue(base, http.ServerContextKey, s.compat)
}

// newConn makes nc a connection of the server, tracked until it ends,
// and its context, from base (the server's context): ok false, and nc
// closed, once Shutdown or Close has begun.
func (s *Server) newConn(base context.Context, nc net.Conn) (c *conn, ctx context.Context, ok bool) {
	ctx = context.WithValue(base, http.LocalAddrContextKey, nc.LocalAddr())
	if s.ConnContext != nil {
		if ctx = s.ConnContext(ctx, nc); ctx == nil {
			panic("ConnContext returned nil")
		}
	}
	c = &conn{s: s, nc: nc, remoteAddr: nc.RemoteAddr().String(), born: time.Now()}
	if st, ok := unprepended(nc).(interface{ ConnectionState() tls.ConnectionState }); ok {
		if _, handshaking := nc.(*tls.Conn); !handshaking {
			// TLS carried on by another than crypto/tls's Conn, its
			// handshake done (a connection an event loop hands over).
			state := st.ConnectionState()
			c.tlsState = &state
		}
	}
	if !s.track(c) {
		_ = nc.Close()
		return nil, nil, false
	}
	return c, ctx, true
}

func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inShutdown.Load() {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Shutdown stops accepting, closes the idle connections, and waits for
// the others to finish their request, until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.inShutdown.Store(true)
	s.closeListeners()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.closeIdle() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Close closes the listeners and every connection at once.
func (s *Server) Close() error {
	s.inShutdown.Store(true)
	s.closeListeners()
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.nc.Close()
		delete(s.conns, c)
	}
	return nil
}

func (s *Server) closeListeners() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for l := range s.listeners {
		_ = (*l).Close()
	}
}

// closeIdle closes the idle connections, and those new for longer than
// newIdleAfter, and says whether none is left.
func (s *Server) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if st := c.state.Load(); st == stateIdle || st == stateNew && time.Since(c.born) > newIdleAfter {
			_ = c.nc.Close()
			delete(s.conns, c)
		}
	}
	return len(s.conns) == 0
}
