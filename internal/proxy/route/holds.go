package route

import (
	"sync"
)

// Holds counts the long-running requests held at once, per flow and per
// priority level, against the caps of a configuration's
// LongRunningLimits. APF gives a long-running request its seats back once
// its answer has started, so nothing in APF bounds how many such requests
// a flow holds: each one keeps a connection, a goroutine and an upstream
// stream for as long as its client likes. The caps bound them.
//
// A request is counted from Acquire to Release. Counts of flows that hold
// nothing are forgotten, so memory follows the requests held, not the
// flows ever seen; a level's count stays, at zero, for its gauge (levels
// are few: those of the configuration). One mutex guards the counts: it is taken
// twice per long-running request, never by ordinary requests.
type Holds struct {
	mu       sync.Mutex
	limits   Limits
	flows    map[Flow]int
	levels   map[string]int
	rejected map[rejectKey]uint64
}

// Flow is a flow of APF: a FlowSchema and a flow distinguisher, within a
// priority level.
type Flow struct {
	PriorityLevel, FlowSchema, Distinguisher string
}

// Scope names the cap that refused a request.
type Scope string

// The caps.
const (
	ScopeFlow  Scope = "flow"
	ScopeLevel Scope = "priority-level"
)

type rejectKey struct {
	level string
	scope Scope
}

// NewHolds returns counts against limits.
func NewHolds(limits Limits) *Holds {
	return &Holds{limits: limits, flows: map[Flow]int{}, levels: map[string]int{}, rejected: map[rejectKey]uint64{}}
}

// SetLimits changes the caps (a reload). Requests already held stay;
// a flow or level above a lowered cap takes no more until it is below.
func (h *Holds) SetLimits(l Limits) {
	h.mu.Lock()
	h.limits = l
	h.mu.Unlock()
}

// Limits returns the caps in force.
func (h *Holds) Limits() Limits {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.limits
}

// Acquire counts one more request held by f, unless f or its level
// already holds its cap: then it returns the scope of the cap that
// refused it, and counts the refusal.
func (h *Holds) Acquire(f Flow) (refused Scope, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.flows[f] >= h.limits.PerFlow:
		refused = ScopeFlow
	case h.levels[f.PriorityLevel] >= h.limits.PerLevel:
		refused = ScopeLevel
	default:
		h.flows[f]++
		h.levels[f.PriorityLevel]++
		return "", true
	}
	h.rejected[rejectKey{f.PriorityLevel, refused}]++
	return refused, false
}

// Release counts one request of f no longer held.
func (h *Holds) Release(f Flow) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.flows[f]; n > 1 {
		h.flows[f] = n - 1
	} else {
		delete(h.flows, f)
	}
	if n := h.levels[f.PriorityLevel]; n > 0 {
		h.levels[f.PriorityLevel] = n - 1
	}
}

// Levels calls fn with each priority level that has held requests, and
// how many it holds now, for a gauge.
func (h *Holds) Levels(fn func(level string, held int)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for l, n := range h.levels {
		fn(l, n)
	}
}

// Rejected calls fn with the refusals so far, by level and cap, for a
// counter.
func (h *Holds) Rejected(fn func(level string, scope Scope, n uint64)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, n := range h.rejected {
		fn(k.level, k.scope, n)
	}
}
