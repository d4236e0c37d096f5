//go:build linux

package evloop

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/apfproject/apf/internal/server/h1"
	"github.com/apfproject/apf/internal/server/tlsrec"
)

// Supported says whether this system has the loops (Linux: epoll).
const Supported = true

// impl is the server's running state.
type impl struct {
	mu       sync.Mutex
	loops    []*loop
	lfd      int
	started  bool
	shutting atomic.Bool
	closed   chan struct{}
	stopped  sync.WaitGroup
	// gated counts the requests given to the gate, handed the
	// connections handed over; next turns the accepted connections
	// round the loops.
	gated, handed atomic.Int64
	next          atomic.Uint64
}

// Counts returns how many requests the loops gave their gate and how many
// connections they handed over.
func (s *Server) Counts() (gated, handedOver int64) { return s.gated.Load(), s.handed.Load() }

// outputLimit is how much of an answer a client connection may have
// waiting to be written before the loop stops reading the upstream's.
const outputLimit = 1 << 20

// Serve serves the connections ln accepts until Shutdown or Close; ln
// must be a *net.TCPListener. It returns http.ErrServerClosed then.
func (s *Server) Serve(ln net.Listener) error {
	if s.Gate == nil || s.HandOver == nil {
		return errors.New("evloop: Gate and HandOver are required")
	}
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return fmt.Errorf("evloop: a %T is not a TCP listener", ln)
	}
	f, err := tl.File()
	if err != nil {
		return err
	}
	lfd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		return err
	}
	if err := unix.SetNonblock(lfd, true); err != nil {
		unix.Close(lfd)
		return err
	}
	if err := s.start(lfd); err != nil {
		return err
	}
	<-s.closed
	return http.ErrServerClosed
}

// Start starts the loops with no listener of their own: they serve the
// connections Adopt gives them, until Shutdown or Close.
func (s *Server) Start() error {
	if s.Gate == nil || s.HandOver == nil {
		return errors.New("evloop: Gate and HandOver are required")
	}
	return s.start(-1)
}

// start starts the loops, waiting on the listening socket lfd unless it
// is -1.
func (s *Server) start(lfd int) error {
	n := s.Workers
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	s.mu.Lock()
	if s.started || s.shutting.Load() {
		s.mu.Unlock()
		unix.Close(lfd)
		return errors.New("evloop: Serve called twice or after Shutdown")
	}
	s.started, s.lfd, s.closed = true, lfd, make(chan struct{})
	for range n {
		l, err := newLoop(s, lfd)
		if err != nil {
			s.mu.Unlock()
			s.stop()
			if lfd >= 0 {
				unix.Close(lfd)
			}
			return err
		}
		s.loops = append(s.loops, l)
	}
	for _, l := range s.loops {
		l.peers = s.loops
	}
	for _, l := range s.loops {
		s.stopped.Add(1)
		go func() {
			defer s.stopped.Done()
			if err := l.run(); err != nil {
				s.logf("evloop: a loop ended: %v", err)
			}
		}()
	}
	s.mu.Unlock()
	return nil
}

// Adopt gives the loops nc, a TCP connection whose TLS 1.3 handshake is
// done (state), its records from now on p's to seal and open; nc's own
// reads and writes are not to be used again. It says false when the loops
// are not running (nc is left to the caller then).
func (s *Server) Adopt(nc net.Conn, p *tlsrec.Protector, state *tls.ConnectionState) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok || s.shutting.Load() {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	fd := -1
	if cerr := rc.Control(func(sfd uintptr) { fd, err = unix.Dup(int(sfd)) }); cerr != nil || err != nil {
		return false
	}
	s.mu.Lock()
	loops := s.loops
	s.mu.Unlock()
	if len(loops) == 0 {
		unix.Close(fd)
		return false
	}
	remote := nc.RemoteAddr().String()
	// The runtime's poller lets go of its descriptor; the loop holds the
	// duplicate, which shares its non-blocking file.
	_ = nc.Close()
	t := loops[s.next.Add(1)%uint64(len(loops))]
	t.open.Add(1)
	if !t.post(func() { t.adopt(fd, remote, &tlsConn{p: p, state: state}) }) {
		t.open.Add(-1)
		unix.Close(fd)
	}
	return true
}

// Shutdown stops accepting, closes the idle connections, and waits for
// the others to finish the exchange they are in (each is closed once its
// answer is written) until none is left or ctx ends (its error then; the
// connections left stay open for Close).
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutting.Store(true)
	s.mu.Lock()
	loops := s.loops
	s.mu.Unlock()
	for _, l := range loops {
		l.post(l.quiesce)
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		left := 0
		for _, l := range loops {
			left += int(l.open.Load())
		}
		if left == 0 {
			s.stop()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Close closes every connection the loops hold, ending their exchanges,
// and stops them.
func (s *Server) Close() error {
	s.shutting.Store(true)
	s.stop()
	return nil
}

// stop ends the loops and waits for them.
func (s *Server) stop() {
	s.mu.Lock()
	loops := s.loops
	s.loops = nil
	closed := s.closed
	s.mu.Unlock()
	for _, l := range loops {
		l.stopping.Store(true)
		l.notify()
	}
	s.stopped.Wait()
	s.mu.Lock()
	if s.lfd > 0 {
		unix.Close(s.lfd)
		s.lfd = -1
	}
	if closed != nil {
		select {
		case <-closed:
		default:
			close(closed)
		}
	}
	s.mu.Unlock()
}

// conn is one socket a loop holds: a client's, or one to an upstream.
type conn struct {
	fd       int
	upstream bool
	in, out  []byte
	closed   bool
	// events is what epoll watches on it now.
	events uint32

	// A client's: its address, the context of its exchanges, the
	// exchange in progress, and the time bound of what it is to send
	// next (the head of a request, or any request at all when idle).
	remote string
	ctx    context.Context
	cancel context.CancelFunc
	x      *Exchange
	due    time.Time

	// An upstream's: its address, whether a connect is in progress,
	// whether it carried a request before, and the exchange it serves.
	// timer fires at armed (zero once it has fired or was never set),
	// never later than due, the connection's time bound (see bind).
	timer *time.Timer
	armed time.Time
	// heading: the head's own time bound runs (not the idle one);
	// afterPOST: the request before was a POST (a CRLF may follow it);
	// eof: the client closed its side after the requests in.
	// serving: next is starting its exchanges.
	heading, afterPOST, eof, serving bool

	addr       string
	connecting bool
	reused     bool
	ux         *Exchange

	// A client's over TLS: its records' protection.
	tls *tlsConn
}

// tlsConn is what a client connection over TLS adds: the protection of
// its records, the bytes read and not opened yet (the start of a record),
// and the handshake's state (every request's http.Request.TLS).
type tlsConn struct {
	p     *tlsrec.Protector
	raw   []byte
	state *tls.ConnectionState
}

// loop is one worker: an epoll set, the connections it holds, the
// upstream connections it keeps idle, its timers, and the eventfd other
// goroutines wake it through.
type loop struct {
	s             *Server
	ep, wake, lfd int
	conns         []*conn
	idle          map[string][]*conn
	buf           [64 << 10]byte
	// scratch takes what a relay makes of an upstream's bytes; sealed
	// what is sealed for a client over TLS.
	scratch, sealed []byte
	now             time.Time
	// yielded is when the loop last let the scheduler run (run).
	yielded time.Time
	// open counts the client connections the loop holds (for Shutdown);
	// peers are the server's loops, this one among them.
	open  atomic.Int64
	peers []*loop
	// closing: closeAll has begun; what is posted after finds it so.
	closing   bool
	quiescing bool

	stopping atomic.Bool
	imu      sync.Mutex
	inbox    []func()
	shut     bool
}

func newLoop(s *Server, lfd int) (*loop, error) {
	l := &loop{s: s, ep: -1, wake: -1, lfd: lfd, idle: map[string][]*conn{}}
	var err error
	if l.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err == nil {
		l.ep, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	}
	if err == nil {
		err = unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, l.wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(l.wake)})
	}
	if err == nil && lfd >= 0 {
		// Every loop waits on the one listening socket; EPOLLEXCLUSIVE
		// wakes one of them for a new connection, not all.
		err = unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, lfd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLEXCLUSIVE, Fd: int32(lfd)})
	}
	if err != nil {
		for _, fd := range []int{l.wake, l.ep} {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		return nil, err
	}
	return l, nil
}

// notify wakes the loop.
func (l *loop) notify() {
	_, _ = unix.Write(l.wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
}

// post runs fn on the loop; false once the loop has stopped.
func (l *loop) post(fn func()) bool {
	l.imu.Lock()
	if l.shut {
		l.imu.Unlock()
		return false
	}
	l.inbox = append(l.inbox, fn)
	l.imu.Unlock()
	l.notify()
	return true
}

// woken drains the eventfd and runs what was posted; false when the loop
// is to stop.
func (l *loop) woken() bool {
	var b [8]byte
	_, _ = unix.Read(l.wake, b[:])
	if l.stopping.Load() {
		return false
	}
	l.imu.Lock()
	inbox := l.inbox
	l.inbox = nil
	l.imu.Unlock()
	for _, fn := range inbox {
		fn()
	}
	return true
}

// yieldEvery is how often a busy loop lets the scheduler run: within the
// 10 ms after which the runtime preempts a goroutine that has not. Each
// yield also wakes the idle processor, whose thread looks for work and
// sleeps again, so the loop yields no more often than it must: at 5,000
// requests a second, 5 ms took a tenth off apf's CPU against 2 ms, and 8
// ms a little more (docs/benchmarks.md, "TLS on the loops").
const yieldEvery = 8 * time.Millisecond

// run serves until the server stops it or epoll fails. The loop's
// goroutine is not locked to its thread: apf serve runs other goroutines
// beside the loops (the connections handed over, TLS, its store), and a
// locked loop has the scheduler hand a processor from thread to thread
// each time it wakes (in one process with its clients, BenchmarkGateway
// went from about 12,000 requests a second locked to 14,000-18,000 not).
func (l *loop) run() error {
	defer l.closeAll()
	events := make([]unix.EpollEvent, 256)
	for {
		n, err := unix.EpollWait(l.ep, events, -1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return err
		}
		l.now = time.Now()
		if l.now.Sub(l.yielded) > yieldEvery {
			// A loop that returns from epoll_wait to its goroutine goes
			// through no scheduling point, and the runtime's monitor,
			// seeing one goroutine on its processor for 10 ms, would
			// interrupt it with a signal, and stay awake at its shortest
			// period meanwhile. Yielding now and then is cheaper.
			l.yielded = l.now
			runtime.Gosched()
		}
		for _, ev := range events[:max(n, 0)] {
			fd := int(ev.Fd)
			switch fd {
			case l.wake:
				if !l.woken() {
					return nil
				}
				continue
			case l.lfd:
				if !l.quiescing {
					l.accept()
				}
				continue
			}
			c := l.conn(fd)
			if c == nil {
				continue
			}
			l.event(c, ev.Events)
		}
	}
}

// event handles what epoll reported of c.
func (l *loop) event(c *conn, ev uint32) {
	if c.upstream && c.connecting {
		if ev&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
			return
		}
		l.connected(c)
		return
	}
	if ev&unix.EPOLLOUT != 0 && !l.flush(c) {
		return
	}
	if ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		l.readable(c, ev&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0)
	}
}

func (l *loop) conn(fd int) *conn {
	if fd < len(l.conns) {
		return l.conns[fd]
	}
	return nil
}

// watch sets what epoll watches on c (adding it the first time).
func (l *loop) watch(c *conn, events uint32) {
	if c.closed || c.events == events {
		return
	}
	op := unix.EPOLL_CTL_MOD
	if c.events == 0 {
		op = unix.EPOLL_CTL_ADD
		for c.fd >= len(l.conns) {
			l.conns = append(l.conns, nil)
		}
		l.conns[c.fd] = c
	}
	c.events = events
	if err := unix.EpollCtl(l.ep, op, c.fd, &unix.EpollEvent{Events: events, Fd: int32(c.fd)}); err != nil {
		l.s.logf("evloop: epoll: %v", err)
		l.closeConn(c)
	}
}

// clientEvents is what a client connection is watched for: its input
// and its going away (unless enough is buffered), and room for its output.
func (l *loop) clientEvents(c *conn) uint32 {
	ev := uint32(0)
	if len(c.in) < l.inputLimit() {
		ev |= unix.EPOLLIN | unix.EPOLLRDHUP
	}
	if len(c.out) > 0 {
		ev |= unix.EPOLLOUT
	}
	return ev
}

// upstreamEvents is what an upstream connection is watched for.
func (l *loop) upstreamEvents(u *conn) uint32 {
	ev := uint32(0)
	if u.connecting || len(u.out) > 0 {
		ev |= unix.EPOLLOUT
	}
	if !u.connecting && (u.ux == nil || len(u.ux.c.out) < outputLimit) {
		ev |= unix.EPOLLIN | unix.EPOLLRDHUP
	}
	return ev
}

// inputLimit is how much a client's input may hold: a request whole and
// the start of the next.
func (l *loop) inputLimit() int { return l.s.maxHeaderBytes() + l.s.maxBody() + 4096 }

func (l *loop) rewatch(c *conn) {
	if c.upstream {
		l.watch(c, l.upstreamEvents(c))
	} else {
		l.watch(c, l.clientEvents(c))
	}
}

// accept takes the pending connections.
func (l *loop) accept() {
	for {
		fd, sa, err := unix.Accept4(l.lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err != nil {
			if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.ECONNABORTED) {
				l.s.logf("evloop: accept: %v", err)
			}
			return
		}
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		// The connections go round the loops: the one that wakes for
		// the listener may take many at once (a client that opens its
		// connections together), and each loop is one core's.
		t := l.peers[l.s.next.Add(1)%uint64(len(l.peers))]
		t.open.Add(1)
		remote := sockaddrString(sa)
		if t == l || !t.post(func() { t.adopt(fd, remote, nil) }) {
			if t != l {
				t.open.Add(-1)
				l.open.Add(1)
			}
			l.adopt(fd, remote, nil)
		}
	}
}

// adopt starts serving the accepted connection fd (counted in open),
// over TLS when t is not nil.
func (l *loop) adopt(fd int, remote string, t *tlsConn) {
	if l.quiescing || l.closing {
		l.open.Add(-1)
		unix.Close(fd)
		return
	}
	c := &conn{fd: fd, remote: remote, tls: t}
	c.ctx, c.cancel = context.WithCancel(l.s.baseContext())
	l.now = time.Now()
	l.startHead(c)
	l.watch(c, l.clientEvents(c))
}

func (s *Server) baseContext() context.Context {
	if s.BaseContext != nil {
		return s.BaseContext
	}
	return context.Background()
}

// idleFor starts c's time bound between requests (IdleTimeout);
// startHead the one of a request's head (ReadHeaderTimeout), from the
// connection's start or the first byte of a request after the first.
func (l *loop) idleFor(c *conn) { l.bound(c, l.s.IdleTimeout, false) }

func (l *loop) startHead(c *conn) { l.bound(c, l.s.ReadHeaderTimeout, true) }

func (l *loop) bound(c *conn, d time.Duration, head bool) {
	c.heading = head
	if d > 0 {
		l.bind(c, l.now.Add(d))
	} else {
		l.bind(c, time.Time{})
	}
}

// bind sets c's time bound to at (none when zero). The bound is a
// runtime timer that posts to the loop when it fires; the loop acts on it
// only if the bound still stands then. A request moves its connections'
// bounds several times (the head's, the exchange's, the answer's, idle
// again), nearly always later, and each move of a runtime timer takes its
// processor's timer lock: so the timer is moved only to an earlier time,
// and a bound that moved later, or went, is seen when the timer fires
// (due), which sets it again for the bound that stands then.
func (l *loop) bind(c *conn, at time.Time) {
	c.due = at
	if at.IsZero() || !c.armed.IsZero() && !at.Before(c.armed) {
		return
	}
	c.armed = at
	d := at.Sub(l.now)
	if c.timer == nil {
		c.timer = time.AfterFunc(d, func() { l.post(func() { l.due(c) }) })
		return
	}
	c.timer.Reset(d)
}

// sockaddrString is a socket address as net.Addr.String writes it.
func sockaddrString(sa unix.Sockaddr) string {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)).String()
	case *unix.SockaddrInet6:
		ip := netip.AddrFrom16(a.Addr)
		if a.ZoneId != 0 {
			if ifc, err := net.InterfaceByIndex(int(a.ZoneId)); err == nil {
				ip = ip.WithZone(ifc.Name)
			} else {
				ip = ip.WithZone(strconv.Itoa(int(a.ZoneId)))
			}
		}
		return netip.AddrPortFrom(ip, uint16(a.Port)).String()
	}
	return ""
}

// readable reads what c has; hup: epoll said the peer closed or failed.
func (l *loop) readable(c *conn, hup bool) {
	eof := false
	for {
		if !c.upstream && len(c.in) >= l.inputLimit() {
			// Enough waits to be served; a peer that went away is
			// noticed when reading again, unless that is all there is.
			eof = hup && c.x == nil
			break
		}
		n, err := unix.Read(c.fd, l.buf[:])
		if n > 0 {
			if c.tls == nil {
				c.in = append(c.in, l.buf[:n]...)
			} else if end, ok := l.unseal(c, l.buf[:n]); !ok {
				return
			} else if end {
				eof = true
				break
			}
		}
		if errors.Is(err, unix.EAGAIN) {
			break
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			eof = true
			break
		}
		if n < len(l.buf) {
			break
		}
	}
	if c.upstream {
		l.upstreamInput(c, eof)
		return
	}
	if eof {
		// A client that closes its side while a request runs is gone,
		// as net/http's server takes it; the requests it sent whole
		// before it closed are answered, then the connection closes.
		if c.x != nil || len(c.in) == 0 {
			l.closeWhy(c, ErrClientGone)
			return
		}
		c.eof = true
	}
	if c.x == nil {
		l.next(c)
	}
	l.settle(c)
}

// unseal opens the records of b, read from c, into c.in, keeping the start
// of a record for the next read. It says whether c is still open, and
// end when the client sent its close_notify; a record that does not open
// closes c after the alert it calls for.
func (l *loop) unseal(c *conn, b []byte) (end, ok bool) {
	t := c.tls
	src := b
	if len(t.raw) > 0 {
		t.raw = append(t.raw, b...)
		src = t.raw
	}
	in, used, err := t.p.Open(c.in, src)
	c.in = in
	t.raw = append(t.raw[:0], src[used:]...)
	if t.p.Pending() {
		l.write(c, nil) // a KeyUpdate's answer
	}
	switch {
	case err == nil:
		return false, !c.closed
	case errors.Is(err, tlsrec.ErrCloseNotify):
		return true, !c.closed
	}
	if !c.closed && len(c.out) == 0 {
		_, _ = unix.Write(c.fd, t.p.Alert(nil, err))
	}
	l.closeWhy(c, fmt.Errorf("%w: %w", ErrClientWrite, err))
	return false, false
}

// next starts the exchanges of the requests whole in c.in, one after
// the other as each is answered at once, until one is in progress or the
// next is not whole yet. (An exchange that ends within it comes back to
// this loop rather than calling next again.)
func (l *loop) next(c *conn) {
	if c.serving {
		return
	}
	c.serving = true
	for !c.closed && c.x == nil && len(c.in) > 0 && l.start(c) {
	}
	c.serving = false
}

// start starts the exchange of the request at the start of c.in, and says
// whether it did: not when the request is not whole yet, or the
// connection was handed over or closed.
func (l *loop) start(c *conn) bool {
	if l.quiescing {
		l.closeConn(c)
		return false
	}
	if !c.heading {
		l.startHead(c)
	}
	if c.afterPOST {
		// A client may end a POST's body with a CRLF (as h1 drops it).
		if len(c.in) < 4 && !c.eof && (c.in[0] == '\r' || c.in[0] == '\n') {
			return false
		}
		c.afterPOST = false
		if n := h1.SkipAfterPOST(c.in); n > 0 {
			c.in = append(c.in[:0], c.in[n:]...)
			if len(c.in) == 0 {
				return false
			}
		}
	}
	end := headEnd(c.in)
	if end < 0 {
		// A head cut short by the client's close, as one too long, is
		// the ordinary server's to answer.
		if c.eof || len(c.in) > l.s.maxHeaderBytes()+4096 || c.in[0] == '\r' || c.in[0] == '\n' {
			l.handOver(c)
		}
		return false
	}
	req, err := h1.ParseRequest(c.in[:end], l.s.maxHeaderBytes())
	if err != nil || !plain(req) || req.ContentLength > int64(l.s.maxBody()) {
		l.handOver(c)
		return false
	}
	size := end + int(req.ContentLength)
	if len(c.in) < size {
		if c.eof {
			// A body cut short: the ordinary server reads it and
			// answers that it could not.
			l.handOver(c)
		}
		return false
	}
	c.heading = false
	l.bind(c, time.Time{})
	req.RemoteAddr = c.remote
	if c.tls != nil {
		req.TLS = c.tls.state
	}
	c.afterPOST = req.Method == http.MethodPost
	x := &Exchange{l: l, c: c, req: req, body: c.in[end:size:size], size: size}
	c.x = x
	l.s.gated.Add(1)
	l.s.Gate.Serve(x)
	return true
}

// headEnd is the length of the request head at the start of b, the empty
// line that ends it included, or -1 while it is not whole.
func headEnd(b []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		i += j + 1
		switch {
		case bytes.HasPrefix(b[i:], crlf):
			return i + 2
		case bytes.HasPrefix(b[i:], lf):
			return i + 1
		case len(b)-i < 2:
			return -1
		}
	}
}

var (
	crlf = []byte("\r\n")
	lf   = []byte("\n")
)

// plain says whether the loop serves req itself: HTTP/1.1, a body of known
// length (or none), nothing that asks the server for more than an answer
// (an upgrade, a 100-continue, a close after it).
func plain(req *http.Request) bool {
	return req.ProtoMajor == 1 && req.ProtoMinor == 1 && len(req.TransferEncoding) == 0 && req.ContentLength >= 0 &&
		!req.Close && req.Header["Expect"] == nil && req.Header["Upgrade"] == nil && req.Header["Connection"] == nil &&
		req.Method != http.MethodConnect
}

// handOver gives c up, with everything read from it.
func (l *loop) handOver(c *conn) {
	if x := c.x; x != nil {
		x.ended = true
	}
	c.x = nil
	if c.events != 0 {
		_ = unix.EpollCtl(l.ep, unix.EPOLL_CTL_DEL, c.fd, nil)
	}
	l.conns[c.fd] = nil
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
	}
	c.cancel()
	l.open.Add(-1)
	l.s.handed.Add(1)
	f := os.NewFile(uintptr(c.fd), "client")
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		l.s.logf("evloop: handing a connection over: %v", err)
		return
	}
	if t := c.tls; t != nil {
		tc := tlsrec.NewConn(nc, t.p, t.raw, *t.state)
		if c.eof {
			tc.EndOfInput()
		}
		nc = tc
	}
	in := c.in
	c.in = nil
	go l.s.HandOver(h1.Prepend(nc, in))
}

// write sends b to c, keeping what the socket does not take for later;
// to a client over TLS, sealed in records.
func (l *loop) write(c *conn, b []byte) {
	if c.closed {
		return
	}
	if t := c.tls; t != nil {
		if len(b) == 0 && !t.p.Pending() {
			return
		}
		b = t.p.Seal(l.sealed[:0], b)
		if cap(b) <= 256<<10 {
			l.sealed = b[:0]
		}
	}
	if len(c.out) > 0 {
		c.out = append(c.out, b...)
		return
	}
	for len(b) > 0 {
		n, err := unix.Write(c.fd, b)
		if errors.Is(err, unix.EAGAIN) {
			c.out = append(c.out, b...)
			l.rewatch(c)
			return
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			l.broken(c, err)
			return
		}
		b = b[n:]
	}
}

// broken closes c after a failed read or write; an upstream's exchange
// learns of it.
func (l *loop) broken(c *conn, err error) {
	if c.upstream && c.ux != nil && !c.ux.ended {
		l.upstreamFailed(c.ux, c, err)
		return
	}
	l.closeWhy(c, fmt.Errorf("%w: %w", ErrClientWrite, err))
}

// flush writes what c kept; false if c was closed.
func (l *loop) flush(c *conn) bool {
	for len(c.out) > 0 {
		n, err := unix.Write(c.fd, c.out)
		if errors.Is(err, unix.EAGAIN) {
			return true
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			l.broken(c, err)
			return false
		}
		c.out = c.out[n:]
	}
	c.out = c.out[:0:0]
	if c.upstream && c.ux != nil && !c.ux.heard {
		l.awaitHead(c)
	}
	if x := c.x; !c.upstream && x != nil {
		if x.answered {
			l.exchangeDone(c)
			return !c.closed
		}
		if u := x.u; u != nil {
			// Room again for the upstream's answer.
			l.rewatch(u)
		}
	}
	l.rewatch(c)
	return true
}

// exchangeDone ends the exchange whose answer c has written, and starts
// the next one.
func (l *loop) exchangeDone(c *conn) {
	x := c.x
	if x == nil {
		return
	}
	c.x = nil
	c.in = append(c.in[:0], c.in[x.size:]...)
	x.end(nil)
	if x.closeAfter || l.quiescing {
		l.closeConn(c)
		return
	}
	l.idleFor(c)
	if c.serving {
		return // next goes on with the requests after it
	}
	l.next(c)
	l.settle(c)
}

// settle closes a client connection that has nothing more to be served
// (it closed its side), or sets what it is watched for.
func (l *loop) settle(c *conn) {
	if c.closed {
		return
	}
	if c.eof && c.x == nil {
		l.closeConn(c)
		return
	}
	l.rewatch(c)
}

// forward sends x's request to addr, on a new connection when fresh.
func (l *loop) forward(x *Exchange, addr string, fresh bool) {
	u, err := l.upstream(addr, fresh)
	if err != nil {
		l.failed(x, err, false, false)
		return
	}
	x.u, u.ux = u, x
	x.reached, x.heard = false, false
	if u.connecting {
		u.out = append(u.out[:0], x.request...)
		if d := l.s.DialTimeout; d > 0 {
			l.bind(u, l.now.Add(d))
		}
		l.rewatch(u)
		return
	}
	x.reached = true
	l.send(u)
}

// send writes the request of u's exchange, and starts the wait for the
// answer's head once it is written.
func (l *loop) send(u *conn) {
	x := u.ux
	l.write(u, x.request)
	if u.closed {
		return
	}
	if len(u.out) == 0 {
		l.awaitHead(u)
	}
	l.rewatch(u)
}

// awaitHead bounds the wait for the answer's head (ResponseHeaderTimeout).
func (l *loop) awaitHead(u *conn) {
	l.bind(u, time.Time{})
	if d := l.s.ResponseHeaderTimeout; d > 0 {
		l.bind(u, l.now.Add(d))
	}
}

// upstream is an idle connection to addr (unless fresh), or a new one
// being made.
func (l *loop) upstream(addr string, fresh bool) (*conn, error) {
	for idle := l.idle[addr]; !fresh && len(idle) > 0; idle = l.idle[addr] {
		u := idle[len(idle)-1]
		l.idle[addr] = idle[:len(idle)-1]
		if !u.closed {
			u.reused = true
			l.bind(u, time.Time{})
			return u, nil
		}
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not an IP address and port", ErrConnect, addr)
	}
	family, sa := unix.AF_INET, unix.Sockaddr(nil)
	if ap.Addr().Is4() || ap.Addr().Is4In6() {
		sa = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().Unmap().As4()}
	} else {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConnect, err)
	}
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	u := &conn{fd: fd, upstream: true, addr: addr}
	switch err := unix.Connect(fd, sa); {
	case err == nil:
	case errors.Is(err, unix.EINPROGRESS):
		u.connecting = true
	default:
		unix.Close(fd)
		return nil, fmt.Errorf("%w: %w", ErrConnect, err)
	}
	return u, nil
}

// connected completes u's connect.
func (l *loop) connected(u *conn) {
	u.connecting = false
	l.bind(u, time.Time{})
	x := u.ux
	if e, err := unix.GetsockoptInt(u.fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || e != 0 {
		if err == nil {
			err = unix.Errno(e)
		}
		u.ux = nil
		l.closeConn(u)
		if x != nil && !x.ended {
			x.u = nil
			l.failed(x, fmt.Errorf("%w: %w", ErrConnect, err), false, false)
		}
		return
	}
	if x == nil {
		l.closeConn(u)
		return
	}
	x.reached = true
	u.out = u.out[:0]
	l.send(u)
}

// upstreamInput passes what u read to its exchange's relay.
func (l *loop) upstreamInput(u *conn, eof bool) {
	x := u.ux
	if x == nil || x.ended {
		// An idle connection the upstream closed, or talks on.
		l.closeConn(u)
		return
	}
	if len(u.in) > 0 {
		x.heard = true
	}
	c := x.c
	consumed, out, state, err := x.relay.Answer(u.in, eof, l.scratch[:0])
	l.scratch = out[:0]
	u.in = append(u.in[:0], u.in[consumed:]...)
	if err == nil && eof && state == More {
		err = ErrUpstreamClosed
	}
	if len(out) > 0 {
		x.started = true
		l.bind(u, time.Time{}) // the head came
		l.write(c, out)
	}
	if cap(l.scratch) > 256<<10 {
		l.scratch = nil
	}
	if err != nil {
		l.upstreamFailed(x, u, err)
		return
	}
	if c.closed {
		return
	}
	if state == More {
		l.rewatch(u)
		return
	}
	u.ux, x.u = nil, nil
	if state == Done && !eof && len(u.in) == 0 && !l.quiescing && len(l.idle[u.addr]) < l.s.MaxIdlePerHost {
		u.reused = false
		l.bind(u, time.Time{})
		if d := l.s.UpstreamIdleTimeout; d > 0 {
			l.bind(u, l.now.Add(d))
		}
		l.idle[u.addr] = append(l.idle[u.addr], u)
		l.watch(u, unix.EPOLLIN|unix.EPOLLRDHUP)
	} else {
		l.closeConn(u)
	}
	x.finish()
}

// upstreamFailed handles an upstream connection that failed x.
func (l *loop) upstreamFailed(x *Exchange, u *conn, err error) {
	stale := u.reused && !x.heard && connEnded(err)
	u.ux, x.u = nil, nil
	l.closeConn(u)
	if x.started {
		l.closeWhy(x.c, err)
		return
	}
	l.failed(x, err, x.reached, stale)
}

// connEnded says whether err is the peer's close or reset.
func connEnded(err error) bool {
	return errors.Is(err, ErrUpstreamClosed) || errors.Is(err, unix.ECONNRESET) || errors.Is(err, unix.EPIPE)
}

// failed asks the relay what follows a failed attempt.
func (l *loop) failed(x *Exchange, err error, reached, stale bool) {
	next := x.relay.Failed(err, reached, stale)
	if next.Addr != "" {
		x.request = next.Request
		l.forward(x, next.Addr, next.Fresh)
		return
	}
	x.started = true
	x.closeAfter = x.closeAfter || next.Close
	l.write(x.c, next.Answer)
	if !x.c.closed {
		x.finish()
	}
}

// closeConn closes c; a client's exchange ends (cut by the server, when
// it had not), and the upstream connection serving it is closed with it.
func (l *loop) closeConn(c *conn) { l.closeWhy(c, http.ErrServerClosed) }

// closeWhy is closeConn, why the reason an exchange in progress ends.
func (l *loop) closeWhy(c *conn, why error) {
	if c.closed {
		return
	}
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.fd < len(l.conns) && l.conns[c.fd] == c {
		l.conns[c.fd] = nil
	}
	if t := c.tls; t != nil && len(c.out) == 0 && !errors.Is(why, ErrClientWrite) && !errors.Is(why, ErrClientGone) {
		// A close_notify, as tls.Conn's Close sends, if the socket
		// takes it at once.
		_, _ = unix.Write(c.fd, t.p.Alert(nil, nil))
	}
	unix.Close(c.fd)
	if c.upstream {
		if x := c.ux; x != nil {
			// Closed for its client's sake: the exchange is ending.
			c.ux, x.u = nil, nil
		}
		return
	}
	l.open.Add(-1)
	c.cancel()
	if x := c.x; x != nil {
		c.x = nil
		if u := x.u; u != nil {
			u.ux = nil
			x.u = nil
			l.closeConn(u)
		}
		x.end(why)
	}
}

// quiesce stops accepting and closes the idle connections; those in an
// exchange close after it.
func (l *loop) quiesce() {
	if l.quiescing {
		return
	}
	l.quiescing = true
	if l.lfd >= 0 {
		_ = unix.EpollCtl(l.ep, unix.EPOLL_CTL_DEL, l.lfd, nil)
	}
	for _, c := range l.conns {
		if c != nil && (c.upstream && c.ux == nil || !c.upstream && c.x == nil) {
			l.closeConn(c)
		}
	}
}

// closeAll closes everything the loop holds.
func (l *loop) closeAll() {
	l.closing = true
	l.imu.Lock()
	l.shut = true
	inbox := l.inbox
	l.inbox = nil
	l.imu.Unlock()
	// What was posted runs, so that what it holds is given back (each
	// exchange it finds has ended).
	for _, c := range l.conns {
		if c != nil {
			l.closeConn(c)
		}
	}
	for _, fn := range inbox {
		fn()
	}
	for _, fd := range []int{l.wake, l.ep} {
		unix.Close(fd)
	}
}

// due acts on c's time bound if it has passed.
func (l *loop) due(c *conn) {
	c.armed = time.Time{}
	if c.closed || c.due.IsZero() {
		return // gone since the timer was set
	}
	if now := time.Now(); now.Before(c.due) {
		// Moved later since: the timer is set again for it.
		c.armed = c.due
		c.timer.Reset(c.due.Sub(now))
		return
	}
	c.due = time.Time{}
	if !c.upstream {
		if x := c.x; x != nil {
			l.exchangeDue(x) // the exchange's timer (SetTimer)
			return
		}
		// Idle too long, or a head not sent in time: as net/http's
		// server, the connection is closed without an answer.
		l.closeConn(c)
		return
	}
	switch x := c.ux; {
	case x == nil:
		l.closeConn(c) // idle too long
	case c.connecting:
		l.upstreamFailed(x, c, fmt.Errorf("%w: %w", ErrConnect, ErrConnectTimeout))
	case !x.started:
		l.upstreamFailed(x, c, ErrHeaderTimeout)
	}
}

// exchangeDue runs x's timer function if its time has come.
func (l *loop) exchangeDue(x *Exchange) {
	if x.ended || x.timer == nil || time.Now().Before(x.timerAt) {
		return
	}
	fn := x.timer
	x.timer = nil
	fn()
}
