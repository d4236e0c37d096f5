package fairqueue

import (
	"math"
	"testing"
	"time"
)

// fairTolerance is the relative error allowed in the fairness tests. The
// simulations are deterministic and land within 0.1%.
const fairTolerance = 0.01

// within fails unless got is within tol (relative) of want.
func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*want {
		t.Errorf("%s = %.4f, want %.4f ± %.1f%%", what, got, want, tol*100)
	} else {
		t.Logf("%s = %.4f (want %.4f)", what, got, want)
	}
}

// Equal flows, each alone in its queue, saturating the level, get equal
// seat-time, however long their requests run: fair queuing charges each
// queue the service its requests really got.
func TestFairnessEqualFlows(t *testing.T) {
	services := []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond,
		7 * time.Millisecond, 13 * time.Millisecond}
	flows := make([]*simFlow, len(services))
	for i, d := range services {
		flows[i] = &simFlow{hash: uint64(i), work: WorkEstimate{InitialSeats: 1}, service: d, outstanding: 8}
	}
	s := newSimulator(t, Config{ConcurrencyLimit: 6, Queues: 6, HandSize: 1, QueueLengthLimit: 50}, flows...)
	s.run(5*time.Second, 65*time.Second)
	var total float64
	for i, share := range s.share() {
		within(t, "share of flow "+services[i].String(), share, 1/6.0, fairTolerance)
		total += s.seats(i)
	}
	within(t, "seats in use", total, 6, 0.01)
	s.drain()
}

// Flows whose hands overlap share queues, and each queue gets an equal
// share: two flows dealt the same two queues split those queues' half of
// the level, while a flow alone on two queues gets the other half.
func TestFairnessOverlappingHands(t *testing.T) {
	const queues, hand = 4, 2
	a := handHash(t, queues, hand, 0, 0, 1)
	b := handHash(t, queues, hand, a+1, 0, 1) // another flow, same hand
	c := handHash(t, queues, hand, 0, 2, 3)
	flows := []*simFlow{
		{hash: a, work: WorkEstimate{InitialSeats: 1}, service: 10 * time.Millisecond, outstanding: 16},
		{hash: b, work: WorkEstimate{InitialSeats: 1}, service: 10 * time.Millisecond, outstanding: 16},
		{hash: c, work: WorkEstimate{InitialSeats: 1}, service: 10 * time.Millisecond, outstanding: 16},
	}
	s := newSimulator(t, Config{ConcurrencyLimit: 8, Queues: queues, HandSize: hand, QueueLengthLimit: 50}, flows...)
	s.run(5*time.Second, 65*time.Second)
	share := s.share()
	within(t, "flow A (queues 0,1)", share[0], 0.25, fairTolerance)
	within(t, "flow B (queues 0,1)", share[1], 0.25, fairTolerance)
	within(t, "flow C (queues 2,3)", share[2], 0.50, fairTolerance)
	s.drain()
}

// An elephant sending ten times a mouse's rate cannot hurt nine mice whose
// demand is below their fair share: they get all they ask for, none is
// rejected, and the elephant gets the rest.
func TestFairnessElephantAndMice(t *testing.T) {
	const service = 10 * time.Millisecond
	mouse := 12500 * time.Microsecond // 0.8 seats of demand each
	flows := []*simFlow{{hash: 0, work: WorkEstimate{InitialSeats: 1}, service: service, interval: mouse / 10}}
	for i := 1; i <= 9; i++ {
		flows = append(flows, &simFlow{hash: uint64(i), work: WorkEstimate{InitialSeats: 1}, service: service, interval: mouse})
	}
	s := newSimulator(t, Config{ConcurrencyLimit: 10, Queues: 10, HandSize: 1, QueueLengthLimit: 50}, flows...)
	s.run(5*time.Second, 65*time.Second)
	var mice float64
	for i := 1; i <= 9; i++ {
		within(t, "mouse seats", s.seats(i), 0.8, fairTolerance)
		mice += s.seats(i)
		if f := s.flows[i]; f.rejected != 0 {
			t.Errorf("mouse %d: %d of %d requests rejected", i, f.rejected, f.arrived)
		}
	}
	within(t, "elephant seats", s.seats(0), 10-mice, fairTolerance)
	if s.flows[0].rejected == 0 {
		t.Error("the elephant was never rejected: the level was not saturated")
	}
	t.Logf("elephant: %d arrived, %d rejected", s.flows[0].arrived, s.flows[0].rejected)
	s.drain()
}

// A flow of 4-seat requests and a flow of 1-seat requests, equally
// demanding, get equal seat-time: the wide flow runs a quarter as many
// requests.
func TestFairnessWidth(t *testing.T) {
	flows := []*simFlow{
		{hash: 0, work: WorkEstimate{InitialSeats: 1}, service: 10 * time.Millisecond, outstanding: 16},
		{hash: 1, work: WorkEstimate{InitialSeats: 4}, service: 10 * time.Millisecond, outstanding: 16},
	}
	s := newSimulator(t, Config{ConcurrencyLimit: 8, Queues: 2, HandSize: 1, QueueLengthLimit: 50}, flows...)
	s.run(5*time.Second, 65*time.Second)
	narrow, wide := float64(s.flows[0].completed), float64(s.flows[1].completed)
	within(t, "wide/narrow request rate", wide/narrow, 0.25, fairTolerance)
	share := s.share()
	within(t, "narrow share", share[0], 0.5, fairTolerance)
	within(t, "wide share", share[1], 0.5, fairTolerance)
	s.drain()
}
