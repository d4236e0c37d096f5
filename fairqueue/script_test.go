package fairqueue

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/testing/scripttest"
)

// TestScripts runs the scenario scripts in testdata (see
// internal/testing/scripttest for the format). Every command is followed by a
// full invariant check. See scripter.run for the commands.
func TestScripts(t *testing.T) {
	scripttest.Run(t, "testdata/*.txt", func(t *testing.T) func(string) ([]string, error) {
		s := &scripter{t: t, reqs: map[string]*Request{}}
		return func(cmd string) ([]string, error) {
			got := s.run(cmd)
			if err := s.check(); err != nil {
				return nil, fmt.Errorf("invariant broken: %w", err)
			}
			return got, nil
		}
	})
}

// scripter interprets the commands of a script. Requests are named by id;
// times are relative to a fixed start and only move when told to.
type scripter struct {
	t         *testing.T
	qs        *QueueSet
	now       time.Duration
	reqs      map[string]*Request
	lingering []*Request
	settled   bool
	demand    []string
	// lastDemand is the demand logged last (a new queue set starts at 0).
	lastDemand int
}

var scriptStart = time.Date(2020, 7, 23, 15, 0, 0, 0, time.UTC)

func (s *scripter) check() error {
	if s.qs == nil {
		return nil
	}
	return s.qs.check(s.lingering, s.settled)
}

// notePeak logs an instant of demand above the demand after the call.
func (s *scripter) notePeak(now time.Time, peak int) {
	if peak > s.lastDemand && peak > s.qs.Occupancy().Demand() {
		s.lastDemand = peak
		s.demand = append(s.demand, fmt.Sprintf("%s:%d", rel(now.Sub(scriptStart)), peak))
	}
}

// noteDemand logs the seat demand after a call that changed it, as a
// driver following the occupancy reads it after each call (package
// engine feeds the borrowing's demand this way).
func (s *scripter) noteDemand(now time.Time) {
	if s.qs == nil {
		return
	}
	d := s.qs.Occupancy().Demand()
	if s.lastDemand == d {
		return
	}
	s.lastDemand = d
	s.demand = append(s.demand, fmt.Sprintf("%s:%d", rel(now.Sub(scriptStart)), d))
}

// run executes one command and returns its output lines:
//
//	new limit=N queues=Q hand=H qll=L     start a queue set (queues<0: exempt, 0: reject)
//	arrive id=a[,b...] hash=N seats=N final=N latency=D
//	finish id=a[,b...]                    the handlers of a, b... return (in order)
//	release id=a                          a's final phase ends
//	cancel id=a                           a's waiter gives up
//	limit N                               SetConcurrencyLimit
//	reconfigure limit= queues= hand= qll= Reconfigure (unset fields keep their value)
//	advance D                             move time forward
//	print [requests]                      the dump
//	demand                                seat demand after each command since the last "demand"
//
// Any command accepts at=+D to move time forward by D first.
func (s *scripter) run(line string) []string {
	fields := strings.Fields(line)
	cmd, args := fields[0], map[string]string{}
	var plain []string
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			args[k] = v
		} else {
			plain = append(plain, f)
		}
	}
	if at, ok := args["at"]; ok {
		s.now += s.duration(strings.TrimPrefix(at, "+"))
	}
	now := scriptStart.Add(s.now)
	out := s.do(cmd, args, plain, now)
	s.noteDemand(now)
	return out
}

func (s *scripter) do(cmd string, args map[string]string, plain []string, now time.Time) []string {
	switch cmd {
	case "arrive", "finish", "release", "limit", "reconfigure":
		// These run dispatch to completion; Cancel does not.
		s.settled = s.qs == nil || s.qs.cfg.Queues != 0 || cmd != "arrive" || s.settled
	case "cancel":
		s.settled = false
	}
	switch cmd {
	case "new":
		cfg := Config{ConcurrencyLimit: s.int(args, "limit", 0), Queues: s.int(args, "queues", 0),
			HandSize: s.int(args, "hand", 0), QueueLengthLimit: s.int(args, "qll", 0)}
		qs, err := New(cfg, now)
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		s.qs = qs
		s.lastDemand = 0
		return nil
	case "arrive":
		var out []string
		for _, id := range strings.Split(args["id"], ",") {
			r := &Request{Hash: uint64(s.int(args, "hash", 0)), Tag: id, Work: WorkEstimate{
				InitialSeats: s.int(args, "seats", 1), FinalSeats: s.int(args, "final", 0),
				AdditionalLatency: s.duration(args["latency"])}}
			if old := s.reqs[id]; old != nil && old.state != stateFree {
				s.t.Fatalf("arrive: %s is still in flight", id)
			}
			s.reqs[id] = r
			before := s.qs.Occupancy().Demand()
			d, others := s.qs.Arrive(now, r, nil)
			if d != Rejected {
				// Admitted, r waited (for no time if it was dispatched at
				// once) with its whole width: the demand's extreme.
				s.notePeak(now, before+r.Work.MaxSeats())
			}
			s.noteDemand(now)
			switch d {
			case Dispatched:
				out = append(out, id+": dispatched")
			case Queued:
				out = append(out, fmt.Sprintf("%s: queued in q%d (length %d)", id, r.queue.index, r.QueueLengthAfterEnqueue()))
			case Rejected:
				out = append(out, fmt.Sprintf("%s: rejected (%s)", id, r.Reason()))
			}
			out = append(out, s.dispatched(others)...)
		}
		return out
	case "finish":
		var out []string
		for _, id := range strings.Split(args["id"], ",") {
			r := s.req(id)
			wasExecuting := r.state == stateExecuting
			ran := now.Sub(r.StartTime())
			d, release := s.qs.Finish(now, r, nil)
			switch {
			case !wasExecuting:
				out = append(out, id+": not executing")
			case release > 0:
				s.lingering = append(s.lingering, r)
				out = append(out, fmt.Sprintf("%s: finished after %v; holds %d seats for %v more", id, ran, r.maxSeats, release))
			default:
				out = append(out, fmt.Sprintf("%s: finished after %v", id, ran))
			}
			out = append(out, s.dispatched(d)...)
		}
		return out
	case "release":
		r := s.req(args["id"])
		if r.state != stateLingering {
			return []string{args["id"] + ": not lingering"}
		}
		s.lingering = slices.DeleteFunc(s.lingering, func(x *Request) bool { return x == r })
		return append([]string{args["id"] + ": released"}, s.dispatched(s.qs.Release(now, r, nil))...)
	case "cancel":
		if !s.qs.Cancel(now, s.req(args["id"])) {
			return []string{args["id"] + ": not waiting"}
		}
		return []string{args["id"] + ": cancelled"}
	case "limit":
		n, err := strconv.Atoi(plain[0])
		if err != nil {
			s.t.Fatal(err)
		}
		return s.dispatched(s.qs.SetConcurrencyLimit(now, n, nil))
	case "reconfigure":
		cfg := s.qs.Config()
		cfg.ConcurrencyLimit = s.int(args, "limit", cfg.ConcurrencyLimit)
		cfg.Queues = s.int(args, "queues", cfg.Queues)
		cfg.HandSize = s.int(args, "hand", cfg.HandSize)
		cfg.QueueLengthLimit = s.int(args, "qll", cfg.QueueLengthLimit)
		d, err := s.qs.Reconfigure(now, cfg, nil)
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		return s.dispatched(d)
	case "advance":
		s.now += s.duration(plain[0])
		return []string{"t=" + rel(s.now)}
	case "print":
		return s.print(len(plain) > 0 && plain[0] == "requests")
	case "demand":
		d := s.demand
		s.demand = nil
		return []string{strings.Join(d, " ")}
	}
	s.t.Fatalf("unknown command %q", cmd)
	return nil
}

func (s *scripter) dispatched(rs []*Request) []string {
	if len(rs) == 0 {
		return nil
	}
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.Tag.(string)
	}
	return []string{"dispatched: " + strings.Join(ids, " ")}
}

func (s *scripter) print(requests bool) []string {
	d := s.qs.Dump(requests)
	out := []string{
		fmt.Sprintf("t=%s R=%v limit=%d seats=%d waiting=%d/%d executing=%d active=%d idle=%t",
			rel(s.now), d.CurrentR, d.ConcurrencyLimit, d.SeatsInUse, d.WaitingRequests, d.WaitingSeats,
			d.ExecutingRequests, d.ActiveQueues, d.Idle),
		fmt.Sprintf("counters: arrived=%d dispatched=%d rejected=%d cancelled=%d timedout=%d no-accommodation=%d",
			d.Arrived, d.Dispatched, d.Rejected, d.Cancelled, d.TimedOut, d.NoAccommodation),
	}
	for _, q := range d.Queues {
		out = append(out, fmt.Sprintf("q%d: pending=%d executing=%d seats=%d next=%v sums=%d/%d/%v",
			q.Index, q.PendingRequests, q.ExecutingRequests, q.SeatsInUse, q.NextDispatchR,
			q.InitialSeatsSum, q.MaxSeatsSum, q.TotalWorkSum))
	}
	for _, r := range d.Requests {
		start := "-"
		if !r.StartTime.IsZero() {
			start = rel(r.StartTime.Sub(scriptStart))
		}
		out = append(out, fmt.Sprintf("  %v: queue=%d index=%d seats=%d/%d latency=%v arrived=%s started=%s",
			r.Tag, r.QueueIndex, r.IndexInQueue, r.InitialSeats, r.FinalSeats, r.AdditionalLatency,
			rel(r.ArriveTime.Sub(scriptStart)), start))
	}
	return out
}

func (s *scripter) req(id string) *Request {
	r := s.reqs[id]
	if r == nil {
		s.t.Fatalf("unknown request %q", id)
	}
	return r
}

func (s *scripter) int(args map[string]string, k string, def int) int {
	v, ok := args[k]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		s.t.Fatalf("%s=%s: %v", k, v, err)
	}
	return n
}

func (s *scripter) duration(v string) time.Duration {
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		s.t.Fatalf("duration %q: %v", v, err)
	}
	return d
}

func rel(d time.Duration) string { return "+" + d.String() }
