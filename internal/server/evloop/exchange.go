package evloop

import (
	"context"
	"net/http"
	"time"
)

// Exchange is one request on a loop and what the gate does with it. Its
// methods are for the loop's goroutine (the gate's Serve, the functions
// Post runs), but Post, which any goroutine may call.
type Exchange struct {
	l    *loop
	c    *conn
	req  *http.Request
	body []byte
	// size is the bytes of the client's input the request takes, head
	// and body: consumed when the exchange ends.
	size int

	relay   Relay
	u       *conn
	request []byte
	// reached: the request had a connection; started: a byte of the
	// answer went to the client; heard: a byte of the answer came.
	reached, started, heard bool
	// closeAfter closes the client connection once the answer is written.
	closeAfter bool
	// answered: the answer is whole in the client's output.
	answered bool
	waiting  bool
	onGone   func()
	timer    func()
	timerAt  time.Time
	ended    bool
}

// Request is the request as net/http's parser read it, its Body empty
// (the bytes are Body's), RemoteAddr the client's.
func (x *Exchange) Request() *http.Request { return x.req }

// Body is the request's body, whole.
func (x *Exchange) Body() []byte { return x.body }

// Context is the client connection's: it ends when the client goes away
// or the server's base context ends.
func (x *Exchange) Context() context.Context { return x.c.ctx }

// Reached says whether the request had a connection to the upstream (a
// byte of it may have gone).
func (x *Exchange) Reached() bool { return x.reached }

// Ended says whether the exchange is over (for a function Post runs).
func (x *Exchange) Ended() bool { return x.ended }

// Reply writes answer, the gate's own, and ends the exchange once it is
// written; closeAfter closes the connection after it.
func (x *Exchange) Reply(answer []byte, closeAfter bool) {
	if x.ended || x.answered {
		return
	}
	if u := x.u; u != nil {
		// An answer in place of the upstream's (a deadline passed):
		// the connection that was to bring it goes.
		x.u, u.ux = nil, nil
		x.l.closeWhy(u, nil)
	}
	x.waiting = false
	x.started = true
	x.closeAfter = x.closeAfter || closeAfter
	x.l.write(x.c, answer)
	if !x.c.closed {
		x.finish()
	}
}

// CloseAfter closes the client connection once this answer is written.
func (x *Exchange) CloseAfter() { x.closeAfter = true }

// Forward sends request (head and body) to the upstream at addr, host:port,
// and relays the answer through r.
func (x *Exchange) Forward(addr string, request []byte, r Relay) {
	if x.ended || x.answered {
		return
	}
	x.waiting = false
	x.relay = r
	x.request = request
	x.l.forward(x, addr, false)
}

// Wait leaves the decision to a function Post runs later; gone is called
// if the exchange ends before one of the deciding calls is made (the
// client went away, the server closed).
func (x *Exchange) Wait(gone func()) {
	x.waiting = true
	x.onGone = gone
}

// HandOver gives the connection up to the server's HandOver with the bytes
// read from it since this request began. Only before anything is written.
func (x *Exchange) HandOver() {
	if x.ended || x.started || x.relay != nil {
		return
	}
	x.l.handOver(x.c)
}

// Post runs fn on the exchange's loop. It reports false when the loop has
// stopped (fn does not run; the exchange has ended or is ending).
func (x *Exchange) Post(fn func()) bool { return x.l.post(fn) }

// SetTimer runs fn on the loop at t unless the exchange has ended by then;
// a later call replaces the earlier one. The client connection's timer
// keeps it: while an exchange runs, the connection has no bound of its own.
func (x *Exchange) SetTimer(t time.Time, fn func()) {
	x.timer, x.timerAt = fn, t
	x.l.bind(x.c, t)
}

// Abort ends the exchange at once, for why: the connections it holds are
// closed, and whatever it answered so far is what the client has.
func (x *Exchange) Abort(why error) {
	if !x.ended {
		x.l.closeWhy(x.c, why)
	}
}

// finish notes the answer whole in the client's output; the exchange ends
// once it is written.
func (x *Exchange) finish() {
	x.answered = true
	if len(x.c.out) == 0 {
		x.l.exchangeDone(x.c)
	}
}

// end ends the exchange, once; err says why when it did not complete.
func (x *Exchange) end(err error) {
	if x.ended {
		return
	}
	x.ended = true
	x.timer = nil
	if x.relay != nil {
		x.relay.Ended(err)
	} else if x.waiting && x.onGone != nil {
		x.onGone()
	}
}
