package stepper

import "time"

// SetService says, from Hooks.Dispatched, how long r executes from now
// on: the service time of a request arrived with Unknown, told when it is
// dispatched rather than when it arrives. A simulated upstream whose
// latency depends on its load at that moment (package sim's upstream
// model) tells it so. It does nothing to a request whose service is known
// already, nor outside the hook that hears of r's dispatch.
func (r *Request) SetService(d time.Duration) {
	if r.service >= 0 || !r.dispatching {
		return
	}
	r.service = max(d, 0)
}
