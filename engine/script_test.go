package engine

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/internal/testing/scripttest"
	"github.com/apfproject/apf/request"
)

// TestScripts runs the scenario scripts in testdata: configurations
// installed, requests placed, arriving and finishing, adjustments, read
// like the documentation (see internal/testing/scripttest for the format). The
// driver is the simplest one, single-threaded (serialDriver), and it logs
// every part of a change it applies to a level, so the scripts show in
// what order a configuration change reaches the levels. See scripter.run
// for the commands.
func TestScripts(t *testing.T) {
	scripttest.Run(t, "testdata/*.txt", func(t *testing.T) func(string) ([]string, error) {
		s := newScripter(t)
		return func(cmd string) ([]string, error) { return s.run(cmd), nil }
	})
}

// base is time zero of the scripts.
var base = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

type scripter struct {
	t    *testing.T
	d    *serialDriver
	reqs map[string]*fairqueue.Request
	lvls map[string]*Level // the level of each request, by id
	log  []string
	// old is the snapshot the latest install replaced.
	old *Snapshot
}

func newScripter(t *testing.T) *scripter {
	s := &scripter{t: t, reqs: map[string]*fairqueue.Request{}, lvls: map[string]*Level{}}
	s.d = newSerialDriver(t, Config{ServerConcurrencyLimit: 100})
	s.d.logf = s.logf
	s.d.dispatched = s.dispatched
	return s
}

func (s *scripter) logf(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf(format, args...))
}

// dispatched logs the requests a call dispatched.
func (s *scripter) dispatched(rs []*fairqueue.Request) {
	for _, r := range rs {
		s.logf("dispatched %s", r.Tag)
	}
}

// run executes one command and returns its output. Commands take key=value
// arguments, then positional ones:
//
//	install t=SECONDS FILE             install testdata/configs/FILE
//	place t=S user=U [groups=G,H] [deadline=D] METHOD PATH
//	arrive id=ID [n=N] t=S user=U [groups=...] [deadline=D] [latency=D] [snapshot=old] METHOD PATH
//	                                   (with n, N requests ID1..IDN, summed up;
//	                                   latency: a final phase that long;
//	                                   snapshot=old: placed on the snapshot
//	                                   the latest install replaced)
//	finish id=ID t=S                   the handler returns
//	release id=ID t=S                  the final phase ends
//	cancel id=ID t=S                   the wait limit passes
//	limit t=S N                        the server concurrency limit changes
//	adjust t=S
//	levels
func (s *scripter) run(line string) []string {
	s.t.Helper()
	fields := strings.Fields(line)
	args := map[string]string{}
	var pos []string
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok && len(pos) == 0 {
			args[k] = v
		} else {
			pos = append(pos, f)
		}
	}
	now := base
	if v, ok := args["t"]; ok {
		sec, err := strconv.ParseFloat(v, 64)
		if err != nil {
			s.t.Fatalf("%s: bad time %q", line, v)
		}
		now = base.Add(time.Duration(sec * float64(time.Second)))
	}
	s.log = nil
	switch fields[0] {
	case "install":
		s.install(now, pos[0])
	case "place":
		p := s.place(now, args, pos)
		s.logf("schema=%s level=%s flow=%q seats=%d wait=%v", p.FlowSchema.Name, p.Level.Name(), p.FlowDistinguisher, p.Work.MaxSeats(), p.WaitLimit)
	case "arrive":
		n, _ := strconv.Atoi(args["n"])
		if n == 0 {
			s.arrive(now, args["id"], args, pos)
			break
		}
		// Many at once: only the count of each outcome.
		outcomes := map[string]int{}
		for i := 1; i <= n; i++ {
			s.log = nil
			s.arrive(now, fmt.Sprintf("%s%d", args["id"], i), args, pos)
			outcome := s.log[0][strings.Index(s.log[0], ": ")+2:]
			outcomes[outcome]++
		}
		s.log = nil
		for _, k := range slices.Sorted(maps.Keys(outcomes)) {
			s.logf("%d %s", outcomes[k], k)
		}
	case "finish", "release", "cancel":
		id := args["id"]
		r, l := s.reqs[id], s.lvls[id]
		var o Outcome
		switch fields[0] {
		case "finish":
			o = l.Finish(now, r)
			if o.Release > 0 {
				s.logf("%s: final phase for %v", id, o.Release)
			}
		case "release":
			o = l.Release(now, r)
		default:
			o = l.Cancel(now, r)
			if o.Reason != 0 {
				s.logf("%s: %s %s", id, o.Decision, o.Reason)
			} else {
				s.logf("%s: %s already", id, o.Decision)
			}
		}
		s.outcome(o)
	case "limit":
		n, _ := strconv.Atoi(pos[0])
		ch, err := s.d.setLimit(now, n)
		if err != nil {
			s.logf("error: %v", err)
		}
		s.adjustments(ch)
	case "adjust":
		s.adjustments(s.d.adjust(now))
	case "levels":
		for _, l := range s.d.e.Levels() {
			st := l.Stats()
			s.logf("%s: exempt=%t retiring=%t idle=%t limit=%d waiting=%d executing=%d",
				l.Name(), l.Exempt(), l.Retiring(), l.IsIdle(), l.Config().ConcurrencyLimit, st.WaitingRequests, st.ExecutingRequests)
		}
	default:
		s.t.Fatalf("unknown command %q", line)
	}
	return s.log
}

// outcome logs what an input dispatched and how the level's demand moved.
func (s *scripter) outcome(o Outcome) {
	s.dispatched(o.Dispatched)
	if o.Changed {
		s.logf("occupancy waiting=%d executing=%d seats=%d", o.Occupancy.Waiting, o.Occupancy.Executing, o.Occupancy.SeatsInUse)
	}
}

// adjustments logs the limits a change imposed and the levels it dropped.
func (s *scripter) adjustments(ch Change) {
	for _, err := range ch.Problems {
		s.logf("error: %v", err)
	}
	for _, a := range ch.Adjustments {
		s.logf("%s: nominal=%d lower=%d upper=%d current=%d maxSeats=%d", a.Name, a.Nominal, a.Lower, a.Upper, a.Current, a.MaxSeats)
	}
	for _, l := range ch.Dropped {
		s.logf("dropped %s", l.Name())
	}
}

func (s *scripter) arrive(now time.Time, id string, args map[string]string, pos []string) {
	p := s.place(now, args, pos)
	r := &fairqueue.Request{Hash: p.FlowHash, Work: p.Work, Tag: id}
	if v, ok := args["latency"]; ok {
		// A final phase of that long, holding the initial seats.
		d, err := time.ParseDuration(v)
		if err != nil {
			s.t.Fatal(err)
		}
		r.Work.FinalSeats, r.Work.AdditionalLatency = r.Work.InitialSeats, d
	}
	s.reqs[id], s.lvls[id] = r, p.Level
	o := p.Level.Arrive(now, r)
	out := fmt.Sprintf("%s at %s: %s", id, p.Level.Name(), o.Decision)
	switch {
	case o.Reclassify:
		out = fmt.Sprintf("%s at %s: reclassify", id, p.Level.Name())
	case o.Decision == fairqueue.Rejected:
		out += " " + o.Reason.String()
	}
	s.logf("%s", out)
	s.outcome(o)
}

func (s *scripter) install(now time.Time, file string) {
	data, err := os.ReadFile(filepath.Join("testdata", "configs", file))
	if err != nil {
		s.t.Fatal(err)
	}
	objs, err := config.Decode(data, file)
	if err != nil {
		s.t.Fatal(err)
	}
	comp := Compile(objs)
	s.old = s.d.snap
	ch, err := s.d.install(now, comp)
	if err != nil {
		s.t.Fatal(err)
	}
	names := func(ls []*Level) string {
		var out []string
		for _, l := range ls {
			out = append(out, l.Name())
		}
		return strings.Join(out, ",")
	}
	s.logf("added=[%s] retired=[%s] dropped=[%s] invalid=%d problems=%d",
		names(ch.Added), names(ch.Retired), names(ch.Dropped), len(comp.Invalid), len(ch.Problems))
}

func (s *scripter) place(now time.Time, args map[string]string, pos []string) Placement {
	if len(pos) != 2 {
		s.t.Fatalf("want METHOD PATH, got %v", pos)
	}
	path, query, _ := strings.Cut(pos[1], "?")
	info, err := request.Parse(pos[0], path, query)
	if err != nil {
		s.t.Fatal(err)
	}
	a := &request.Attributes{Info: info, User: request.User{Name: args["user"], Groups: []string{"system:authenticated"}}}
	if g := args["groups"]; g != "" {
		a.User.Groups = strings.Split(g, ",")
	}
	var deadline time.Time
	if d := args["deadline"]; d != "" {
		left, err := time.ParseDuration(d)
		if err != nil {
			s.t.Fatal(err)
		}
		deadline = now.Add(left)
	}
	if args["snapshot"] == "old" {
		return s.old.Place(now, a, deadline)
	}
	return s.d.snap.Place(now, a, deadline)
}
