package controller

import (
	"time"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/request"
)

// Shadow hears every request the controller admits, for a second
// configuration run on the live traffic without enforcing anything
// (package shadow implements it). The controller tells it when a request
// arrives, with the live classification, and when the live request is
// over; what the shadow does with that is its own business, and nothing
// it does can change what the controller decides.
//
// Both methods are called on the request path: they must not block, must
// not fail, and should cost next to nothing (hand the facts over to a
// goroutine of the shadow's own, say, and drop them when it is behind).
type Shadow interface {
	// Arrive says that a request arrived at arrival, with its deadline
	// (the zero time when it has none) and its attributes, and that the
	// live configuration classified it under the FlowSchema live (whose
	// PriorityLevel is the live level). The attributes come by value, so
	// that the caller's stay where they are (a pointer handed to an
	// interface would move them to the heap on every admission); their
	// strings and slices are never modified once a request is parsed, so
	// the shadow may keep the copy. It returns a token naming the request
	// in Finish, 0 when the shadow does not follow it.
	Arrive(arrival, deadline time.Time, a request.Attributes, live *classify.FlowSchema) uint64
	// Finish says that the live request named by token is over at now:
	// it executed for execution (its handler's time, from dispatch to
	// Ticket.Done), or the live level rejected it (rejected, execution
	// 0), or it never ran for another reason (execution 0).
	Finish(token uint64, now time.Time, execution time.Duration, rejected bool)
	// ServerLimit says that the live server concurrency limit is limit
	// from now on: when the shadow is set (SetShadow), and at every
	// change after (SetServerConcurrencyLimit), so that the shadow's
	// levels share the seats the live levels share. It is called off the
	// request path, under the controller's lock: it must not block, nor
	// call the controller.
	ServerLimit(now time.Time, limit int)
}

// shadowHook holds the Shadow in force, so that it is swapped with one
// atomic store and the request path reads it with one load.
type shadowHook struct{ s Shadow }

// SetShadow makes s hear every later admission, and the server
// concurrency limit now and at every change; nil stops it. Requests
// admitted before still tell the Shadow they heard from when they are
// over.
func (c *Controller) SetShadow(s Shadow) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s == nil {
		c.shadow.Store(nil)
		return
	}
	s.ServerLimit(c.clock.Now(), c.eng.ServerConcurrencyLimit())
	c.shadow.Store(&shadowHook{s: s})
}
