package stepper_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/engine"
	"github.com/apfproject/apf/engine/stepper"
	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/request"
)

// oneSeat is a level of one seat (a server of 1 seat shared by it alone
// and the mandatory levels' shares would give it more: the test sets the
// limit) with one queue, and the FlowSchema sending everyone there.
const oneSeat = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: one}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 100
    limitResponse: {type: Queue, queuing: {queues: 1, handSize: 1, queueLengthLimit: 10}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: all}
spec:
  priorityLevelConfiguration: {name: one}
  matchingPrecedence: 100
  rules:
  - subjects: [{kind: Group, group: {name: system:authenticated}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// trace logs what the hooks hear, at times relative to t0.
type trace struct{ lines []string }

func (tr *trace) logf(now time.Time, format string, args ...any) {
	tr.lines = append(tr.lines, fmt.Sprintf("%v ", now.Sub(t0))+fmt.Sprintf(format, args...))
}

func newStepper(t *testing.T, bound time.Duration) (*stepper.Stepper, *trace) {
	t.Helper()
	tr := &trace{}
	s, err := stepper.New(stepper.Config{
		Engine: engine.Config{ServerConcurrencyLimit: 60},
		Start:  t0,
		Bound:  bound,
		Hooks: stepper.Hooks{
			Dispatched: func(r *stepper.Request, now time.Time) {
				tr.logf(now, "%s dispatched after %v", r.Tag, r.Waited())
			},
			Rejected: func(r *stepper.Request, now time.Time, reason fairqueue.RejectReason) {
				tr.logf(now, "%s rejected %s", r.Tag, reason)
			},
			Ended: func(r *stepper.Request, now time.Time) time.Duration {
				tr.logf(now, "%s ended forced=%v", r.Tag, r.Forced())
				return 0
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	install(t, s)
	return s, tr
}

// install puts the one-seat configuration into force.
func install(t *testing.T, s *stepper.Stepper) {
	t.Helper()
	objs, err := config.Decode([]byte(oneSeat), "one.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Install(0, engine.Compile(objs)); err != nil {
		t.Fatal(err)
	}
	// One seat, whatever the borrowing would give.
	if err := s.SetServerLimit(0, 1); err != nil {
		t.Fatal(err)
	}
}

func arrive(t *testing.T, s *stepper.Stepper, at time.Duration, name string, service time.Duration) *stepper.Request {
	t.Helper()
	info, err := request.Parse("GET", "/healthz", "")
	if err != nil {
		t.Fatal(err)
	}
	a := &request.Attributes{Info: info, User: request.User{Name: name, Groups: []string{"system:authenticated"}}}
	p := s.Place(at, a, time.Time{})
	return s.Arrive(&p, service, name)
}

// One request's life, written once: a request that queues behind another
// is dispatched by the other's end, at its own time; one whose wait limit
// passes is rejected with time-out; one of unknown service runs until
// Finish says how long it took, or until its bound.
func TestLife(t *testing.T) {
	s, tr := newStepper(t, 30*time.Second)
	arrive(t, s, 0, "a", 2*time.Second)
	arrive(t, s, time.Second, "b", time.Second)
	c := arrive(t, s, time.Second, "c", stepper.Unknown)
	if s.Active() != 3 {
		t.Fatalf("%d active, want 3", s.Active())
	}
	// c executes from 3 s; the live end says 4 s: it ends at 7 s.
	s.RunUntil(5 * time.Second)
	s.Finish(c, 5*time.Second, 4*time.Second)
	// d waits for c. e never hears its end: it holds the seat until its
	// bound, 30 s after its arrival, so f, behind it, is rejected when its
	// wait limit (a quarter of 60 s) passes.
	arrive(t, s, 6*time.Second, "d", time.Second)
	s.RunUntil(8 * time.Second)
	arrive(t, s, 8*time.Second, "e", stepper.Unknown)
	arrive(t, s, 9*time.Second, "f", time.Second)
	s.RunUntil(time.Minute)
	want := []string{
		"0s a dispatched after 0s",
		"2s a ended forced=false",
		"2s b dispatched after 1s",
		"3s b ended forced=false",
		"3s c dispatched after 2s",
		"7s c ended forced=false",
		"7s d dispatched after 1s",
		"8s d ended forced=false",
		"8s e dispatched after 0s",
		"24s f rejected time-out",
		"38s e ended forced=true",
	}
	if got := strings.Join(tr.lines, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	if s.Active() != 0 || s.Pending() != 1 {
		t.Fatalf("%d active, %d events pending; want 0 and the adjustment", s.Active(), s.Pending())
	}
}

// A paced level (engine.Config.PacedDispatch) asks for its Tick, and the
// Stepper gives it at the time asked: once a request has told the level
// its service time (4 ms), a burst of four on the level's four seats
// takes turns 4 ms / (4 × 1.25) = 0.8 ms apart, each starting 4 ms / 8 =
// 0.5 ms before its turn. Not paced, the burst starts at once.
func TestPacedTick(t *testing.T) {
	for _, paced := range []bool{false, true} {
		tr := &trace{}
		s, err := stepper.New(stepper.Config{
			Engine: engine.Config{ServerConcurrencyLimit: 60, PacedDispatch: paced},
			Start:  t0,
			Hooks: stepper.Hooks{Dispatched: func(r *stepper.Request, now time.Time) {
				tr.logf(now, "%s dispatched after %v", r.Tag, r.Waited())
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		install(t, s)
		if err := s.SetServerLimit(0, 4); err != nil {
			t.Fatal(err)
		}
		for _, l := range s.Levels() {
			if l.Engine().Name() == "one" && l.Limit() != 4 {
				t.Fatalf("level one has %d seats, want 4 (the server's 4 but for the others' shares)", l.Limit())
			}
		}
		arrive(t, s, 0, "a", 4*time.Millisecond)
		for _, n := range []string{"b", "c", "d", "e"} {
			arrive(t, s, 10*time.Millisecond, n, 4*time.Millisecond)
		}
		s.RunUntil(time.Second)
		want := []string{
			"0s a dispatched after 0s",
			"10ms b dispatched after 0s",
			"10ms c dispatched after 0s",
			"10ms d dispatched after 0s",
			"10ms e dispatched after 0s",
		}
		if paced {
			want[2] = "10.3ms c dispatched after 300µs"
			want[3], want[4] = "11.1ms d dispatched after 1.1ms", "11.9ms e dispatched after 1.9ms"
		}
		if got := strings.Join(tr.lines, "\n"); got != strings.Join(want, "\n") {
			t.Fatalf("paced %v: got\n%s\nwant\n%s", paced, got, strings.Join(want, "\n"))
		}
	}
}
