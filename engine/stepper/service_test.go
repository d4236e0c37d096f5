package stepper_test

import (
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/engine"
	"github.com/apfproject/apf/engine/stepper"
	"github.com/apfproject/apf/fairqueue"
)

// A request of unknown service is told its service when it is
// dispatched, from the hook that hears of it: it ends that long after,
// as if it had arrived knowing it. Told outside the hook, nothing
// happens.
func TestSetServiceAtDispatch(t *testing.T) {
	tr := &trace{}
	services := map[string]time.Duration{"a": 2 * time.Second, "b": 3 * time.Second}
	s, err := stepper.New(stepper.Config{
		Engine: engine.Config{ServerConcurrencyLimit: 60},
		Start:  t0,
		Hooks: stepper.Hooks{
			Dispatched: func(r *stepper.Request, now time.Time) {
				tr.logf(now, "%s dispatched after %v", r.Tag, r.Waited())
				if d, ok := services[r.Tag.(string)]; ok {
					r.SetService(d)
					r.SetService(time.Hour) // known now: no effect
				}
			},
			Rejected: func(r *stepper.Request, now time.Time, reason fairqueue.RejectReason) {
				tr.logf(now, "%s rejected %s", r.Tag, reason)
			},
			Ended: func(r *stepper.Request, now time.Time) time.Duration {
				tr.logf(now, "%s ended", r.Tag)
				return 0
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	install(t, s)
	arrive(t, s, 0, "a", stepper.Unknown)
	b := arrive(t, s, time.Second, "b", stepper.Unknown)
	c := arrive(t, s, time.Second, "c", stepper.Unknown)
	b.SetService(time.Millisecond) // waiting, outside the hook: no effect
	s.RunUntil(10 * time.Second)
	c.SetService(time.Millisecond) // executing, outside the hook: no effect
	s.RunUntil(20 * time.Second)
	s.Finish(c, 20*time.Second, 15*time.Second)
	s.RunUntil(time.Minute)
	want := []string{
		"0s a dispatched after 0s",
		"2s a ended",
		"2s b dispatched after 1s",
		"5s b ended",
		"5s c dispatched after 4s",
		"20s c ended",
	}
	if got := strings.Join(tr.lines, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}
