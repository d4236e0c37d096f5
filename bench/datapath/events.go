package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/apfproject/apf/controller"
)

// serveEvents is the program run with -serve-events ADDR UPSTREAM: an
// HTTP/1.1 relay on an event loop, the design the event-floor row
// measures. Each of GOMAXPROCS workers is one goroutine locked to its
// thread with an epoll set of its own and a listener of its own on ADDR
// (SO_REUSEPORT: the kernel spreads new connections over them); it reads
// and writes every connection it holds itself, so that no goroutine is
// parked and woken for a read and no request is handed between threads.
// A client connection gets one keep-alive connection to UPSTREAM (HOST:PORT)
// of its own, so answers come back in the order requests went.
//
// Requests and answers are framed by their headers (Content-Length;
// anything else is refused and the connection closed) and relayed as they
// came, header and body: nothing of APF, authentication, deadlines, pools,
// metrics or logs, as the apf-floor row. It measures what a request costs
// on such a data path, beside nginx and the goroutine-a-connection floor.
// With g (the event-apf row), each request goes through g first (gate.go).
func serveEvents(addr, upstream string, g *gate) error {
	_, errs, err := startEvents(addr, upstream, runtime.GOMAXPROCS(0), g)
	if err != nil {
		return err
	}
	return <-errs
}

// startEvents starts workers event loops relaying from addr to upstream,
// through g when it is not nil. stop ends them, closing every connection
// they hold, and returns when they have; errs carries each loop's error,
// nil for a loop stopped.
func startEvents(addr, upstream string, workers int, g *gate) (stop func(), errs <-chan error, err error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, nil, err
	}
	up, err := netip.ParseAddrPort(upstream)
	if err != nil {
		return nil, nil, err
	}
	ended := make(chan error, workers)
	var loops []*loop
	stop = func() {
		for _, l := range loops {
			l.stopping.Store(true)
			l.notify()
		}
		for range loops {
			<-ended
		}
	}
	for range workers {
		l, err := newLoop(ap, up, g)
		if err != nil {
			stop()
			return nil, nil, err
		}
		loops = append(loops, l)
		go func() { ended <- l.run() }()
	}
	return stop, ended, nil
}

// listenReusePort opens a non-blocking listening socket on ap that other
// sockets may share (SO_REUSEPORT).
func listenReusePort(ap netip.AddrPort) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return -1, err
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		return -1, err
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		return -1, err
	}
	if err := unix.Listen(fd, 1024); err != nil {
		return -1, err
	}
	return fd, nil
}

// side is one socket of a relayed pair: what was read from it and not yet
// passed on, and what is to be written to it and could not be yet.
type side struct {
	fd       int
	in, out  []byte
	peer     *side
	upstream bool // the connection to the upstream
	// pending are, on a client's side through a gate, its requests in
	// order whose answers have not been sent yet: those the upstream
	// answers (a ticket) and those the gate answers itself (local).
	pending []pending
	// admitting is true while the request at the start of in waits for
	// its level (the requests after it wait to be read); ctx, which
	// closing the side cancels, is the one its admissions wait under.
	admitting bool
	ctx       context.Context
	cancel    context.CancelFunc
	call      *admitCall
	closed    bool
}

// pending is one request of a client through a gate.
type pending struct {
	ticket *controller.Ticket
	local  []byte
}

// loop is one worker's event loop: its epoll set, its listener, the
// connections it holds, and the eventfd other goroutines wake it through
// (to stop it, or with the answer to an admission that queued).
type loop struct {
	ep, lfd, wake int
	upstream      netip.AddrPort
	gate          *gate
	sides         []*side // by fd
	buf           [64 << 10]byte
	// out composes an answer with the headers the gate adds.
	out []byte

	stopping atomic.Bool
	// inbox holds the admissions decided on other goroutines; once the
	// loop has shut, shut is set and an admission is ended where it comes.
	imu   sync.Mutex
	inbox []admitted
	shut  bool
}

// admitted is the answer to the admission of the request at the start of
// c.in.
type admitted struct {
	c   *side
	t   *controller.Ticket
	err error
}

// notify wakes the loop.
func (l *loop) notify() {
	unix.Write(l.wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
}

// post hands the loop an admission decided on another goroutine.
func (l *loop) post(a admitted) {
	l.imu.Lock()
	if l.shut {
		l.imu.Unlock()
		if a.t != nil {
			a.t.Done()
		}
		return
	}
	l.inbox = append(l.inbox, a)
	l.imu.Unlock()
	l.notify()
}

// woken drains the eventfd and the inbox; it reports false when the loop
// is to stop.
func (l *loop) woken() bool {
	var b [8]byte
	unix.Read(l.wake, b[:])
	if l.stopping.Load() {
		return false
	}
	l.imu.Lock()
	inbox := l.inbox
	l.inbox = nil
	l.imu.Unlock()
	for _, a := range inbox {
		c := a.c
		if c.closed {
			if a.t != nil {
				a.t.Done()
			}
			continue
		}
		c.admitting = false
		m, _ := parseMessage(c.in, true)
		if l.decided(c, c.in[:m.size], a.t, a.err) {
			c.in = append(c.in[:0], c.in[m.size:]...)
			l.process(c)
		}
	}
	return true
}

func newLoop(ap, up netip.AddrPort, g *gate) (*loop, error) {
	l := &loop{ep: -1, lfd: -1, wake: -1, upstream: up, gate: g}
	var err error
	if l.lfd, err = listenReusePort(ap); err != nil {
		return nil, err
	}
	if l.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err == nil {
		l.ep, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	}
	for _, fd := range []int{l.lfd, l.wake} {
		if err == nil {
			err = unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)})
		}
	}
	if err != nil {
		l.closeAll()
		return nil, err
	}
	return l, nil
}

// closeAll closes everything the loop holds, and gives back the seats of
// the admissions that reach it now or later.
func (l *loop) closeAll() {
	for _, s := range l.sides {
		if s != nil {
			l.close(s)
		}
	}
	l.imu.Lock()
	l.shut = true
	inbox := l.inbox
	l.inbox = nil
	l.imu.Unlock()
	for _, a := range inbox {
		if a.t != nil {
			a.t.Done()
		}
	}
	for _, fd := range []int{l.lfd, l.wake, l.ep} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// run serves until the loop's eventfd is written to (nil) or epoll fails.
func (l *loop) run() error {
	runtime.LockOSThread()
	defer l.closeAll()
	events := make([]unix.EpollEvent, 256)
	for {
		n, err := unix.EpollWait(l.ep, events, -1)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return err
		}
		for _, ev := range events[:n] {
			fd := int(ev.Fd)
			switch fd {
			case l.wake:
				if !l.woken() {
					return nil
				}
				continue
			case l.lfd:
				l.accept()
				continue
			}
			s := l.side(fd)
			if s == nil {
				continue
			}
			if ev.Events&(unix.EPOLLERR|unix.EPOLLHUP) != 0 && ev.Events&unix.EPOLLIN == 0 {
				l.close(s)
				continue
			}
			if ev.Events&unix.EPOLLOUT != 0 && !l.flush(s) {
				continue
			}
			if ev.Events&unix.EPOLLIN != 0 {
				l.readable(s)
			}
		}
	}
}

func (l *loop) side(fd int) *side {
	if fd < len(l.sides) {
		return l.sides[fd]
	}
	return nil
}

func (l *loop) add(s *side) error {
	for s.fd >= len(l.sides) {
		l.sides = append(l.sides, nil)
	}
	l.sides[s.fd] = s
	return unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, s.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(s.fd)})
}

// accept takes every pending connection and pairs each with a new
// connection to the upstream.
func (l *loop) accept() {
	for {
		fd, _, err := unix.Accept4(l.lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err != nil {
			return
		}
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		ufd, err := l.dial()
		if err != nil {
			unix.Close(fd)
			continue
		}
		c := &side{fd: fd}
		u := &side{fd: ufd, upstream: true}
		c.peer, u.peer = u, c
		if l.add(c) != nil || l.add(u) != nil {
			l.close(c)
		}
	}
}

// dial connects to the upstream (a blocking connect on loopback, then
// non-blocking).
func (l *loop) dial() (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.Connect(fd, &unix.SockaddrInet4{Port: int(l.upstream.Port()), Addr: l.upstream.Addr().As4()}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// readable reads what s has and passes on every whole message in it.
func (l *loop) readable(s *side) {
	for {
		n, err := unix.Read(s.fd, l.buf[:])
		if n > 0 {
			s.in = append(s.in, l.buf[:n]...)
		}
		if err == unix.EAGAIN {
			break
		}
		if err != nil || n == 0 {
			l.close(s)
			return
		}
		if n < len(l.buf) {
			break
		}
	}
	l.process(s)
}

// process passes on every whole message s has read, until one waits for
// its level.
func (l *loop) process(s *side) {
	off := 0
	for off < len(s.in) && !s.admitting {
		m, err := parseMessage(s.in[off:], !s.upstream)
		if err != nil {
			l.close(s)
			return
		}
		if m.size == 0 {
			break // not whole yet
		}
		msg := s.in[off : off+m.size]
		var ok bool
		switch {
		case l.gate == nil:
			ok = l.send(s.peer, msg)
		case s.upstream:
			ok = l.answer(s.peer, msg, m)
		default:
			ok = l.request(s, msg, m)
		}
		if !ok {
			return
		}
		if s.admitting {
			break // the message stays until its level decides
		}
		off += m.size
	}
	s.in = append(s.in[:0], s.in[off:]...)
}

// request passes a client's request through the gate: authenticated by
// its bearer token, classified and admitted, then sent on; or answered
// by the gate (401, 429) in its turn. A request its level queues stays
// where it is, c.admitting, until the answer comes through the inbox.
func (l *loop) request(c *side, msg []byte, m message) bool {
	if c.ctx == nil {
		c.ctx, c.cancel = context.WithCancel(context.Background())
		c.call = newAdmitCall(func(t *controller.Ticket, err error) { l.post(admitted{c: c, t: t, err: err}) })
	}
	t, local, queued, err := l.gate.admit(c.ctx, m, c.call)
	if queued {
		c.admitting = true
		return true
	}
	if local != nil {
		return l.sendLocal(c, local)
	}
	return l.decided(c, msg, t, err)
}

// decided sends msg on under t, or answers the rejection err.
func (l *loop) decided(c *side, msg []byte, t *controller.Ticket, err error) bool {
	if err != nil {
		return l.sendLocal(c, rejection(err))
	}
	c.pending = append(c.pending, pending{ticket: t})
	return l.send(c.peer, msg)
}

// sendLocal sends the gate's own answer in its turn.
func (l *loop) sendLocal(c *side, local []byte) bool {
	if len(c.pending) == 0 {
		return l.send(c, local)
	}
	c.pending = append(c.pending, pending{local: local})
	return true
}

// answer sends the upstream's answer to the client c with the request's
// PF headers, ends its ticket, and sends the gate's own answers that
// were waiting behind it.
func (l *loop) answer(c *side, msg []byte, m message) bool {
	if len(c.pending) == 0 || c.pending[0].ticket == nil {
		l.close(c)
		return false
	}
	t := c.pending[0].ticket
	c.pending = c.pending[1:]
	l.out = append(l.out[:0], msg[:m.lineEnd]...)
	l.out = appendPFHeaders(l.out, t.FlowSchemaUID, t.PriorityLevelUID)
	l.out = append(l.out, msg[m.lineEnd:]...)
	t.Done()
	if !l.send(c, l.out) {
		return false
	}
	for len(c.pending) > 0 && c.pending[0].ticket == nil {
		local := c.pending[0].local
		c.pending = c.pending[1:]
		if !l.send(c, local) {
			return false
		}
	}
	if len(c.pending) == 0 {
		c.pending = c.pending[:0:cap(c.pending)]
	}
	return true
}

// send writes msg to s, keeping what the socket does not take for
// EPOLLOUT. It reports false if s was closed.
func (l *loop) send(s *side, msg []byte) bool {
	if len(s.out) > 0 {
		s.out = append(s.out, msg...)
		return true
	}
	for len(msg) > 0 {
		n, err := unix.Write(s.fd, msg)
		if err == unix.EAGAIN {
			s.out = append(s.out, msg...)
			unix.EpollCtl(l.ep, unix.EPOLL_CTL_MOD, s.fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT, Fd: int32(s.fd)})
			return true
		}
		if err != nil {
			l.close(s)
			return false
		}
		msg = msg[n:]
	}
	return true
}

// flush writes what s kept; it reports false if s was closed.
func (l *loop) flush(s *side) bool {
	for len(s.out) > 0 {
		n, err := unix.Write(s.fd, s.out)
		if err == unix.EAGAIN {
			return true
		}
		if err != nil {
			l.close(s)
			return false
		}
		s.out = s.out[n:]
	}
	s.out = nil
	unix.EpollCtl(l.ep, unix.EPOLL_CTL_MOD, s.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(s.fd)})
	return true
}

// close closes s and its peer.
func (l *loop) close(s *side) {
	for _, x := range []*side{s, s.peer} {
		if x == nil || l.side(x.fd) != x {
			continue
		}
		l.sides[x.fd] = nil
		unix.Close(x.fd)
		x.closed = true
		if x.cancel != nil {
			x.cancel()
		}
		for _, p := range x.pending {
			if p.ticket != nil {
				p.ticket.Done()
			}
		}
		x.pending = nil
	}
}

var (
	crlf2         = []byte("\r\n\r\n")
	contentLength = []byte("content-length")
	authorization = []byte("authorization")
)

// message is what the relay reads of one HTTP/1.1 message's head.
type message struct {
	// size is the message's length, head and body; 0 if the buffer does
	// not hold all of it yet.
	size int
	// lineEnd is the length of the start line, its CRLF included.
	lineEnd int
	// method, target and authorization are a request's (nil for an
	// answer, or a header it does not have).
	method, target, authorization []byte
}

// messageSize returns the size of the HTTP/1.1 message at the start of b
// (header and body), 0 if b does not hold all of it yet, or an error for a
// message this relay does not frame: one with Transfer-Encoding, a
// malformed or repeated Content-Length, a header over 64 KiB. A request
// without Content-Length has no body; so has an answer, here (the
// upstream always sends one).
func messageSize(b []byte, request bool) (int, error) {
	m, err := parseMessage(b, request)
	return m.size, err
}

// parseMessage reads the message at the start of b, as messageSize
// describes.
func parseMessage(b []byte, request bool) (message, error) {
	var m message
	end := bytes.Index(b, crlf2)
	if end < 0 {
		if len(b) > 64<<10 {
			return m, errors.New("header too large")
		}
		return m, nil
	}
	head := b[:end]
	line := bytes.IndexByte(head, '\n')
	if line < 0 {
		line = len(head)
	}
	m.lineEnd = min(line+1, end+2)
	var err error
	if m.method, m.target, err = startLine(head[:line], request); err != nil {
		return m, err
	}
	length, seen := 0, false
	for rest := head[min(line+1, len(head)):]; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		var field []byte
		if i < 0 {
			field, rest = rest, nil
		} else {
			field, rest = rest[:i], rest[i+1:]
		}
		field = bytes.TrimSuffix(field, []byte("\r"))
		colon := bytes.IndexByte(field, ':')
		if colon <= 0 {
			return m, fmt.Errorf("malformed header line %q", field)
		}
		name := field[:colon]
		switch {
		case len(name) == len(contentLength) && bytes.EqualFold(name, contentLength):
			if seen {
				return m, errors.New("repeated Content-Length")
			}
			v, err := strconv.Atoi(string(bytes.TrimSpace(field[colon+1:])))
			if err != nil || v < 0 {
				return m, fmt.Errorf("bad Content-Length %q", field[colon+1:])
			}
			length, seen = v, true
		case bytes.EqualFold(name, []byte("transfer-encoding")):
			return m, errors.New("Transfer-Encoding is not relayed here")
		case request && len(name) == len(authorization) && bytes.EqualFold(name, authorization):
			m.authorization = bytes.TrimSpace(field[colon+1:])
		}
	}
	if size := end + len(crlf2) + length; len(b) >= size {
		m.size = size
	}
	return m, nil
}

// startLine checks a request line (METHOD SP TARGET SP HTTP/1.x) or a
// status line (HTTP/1.x SP CODE ...), and returns a request's method and
// target.
func startLine(line []byte, request bool) (method, target []byte, err error) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	parts := bytes.SplitN(line, []byte(" "), 3)
	if len(parts) < 2 {
		return nil, nil, fmt.Errorf("malformed start line %q", line)
	}
	proto := parts[0]
	if request {
		if len(parts) != 3 || len(parts[0]) == 0 || len(parts[1]) == 0 {
			return nil, nil, fmt.Errorf("malformed request line %q", line)
		}
		method, target, proto = parts[0], parts[1], parts[2]
	}
	if !bytes.HasPrefix(proto, []byte("HTTP/1.")) {
		return nil, nil, fmt.Errorf("not HTTP/1.x: %q", line)
	}
	return method, target, nil
}
