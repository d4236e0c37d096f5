package fairqueue

import (
	"errors"
	"fmt"

	"github.com/apfproject/apf/shuffle"
)

// Config is the configuration of one priority level's queue set.
type Config struct {
	// ConcurrencyLimit is the number of seats requests may hold at once (the
	// level's current limit after borrowing). Exempt levels record it but
	// never enforce it.
	ConcurrencyLimit int

	// Queues selects the kind of level and, for queuing levels, the number
	// of queues (upstream's DesiredNumQueues):
	//   < 0  exempt: every request is dispatched at once, nothing is limited;
	//   = 0  reject: a request runs at once if it fits, else it is rejected;
	//   > 0  queue: requests wait in this many fair queues.
	Queues int

	// HandSize is the number of queues dealt to each flow (queue levels).
	HandSize int

	// QueueLengthLimit is how many requests one queue may hold while the
	// level is saturated (queue levels).
	QueueLengthLimit int

	// DeadlineAware turns on deadline-aware queueing (queue levels; off
	// in Kubernetes): the level measures how fast its queues drain, a
	// request that cannot be dispatched within its Request.WaitLimit by
	// that measure is rejected (TimeOut) on arrival instead of at the end
	// of its wait, and rejected requests carry the time the level needs
	// to drain (Request.DrainTime), for a Retry-After that means
	// something. See deadline.go.
	DeadlineAware bool

	// Paced turns on paced dispatch (queue levels; off in Kubernetes):
	// the level measures its requests' service time, charges it in fair
	// order instead of G, and spaces its starts (a little faster than
	// the seats of a full level free), so that seats freed together are
	// given out over a service time rather than in step. See pace.go.
	Paced bool
}

// errExemptSwitch is returned by Reconfigure when the new configuration would
// turn an exempt level into a limited one or back. A level's type is tied to
// its name (only the level named exempt may be exempt), so this is a caller
// bug.
var errExemptSwitch = errors.New("fairqueue: a level cannot switch between exempt and limited")

// configError reports an invalid Config.
type configError struct {
	Field string // "ConcurrencyLimit", "QueueLengthLimit" or "HandSize"
	Value int
	Err   error // for HandSize: the *shuffle.SizeError
}

// Error describes the offending field.
func (e *configError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("fairqueue: invalid %s %d: %v", e.Field, e.Value, e.Err)
	}
	return fmt.Sprintf("fairqueue: invalid %s %d: must not be negative", e.Field, e.Value)
}

// Unwrap returns the underlying error, if any.
func (e *configError) Unwrap() error { return e.Err }

// validate checks c and returns the dealer a queue level needs.
func (c Config) validate() (*shuffle.Dealer, error) {
	if c.ConcurrencyLimit < 0 {
		return nil, &configError{Field: "ConcurrencyLimit", Value: c.ConcurrencyLimit}
	}
	if c.Queues <= 0 {
		return nil, nil
	}
	if c.QueueLengthLimit < 0 {
		return nil, &configError{Field: "QueueLengthLimit", Value: c.QueueLengthLimit}
	}
	d, err := shuffle.NewDealer(c.Queues, c.HandSize)
	if err != nil {
		return nil, &configError{Field: "HandSize", Value: c.HandSize, Err: err}
	}
	return d, nil
}

// Validate reports whether New would accept c (and Reconfigure, but for a
// switch between exempt and limited): a negative limit or queue length
// limit, or a queue count and hand size the dealer refuses, are errors.
func (c Config) Validate() error {
	_, err := c.validate()
	return err
}
