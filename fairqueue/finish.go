package fairqueue

import "time"

// Finish records that r's handler returned (or, for a watch, that its
// initialization ended) and dispatches what that allows, appending it to buf.
//
// The queue r came from is charged for the service r really got: its
// nextDispatchR, advanced by InitialSeats×G at dispatch, moves by
// InitialSeats×(G − S) for the actual service time S (forward if S > G);
// G is the service time r was charged at arrival (see assumedService).
//
// If r's final phase holds seats (its AdditionalLatency, after any cap, is
// positive), they stay held and release is that latency: the caller must call
// Release(r) that much later. Otherwise the seats are freed now, release is
// 0, and r is free again. Finish of a request that is not executing in qs
// does nothing.
func (qs *QueueSet) Finish(now time.Time, r *Request, buf []*Request) (dispatched []*Request, release time.Duration) {
	if r.qs != qs || r.state != stateExecuting {
		return buf, 0
	}
	t := qs.sync(now)
	qs.endExecuting(r)
	if q := r.queue; q != nil {
		q.nextDispatchR -= seatsTimesNanos(r.est.InitialSeats, r.serviceNs-(t-r.startNs))
		qs.retag(q)
		if qs.cfg.Paced {
			qs.pace.finished(t - r.startNs)
		}
		qs.bound(q)
	}
	if release = r.est.AdditionalLatency; release > 0 {
		r.state = stateLingering
	} else {
		qs.releaseSeats(r)
	}
	return qs.dispatch(t, buf, nil), release
}

// Release frees the seats r held in its final phase and dispatches what
// that allows, appending it to buf. r is free again afterwards. Release of
// a request that is not in its final phase in qs does nothing.
func (qs *QueueSet) Release(now time.Time, r *Request, buf []*Request) []*Request {
	if r.qs != qs || r.state != stateLingering {
		return buf
	}
	t := qs.sync(now)
	qs.releaseSeats(r)
	return qs.dispatch(t, buf, nil)
}

// Cancel removes r from its queue because its waiter gave up (its wait limit
// passed or its client left). r is rejected with reason TimeOut and counts as
// both rejected and cancelled, as upstream counts it; it is free again.
//
// Cancel returns false, and does nothing, if r is not waiting in qs: it
// has been dispatched already (the caller must run it and Finish it, or
// Finish it at once), or it is over.
//
// As upstream, Cancel does not dispatch, even if r was holding up the
// queue set: the next Finish, Release or limit change will.
func (qs *QueueSet) Cancel(now time.Time, r *Request) bool {
	if r.qs != qs || r.state != stateWaiting {
		return false
	}
	qs.sync(now)
	q := r.queue
	qs.removeWaiting(q, r)
	r.queue = nil
	qs.reject(r, TimeOut)
	qs.cancelled++
	qs.bound(q)
	return true
}
