package fairqueue

import "time"

// Paced dispatch (Config.Paced; off in Kubernetes).
//
// Two things keep a light flow waiting on a level that a flood of equal
// requests keeps full, however short its own queue.
//
// The seats free in step. A queue level dispatches whenever a seat frees,
// so requests dispatched together finish together when their service
// times are alike, and their successors are dispatched together again:
// the whole limit frees at once every service time, nothing in between,
// and a request arriving between two such moments waits for the next.
// A flood that fills an idle level starts in step and stays so for as
// long as it lasts; anything that gathers completions (a pause of the
// server, a burst of arrivals) puts the level in step again.
//
// The flood is behind in virtual time. Fair order charges a request, when
// it is dispatched, the service time G (3 ms) and corrects the charge to
// the real one when it finishes. A flow holding many seats with requests
// far longer than G is charged for far less than it holds until they
// finish, so its queues' virtual finish stays below that of a light
// flow's new request, which goes after the flood's next few.
//
// A paced level measures its service time (a moving average of the
// initial phases' durations) and uses it for both. It charges a request
// that service time instead of G, so that fair order weighs what the
// flood's running requests will really cost and a light flow's request
// goes first. And it spaces its starts: each request's turn comes a gap
// of service / (limit × paceHeadroom) per seat after the previous one's.
// With the level full, seats free on average once every service / limit,
// so turns come paceHeadroom times faster than the level can free seats,
// and seats freed together are given out over about service /
// paceHeadroom: the completions they lead to are spread too, the level
// gets out of step and stays out, and a request arriving at any moment
// finds a seat freeing soon. A start may come up to service / paceSlack
// before its turn, so that a timer that fires late (a server's can be a
// millisecond late) costs no throughput: the starts after a late one
// catch up. Without that slack a level held back by late timers runs
// below its limit with requests waiting, which in fair order counts
// against the flows that wait (virtual time advances as if the whole
// limit were used) and puts a light flow's new request behind them:
// measured, the light users' median wait grew from milliseconds to
// 90 ms. The gap is
// capped at maxPaceGap per seat, so that a level whose requests were
// long until recently does not hold short ones back for long while the
// average catches up. Until the first request has finished there is no
// measure: the charge is G and there is no gap.
//
// A request held back by the gap waits in its queue as any other, in fair
// order: the level reports when it may start (PacedUntil), and its driver
// calls Dispatch then.

const (
	// paceHeadroom is how many times faster than the seats of a full
	// level free a paced level may start requests.
	paceHeadroom = 1.25
	// maxPaceGap bounds the gap per seat.
	maxPaceGap = time.Millisecond
	// serviceWeight is the inverse weight of a new sample in the moving
	// average of the service time.
	serviceWeight = 16
	// paceSlack: a start may come service / paceSlack before its turn,
	// which lets about limit × paceHeadroom / paceSlack seats (one in 6)
	// start together.
	paceSlack = 8
)

// pacer is a paced level's state.
type pacer struct {
	// serviceNs is the moving average of the initial phases' durations,
	// 0 before the first sample.
	serviceNs int64
	// nextNs is when the next request's turn comes; it may start
	// slackNs (service / paceSlack) earlier.
	nextNs  int64
	slackNs int64
}

// allows reports whether a request may start at t.
func (p *pacer) allows(t int64) bool { return t >= p.nextNs-p.slackNs }

// until returns when the next request may start.
func (p *pacer) until() int64 { return p.nextNs - p.slackNs }

// turn returns the time between two one-seat starts' turns on a level of
// the given limit, 0 before the first measure.
func (p *pacer) turn(limit int) int64 {
	if p.serviceNs == 0 || limit <= 0 {
		return 0
	}
	return min(int64(float64(p.serviceNs)/(float64(limit)*paceHeadroom)), int64(maxPaceGap))
}

// started records that a request of the given width started at t on a
// level of the given limit.
func (p *pacer) started(t int64, seats, limit int) {
	if gap := p.turn(limit); gap > 0 {
		p.nextNs = max(p.nextNs, t) + gap*int64(max(seats, 1))
	}
}

// pacedService and pacedTurn are Stats.PacedService and PacedTurn.
func (qs *QueueSet) pacedService() time.Duration {
	if !qs.cfg.Paced {
		return 0
	}
	return time.Duration(qs.pace.serviceNs)
}

func (qs *QueueSet) pacedTurn() time.Duration {
	if !qs.cfg.Paced {
		return 0
	}
	return time.Duration(qs.pace.turn(qs.cfg.ConcurrencyLimit))
}

// finished records that a request's initial phase took d nanoseconds.
func (p *pacer) finished(d int64) {
	d = max(d, 1)
	if p.serviceNs == 0 {
		p.serviceNs, p.slackNs = d, d/paceSlack
		return
	}
	p.serviceNs = max(p.serviceNs+(d-p.serviceNs)/serviceWeight, 1)
	p.slackNs = p.serviceNs / paceSlack
}

// assumedService returns the service time, in nanoseconds, that a request
// arriving now is charged for its initial phase: G, or a paced level's
// measure.
func (qs *QueueSet) assumedService() int64 {
	if qs.cfg.Paced && qs.pace.serviceNs > 0 {
		return qs.pace.serviceNs
	}
	return int64(EstimatedServiceTime)
}

// Paced reports whether the level is paced (Config.Paced).
func (qs *QueueSet) Paced() bool { return qs.cfg.Paced }

// PacedUntil reports whether a paced level holds back a request it could
// start but for the gap, and until when: call Dispatch then. It is false
// on a level that is not paced, has nothing waiting or no free seat.
func (qs *QueueSet) PacedUntil() (time.Time, bool) {
	if !qs.cfg.Paced || qs.totWaiting == 0 || qs.totSeatsInUse >= qs.cfg.ConcurrencyLimit || qs.pace.allows(qs.lastNs) {
		return time.Time{}, false
	}
	return qs.timeAt(qs.pace.until()), true
}

// Dispatch starts, at now, what fair order, the limit and the gap of a
// paced level allow, appending it to buf: the input a paced level's
// driver gives it when the time PacedUntil reported comes. On a level
// that is not paced it finds nothing to start that an earlier input has
// not started already.
func (qs *QueueSet) Dispatch(now time.Time, buf []*Request) []*Request {
	return qs.dispatch(qs.sync(now), buf, nil)
}
