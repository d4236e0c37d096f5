package pool

import (
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// A request's way through the pool, step by step.
//
// RoundTrip is one caller of it; a caller that carries the request over
// connections of its own (an event loop, which cannot block in a round
// trip) is the other, and the pool sees the same from both: the member
// picked, the outstanding count held from the pick until the answer is
// done with, the latency to the answer's head, the answers by status and
// the errors by reason, the passive checks, and the retries of a request
// that never reached its member.
//
//	t := pool.Begin(req)           // picks a member, counts it outstanding
//	for {
//		out := t.Point(req)        // req to that member
//		... send out; reached says whether a connection was had ...
//		if !t.End(reached, status, err) { break } // else: another member
//	}
//	... read the answer ...
//	t.Release()                    // the answer done with (read, or abandoned)

// Try is one request's dispatch through the pool: the member it goes to
// now, and those it was tried on.
//
// A nil *Try is a request to a single upstream without a pool: Point
// leaves the request as it is, End never sends it again, Release does
// nothing.
type Try struct {
	p   *Pool
	req *http.Request
	m   *member
	// start is when the request was handed to m.
	start    time.Time
	tried    []bool
	triedBuf [8]bool
	released atomic.Bool
	// body holds m until the answer's body is closed (RoundTrip).
	body heldBody
}

// Begin starts req's dispatch: it picks the member req goes to first, as
// RoundTrip does (the fewest outstanding among those that take traffic),
// and counts the request outstanding there until Release. req's context
// and its method and path are those the pool's logs and rules use.
func (p *Pool) Begin(req *http.Request) *Try {
	return p.BeginIn(new(Try), req)
}

// BeginIn is Begin in t's memory, for a caller that keeps a Try between
// requests: t's request before has been released, or failed for good.
func (p *Pool) BeginIn(t *Try, req *http.Request) *Try {
	*t = Try{p: p, req: req}
	if len(p.members) <= len(t.triedBuf) {
		t.tried = t.triedBuf[:len(p.members)]
	} else {
		t.tried = make([]bool, len(p.members))
	}
	t.m, t.start = p.pick(t.tried), time.Now()
	return t
}

// Point returns req pointed at the member the request goes to now: req
// itself when its URL names the member's scheme and host already, a copy
// with its own URL otherwise (req is the caller's). The member's Host is
// the request's unless req.Host is set.
func (t *Try) Point(req *http.Request) *http.Request {
	if t == nil {
		return req
	}
	m := t.m
	if req.URL.Scheme == m.url.Scheme && req.URL.Host == m.url.Host {
		return req
	}
	o := *req
	u := *req.URL
	u.Scheme, u.Host = m.url.Scheme, m.url.Host
	o.URL = &u
	return &o
}

// Upstream is the member the request goes to now, scheme://host ("" for
// a nil Try).
func (t *Try) Upstream() string {
	if t == nil {
		return ""
	}
	return t.m.label
}

// End reports how the attempt on the current member ended: reached says
// whether the request was handed a connection (so that a byte of it may
// have been sent); with err nil, the member answered with status, and
// holds the request until Release; with an error, the member is let go
// at once.
//
// It counts what RoundTrip counts, and decides as it does: again is true
// when the request provably never reached the member (no connection, and
// its context still running) and another member is left to try: the Try
// then points at that one (Point again), and counts it outstanding. Once
// End has returned false after an error, Release does nothing.
func (t *Try) End(reached bool, status int, err error) (again bool) {
	if t == nil {
		return false
	}
	p, m := t.p, t.m
	if reached {
		m.sent.Add(1)
	}
	if err == nil {
		m.handles.latency.Observe(time.Since(t.start).Seconds())
		m.handles.requests(status).Inc()
		p.passive(m, status >= 500)
		return false
	}
	p.release(m)
	if t.req.Context().Err() != nil {
		// The caller went away or the server gave up on it: not the
		// member's doing, and no other member is tried.
		t.released.Store(true)
		return false
	}
	reason := "unreachable"
	if reached {
		reason = "failed"
	}
	m.handles.errors(reason).Inc()
	p.passive(m, true)
	if reached {
		t.released.Store(true)
		return false
	}
	// No connection was ever handed to the request: not one byte of it
	// left, and another member may take it.
	next := p.pick(t.tried)
	if next == nil {
		t.released.Store(true)
		return false
	}
	m.handles.retries.Inc()
	p.log.Info("upstream not reached, trying another", "pool", p.name, "upstream", m.label, "next", next.label, "method", t.req.Method, "path", t.req.URL.Path, "error", err)
	t.m, t.start = next, time.Now()
	return true
}

// Release ends the request's hold on its member: its answer has been read
// to its end, or abandoned (the caller went away, the answer was cut).
// Calls after the first do nothing.
func (t *Try) Release() {
	if t == nil {
		return
	}
	if t.released.CompareAndSwap(false, true) {
		t.p.release(t.m)
	}
}

// holdUntilClosed makes resp's body hold the member until it is closed,
// and keeps it a ReadWriteCloser when it is one (an upgraded connection).
func (t *Try) holdUntilClosed(resp *http.Response) {
	t.body = heldBody{ReadCloser: resp.Body, t: t}
	if rw, ok := resp.Body.(io.ReadWriteCloser); ok {
		resp.Body = &heldConn{heldBody: &t.body, w: rw}
		return
	}
	resp.Body = &t.body
}

// heldBody is a response body whose Close ends its member's request.
type heldBody struct {
	io.ReadCloser
	t *Try
}

func (b *heldBody) Close() error {
	err := b.ReadCloser.Close()
	b.t.Release()
	return err
}

// heldConn is an upgraded connection's heldBody, written to as well.
type heldConn struct {
	*heldBody
	w io.Writer
}

func (c *heldConn) Write(p []byte) (int, error) { return c.w.Write(p) }
